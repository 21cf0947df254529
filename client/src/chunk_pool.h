// Fixed-size chunks of event bytes, handed out against one memory budget.
//
// Every thread records into chunks from this pool; the sender returns drained ones.
// The budget is the program's promise about memory: once `budget_bytes` worth of chunks
// exist and none is free, Acquire() fails and the caller drops the event. Acquire and
// Release take a mutex, but they run once per chunk (thousands of events), never per
// event.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace gnomon::client {

struct Chunk {
  static constexpr size_t kDataBytes = 64 * 1024;
  std::atomic<uint32_t> committed{0};  // bytes of `data` published by the producer
  std::atomic<Chunk*> next{nullptr};   // set once the producer moved on
  alignas(64) uint8_t data[kDataBytes];

  void Reset() {
    committed.store(0, std::memory_order_relaxed);
    next.store(nullptr, std::memory_order_relaxed);
  }
};

class ChunkPool {
 public:
  explicit ChunkPool(uint64_t budget_bytes) : budget_bytes_(budget_bytes) {}
  ~ChunkPool();
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // A reset chunk, or nullptr when the budget is used up and no chunk is free.
  Chunk* Acquire();
  void Release(Chunk* chunk);

  uint64_t allocated_bytes() const { return allocated_bytes_.load(std::memory_order_relaxed); }
  uint64_t budget_bytes() const { return budget_bytes_; }

 private:
  const uint64_t budget_bytes_;
  std::mutex mutex_;
  std::vector<Chunk*> free_;
  std::atomic<uint64_t> allocated_bytes_{0};
};

}  // namespace gnomon::client
