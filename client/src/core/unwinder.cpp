#include "unwinder.h"

#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>

namespace gnomon::client {
namespace {

constexpr size_t kMostWalked = 128;  // frames a walk keeps
constexpr int64_t kReportPeriodNs = 1'000'000'000;

int64_t NowNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// The unwind tables the modules carry (.eh_frame) are enough: no separate debug files
// are looked for.
int NoDebugFile(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*, GElf_Word, char**) {
  return -1;
}

const Dwfl_Callbacks kModuleCallbacks = {
    .find_elf = dwfl_linux_proc_find_elf,  // mapped files by their path, the vDSO from memory
    .find_debuginfo = NoDebugFile,
    .section_address = nullptr,
    .debuginfo_path = nullptr,
};

}  // namespace

// libdw's view of the one thread being walked: the sample's registers and stack copy.
struct UnwinderCallbacks {
  static StackUnwinder& Of(void* arg) { return *static_cast<StackUnwinder*>(arg); }

  static pid_t NextThread(Dwfl*, void*, void**) { return 0; }

  static bool GetThread(Dwfl*, pid_t, void* arg, void** thread_arg) {
    *thread_arg = arg;
    return true;
  }

  // Only the copied stack is read: memory anywhere else may have changed since, or be gone.
  static bool MemoryRead(Dwfl*, Dwarf_Addr address, Dwarf_Word* result, void* arg) {
    const StackUnwinder& u = Of(arg);
    const uint64_t sp = u.registers_[7];
    if (address < sp || u.stack_.size() < 8 || address - sp > u.stack_.size() - 8) return false;
    std::memcpy(result, u.stack_.data() + (address - sp), 8);
    return true;
  }

  static bool SetInitialRegisters(Dwfl_Thread* thread, void* arg) {
    const auto& r = Of(arg).registers_;
    // DWARF's numbering for x86-64: ax dx cx bx si di bp sp, then r8 to r15.
    const Dwarf_Word dwarf[16] = {r[0], r[3],  r[2],  r[1],  r[4],  r[5],  r[6],  r[7],
                                  r[9], r[10], r[11], r[12], r[13], r[14], r[15], r[16]};
    if (!dwfl_thread_state_registers(thread, 0, 16, dwarf)) return false;
    dwfl_thread_state_register_pc(thread, r[8]);
    return true;
  }

  static int Frame(Dwfl_Frame* frame, void* arg) {
    StackUnwinder& u = Of(arg);
    Dwarf_Addr pc = 0;
    bool activation = false;
    if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
    u.walked_[u.walked_depth_++] = pc;
    return u.walked_depth_ < u.walked_capacity_ ? DWARF_CB_OK : DWARF_CB_ABORT;
  }
};

namespace {

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    .next_thread = UnwinderCallbacks::NextThread,
    .get_thread = UnwinderCallbacks::GetThread,
    .memory_read = UnwinderCallbacks::MemoryRead,
    .set_initial_registers = UnwinderCallbacks::SetInitialRegisters,
    .detach = nullptr,
    .thread_detach = nullptr,
};

}  // namespace

uint64_t StackUnwinder::RegisterMask() {
#if defined(__x86_64__)
  return 0x1ffull | (0xffull << 16);  // ax..ip (0-8), r8..r15 (16-23)
#else
  return 0;
#endif
}

StackUnwinder::~StackUnwinder() {
  if (dwfl_ != nullptr) dwfl_end(dwfl_);
}

// Reads the process's modules (again, when `pc` lies in none of them: a library loaded
// since, looked for at most once a second).
bool StackUnwinder::Ready(uint64_t pc) {
  if (failed_) return false;
  if (dwfl_ != nullptr && dwfl_addrmodule(dwfl_, pc) != nullptr) return true;
  const int64_t now = NowNs();
  if (dwfl_ != nullptr && now - reported_ns_ < kReportPeriodNs) return false;
  reported_ns_ = now;
  if (dwfl_ != nullptr) dwfl_end(dwfl_);
  dwfl_ = dwfl_begin(&kModuleCallbacks);
  if (dwfl_ == nullptr) {
    failed_ = true;
    return false;
  }
  dwfl_report_begin(dwfl_);
  const bool reported = dwfl_linux_proc_report(dwfl_, getpid()) == 0 &&
                        dwfl_report_end(dwfl_, nullptr, nullptr) == 0 &&
                        dwfl_attach_state(dwfl_, nullptr, getpid(), &kThreadCallbacks, this);
  if (!reported) {
    dwfl_end(dwfl_);
    dwfl_ = nullptr;
    failed_ = true;
    return false;
  }
  return dwfl_addrmodule(dwfl_, pc) != nullptr;
}

size_t StackUnwinder::Complete(std::span<const uint64_t, kSampledRegisters> registers,
                               std::span<const uint8_t> stack, uint64_t* frames, size_t depth,
                               size_t capacity) {
  if (RegisterMask() == 0 || depth == 0 || !Ready(registers[8])) return depth;
  uint64_t walked[kMostWalked];
  registers_ = registers;
  stack_ = stack;
  walked_ = walked;
  walked_depth_ = 0;
  walked_capacity_ = std::min(capacity, kMostWalked);
  // 0: walked to the outermost frame; otherwise it stopped where the copy ends (or
  // at a frame without unwind tables).
  const int result = dwfl_getthread_frames(dwfl_, getpid(), UnwinderCallbacks::Frame, this);
  const size_t n = walked_depth_;
  stack_ = {};
  if (n == 0) return depth;
  if (result == 0 || n == walked_capacity_) {
    std::copy_n(walked, n, frames);
    return n;
  }
  // The kernel's frames go on after the last walked frame it found too (in order: a
  // recursion repeats addresses).
  size_t join = 1;  // both start at the sampled address
  for (size_t i = 1, j = 1; i < n; ++i) {
    const uint64_t* found = std::find(frames + j, frames + depth, walked[i]);
    if (found == frames + depth) continue;
    j = size_t(found - frames) + 1;
    join = j;
  }
  const size_t kept = std::min(depth - join, capacity - n);
  std::memmove(frames + n, frames + join, kept * sizeof(uint64_t));
  std::copy_n(walked, n, frames);
  return n + kept;
}

}  // namespace gnomon::client
