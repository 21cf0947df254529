// Statistical samples of every thread of the program, and when each runs, from the
// kernel's perf events (GNOMON_SAMPLING_HZ, GNOMON_CONTEXT_SWITCHES).
//
// One software event per CPU and per thread alive when it starts, each inherited by
// the threads those create later, all of a CPU writing into one ring buffer; so a
// normal user (kernel.perf_event_paranoid up to 2) samples its own program, user
// space only. A reader thread of the library's own drains the rings every few
// milliseconds and records each sample (the sampled address and its callers: the
// kernel's frame-pointer walk, completed by the unwind tables over a copy of the top of
// the stack, core/unwinder.h) and each switch as events (whether a thread switched out
// was preempted or blocked, where the kernel says); with the switches, the machine's and
// the program's CPU use as two plots. Where the kernel refuses, the program says why
// once, in the trace and on stderr, and carries on without them.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "unwinder.h"

namespace gnomon::client {

class Registry;

class Sampler {
 public:
  explicit Sampler(Registry& registry) : registry_(registry) {}
  ~Sampler() { Stop(); }
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Opens the events and starts the reader; false (said once) when the kernel refuses.
  bool Start(uint32_t sampling_hz, bool context_switches);
  // Drains what is left and closes everything.
  void Stop();

 private:
  struct Ring {
    int fd = -1;
    void* map = nullptr;
    uint32_t cpu = 0;
  };
  void Run();
  // Records every complete record in the ring; returns how many.
  size_t Drain(Ring& ring);

  Registry& registry_;
  std::vector<Ring> rings_;  // one per CPU
  std::vector<int> others_;  // the other events, writing into their CPU's ring
  std::thread reader_;
  std::atomic<bool> stop_{false};
  bool sampling_ = false;
  bool with_stacks_ = false;  // samples carry registers and a copy of the stack
  bool switches_ = false;     // context switches, and the CPU usage plots beside them
  pid_t pid_ = 0;             // this process: inherited events of others are not recorded
  uint64_t lost_ = 0;         // records the kernel could not write (the reader's)
  StackUnwinder unwinder_;    // on the reader's thread
};

}  // namespace gnomon::client
