// Completes a sample's call chain by the code's call frame information, where the
// kernel's frame-pointer walk loses callers.
//
// The kernel walks a sampled thread's stack by its frame pointers. Code built without
// them (the default at -O1 and above, and most of the system's libraries) leaves the
// walk with whatever the frame-pointer register held: the callers of such a function
// are skipped or wrong. The vDSO and the C library's wrappers around it are the common
// case: a program reading the clock in a hot loop showed `clock_gettime` called straight
// from `__libc_start_call_main`, its own function gone.
//
// With each sample the kernel copies the thread's registers and the top of its stack.
// This unwinder walks that copy by the unwind tables (.eh_frame) of the modules mapped
// in the process (the vDSO's included), with libdw; then splices the kernel's walk
// where the copy ends: the kernel's frames after the last frame both walks agree on.
// It runs on the sampler's thread, in the process the samples are of, so the modules
// it reads are the very code that ran.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

struct Dwfl;

namespace gnomon::client {

// The registers a sample carries, in the kernel's order for x86-64 (perf_regs.h):
// ax bx cx dx si di bp sp ip, then r8 to r15.
inline constexpr size_t kSampledRegisters = 17;

// Puts the unwinder's walk `walked` (innermost first) in front of the kernel's walk
// `frames[0, depth)`: the kernel's frames after the last walked frame both found, in
// order (a recursion repeats addresses), follow the walk; a walk `complete` to the
// outermost frame stands alone. Returns the new depth, at most `capacity`.
size_t SpliceWalks(std::span<const uint64_t> walked, bool complete, uint64_t* frames, size_t depth,
                   size_t capacity);

class StackUnwinder {
 public:
  // The kernel's mask of the registers above; 0 where this unwinder does not run
  // (another architecture): samples then carry the kernel's walk only.
  static uint64_t RegisterMask();

  StackUnwinder() = default;
  ~StackUnwinder();
  StackUnwinder(const StackUnwinder&) = delete;
  StackUnwinder& operator=(const StackUnwinder&) = delete;

  // Rewrites `frames[0, depth)` (the kernel's walk, innermost first) with the walk over
  // `stack` (bytes copied from the stack pointer up); returns the new depth, at most
  // `capacity`. Without unwind tables for the sampled address, the kernel's walk stays.
  size_t Complete(std::span<const uint64_t, kSampledRegisters> registers, std::span<const uint8_t> stack,
                  uint64_t* frames, size_t depth, size_t capacity);

 private:
  bool Ready(uint64_t pc);
  // A libdw session over the modules mapped now, or nullptr.
  Dwfl* Report();

  Dwfl* dwfl_ = nullptr;
  bool failed_ = false;  // libdw could not be set up at all: the kernel's walks stay
  // The dynamic linker's counts of libraries loaded and unloaded when the modules were
  // last read: an address in no module is looked for again only when they changed (a
  // library loaded since), not for code outside every file (a JIT's).
  unsigned long long loads_ = 0, unloads_ = 0;
  // The sample being walked, for libdw's callbacks.
  std::span<const uint64_t, kSampledRegisters> registers_{static_cast<const uint64_t*>(nullptr),
                                                          kSampledRegisters};
  std::span<const uint8_t> stack_;
  uint64_t* walked_ = nullptr;
  size_t walked_depth_ = 0, walked_capacity_ = 0;

  friend struct UnwinderCallbacks;
};

}  // namespace gnomon::client
