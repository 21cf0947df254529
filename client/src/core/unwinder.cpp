#include "unwinder.h"

#include <elfutils/libdwfl.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>

namespace gnomon::client {
namespace {

constexpr size_t kMostWalked = 128;  // frames a walk keeps

// The dynamic linker's counts of the libraries it loaded and unloaded so far.
std::pair<unsigned long long, unsigned long long> LoadCounts() {
  std::pair<unsigned long long, unsigned long long> counts{0, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* data) {
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
          *static_cast<std::pair<unsigned long long, unsigned long long>*>(data) = {info->dlpi_adds,
                                                                                    info->dlpi_subs};
        }
        return 1;  // the counts are the same in every entry
      },
      &counts);
  return counts;
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

Dwfl* StackUnwinder::Report() {
  Dwfl* dwfl = dwfl_begin(&kModuleCallbacks);
  if (dwfl == nullptr) return nullptr;
  dwfl_report_begin(dwfl);
  if (dwfl_linux_proc_report(dwfl, getpid()) != 0 || dwfl_report_end(dwfl, nullptr, nullptr) != 0 ||
      !dwfl_attach_state(dwfl, nullptr, getpid(), &kThreadCallbacks, this)) {
    dwfl_end(dwfl);
    return nullptr;
  }
  return dwfl;
}

// Reads the process's modules, and again when `pc` lies in none of them and a library
// was loaded or unloaded since (the unwind tables read so far are kept otherwise).
bool StackUnwinder::Ready(uint64_t pc) {
  if (failed_) return false;
  if (dwfl_ != nullptr && dwfl_addrmodule(dwfl_, pc) != nullptr) return true;
  const auto [loads, unloads] = LoadCounts();
  if (dwfl_ != nullptr && loads == loads_ && unloads == unloads_) return false;
  loads_ = loads;
  unloads_ = unloads;
  if (Dwfl* fresh = Report()) {
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
    dwfl_ = fresh;
  } else if (dwfl_ == nullptr) {
    failed_ = true;  // never set up: the kernel's walks stay
    return false;
  }
  return dwfl_addrmodule(dwfl_, pc) != nullptr;
}

size_t SpliceWalks(std::span<const uint64_t> walked, bool complete, uint64_t* frames, size_t depth,
                   size_t capacity) {
  // A walk that ended on a zero return address (a frame-pointer guess gone wrong) is not
  // one to trust past it.
  size_t n = walked.size();
  while (n > 0 && walked[n - 1] == 0) {
    --n;
    complete = false;
  }
  n = std::min(n, capacity);
  if (n == 0) return std::min(depth, capacity);
  if (complete || n == capacity) {
    std::copy_n(walked.begin(), n, frames);
    return n;
  }
  // The kernel's frames go on after the last walked frame it found too.
  size_t join = std::min<size_t>(depth, 1);  // both start at the sampled address
  for (size_t i = 1, j = 1; i < n && j <= depth; ++i) {
    const uint64_t* found = std::find(frames + j, frames + depth, walked[i]);
    if (found == frames + depth) continue;
    j = size_t(found - frames) + 1;
    join = j;
  }
  const size_t kept = std::min(depth - join, capacity - n);
  std::memmove(frames + n, frames + join, kept * sizeof(uint64_t));
  std::copy_n(walked.begin(), n, frames);
  return n + kept;
}

size_t StackUnwinder::Complete(std::span<const uint64_t, kSampledRegisters> registers,
                               std::span<const uint8_t> stack, uint64_t* frames, size_t depth,
                               size_t capacity) {
  if (RegisterMask() == 0 || capacity == 0 || !Ready(registers[8])) return depth;
  uint64_t walked[kMostWalked];
  registers_ = registers;
  stack_ = stack;
  walked_ = walked;
  walked_depth_ = 0;
  walked_capacity_ = std::min(capacity, kMostWalked);
  // 0: walked to the outermost frame; otherwise it stopped where the copy ends (or
  // at a frame without unwind tables).
  const int result = dwfl_getthread_frames(dwfl_, getpid(), UnwinderCallbacks::Frame, this);
  stack_ = {};
  return SpliceWalks({walked, walked_depth_}, result == 0, frames, depth, capacity);
}

}  // namespace gnomon::client
