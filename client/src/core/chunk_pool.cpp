#include "chunk_pool.h"

namespace gnomon::client {

ChunkPool::~ChunkPool() {
  for (Chunk* chunk : free_) delete chunk;
}

Chunk* ChunkPool::AcquireLocked() {
  if (!free_.empty()) {
    Chunk* chunk = free_.back();
    free_.pop_back();
    free_count_.store(free_.size(), std::memory_order_relaxed);
    chunk->Reset();
    return chunk;
  }
  if (allocated_bytes_.load(std::memory_order_relaxed) + sizeof(Chunk) >
      limit_bytes_.load(std::memory_order_relaxed)) {
    return nullptr;
  }
  allocated_bytes_.fetch_add(sizeof(Chunk), std::memory_order_relaxed);
  return new Chunk;
}

Chunk* ChunkPool::Acquire() {
  std::lock_guard lock(mutex_);
  return AcquireLocked();
}

Chunk* ChunkPool::AcquireOrWait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  Chunk* chunk = nullptr;
  returned_.wait_for(lock, timeout, [&] { return (chunk = AcquireLocked()) != nullptr; });
  return chunk;
}

void ChunkPool::Release(Chunk* chunk) {
  {
    std::lock_guard lock(mutex_);
    if (allocated_bytes_.load(std::memory_order_relaxed) > limit_bytes_.load(std::memory_order_relaxed)) {
      allocated_bytes_.fetch_sub(sizeof(Chunk), std::memory_order_relaxed);
      delete chunk;
      return;
    }
    free_.push_back(chunk);
    free_count_.store(free_.size(), std::memory_order_relaxed);
  }
  AdvanceBufferEpoch();
  returned_.notify_one();
}

void ChunkPool::SetLimit(uint64_t bytes) {
  {
    std::lock_guard lock(mutex_);
    limit_bytes_.store(bytes, std::memory_order_relaxed);
    while (!free_.empty() && allocated_bytes_.load(std::memory_order_relaxed) > bytes) {
      delete free_.back();
      free_.pop_back();
      allocated_bytes_.fetch_sub(sizeof(Chunk), std::memory_order_relaxed);
    }
    free_count_.store(free_.size(), std::memory_order_relaxed);
  }
  AdvanceBufferEpoch();
  returned_.notify_all();
}

}  // namespace gnomon::client
