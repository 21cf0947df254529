// A program with exactly known events, for the integration tests.
//
//   gnomon-test-program zones           threads, nesting, sleeps, frames, messages, plots
//   gnomon-test-program before-connect  events before and after a server connects
//   gnomon-test-program flood N [T]     N zones on each of T threads (1) with no server
//                                       (tests the buffer budget)
//   gnomon-test-program flood-after-connect N   N zones once a server connected
//   gnomon-test-program threads T N     T threads of N zones each, once a server connected
//   gnomon-test-program steady T MS     T threads each recording a zone every 2 us for MS ms,
//                                       once a server connected
//   gnomon-test-program waves T N       two waves of T named threads, once a server connected:
//                                       N "Outer" zones each holding an "Inner", and a
//                                       "Late" one (first used half-way) in the second half
//   gnomon-test-program hold FILE       zones once a server connected, until FILE exists
//   gnomon-test-program fork-exit FILE  a forked child exits; the parent runs until FILE exists
//   gnomon-test-program on-demand       zones before, across and after a server connects
//   gnomon-test-program exit CODE       one zone, then exits with CODE
//   gnomon-test-program definitions N   the thread renamed N times, N locks made and destroyed
//   gnomon-test-program ring N [FILE]   N zones each with a plot value 0..N-1, then waits for a
//                                       server (or saves the recording to FILE)
//   gnomon-test-program save-signal FILE  four threads record until FILE exists
//   gnomon-test-program save-twice A B  two threads save the recording at once, to A and B
//   gnomon-test-program ring-stress DIR  threads record, recycle and exit while the recording is
//                                       saved three times (DIR/save-N.gnomon)
//
// Run it with GNOMON_WAIT_FOR_SERVER_MS so that it waits at exit for a capture.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <gnomon/gnomon.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr int kWorkers = 3;
constexpr int kIterations = 50;

void Worker(int index) {
  const std::string name = "worker " + std::to_string(index);
  gnomon::SetThreadName(name.c_str());
  for (int i = 0; i < kIterations; ++i) {
    GNOMON_ZONE("Outer");
    {
      GNOMON_ZONE("Middle");
      GNOMON_ZONE("Inner");
    }
  }
  GNOMON_ZONE("Sleep 20 ms");
  std::this_thread::sleep_for(20ms);
}

int Zones() {
  gnomon::SetThreadName("main");
  gnomon::Message("first", gnomon::Severity::kInfo);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) threads.emplace_back(Worker, w);
  for (auto& t : threads) t.join();
  const uint32_t spans = gnomon::FrameName("Loading");
  for (int frame = 0; frame < 10; ++frame) {
    GNOMON_ZONE("Frame");
    gnomon::ZoneValue(static_cast<uint64_t>(frame));
    GNOMON_PLOT("frame index", double(frame));
    if (frame < 5) {
      gnomon::FrameBegin(spans);
      gnomon::FrameEnd(spans);
    }
    GNOMON_FRAME_MARK();
  }
  gnomon::Message("second", gnomon::Severity::kWarning);
  gnomon::Message("third", gnomon::Severity::kError);
  return 0;
}

int BeforeConnect() {
  for (int i = 0; i < 1000; ++i) GNOMON_ZONE("Before");
  if (!gnomon_wait_for_server(20000)) {
    std::fprintf(stderr, "no server connected\n");
    return 3;
  }
  for (int i = 0; i < 1000; ++i) GNOMON_ZONE("After");
  return 0;
}

int FloodAfterConnect(long zones) {
  if (!gnomon_wait_for_server(20000)) return 3;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < zones; ++i) GNOMON_ZONE("Flood");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("recorded %ld zones in %.3f s, dropped %llu\n", zones, seconds,
              static_cast<unsigned long long>(gnomon_dropped_events()));
  std::fflush(stdout);
  return 0;
}

