// Fixed-size chunks of event bytes, handed out against a memory limit.
//
// Every thread records into chunks from this pool; the sender returns drained ones.
// The limit is the program's promise about memory: once that many bytes of chunks exist
// and none is free, Acquire() fails and the caller drops the event (or, under the wait
// policy, waits for the sender to return one). The sender moves the limit as the buffer
// policy says (profiler.h): up while a server drains and falls behind, back down when it
// leaves; chunks returned while more than the limit exists are freed. Acquire and
// Release take a mutex, but they run once per chunk (thousands of events), never per
// event.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "gnomon/client/thread_writer.h"

namespace gnomon::client {

struct Chunk {
  static constexpr size_t kDataBytes = 64 * 1024;
  std::atomic<uint32_t> committed{0};  // bytes of `data` published by the producer
  std::atomic<Chunk*> next{nullptr};   // set once the producer moved on
  uint64_t sequence = 0;               // when its thread started it (Registry::NextChunkSequence)
  alignas(64) uint8_t data[kDataBytes];

  void Reset() {
    committed.store(0, std::memory_order_relaxed);
    next.store(nullptr, std::memory_order_relaxed);
  }
};

// Tells threads without a chunk that one may now be had (see ThreadWriter::epoch).
inline void AdvanceBufferEpoch() { detail::g_buffer_epoch.fetch_add(2, std::memory_order_release); }

class ChunkPool {
 public:
  explicit ChunkPool(uint64_t limit_bytes) : limit_bytes_(limit_bytes) {}
  ~ChunkPool();
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // A reset chunk, or nullptr when the limit is reached and no chunk is free.
  Chunk* Acquire();
  // The same, waiting up to `timeout` for a chunk to come back when none can be had.
  Chunk* AcquireOrWait(std::chrono::milliseconds timeout);
  void Release(Chunk* chunk);
  // The bytes of chunks that may exist from now on. Lowering it frees free chunks past
  // it now, and chunks in use as they come back.
  void SetLimit(uint64_t bytes);

  // Whether Acquire() may succeed now (a free chunk, or room under the limit), read
  // without the lock: a hint that spares a dropping thread the lock when it would fail.
  bool MayAcquire() const {
    return free_count_.load(std::memory_order_relaxed) > 0 ||
           allocated_bytes_.load(std::memory_order_relaxed) + sizeof(Chunk) <=
               limit_bytes_.load(std::memory_order_relaxed);
  }
  uint64_t allocated_bytes() const { return allocated_bytes_.load(std::memory_order_relaxed); }
  uint64_t limit_bytes() const { return limit_bytes_.load(std::memory_order_relaxed); }

 private:
  Chunk* AcquireLocked();  // under mutex_

  std::atomic<uint64_t> limit_bytes_;
  std::mutex mutex_;
  std::condition_variable returned_;  // a chunk came back, or the limit rose
  std::vector<Chunk*> free_;
  std::atomic<size_t> free_count_{0};  // free_.size(), for MayAcquire()
  std::atomic<uint64_t> allocated_bytes_{0};
};

}  // namespace gnomon::client
