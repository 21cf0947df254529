// A program with exactly known memory and lock events, for the integration tests. It
// tracks every operator new and delete (gnomon/new_delete.hpp).
//
//   gnomon-test-resources memory   allocations of known sizes in three pools, some
//                                  never freed, a free of an unknown pointer
//   gnomon-test-resources locks    locks of every kind, one made to contend a known
//                                  number of times
//   gnomon-test-resources stacks   zones and an allocation three known functions deep
//                                  (run it with GNOMON_CALLSTACK_DEPTH), and a zone
//                                  with a stack of its own depth
//   gnomon-test-resources samples  a function that burns 300 ms of CPU, and a thread
//                                  that sleeps 30 times (GNOMON_SAMPLING_HZ,
//                                  GNOMON_CONTEXT_SWITCHES)
//   gnomon-test-resources hot-lines  3/4 of a second of CPU on one line, 1/4 on the next
//   gnomon-test-resources allocation-paths  allocations along two known call paths
//   gnomon-test-resources busy-threads  three threads each burning 0.3 s of CPU
//   gnomon-test-resources clock-loop  0.5 s of CPU reading the clock, mostly in the vDSO
//
// Each waits for a server before it records, and at exit for the capture to drain
// (run it with GNOMON_WAIT_FOR_SERVER_MS).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <gnomon/gnomon.hpp>
#include <gnomon/new_delete.hpp>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

// Default pool: 1,000 blocks of 16 * (i + 1) bytes, all freed but the last 37.
// "meshes": 100 blocks of 4 KiB, half freed, named through a buffer the program reuses.
// operator new: 5 arrays of 12,345 bytes, 2 never deleted.
// One free of a pointer never allocated. "after the fact": one block of 2,222 bytes
// recorded at past times, alive 1 ms.
int Memory() {
  std::vector<void*> blocks;
  for (size_t i = 0; i < 1000; ++i) {
    void* p = std::malloc(16 * (i + 1));
    GNOMON_ALLOC(p, 16 * (i + 1));
    blocks.push_back(p);
  }
  for (size_t i = 0; i < 1000 - 37; ++i) {
    GNOMON_FREE(blocks[i]);
    std::free(blocks[i]);
  }
  char pool_name[16];
  std::snprintf(pool_name, sizeof(pool_name), "%s", "meshes");
  std::vector<void*> meshes;
  for (int i = 0; i < 100; ++i) {
    void* p = std::malloc(4096);
    gnomon_alloc(p, 4096, pool_name);
    meshes.push_back(p);
  }
  for (int i = 0; i < 50; ++i) {
    GNOMON_FREE_NAMED(meshes[i], "meshes");
    std::free(meshes[i]);
  }
  std::snprintf(pool_name, sizeof(pool_name), "%s", "scratch");  // same buffer, another pool
  gnomon_alloc(meshes[99], 1, pool_name);
  gnomon_free(meshes[99], pool_name);
  std::vector<char*> arrays;
  for (int i = 0; i < 5; ++i) arrays.push_back(new char[12345]);
  for (int i = 0; i < 3; ++i) delete[] arrays[i];
  static int never_allocated;
  GNOMON_FREE(&never_allocated);
  // Learnt after the fact (as a GPU driver's records are): made at a moment since the
  // profiler started, freed 1 ms after it, both told 3 ms later.
  timespec raw{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &raw);
  const int64_t then_ns = int64_t(raw.tv_sec) * 1'000'000'000 + raw.tv_nsec;
  std::this_thread::sleep_for(3ms);
  static int past_block;
  gnomon_alloc_at(&past_block, 2222, "after the fact",
                  gnomon_cpu_time_from_host_ns(GNOMON_CPU_TIME_MONOTONIC_RAW, then_ns));
  gnomon_free_at(&past_block, "after the fact",
                 gnomon_cpu_time_from_host_ns(GNOMON_CPU_TIME_MONOTONIC_RAW, then_ns + 1'000'000));
  std::puts("memory done");
  // What the trace shows never freed is freed once profiling has ended.
  gnomon_shutdown();
  for (size_t i = 1000 - 37; i < 1000; ++i) std::free(blocks[i]);
  for (int i = 50; i < 100; ++i) std::free(meshes[i]);
  for (int i = 3; i < 5; ++i) delete[] arrays[i];
  return 0;
}

// A mutex that counts its first tries that failed: each is an acquisition that had to
// wait, which the capture must show as contended.
std::atomic<int> g_failed_tries{0};
struct CountingMutex {
  std::mutex mutex;
  void lock() { mutex.lock(); }
  bool try_lock() {
    const bool taken = mutex.try_lock();
    if (!taken) ++g_failed_tries;
    return taken;
  }
  void unlock() { mutex.unlock(); }
};