int Threads(int count, long zones) {
  if (!gnomon_wait_for_server(20000)) return 3;
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t) {
    threads.emplace_back([zones] {
      for (long i = 0; i < zones; ++i) GNOMON_ZONE("Busy");
    });
  }
  for (auto& t : threads) t.join();
  std::printf("recorded %ld zones on %d threads, dropped %llu\n", zones * count, count,
              static_cast<unsigned long long>(gnomon_dropped_events()));
  std::fflush(stdout);
  return 0;
}

// Threads that record a zone every few microseconds for `ms` milliseconds: a steady trickle,
// which a lane ships in batches of at least 64 KiB or 1 ms rather than whatever each
// look finds.
int Steady(int count, long ms) {
  if (!gnomon_wait_for_server(20000)) return 3;
  std::atomic<long> zones{0};
  std::vector<std::thread> threads;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (int t = 0; t < count; ++t) {
    threads.emplace_back([&zones, until] {
      long mine = 0;
      for (auto now = std::chrono::steady_clock::now(); now < until; ++mine) {
        GNOMON_ZONE("Steady");
        const auto next = now + 2us;
        while ((now = std::chrono::steady_clock::now()) < next) {
        }
      }
      zones += mine;
    });
  }
  for (auto& t : threads) t.join();
  std::printf("recorded %ld zones, dropped %llu\n", zones.load(),
              static_cast<unsigned long long>(gnomon_dropped_events()));
  std::fflush(stdout);
  return 0;
}

