// The recording hot path, inlined into the caller.
//
// Each thread owns a chain of fixed-size chunks that only it writes. Recording an event
// is: reserve bytes in the current chunk, write the wire message in place, publish the
// new end with one release store. A background sender reads published bytes and ships
// them. When the chunk is full, Refill() (out of line) links a new one; when the buffer
// budget is exhausted it returns nullptr and the event is dropped and counted. While a
// thread has no chunk (dropping, or not recording because nobody is connected in
// on-demand mode), the next events are counted here, inline, and Refill() is asked
// again only once the buffer's epoch changed (a chunk came back, the limit moved, a
// capture came or went): an event not recorded costs a compare and an increment.
//
// A zone whose begin was not recorded has its end not recorded either, even when the
// thread records again by then (gnomon.hpp): a capture never gets half a zone.
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
// The recording path, inlined whatever the caller's optimiser thinks of its size: a call
// would cost more than recording (a zone begin is a dozen instructions; its rare paths,
// a refill or the clock without the TSC, stay out of line).
#define GNOMON_HOT inline __attribute__((always_inline))
#define GNOMON_COLD __attribute__((noinline, cold))
#else
#define GNOMON_LIKELY(x) (x)
#define GNOMON_UNLIKELY(x) (x)
#define GNOMON_HOT inline
#define GNOMON_COLD
#endif

namespace gnomon::detail {

inline constexpr uint32_t kRecordingEpoch = 1;

struct alignas(64) ThreadWriter {
  uint8_t* cursor = nullptr;                   // next free byte
  uint8_t* limit = nullptr;                    // end of the current chunk's data
  uint8_t* base = nullptr;                     // start of the current chunk's data
  std::atomic<uint32_t>* committed = nullptr;  // published end, read by the sender
  // While not recording (no chunk): where the events not recorded are counted (the
  // thread's drop counter, which only this thread writes; or, in on-demand mode before
  // a capture connects, a counter of events nobody asked for), and the buffer epoch
  // seen when Refill() last found no chunk. The buffer's epoch is always even: while
  // the thread records (or has not asked yet) `epoch` is odd, so it never matches and
  // one compare tells the cases apart.
  std::atomic<uint64_t>* not_recorded = nullptr;
  uint32_t epoch = kRecordingEpoch;
  // Zones begun by ZoneBegin() but not recorded that are still open, with the zones
  // begun inside them: their ends are not recorded.
  uint32_t unrecorded_depth = 0;
};

extern constinit thread_local ThreadWriter tls_writer;

// Changes (by 2: it stays even) whenever a thread without a chunk could now get one.
alignas(64) extern constinit std::atomic<uint32_t> g_buffer_epoch;

// True when the timer is the invariant TSC; set once at start-up before any event.
extern constinit bool g_timer_is_tsc;

// Set once the profiler has started (the first Gnomon call, or gnomon_startup()).
extern constinit std::atomic<bool> g_profiler_started;

// Frames of call stack recorded at every zone begin and allocation
// (GNOMON_CALLSTACK_DEPTH); 0: none. Set once at start-up.
extern constinit uint32_t g_callstack_depth;
inline constexpr uint32_t kMaxCallstackDepth = 64;

// Records a zone begin followed by the caller's call stack of `depth` frames (at most
// kMaxCallstackDepth), in one reservation; false when not recorded (then counted as
// `events`). Out of line: it unwinds the stack, about a microsecond.
bool RecordZoneBeginWithCallstack(uint32_t location_id, uint32_t depth, uint64_t events);

// Slow path: makes room for `bytes` (at most kMaxRecordBytes). Returns where to write,
// or nullptr when the event is not recorded (it is then already counted).
uint8_t* Refill(size_t bytes);
// Counts an event not recorded while not_recorded is not set: the thread records (the
// end of a zone whose begin was not recorded), it exited, or the profiler shut down.
void CountNotRecordedSlow();

inline constexpr size_t kMaxRecordBytes = 16 + 8000;

// The time from CLOCK_MONOTONIC_RAW, where the timer is not the TSC.
GNOMON_COLD inline uint64_t NowFromClock() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

GNOMON_HOT uint64_t Now() {
#if GNOMON_HAS_TSC
  if (GNOMON_LIKELY(g_timer_is_tsc)) return __rdtsc();
#endif
  return NowFromClock();
}

// (tls_writer is named directly rather than through a reference: GCC 12's
// -fsanitize=null misreads references to thread-locals as null.)
// Adds to a counter that only the calling thread writes (others only read it): a load
// and a store, no read-modify-write, so counting costs no locked instruction.
inline void AddToOwnCounter(std::atomic<uint64_t>& counter, uint64_t n) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

inline void CountNotRecorded(uint64_t events = 1) {
  if (GNOMON_LIKELY(tls_writer.not_recorded != nullptr)) {
    AddToOwnCounter(*tls_writer.not_recorded, events);
  } else {
    for (uint64_t i = 0; i < events; ++i) CountNotRecordedSlow();
  }
}

// True when the thread does not record and nothing changed since it last asked: the
// event is then counted, as `events`. What an event costs while nobody is connected on
// demand (or the buffer is full), before anything else is read; a thread that records
// never takes it.
GNOMON_HOT bool SkipWhileNotRecording(size_t bytes, uint64_t events) {
  if (GNOMON_LIKELY(tls_writer.limit - tls_writer.cursor >= static_cast<ptrdiff_t>(bytes))) return false;
  if (tls_writer.epoch != g_buffer_epoch.load(std::memory_order_relaxed)) return false;
  AddToOwnCounter(*tls_writer.not_recorded, events);
  return true;
}

// Refill() for an event counted as `events` when not recorded.
GNOMON_COLD inline uint8_t* RefillCounting(size_t bytes, uint64_t events) {
  uint8_t* p = Refill(bytes);
  if (p == nullptr && events > 1) CountNotRecorded(events - 1);
  return p;
}

// Where to write `bytes`, or nullptr when the event is not recorded; it is then counted
// as `events` events (a zone's begin may count its end with it: one increment a zone
// instead of two dependent ones).
GNOMON_HOT uint8_t* Reserve(size_t bytes, uint64_t events = 1) {
  if (GNOMON_UNLIKELY(tls_writer.limit - tls_writer.cursor < static_cast<ptrdiff_t>(bytes)))
    return SkipWhileNotRecording(bytes, events) ? nullptr : RefillCounting(bytes, events);
  return tls_writer.cursor;
}

GNOMON_HOT void Commit(uint8_t* end) {
  tls_writer.cursor = end;
  tls_writer.committed->store(static_cast<uint32_t>(end - tls_writer.base), std::memory_order_release);
}

uint32_t RegisterSourceLocation(struct ::gnomon_source_location* location);

}  // namespace gnomon::detail