// "contended": 20 rounds in which a second thread asks for it while the first holds it
// (2 ms): as many contended acquisitions as first tries failed, which the program
// prints. "quiet": 100 uncontended, through lock_guard and unique_lock. "table": 10
// readers' holds (shared_lock) and 1 writer's. "nested": a recursive mutex taken twice,
// 5 times. "pair a"/"pair b": 3 scoped_locks of both. "c lock": the C API, 4 holds, 1
// after a wait.
int Locks() {
  gnomon::Lockable<CountingMutex> contended("contended");
  std::atomic<int> phase{0};
  std::thread second([&] {
    gnomon::SetThreadName("second");
    for (int round = 0; round < 20; ++round) {
      while (phase.load() != 2 * round + 1) std::this_thread::yield();  // the first holds it
      { std::lock_guard lock(contended); }
      phase.store(2 * round + 2);  // let go
    }
  });
  for (int round = 0; round < 20; ++round) {
    while (phase.load() != 2 * round) std::this_thread::yield();
    contended.lock();
    phase.store(2 * round + 1);
    std::this_thread::sleep_for(2ms);  // the second asks meanwhile
    contended.unlock();
  }
  second.join();

  gnomon::Lockable<std::mutex> quiet("quiet");
  for (int i = 0; i < 50; ++i) std::lock_guard lock(quiet);
  for (int i = 0; i < 50; ++i) {
    std::unique_lock lock(quiet);
  }
  gnomon::Lockable<std::shared_mutex> table("table");
  for (int i = 0; i < 10; ++i) std::shared_lock reader(table);
  { std::unique_lock writer(table); }
  gnomon::Lockable<std::recursive_mutex> nested("nested");
  for (int i = 0; i < 5; ++i) {
    std::lock_guard outer(nested);
    std::lock_guard inner(nested);
  }
  gnomon::Lockable<std::mutex> a("pair a"), b("pair b");
  for (int i = 0; i < 3; ++i) std::scoped_lock both(a, b);
  const uint32_t c_lock = gnomon_lock_create("c lock");
  for (int i = 0; i < 4; ++i) {
    if (i == 3) gnomon_lock_wait(c_lock);
    gnomon_lock_obtain(c_lock);
    gnomon_lock_release(c_lock);
  }
  std::printf("locks done: contended %d\n", g_failed_tries.load());
  return 0;
}

// Three functions deep, each kept a frame of its own.
[[gnu::noinline]] void StackInner() {
  GNOMON_ZONE("stack inner");
  void* block = std::malloc(777);
  GNOMON_ALLOC(block, 777);
  GNOMON_FREE(block);
  std::free(block);
  asm volatile("" ::: "memory");
}
[[gnu::noinline]] void StackMiddle() {
  StackInner();
  asm volatile("" ::: "memory");
}
[[gnu::noinline]] void StackOuter() {
  StackMiddle();
  asm volatile("" ::: "memory");
}
[[gnu::noinline]] void StackOwnDepth() {
  GNOMON_ZONE_CALLSTACK("own depth", 3);
  asm volatile("" ::: "memory");
}

// Allocations along known call paths, in pool "paths": 10 of 1,000 bytes made through
// PathLeft, 5 of 3,000 through PathRight, 2 of which are freed (run it with
// GNOMON_CALLSTACK_DEPTH).
[[gnu::noinline]] void* AllocateOnPath(size_t bytes) {
  void* block = std::malloc(bytes);
  GNOMON_ALLOC_NAMED(block, bytes, "paths");
  asm volatile("" ::: "memory");
  return block;
}
[[gnu::noinline]] void* PathLeft() {
  void* block = AllocateOnPath(1000);
  asm volatile("" ::: "memory");
  return block;
}
[[gnu::noinline]] void* PathRight() {
  void* block = AllocateOnPath(3000);
  asm volatile("" ::: "memory");
  return block;
}
int AllocationPaths() {
  std::vector<void*> kept;
  kept.reserve(15);
  for (int i = 0; i < 10; ++i) kept.push_back(PathLeft());
  for (int i = 0; i < 5; ++i) {
    void* block = PathRight();
    if (i < 2) {
      GNOMON_FREE_NAMED(block, "paths");
      std::free(block);
    } else {
      kept.push_back(block);
    }
  }
  std::printf("allocation paths done: %zu kept\n", kept.size());
  for (void* block : kept) std::free(block);  // unreported: alive at the trace's end
  return 0;
}

uint64_t BurnCpuInKnownFunction(double cpu_seconds);

