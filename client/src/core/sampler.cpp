#include "sampler.h"

#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gnomon/client/thread_writer.h"
#include "gnomon/gnomon.h"
#include "gnomon/protocol/messages.h"
#include "inside_library.h"
#include "profiler.h"
#include "registry.h"
#include "unwinder.h"

namespace gnomon::client {
namespace {

constexpr size_t kRingPages = 64;           // 256 KiB a CPU
constexpr size_t kMaxThreadsAtStart = 256;  // threads opened one by one; later ones inherit
constexpr auto kDrainPeriod = std::chrono::milliseconds(5);
// PERF_CONTEXT_MAX (-4095) and above mark where kernel, user and guest frames begin.
constexpr uint64_t kFirstContextMarker = ~uint64_t(0) - 4094;

// The top of the stack each sample copies, for the unwinder: as much as lets a CPU's ring
// hold 40 ms of its samples (a drain late by eight periods loses nothing), between 512
// bytes and 8 KiB: 6 KiB at 1 kHz.
constexpr uint64_t kRingHoldsMs = 40;
uint32_t StackCopyBytes(uint32_t sampling_hz, size_t page) {
  const uint64_t per_ring = uint64_t(sampling_hz) * kRingHoldsMs / 1000 + 1;
  const uint64_t room = kRingPages * page / per_ring;
  return uint32_t(std::clamp<uint64_t>(room, 512, 8192) & ~uint64_t(7));
}

// Copies `n` bytes at `offset` out of a ring of `size` bytes, across its end if need be.
void CopyOut(const uint8_t* ring, size_t size, uint64_t offset, size_t n, uint8_t* out) {
  const size_t at = size_t(offset % size);
  const size_t first = std::min(n, size - at);
  std::memcpy(out, ring + at, first);
  std::memcpy(out + first, ring, n - first);
}

long PerfEventOpen(perf_event_attr* attr, pid_t tid, int cpu, int group) {
  return syscall(SYS_perf_event_open, attr, tid, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

std::vector<pid_t> Threads() {
  std::vector<pid_t> threads;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      const long tid = std::strtol(entry->d_name, nullptr, 10);
      if (tid > 0 && threads.size() < kMaxThreadsAtStart) threads.push_back(pid_t(tid));
    }
    closedir(dir);
  }
  return threads;
}

int Paranoid() {
  int level = -100;
  if (std::FILE* file = std::fopen("/proc/sys/kernel/perf_event_paranoid", "r")) {
    if (std::fscanf(file, "%d", &level) != 1) level = -100;
    std::fclose(file);
  }
  return level;
}

// Says once, in the trace and on stderr, why there are no samples or switches.
void SayRefused(const char* what, int error) {
  char text[320];
  const int paranoid = Paranoid();
  std::snprintf(
      text, sizeof(text),
      "gnomon: %s unavailable: perf_event_open: %s%s%s. The program runs on without them.", what,
      std::strerror(error), paranoid > 2 ? " (kernel.perf_event_paranoid is " : "",
      paranoid > 2
          ? std::to_string(paranoid).append(": 2 or less lets a user sample its own programs)").c_str()
          : "");
  std::fprintf(stderr, "%s\n", text);
  gnomon_message(text, std::strlen(text), GNOMON_WARNING);
}

// The machine's and the program's use of the CPUs, in cores busy, as two plots beside
// the context switches: the kernel's counts (/proc/stat, /proc/self/stat) read every
// quarter of a second by the reader.
class CpuUsage {
 public:
  void Record() {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) return;
    next_ = now + std::chrono::milliseconds(250);
    uint64_t busy = 0, total = 0, program = 0;
    if (!ReadMachine(busy, total) || !ReadProgram(program)) return;
    if (seen_) {
      const double cores = double(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
      const double seconds = std::chrono::duration<double>(now - then_).count();
      if (total > total_ && seconds > 0) {
        gnomon_plot(machine_id_, cores * double(busy - std::min(busy, busy_)) / double(total - total_));
        gnomon_plot(program_id_,
                    double(program - std::min(program, program_)) / double(ticks_per_second_) / seconds);
      }
    } else {
      machine_id_ = gnomon_plot_id("CPU: machine (cores busy)");
      program_id_ = gnomon_plot_id("CPU: this program (cores busy)");
      seen_ = true;
    }
    busy_ = busy;
    total_ = total;
    program_ = program;
    then_ = now;
  }

