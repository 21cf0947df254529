#include "chunk_pool.h"

namespace gnomon::client {

ChunkPool::~ChunkPool() {
  for (Chunk* chunk : free_) delete chunk;
}

Chunk* ChunkPool::Acquire() {
  std::lock_guard lock(mutex_);
  if (!free_.empty()) {
    Chunk* chunk = free_.back();
    free_.pop_back();
    chunk->Reset();
    return chunk;
  }
  if (allocated_bytes_.load(std::memory_order_relaxed) + sizeof(Chunk) > budget_bytes_) return nullptr;
  allocated_bytes_.fetch_add(sizeof(Chunk), std::memory_order_relaxed);
  return new Chunk;
}

void ChunkPool::Release(Chunk* chunk) {
  std::lock_guard lock(mutex_);
  free_.push_back(chunk);
}

}  // namespace gnomon::client