// Three threads that each burn 0.3 s of CPU, then say how much CPU time the kernel
// counted for them (GNOMON_CONTEXT_SWITCHES).
int BusyThreads() {
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([t] {
      gnomon::SetThreadName(("busy " + std::to_string(t)).c_str());
      BurnCpuInKnownFunction(0.3);
      timespec cpu{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
      gnomon::Message("cpu ns " + std::to_string(int64_t(cpu.tv_sec) * 1'000'000'000 + cpu.tv_nsec) +
                      " tid " + std::to_string(gettid()));
    });
  }
  for (std::thread& t : threads) t.join();
  std::puts("busy threads done");
  return 0;
}

int Stacks() {
  for (int i = 0; i < 10; ++i) StackOuter();
  StackOwnDepth();
  std::puts("stacks done");
  return 0;
}

// Burns CPU time (not wall time: a loaded machine stretches it) in a function of its own.
[[gnu::noinline]] uint64_t BurnCpuInKnownFunction(double cpu_seconds) {
  timespec start{}, now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  uint64_t x = 1;
  do {
    for (int i = 0; i < 100000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while (double(now.tv_sec - start.tv_sec) + 1e-9 * double(now.tv_nsec - start.tv_nsec) < cpu_seconds);
  return x;
}

// A generator's step per iteration, through an empty asm so that the compiler can neither
// fold the loop nor vectorize it.
constexpr uint64_t kMultiplier = 6364136223846793005ull;

// Two loops of the same body, each on a line of its own, the first run three times as
// many iterations as the second in every round: three quarters of the CPU time on the
// first line, a quarter on the second, on any machine. Their lines go out as a message.
[[gnu::noinline]] uint64_t BurnOnKnownLines(double cpu_seconds) {
  timespec start{}, now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  uint64_t x = 1;
  constexpr int kHotLine = __LINE__ + 3, kWarmLine = __LINE__ + 4;
  gnomon::Message("hot line " + std::to_string(kHotLine) + ", warm line " + std::to_string(kWarmLine));
  do {
    for (int i = 0; i < 3'000'000; ++i) asm volatile("" : "=r"(x) : "0"(x * kMultiplier + 1));
    for (int i = 0; i < 1'000'000; ++i) asm volatile("" : "=r"(x) : "0"(x * kMultiplier + 1));
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while (double(now.tv_sec - start.tv_sec) + 1e-9 * double(now.tv_nsec - start.tv_nsec) < cpu_seconds);
  return x;
}

int HotLines() {
  const uint64_t x = BurnOnKnownLines(1.0);
  std::printf("hot lines done %llu\n", static_cast<unsigned long long>(x & 1));
  return 0;
}

// Reads the clock in a loop for `cpu_seconds` of CPU: most of the time is spent in the
// vDSO's clock_gettime, reached through the C library's wrapper; neither keeps a frame
// pointer, nor does this function.
[[gnu::noinline]] uint64_t ReadClockInLoop(double cpu_seconds) {
  timespec start{}, now{}, t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  uint64_t sum = 0;
  do {
    for (int i = 0; i < 20'000; ++i) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      sum += uint64_t(t.tv_nsec);
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while (double(now.tv_sec - start.tv_sec) + 1e-9 * double(now.tv_nsec - start.tv_nsec) < cpu_seconds);
  return sum;
}

int ClockLoop() {
  const uint64_t x = ReadClockInLoop(0.5);
  std::printf("clock loop done %llu\n", static_cast<unsigned long long>(x & 1));
  return 0;
}

int Samples() {
  std::thread sleeper([] {
    gnomon::SetThreadName("sleeper");
    GNOMON_ZONE("sleeping");
    for (int i = 0; i < 30; ++i) std::this_thread::sleep_for(1ms);
  });
  const uint64_t x = BurnCpuInKnownFunction(0.3);
  sleeper.join();
  std::printf("samples done %llu\n", static_cast<unsigned long long>(x & 1));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  gnomon::SetThreadName("main");
  if (!gnomon_wait_for_server(20000)) {
    std::fprintf(stderr, "gnomon-test-resources: no server connected\n");
    return 1;
  }
  if (mode == "memory") return Memory();
  if (mode == "locks") return Locks();
  if (mode == "stacks") return Stacks();
  if (mode == "samples") return Samples();
  if (mode == "hot-lines") return HotLines();
  if (mode == "allocation-paths") return AllocationPaths();
  if (mode == "busy-threads") return BusyThreads();
  if (mode == "clock-loop") return ClockLoop();
  std::fprintf(stderr,
               "usage: gnomon-test-resources memory|locks|stacks|samples|hot-lines|allocation-paths|"
               "busy-threads|clock-loop\n");
  return 1;
}