 private:
  // The first line of /proc/stat: user nice system idle iowait irq softirq steal, in ticks.
  static bool ReadMachine(uint64_t& busy, uint64_t& total) {
    std::FILE* file = std::fopen("/proc/stat", "r");
    if (file == nullptr) return false;
    unsigned long long v[8] = {};
    const int n = std::fscanf(file, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                              &v[4], &v[5], &v[6], &v[7]);
    std::fclose(file);
    if (n < 5) return false;
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    total = busy + v[3] + v[4];
    return true;
  }
  // utime + stime of /proc/self/stat, in ticks: the fields after the command's name.
  static bool ReadProgram(uint64_t& ticks) {
    char text[1024];
    std::FILE* file = std::fopen("/proc/self/stat", "r");
    if (file == nullptr) return false;
    const size_t n = std::fread(text, 1, sizeof(text) - 1, file);
    std::fclose(file);
    text[n] = '\0';
    const char* after = std::strrchr(text, ')');
    unsigned long long user = 0, system = 0;
    if (after == nullptr ||
        std::sscanf(after + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &user, &system) != 2)
      return false;
    ticks = user + system;
    return true;
  }

  std::chrono::steady_clock::time_point next_{}, then_{};
  bool seen_ = false;
  uint64_t busy_ = 0, total_ = 0, program_ = 0;
  uint32_t machine_id_ = 0, program_id_ = 0;
  const long ticks_per_second_ = std::max(1L, sysconf(_SC_CLK_TCK));
};

// Writes one fixed-size or tailed message on the reader's own buffer.
template <typename M>
void Record(const M& m, const typename M::Tail& tail = {}) {
  uint8_t* p = detail::Reserve(protocol::WireSize<M>(tail));
  if (p != nullptr) detail::Commit(protocol::WriteMessage(p, m, tail));
}

}  // namespace

bool Sampler::Start(uint32_t sampling_hz, bool context_switches) {
  InsideLibrary inside;
  sampling_ = sampling_hz != 0;
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = sampling_ ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_DUMMY;
  if (sampling_) {
    attr.freq = 1;
    attr.sample_freq = sampling_hz;
  }
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  if (sampling_ && StackUnwinder::RegisterMask() != 0) {
    // The registers and the top of the stack, for the unwinder to find the callers the
    // kernel's frame-pointer walk loses.
    attr.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    attr.sample_regs_user = StackUnwinder::RegisterMask();
    attr.sample_stack_user = StackCopyBytes(sampling_hz, page);
  }
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.exclude_callchain_kernel = 1;
  attr.inherit = 1;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC_RAW;
  attr.context_switch = context_switches ? 1 : 0;
  attr.sample_id_all = 1;  // switch records carry the thread and the time too
  attr.wakeup_events = 1;
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_CONF));
  const std::vector<pid_t> threads = Threads();
  if (attr.sample_stack_user != 0) {
    // A kernel that cannot copy registers and stacks still samples the kernel's walk.
    const long probe = PerfEventOpen(&attr, 0, -1, -1);
    if (probe >= 0) {
      close(int(probe));
    } else if (errno == EINVAL || errno == EOPNOTSUPP) {
      attr.sample_type &= ~uint64_t(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
      attr.sample_regs_user = 0;
      attr.sample_stack_user = 0;
    }
  }
  with_stacks_ = (attr.sample_type & PERF_SAMPLE_STACK_USER) != 0;
  switches_ = context_switches;
  pid_ = getpid();
  // An event per CPU and thread: the descriptors are bounded by a share of the limit.
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  const size_t budget = std::min<size_t>(files.rlim_cur == RLIM_INFINITY ? 65536 : files.rlim_cur / 2, 65536);
  const char* what = sampling_ ? "sampling" : "context switches";
  rings_.resize(size_t(cpus));
  size_t covered = 0;
  int last_error = ENODEV;
  for (pid_t tid : threads) {
    if (covered > 0 && (covered + 1) * size_t(cpus) > budget) break;
    for (int cpu = 0; cpu < cpus; ++cpu) {
      Ring& ring = rings_[size_t(cpu)];
      ring.cpu = uint32_t(cpu);
      const long fd = PerfEventOpen(&attr, tid, cpu, -1);
      if (fd < 0) {
        if (errno == ESRCH) break;                 // the thread has just exited
        if (errno == ENODEV || errno == EINVAL) {  // a CPU that is not online
          last_error = errno;
          continue;
        }
        const int error = errno;
        Stop();
        SayRefused(what, error);
        return false;
      }
      if (ring.fd < 0) {
        ring.fd = int(fd);
        ring.map = mmap(nullptr, (kRingPages + 1) * page, PROT_READ | PROT_WRITE, MAP_SHARED, ring.fd, 0);
        if (ring.map == MAP_FAILED) {
          const int error = errno;
          ring.map = nullptr;
          Stop();
          SayRefused(what, error);
          return false;
        }
      } else if (ioctl(int(fd), PERF_EVENT_IOC_SET_OUTPUT, ring.fd) != 0) {
        close(int(fd));  // this thread on this CPU goes unsampled; the rest carry on
      } else {
        others_.push_back(int(fd));
      }
    }
    ++covered;
  }
  std::erase_if(rings_, [](const Ring& ring) { return ring.fd < 0; });
  if (rings_.empty()) {
    SayRefused(what, last_error);
    return false;
  }
  if (covered < threads.size()) {
    char text[200];
    std::snprintf(text, sizeof(text),
                  "gnomon: %s covers %zu of the %zu threads alive at start (the open file limit); threads "
                  "started later are all covered",
                  what, covered, threads.size());
    std::fprintf(stderr, "%s\n", text);
    gnomon_message(text, std::strlen(text), GNOMON_WARNING);
  }
  reader_ = std::thread([this] { Run(); });
  return true;
}