// Threads that come and go while a capture receives, with nesting and a source location
// first seen late: what a capture over several connections must put back in order.
int Waves(int count, long zones) {
  if (!gnomon_wait_for_server(20000)) return 3;
  for (int wave = 0; wave < 2; ++wave) {
    std::vector<std::thread> threads;
    for (int t = 0; t < count; ++t) {
      threads.emplace_back([wave, t, zones] {
        gnomon::SetThreadName(("wave-" + std::to_string(wave) + "-" + std::to_string(t)).c_str());
        for (long i = 0; i < zones; ++i) {
          GNOMON_ZONE("Outer");
          { GNOMON_ZONE("Inner"); }
          if (i >= zones / 2) {
            GNOMON_ZONE("Late");
          }
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  std::printf("waves done, dropped %llu\n", static_cast<unsigned long long>(gnomon_dropped_events()));
  std::fflush(stdout);
  return 0;
}

// Keeps the program, and its first capture, alive while a test does something else with
// it (a second capture, say); the test ends it by creating `release_file`.
int Hold(const char* release_file) {
  if (!gnomon_wait_for_server(20000)) return 3;
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  do {
    GNOMON_ZONE("Held");
    std::this_thread::sleep_for(5ms);
  } while (!std::filesystem::exists(release_file) && std::chrono::steady_clock::now() < give_up);
  return 0;
}

// A child made by fork() that exits must leave its parent's announcement alone: the
// parent stays running until `release_file` exists.
int ForkExit(const char* release_file) {
  GNOMON_ZONE("Parent");  // the profiler runs, and has announced the program
  std::this_thread::sleep_for(200ms);
  const pid_t child = fork();
  if (child == 0) {
    GNOMON_ZONE("Child");
    std::exit(0);  // runs the profiler's exit handler, in the child
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("child exited\n");
  std::fflush(stdout);
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (!std::filesystem::exists(release_file) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(5ms);
  }
  return 0;
}

// N zones on each of `threads` threads, which exit before the count is read (a thread's
// drops must stay counted after it is gone).
int Flood(long zones, int threads) {
  std::vector<std::thread> floods;
  for (int t = 0; t < threads; ++t) {
    floods.emplace_back([zones] {
      for (long i = 0; i < zones; ++i) GNOMON_ZONE("Flood");
    });
  }
  for (std::thread& flood : floods) flood.join();
  std::printf("dropped %llu\n", static_cast<unsigned long long>(gnomon_dropped_events()));
  std::fflush(stdout);  // the test connects once it reads this
  return 0;
}

// On demand: nothing before the server, everything after, and no half zone across.
int OnDemand() {
  static gnomon_source_location across_c{"Across (C API)", "OnDemand",      __FILE__,
                                         __LINE__,         GNOMON_NO_COLOR, 0};
  static gnomon_source_location inside_c{"Inside (C API)", "OnDemand",      __FILE__,
                                         __LINE__,         GNOMON_NO_COLOR, 0};
  for (int i = 0; i < 1000; ++i) GNOMON_ZONE("Before");
  const uint32_t loading = gnomon::FrameName("Loading");
  gnomon::FrameBegin(loading);  // a frame span open across the connection
  gnomon::ZoneBegin(&across_c);
  {
    GNOMON_ZONE("Across");
    std::printf("waiting\n");
    std::fflush(stdout);
    if (!gnomon_wait_for_server(20000)) return 3;
    for (int i = 0; i < 1000; ++i) GNOMON_ZONE("After");
    gnomon::ZoneBegin(&inside_c);  // inside a C API zone that was not recorded: neither is this
    gnomon::ZoneEnd();
    gnomon::FrameEnd(loading);
    gnomon::FrameBegin(loading);  // one whole span after the connection
    gnomon::FrameEnd(loading);
    GNOMON_FRAME_MARK();
    GNOMON_FRAME_MARK();
  }
  gnomon::ZoneEnd();
  std::printf("dropped %llu\n", static_cast<unsigned long long>(gnomon_dropped_events()));
  return 0;
}

// N zones, each holding the plot value of its index: what a ring keeps is known.
void RecordSequence(long zones) {
  const uint32_t plot = gnomon::PlotId("sequence");
  for (long i = 0; i < zones; ++i) {
    GNOMON_ZONE("Ring");
    gnomon::Plot(plot, double(i));
  }
}

int Ring(long zones, const char* save_path) {
  // Threads that recorded and exited first: their chunks are the oldest, recycled first.
  for (int t = 0; t < 30; ++t) {
    std::thread([] {
      for (int i = 0; i < 5000; ++i) GNOMON_ZONE("Exited");
    }).join();
  }
  RecordSequence(zones);
  if (save_path != nullptr) return gnomon::SaveRecording(save_path) ? 0 : 4;
  std::printf("recorded\n");
  std::fflush(stdout);
  return gnomon_wait_for_server(20000) ? 0 : 3;
}

int SaveSignal(const char* stop_file) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&stop, t] {
      const std::string name = "recorder " + std::to_string(t);
      gnomon::SetThreadName(name.c_str());
      while (!stop.load()) {
        GNOMON_ZONE("Recording");
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
  }
  std::printf("recording\n");
  std::fflush(stdout);
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (!std::filesystem::exists(stop_file) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(5ms);
  }
  stop = true;
  for (auto& t : threads) t.join();
  return 0;
}

int SaveTwice(const char* first, const char* second) {
  RecordSequence(200000);
  std::atomic<int> ready{0};
  bool saved[2] = {};
  std::thread a([&] {
    ++ready;
    while (ready.load() < 2) {
    }
    saved[0] = gnomon::SaveRecording(first);
  });
  std::thread b([&] {
    ++ready;
    while (ready.load() < 2) {
    }
    saved[1] = gnomon::SaveRecording(second);
  });
  a.join();
  b.join();
  GNOMON_ZONE("Still running");
  std::printf("saved %d %d\n", int(saved[0]), int(saved[1]));
  return 0;
}

// Everything that touches the ring's chains at once: threads that record (and so
// recycle each other's chunks), threads that exit, saves that read the chains.
int RingStress(const std::string& dir) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&stop, t] {
      const uint32_t plot = gnomon::PlotId(("stress " + std::to_string(t)).c_str());
      // Two of them exit early: their chunks are the oldest, and recycled.
      const auto until = std::chrono::steady_clock::now() + (t < 2 ? 50ms : 10s);
      for (long i = 0; !stop.load() && std::chrono::steady_clock::now() < until; ++i) {
        GNOMON_ZONE("Stress");
        gnomon::Plot(plot, double(i));
      }
    });
  }
  int saved = 0;
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(100ms);
    saved += gnomon::SaveRecording((dir + "/save-" + std::to_string(i) + ".gnomon").c_str()) ? 1 : 0;
  }
  stop = true;
  for (auto& t : threads) t.join();
  std::printf("saved %d\n", saved);
  return saved == 3 ? 0 : 4;
}

