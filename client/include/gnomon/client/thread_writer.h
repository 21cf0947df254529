// The recording hot path, inlined into the caller.
//
// Each thread owns a chain of fixed-size chunks that only it writes. Recording an event
// is: reserve bytes in the current chunk, write the wire message in place, publish the
// new end with one release store. A background sender reads published bytes and ships
// them. When the chunk is full, Refill() (out of line) links a new one; when the buffer
// budget is exhausted it returns nullptr and the event is dropped and counted. While a
// thread drops, the next events are dropped and counted here, inline, and only every
// 64th asks Refill() for a chunk again: a dropped event costs a few instructions.
//
// Nothing here locks, allocates or makes a system call. This header is public only so
// that the C++ API can inline it; its contents are not a stable interface.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ctime>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define GNOMON_HAS_TSC 1
#else
#define GNOMON_HAS_TSC 0
#endif

#include "gnomon/gnomon.h"
#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/messages.h"

#if defined(__GNUC__) || defined(__clang__)
#define GNOMON_LIKELY(x) __builtin_expect(!!(x), 1)
#define GNOMON_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define GNOMON_LIKELY(x) (x)
#define GNOMON_UNLIKELY(x) (x)
#endif

namespace gnomon::detail {

struct ThreadWriter {
  uint8_t* cursor = nullptr;                   // next free byte
  uint8_t* limit = nullptr;                    // end of the current chunk's data
  uint8_t* base = nullptr;                     // start of the current chunk's data
  std::atomic<uint32_t>* committed = nullptr;  // published end, read by the sender
  // While dropping (no chunk): events to drop here before asking Refill() again, and
  // the thread's drop counter (only this thread writes it).
  uint32_t drops_before_retry = 0;
  std::atomic<uint64_t>* dropped = nullptr;
};

extern constinit thread_local ThreadWriter tls_writer;

// True when the timer is the invariant TSC; set once at start-up before any event.
extern constinit bool g_timer_is_tsc;

// Slow path: makes room for `bytes` (at most kMaxRecordBytes). Returns where to write,
// or nullptr when the event must be dropped (it is then already counted).
uint8_t* Refill(size_t bytes);

inline constexpr size_t kMaxRecordBytes = 16 + 8000;

inline uint64_t Now() {
#if GNOMON_HAS_TSC
  if (GNOMON_LIKELY(g_timer_is_tsc)) return __rdtsc();
#endif
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// (tls_writer is named directly rather than through a reference: GCC 12's
// -fsanitize=null misreads references to thread-locals as null.)
inline uint8_t* Reserve(size_t bytes) {
  if (GNOMON_UNLIKELY(tls_writer.limit - tls_writer.cursor < static_cast<ptrdiff_t>(bytes))) {
    if (tls_writer.drops_before_retry != 0) {
      --tls_writer.drops_before_retry;
      tls_writer.dropped->store(tls_writer.dropped->load(std::memory_order_relaxed) + 1,
                                std::memory_order_relaxed);
      return nullptr;
    }
    return Refill(bytes);
  }
  return tls_writer.cursor;
}

inline void Commit(uint8_t* end) {
  tls_writer.cursor = end;
  tls_writer.committed->store(static_cast<uint32_t>(end - tls_writer.base), std::memory_order_release);
}

uint32_t RegisterSourceLocation(struct ::gnomon_source_location* location);

}  // namespace gnomon::detail