void Sampler::Stop() {
  if (reader_.joinable()) {
    stop_.store(true);
    reader_.join();
    if (lost_ != 0) {
      const std::string text = "gnomon: the kernel dropped " + std::to_string(lost_) +
                               " samples or context switches in all (the sampler's rings were full)";
      gnomon_message(text.data(), text.size(), GNOMON_WARNING);
    }
  }
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (Ring& ring : rings_) {
    if (ring.map != nullptr) munmap(ring.map, (kRingPages + 1) * page);
    if (ring.fd >= 0) close(ring.fd);
  }
  for (int fd : others_) close(fd);
  rings_.clear();
  others_.clear();
}

void Sampler::Run() {
  MarkLibraryThread();
  NameLibraryThread("gnomon sampler");
  CpuUsage usage;
  for (;;) {
    const bool stopping = stop_.load();
    for (Ring& ring : rings_) Drain(ring);
    if (switches_) usage.Record();
    if (stopping) break;
    std::this_thread::sleep_for(kDrainPeriod);
  }
}

size_t Sampler::Drain(Ring& ring) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t size = kRingPages * page;
  auto* header = static_cast<perf_event_mmap_page*>(ring.map);
  const uint8_t* data = static_cast<const uint8_t*>(ring.map) + page;
  const uint64_t head = __atomic_load_n(&header->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = header->data_tail;
  size_t records = 0;
  // A record may wrap around the ring's end: copied out whole before it is read.
  alignas(8) uint8_t record[64 * 1024];
  while (tail + sizeof(perf_event_header) <= head) {
    perf_event_header h;
    CopyOut(data, size, tail, sizeof(h), reinterpret_cast<uint8_t*>(&h));
    if (h.size < sizeof(h)) {  // not a record: what the ring holds is skipped, not read forever
      tail = head;
      break;
    }
    if (tail + h.size > head) break;  // h.size fits `record` (16 bits)
    CopyOut(data, size, tail, h.size, record);
    tail += h.size;
    // Copied out: its room goes back to the kernel now, not after the unwinding of
    // every record this drain reads.
    __atomic_store_n(&header->data_tail, tail, __ATOMIC_RELEASE);
    ++records;
    const uint8_t* p = record + sizeof(h);
    const uint8_t* end = record + h.size;
    auto u32 = [&](size_t at) {
      uint32_t v;
      std::memcpy(&v, p + at, 4);
      return v;
    };
    auto u64 = [&](size_t at) {
      uint64_t v;
      std::memcpy(&v, p + at, 8);
      return v;
    };
    // Events are inherited by the threads the program creates, and by the processes it
    // forks and runs: those of another process are not this program's.
    if ((h.type == PERF_RECORD_SAMPLE || h.type == PERF_RECORD_SWITCH) && end - p >= 4 &&
        u32(0) != uint32_t(pid_)) {
      continue;
    }
    if (h.type == PERF_RECORD_LOST && end - p >= 16) {
      // The ring was full: the kernel says how many records it could not write.
      if (lost_ == 0) {
        const std::string text =
            "gnomon: the kernel dropped samples or context switches: the sampler's thread fell behind "
            "(a lower GNOMON_SAMPLING_HZ keeps up)";
        gnomon_message(text.data(), text.size(), GNOMON_WARNING);
      }
      lost_ += u64(8);
      continue;
    }
    if (h.type == PERF_RECORD_SAMPLE && end - p >= 24) {
      // pid, tid, time, then the call chain: its length and the addresses.
      const size_t bytes = size_t(end - p);
      const uint32_t tid = u32(4);
      const uint64_t ticks = registry_.HostNsToTicks(true, int64_t(u64(8)));
      const uint64_t count = u64(16);
      uint64_t frames[128];
      size_t depth = 0;
      for (uint64_t i = 0; i < count && 24 + 8 * (i + 1) <= bytes && depth < std::size(frames); ++i) {
        const uint64_t address = u64(24 + 8 * i);
        if (address >= kFirstContextMarker) continue;  // the markers between kernel and user
        frames[depth++] = address;
      }
      // Then the registers (their ABI, 0 when there are none) and the stack's copy (its
      // size, the bytes, and how many of them the kernel filled).
      size_t at = 24 + 8 * size_t(std::min<uint64_t>(count, bytes / 8));
      if (with_stacks_ && at + 8 <= bytes && u64(at) != PERF_SAMPLE_REGS_ABI_NONE &&
          at + 8 + 8 * kSampledRegisters + 8 <= bytes) {
        uint64_t registers[kSampledRegisters];
        std::memcpy(registers, p + at + 8, sizeof(registers));
        at += 8 + sizeof(registers);
        const uint64_t copied = u64(at);
        if (copied > 0 && copied <= bytes && at + 16 + copied <= bytes) {
          const uint64_t filled = std::min(u64(at + 8 + copied), copied);
          depth =
              unwinder_.Complete(registers, {p + at + 8, size_t(filled)}, frames, depth, std::size(frames));
        }
      }
      Record(protocol::Sample{.os_thread_id = tid, .tick = ticks},
             {.frames = {reinterpret_cast<const uint8_t*>(frames), depth}});
    } else if ((h.type == PERF_RECORD_SWITCH) && end - p >= 16) {
      // sample_id: pid, tid, time.
      const uint32_t tid = u32(4);
      const uint64_t ticks = registry_.HostNsToTicks(true, int64_t(u64(8)));
      const bool out = (h.misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
      // Since Linux 4.17 the kernel says whether a thread switched out could have run on.
      const bool preempted = out && (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
      Record(protocol::ContextSwitch{.os_thread_id = tid,
                                     .kind = uint8_t(preempted ? protocol::ContextSwitchKind::kOutPreempted
                                                     : out     ? protocol::ContextSwitchKind::kOut
                                                               : protocol::ContextSwitchKind::kIn),
                                     .cpu = ring.cpu,
                                     .tick = ticks});
    }
  }
  __atomic_store_n(&header->data_tail, tail, __ATOMIC_RELEASE);
  return records;
}

}  // namespace gnomon::client