// The same definitions made again and again: the thread renamed N times (between two
// names, "worker 2" last) and N locks of one name made, taken once and destroyed, then a
// capture is waited for. What the program keeps for it must not grow with N.
int Definitions(long count) {
  for (long i = 0; i < count; ++i) gnomon::SetThreadName(i % 2 == 0 ? "worker 1" : "worker 2");
  for (long i = 0; i < count; ++i) {
    gnomon::Lockable<std::mutex> lock("short-lived");
    std::lock_guard hold(lock);
  }
  std::printf("defined %ld\n", count);
  std::fflush(stdout);
  return 0;
}

// Waits (up to 10 s) for a capture, so that the clock exchanges span the messages.
void WaitForCapture() {
  gnomon_startup();  // listens now, not at the first zone
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!gnomon_is_connected() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(1ms);
}

// One side of a conversation over a FIFO: `send` records a zone "Send" around preparing
// a message (200 us of work) and writing it; `receive` records a zone "Receive" just
// after each message arrived. Message k is the k-th zone of each.
int Converse(bool send, const char* fifo, long messages) {
  WaitForCapture();
  const int fd = open(fifo, send ? O_WRONLY : O_RDONLY);
  if (fd < 0) return 3;
  for (long k = 0; k < messages; ++k) {
    const auto message = uint32_t(k);
    if (send) {
      GNOMON_ZONE("Send");
      const auto prepared = std::chrono::steady_clock::now() + 200us;
      while (std::chrono::steady_clock::now() < prepared) {
      }
      if (write(fd, &message, sizeof(message)) != ssize_t(sizeof(message))) return 4;
      std::this_thread::sleep_for(2ms);
    } else {
      uint32_t got = 0;
      if (read(fd, &got, sizeof(got)) != ssize_t(sizeof(got)) || got != message) return 4;
      GNOMON_ZONE("Receive");
    }
  }
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  if (scenario == "zones") return Zones();
  if (scenario == "before-connect") return BeforeConnect();
  if (scenario == "flood" && argc > 2) return Flood(std::atol(argv[2]), argc > 3 ? std::atoi(argv[3]) : 1);
  if (scenario == "flood-after-connect" && argc > 2) return FloodAfterConnect(std::atol(argv[2]));
  if (scenario == "hold" && argc > 2) return Hold(argv[2]);
  if (scenario == "fork-exit" && argc > 2) return ForkExit(argv[2]);
  if (scenario == "threads" && argc > 3) return Threads(std::atoi(argv[2]), std::atol(argv[3]));
  if (scenario == "waves" && argc > 3) return Waves(std::atoi(argv[2]), std::atol(argv[3]));
  if (scenario == "steady" && argc > 3) return Steady(std::atoi(argv[2]), std::atol(argv[3]));
  if (scenario == "on-demand") return OnDemand();
  if (scenario == "definitions" && argc > 2) return Definitions(std::atol(argv[2]));
  if (scenario == "exit" && argc > 2) {
    GNOMON_ZONE("Exit");
    return std::atoi(argv[2]);
  }
  if (scenario == "ring" && argc > 2) return Ring(std::atol(argv[2]), argc > 3 ? argv[3] : nullptr);
  if (scenario == "save-signal" && argc > 2) return SaveSignal(argv[2]);
  if (scenario == "save-twice" && argc > 3) return SaveTwice(argv[2], argv[3]);
  if (scenario == "ring-stress" && argc > 2) return RingStress(argv[2]);
  if ((scenario == "send" || scenario == "receive") && argc > 3)
    return Converse(scenario == "send", argv[2], std::atol(argv[3]));
  std::fprintf(stderr,
               "usage: gnomon-test-program zones | before-connect | flood N | flood-after-connect N | "
               "threads T N | steady T MS | exit CODE | definitions N | hold FILE | fork-exit FILE | "
               "on-demand | ring N [FILE] | "
               "save-signal FILE | save-twice A B | ring-stress DIR | send FIFO N | receive FIFO N\n");
  return 2;
}
