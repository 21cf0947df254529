// gnomon-bench: Gnomon's speed and size, measured. Each subcommand prints its figures as
// one JSON object on the last line (see docs/benchmarks.md for the recorded results).
//
//   gnomon-bench client [--threads N] [--zones N]
//                       [--workload tight|realistic|attributes|lock|alloc|callstack|compute]
//                       [--mode connected|buffering|on-demand|ring|own-file|disabled]
//                       [--sampling-hz N [--bare-perf-event]]
//       ns per zone (begin + end) on each calling thread -- or, for `lock`, per
//       uncontended acquisition and release of a gnomon::Lockable<std::mutex> (the
//       untracked std::mutex's cost given beside it), for `alloc`, per allocation and free
//       recorded (GNOMON_ALLOC + GNOMON_FREE), for `callstack`, per zone with its 8-frame
//       call stack, for `compute`, per block of arithmetic with no Gnomon call (what
//       GNOMON_SAMPLING_HZ=N, --sampling-hz, slows the program down by; with
//       --bare-perf-event, one perf event of that rate on each thread instead, no
//       Gnomon sampler: what the kernel's sampling alone costs) -- with a capture connected to
//       this process over loopback and draining it (default), with no capture (events
//       buffered up to the budget, then dropped and counted; the two phases are also
//       given apart), on demand with no capture (nothing recorded), as a flight recorder
//       with no capture (the ring recycling its oldest chunks), writing the program's
//       own trace file (with the time until the file is complete), or compiled out.
//   gnomon-bench ingest [--zones N] [--workload tight|realistic|attributes|callstack] [--live [--threads N]]
//                       [--capture PATH | --viewer] [--lanes N]
//       the worker's decode + store rate (zones/s) and memory per stored zone, on a
//       stream held in memory (no socket; `callstack`: realistic, each zone with an 8-frame
//       call stack, one of 20 distinct); with --live, end to end instead: a program
//       records N zones on each of its threads as fast as it can while gnomon-capture
//       receives them over loopback into a trace file (zones/s into the file, the
//       capture's CPU time per zone and peak memory, the program's ns per zone, drops,
//       how long the program recorded and how long after its last zone the file was
//       whole: behind_seconds, what the receiver had not kept up with).
//       With --viewer, received as a connected viewer does instead (a model built as the
//       bytes come, teed to a file), without drawing. --lanes: the receiver's (default:
//       what gnomon-capture and the viewer ask for on this machine).
//       With --paired (not --live), on one thread as a viewer's lane builds its model:
//       each piece's zones paired ahead, replayed in a turn, and each thread's last run
//       stored after it, into memory faulted in ahead: the lane's own work per zone,
//       apart from the socket, the other lanes and a busy machine.
//   gnomon-bench matrix [--zones N] [--capture PATH | --viewer] [--lanes N]
//       `ingest --live` for 1, 2, 4, 8 and 16 threads, tight and realistic: one JSON
//       object with a row for each.
//   gnomon-bench file [--zones N] [--workload tight|realistic|attributes]
//       bytes per zone of a trace file written by a live capture of this process.
//   gnomon-bench load FILE
//       load time, and bytes per zone of an existing trace file.
//   gnomon-bench summaries FILE
//       what each block's summary costs the writer (format 8): the stream of each of the
//       file's blocks made again, then compacted as a writer without summaries does, and
//       compacted and summarized (the summary encoded and compressed) as one with them
//       does, and compressed, one thread, ns per zone of each; and the summaries' bytes
//       per zone against the blocks'.
//   gnomon-bench statistics FILE [--memory-limit MIB]
//       the whole trace's zone statistics as the viewer gives them past its memory
//       limit (default 2048 MiB): the file loaded (from its blocks' summaries, format 8),
//       then its zones read again on every core; against one read of the file: every
//       block read and decompressed once, on one thread (the faster of two such reads).
//       Seconds of each, statistics_per_read (the statistics' seconds over the read's;
//       the load's apart), the same for the flame graph of the first program (every
//       thread, read the same way) and for Find zone on its location of the most zones,
//       and peak memory.
//   gnomon-bench soak [--seconds S] [--threads N] [--rate ZONES_PER_S] [--capture PATH]
//       a paced multi-threaded program captured by gnomon-capture for S seconds (600 by
//       default): the capture's memory and throughput every 10 s, then the file loads.
//   gnomon-bench bigtrace [FILE | --zones N --workload tight|realistic [--output PATH]]
//       a big trace opened as a user opens it: written by a live capture of this process
//       (`file`), then `gnomon-report FILE --json OUT --memory-limit 1G` and, with a
//       display, `gnomon-viewer FILE --frames 1 --memory-limit 2G`, each a process of its
//       own: wall time and peak memory, against what a laptop has (the viewer's first
//       frame in 5 s within 2 GB, the report within 1 GB).
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gnomon/gnomon.hpp>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../support/process.h"
#include "../support/stream_writer.h"
#include "files/trace_index.h"
#include "gnomon/server/flame_graph.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/streamed_statistics.h"
#include "gnomon/server/text.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/worker.h"
#include "gnomon/server/zone_finder.h"
#include "gnomon/tracefile/block_codec.h"
#include "gnomon/tracefile/block_summary.h"
#include "gnomon/tracefile/trace_writer.h"
#include "model/trace_builder.h"

void TightWorkloadCompiledOut(long zones);  // compiled_out_workload.cpp

namespace {

using Clock = std::chrono::steady_clock;
using gnomon::server::TraceModel;
using gnomon::server::Worker;

struct Args {
  std::string command;
  std::string file;
  long zones = 10000000;
  int threads = 1;
  std::string workload = "tight";
  double seconds = 600;
  long rate = 500000;
  std::string capture;
  std::string lanes;  // ingest --live, matrix: the capture's --lanes ("": its default)
  std::string level;  // ingest --live, matrix: the receiver's zstd level ("": its default)
  bool live = false;
  bool paired = false;  // ingest: as a viewer's lane, on one thread
  bool viewer = false;  // ingest --live: received as the viewer does, into a model and its tee file
  std::string port;     // live-model: the producer's port
  std::string mode = "connected";
  std::string output;                            // file: keep the trace here
  uint64_t memory_limit = uint64_t{2048} << 20;  // statistics: the viewer's --memory-limit
  uint32_t sampling_hz = 0;
  bool bare_perf_event = false;  // --sampling-hz as one perf event of the bench's own
};

std::string SelfPath() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Wall ns of two timer reads, over `pairs` of them (the reads go into `sink`, so that
// they are not left out).
double TimerPairNs(int pairs, uint64_t& sink) {
  const auto start = Clock::now();
  for (int i = 0; i < pairs; ++i) sink += gnomon::detail::Now() ^ gnomon::detail::Now();
  return Seconds(start) * 1e9 / pairs;
}

[[noreturn]] void Usage(const char* why) {
  if (why) std::fprintf(stderr, "gnomon-bench: %s\n\n", why);
  std::fprintf(
      why ? stderr : stdout,
      "Usage: gnomon-bench client [--threads N] [--zones N]\n"
      "                           [--workload tight|realistic|attributes|lock|alloc|callstack|compute]\n"
      "                           [--sampling-hz N [--bare-perf-event]]\n"
      "                           [--mode connected|buffering|on-demand|ring|own-file|disabled]\n"
      "       gnomon-bench ingest [--zones N] [--workload tight|realistic|attributes|callstack] [--paired | "
      "--live "
      "[--threads N]] "
      "[--capture PATH | --viewer] [--lanes N] [--level L]\n"
      "       gnomon-bench matrix [--zones N] [--capture PATH | --viewer] [--lanes N] [--level L]\n"
      "       gnomon-bench file [--zones N] [--workload tight|realistic|attributes] [--output PATH]\n"
      "       gnomon-bench load FILE | load [--zones N] [--workload tight|realistic|attributes]\n"
      "       gnomon-bench summaries FILE\n"
      "       gnomon-bench statistics FILE [--memory-limit MIB]\n"
      "       gnomon-bench soak [--seconds S] [--threads N] [--rate ZONES_PER_S] [--capture PATH]\n"
      "       gnomon-bench bigtrace [FILE | --zones N [--workload tight|realistic] [--output PATH]]\n"
      "Prints progress on stderr and one JSON object as the last line of stdout.\n");
  std::exit(why ? 1 : 0);
}

Args Parse(int argc, char** argv) {
  Args args;
  if (argc < 2) Usage("name a subcommand");
  args.command = argv[1];
  if (args.command == "-h" || args.command == "--help") Usage(nullptr);
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) Usage((arg + " needs a value").c_str());
      return std::string(argv[++i]);
    };
    if (arg == "--zones") {
      args.zones = std::atol(value().c_str());
    } else if (arg == "--threads") {
      args.threads = std::max(1, std::atoi(value().c_str()));
    } else if (arg == "--workload") {
      args.workload = value();
      static const char* const kWorkloads[] = {"tight", "realistic", "attributes", "lock",
                                               "alloc", "callstack", "compute"};
      if (std::find(std::begin(kWorkloads), std::end(kWorkloads), args.workload) == std::end(kWorkloads)) {
        Usage("--workload is tight, realistic, attributes, lock, alloc, callstack or compute");
      }
    } else if (arg == "--sampling-hz") {
      args.sampling_hz = uint32_t(std::atol(value().c_str()));
    } else if (arg == "--bare-perf-event") {
      args.bare_perf_event = true;
    } else if (arg == "--seconds") {
      args.seconds = std::atof(value().c_str());
    } else if (arg == "--rate") {
      args.rate = std::atol(value().c_str());
    } else if (arg == "--capture") {
      args.capture = value();
    } else if (arg == "--lanes") {
      args.lanes = value();
    } else if (arg == "--level") {
      args.level = value();
      if (!gnomon::tracefile::ParseCompressionLevel(args.level)) Usage("--level is a zstd level, -7 to 19");
    } else if (arg == "--output") {
      args.output = value();
    } else if (arg == "--memory-limit") {
      args.memory_limit = uint64_t(std::clamp(std::atol(value().c_str()), 1L, 1L << 40)) << 20;
    } else if (arg == "--live") {
      args.live = true;
    } else if (arg == "--paired") {
      args.paired = true;
    } else if (arg == "--viewer") {
      args.viewer = true;
    } else if (arg == "-p") {
      args.port = value();
    } else if (arg == "--mode") {
      args.mode = value();
      static const char* const kModes[] = {"connected", "buffering", "on-demand",
                                           "ring",      "own-file",  "disabled"};
      if (std::find(std::begin(kModes), std::end(kModes), args.mode) == std::end(kModes)) {
        Usage("--mode is connected, buffering, on-demand, ring, own-file or disabled");
      }
    } else if ((args.command == "load" || args.command == "bigtrace" || args.command == "summaries" ||
                args.command == "statistics") &&
               args.file.empty()) {
      args.file = arg;
    } else {
      Usage(("unknown argument " + arg).c_str());
    }
  }
  if (args.zones <= 0) Usage("--zones must be positive");
  if (!args.level.empty() && args.command != "ingest" && args.command != "matrix" &&
      args.command != "live-model")
    Usage("--level is for ingest --live and matrix");
  if (!args.level.empty() && args.command == "ingest" && !args.live) Usage("--level is for ingest --live");
  if (args.paired && (args.command != "ingest" || args.live)) Usage("--paired is for ingest, without --live");
  if (args.command == "ingest" && args.live && args.workload == "callstack")
    Usage("ingest --workload callstack is for the stream held in memory, without --live");
  return args;
}

// The zstd level the receiver of `ingest --live` writes its file at: --level, or its own
// default (a viewer's tee is written at a cheaper level than a capture's file). The
// viewer's side runs as `live-model`.
int ReceiverLevel(const Args& args) {
  if (!args.level.empty()) return *gnomon::tracefile::ParseCompressionLevel(args.level);
  const bool viewer = args.viewer || args.command == "live-model";
  return viewer ? gnomon::tracefile::kLiveTeeLevel
                : gnomon::tracefile::TraceWriterOptions{}.compression_level;
}

// Where --mode own-file has the program write its trace.
std::string OwnFilePath() {
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("gnomon-bench-" + std::to_string(getpid()) + ".gnomon"))
          .string();
  return path;
}

// Connects a counting (or file-writing) worker to this very process.
std::unique_ptr<Worker> ConnectToSelf(gnomon::tracefile::TraceWriter* writer) {
  gnomon_set_listen_address("127.0.0.1", 0);
  if (gnomon_startup() != 0) Usage("cannot listen on loopback");
  Worker::Options options;
  options.port = gnomon_listen_port();
  options.build_model = false;
  options.writer = writer != nullptr ? &writer->first_stream() : nullptr;
  auto worker = std::make_unique<Worker>(options);
  if (auto s = worker->Connect(); !s.ok()) Usage(s.message().c_str());
  worker->Start();
  gnomon_wait_for_server(5000);
  return worker;
}

// The realistic mix: nested zones of 20 source locations, frames, plots, messages.
// Unrecorded (kRecord false), the same program's own work with no Gnomon call: what
// recording adds is the difference. With `attributes` (the attributes workload), every
// leaf zone gets a value, every middle zone a text once its leaves are done, and every
// frame's zone a colour at its end.
template <bool kRecord = true>
void RealisticWorkload(long zones, bool attributes = false) {
  static gnomon_source_location locations[20];
  static const char* names[20] = {"Frame",  "Update", "Physics",    "Broadphase", "Narrowphase",
                                  "Solve",  "AI",     "Pathfind",   "Animate",    "Skin",
                                  "Render", "Cull",   "Sort",       "Submit",     "Audio",
                                  "Mix",    "Stream", "Decompress", "Network",    "Serialize"};
  for (int i = 0; i < 20; ++i)
    locations[i] = {names[i], "RealisticWorkload", __FILE__, uint32_t(100 + i), GNOMON_NO_COLOR, 0};
  static const char* const kTexts[8] = {"batch 0", "batch 1", "batch 2", "batch 3",
                                        "batch 4", "batch 5", "batch 6", "batch 7"};
  std::mt19937 rng(7);
  const uint32_t plot = kRecord ? gnomon::PlotId("bench value") : 0;
  auto begin = [](gnomon_source_location* location) {
    if constexpr (kRecord) gnomon::ZoneBegin(location);
    asm volatile("" ::"r"(location));
  };
  auto end = [] {
    if constexpr (kRecord) gnomon::ZoneEnd();
  };
  long done = 0;
  volatile uint64_t sink = 0;
  while (done < zones) {
    begin(&locations[0]);
    ++done;
    for (int child = 0; child < 8 && done < zones; ++child) {
      begin(&locations[1 + rng() % 9]);
      ++done;
      for (int leaf = 0; leaf < 4 && done < zones; ++leaf) {
        begin(&locations[10 + rng() % 10]);
        ++done;
        if (kRecord && attributes) gnomon::ZoneValue(uint64_t(done));
        for (unsigned spin = rng() % 64; spin > 0; --spin) sink = sink + spin;
        end();
      }
      if (kRecord && attributes) gnomon::ZoneText(kTexts[child]);
      end();
    }
    if constexpr (kRecord) {
      gnomon::Plot(plot, double(done % 1000));
      if (done % 100000 < 41) gnomon::Message("checkpoint");
    }
    if (kRecord && attributes) gnomon::ZoneColor(0x3366CC);
    end();
    if constexpr (kRecord) gnomon::FrameMark();
  }
}

void TightWorkload(long zones) {
  for (long i = 0; i < zones; ++i) {
    GNOMON_ZONE("Tight");
  }
}

// An uncontended lock and release, tracked: a lock of the thread's own.
void LockWorkload(long acquisitions) {
  thread_local gnomon::Lockable<std::mutex> mutex("bench lock");
  for (long i = 0; i < acquisitions; ++i) {
    mutex.lock();
    mutex.unlock();
  }
}

// The same with a plain std::mutex: what the lock itself costs.
double UntrackedLockNs(long acquisitions) {
  std::mutex mutex;
  const auto start = Clock::now();
  for (long i = 0; i < acquisitions; ++i) {
    mutex.lock();
    mutex.unlock();
  }
  return Seconds(start) * 1e9 / double(acquisitions);
}

// A zone with the 8 frames of call stack that led to it, 12 functions deep.
[[gnu::noinline]] void CallstackZone() {
  GNOMON_ZONE_CALLSTACK("Callstack", 8);
  asm volatile("" ::: "memory");
}
template <int Depth>
[[gnu::noinline]] void CallDeeper(long zones) {
  if constexpr (Depth == 0) {
    for (long i = 0; i < zones; ++i) CallstackZone();
  } else {
    CallDeeper<Depth - 1>(zones);
  }
  asm volatile("" ::: "memory");
}
void CallstackWorkload(long zones) { CallDeeper<10>(zones); }

// No Gnomon call at all: arithmetic of the program's own, what sampling slows down. A
// "zone" is a block of 100 steps (about 60 ns).
uint64_t ComputeWorkload(long blocks) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (long i = 0; i < blocks; ++i) {
    for (int step = 0; step < 100; ++step) x = x * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(x));
  }
  return x;
}

// An allocation and its free, recorded (the memory itself is not allocated: only the
// events are measured).
void AllocWorkload(long allocations) {
  alignas(64) static thread_local char block[4096];
  for (long i = 0; i < allocations; ++i) {
    char* p = block + (i & 4095);
    GNOMON_ALLOC(p, 64);
    GNOMON_FREE(p);
  }
}

// What sampling costs without Gnomon: one perf event on the calling thread, as the
// client's sampler opens them (software CPU clock, call chains, a mapped ring), which
// nobody reads. False when the kernel refuses.
bool OpenBarePerfEvent(uint32_t hz) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.freq = 1;
  attr.sample_freq = hz;
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
  attr.exclude_kernel = 1;
  attr.exclude_callchain_kernel = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  return fd >= 0 && mmap(nullptr, 65 * size_t(sysconf(_SC_PAGESIZE)), PROT_READ | PROT_WRITE, MAP_SHARED,
                         int(fd), 0) != MAP_FAILED;
}

int Client(const Args& args) {
  if (args.sampling_hz != 0 && !args.bare_perf_event) {
    // Read when the profiler starts, as a program's environment is.
    setenv("GNOMON_SAMPLING_HZ", std::to_string(args.sampling_hz).c_str(), 1);
  }
  std::unique_ptr<Worker> worker;
  if (args.mode == "connected") {
    worker = ConnectToSelf(nullptr);
  } else if (args.mode != "disabled") {
    gnomon_set_listen_address("127.0.0.1", 0);  // nobody will connect
    if (args.mode == "on-demand") gnomon_set_on_demand(1);
    if (args.mode == "ring") gnomon_set_buffer_policy(GNOMON_BUFFER_RING);
    if (args.mode == "own-file") gnomon_set_output_file(OwnFilePath().c_str());
    gnomon_startup();
  }
  auto workload = [&args](long zones) {
    if (args.mode == "disabled" && args.workload != "compute") {  // (compute calls nothing anyway)
      TightWorkloadCompiledOut(zones);
    } else if (args.workload == "tight") {
      TightWorkload(zones);
    } else if (args.workload == "lock") {
      LockWorkload(zones);
    } else if (args.workload == "alloc") {
      AllocWorkload(zones);
    } else if (args.workload == "callstack") {
      CallstackWorkload(zones);
    } else if (args.workload == "compute") {
      ComputeWorkload(zones);
    } else {
      RealisticWorkload(zones, args.workload == "attributes");
    }
  };
  const bool records_zones = args.workload == "tight" || args.workload == "realistic" ||
                             args.workload == "attributes" || args.workload == "callstack";
  const double untracked_lock_ns = args.workload == "lock" ? UntrackedLockNs(10000000) : 0;
  // Baseline: what two timer reads cost here.
  uint64_t sink = 0;
  const double timer_pair_ns = TimerPairNs(10'000'000, sink);
  // Buffering has two phases: recording into the budget, then dropping. The zones are
  // recorded in blocks, each timed and put in the phase the program was in for all of it
  // (no event dropped by its end / some dropped before it began); blocks that saw the
  // change are left out of both.
  struct Phases {
    double recording_s = 0, dropping_s = 0;
    long recording_zones = 0, dropping_zones = 0;
  };
  constexpr long kBlockZones = 65536;
  const bool split_phases = args.mode == "buffering";
  std::vector<double> ns_per_zone(size_t(args.threads));
  std::vector<Phases> phases(size_t(args.threads));
  std::vector<std::thread> threads;
  const auto run_start = Clock::now();
  for (int t = 0; t < args.threads; ++t) {
    threads.emplace_back([&, t] {
      if (args.bare_perf_event && args.sampling_hz != 0 && !OpenBarePerfEvent(args.sampling_hz)) {
        std::fprintf(stderr, "gnomon-bench: perf_event_open refused: %s\n", std::strerror(errno));
        std::exit(1);
      }
      workload(1000);  // register the thread and the source locations first
      const auto start = Clock::now();
      if (!split_phases) {
        workload(args.zones);
      } else {
        Phases& p = phases[size_t(t)];
        for (long done = 0; done < args.zones;) {
          const long block = std::min(kBlockZones, args.zones - done);
          const uint64_t dropped_before = gnomon_dropped_events();
          const auto block_start = Clock::now();
          workload(block);
          const double seconds = Seconds(block_start);
          const uint64_t dropped_after = gnomon_dropped_events();
          if (dropped_after == 0) {
            p.recording_s += seconds;
            p.recording_zones += block;
          } else if (dropped_before > 0) {
            p.dropping_s += seconds;
            p.dropping_zones += block;
          }
          done += block;
        }
      }
      ns_per_zone[size_t(t)] = Seconds(start) * 1e9 / double(args.zones);
    });
  }
  for (auto& t : threads) t.join();
  Phases all;
  for (const Phases& p : phases) {
    all.recording_s += p.recording_s;
    all.dropping_s += p.dropping_s;
    all.recording_zones += p.recording_zones;
    all.dropping_zones += p.dropping_zones;
  }
  auto per_zone = [](double seconds, long zones) { return zones > 0 ? seconds * 1e9 / double(zones) : 0.0; };
  const uint64_t dropped = gnomon_dropped_events();
  const uint64_t expected = records_zones ? uint64_t(args.threads) * uint64_t(args.zones + 1000) : 0;
  const auto drain_start = Clock::now();
  while (worker && worker->zones_received() + dropped / 2 < expected && Seconds(drain_start) < 60) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const uint64_t received = worker ? worker->zones_received() : 0;
  const double end_to_end_s = Seconds(run_start);
  std::string own_file_fields;
  if (args.mode == "own-file") {  // the file is complete once the profiler stops
    gnomon_shutdown();
    const double complete_s = Seconds(run_start);
    char text[160];
    std::snprintf(text, sizeof(text), ",\"file_bytes\":%llu,\"zones_per_s_until_file_complete\":%.0f",
                  (unsigned long long)std::filesystem::file_size(OwnFilePath()),
                  double(expected) / complete_s);
    own_file_fields = text;
    std::filesystem::remove(OwnFilePath());
  } else if (worker) {
    char text[96];
    std::snprintf(text, sizeof(text), ",\"zones_per_s_until_received\":%.0f",
                  double(received) / end_to_end_s);
    own_file_fields = text;
  }
  double worst = 0, sum = 0;
  for (double v : ns_per_zone) {
    worst = std::max(worst, v);
    sum += v;
  }
  std::fprintf(stderr, "timer pair %.1f ns; zones received %llu of %llu; dropped events %llu\n",
               timer_pair_ns, (unsigned long long)received, (unsigned long long)expected,
               (unsigned long long)dropped);
  std::string phase_fields;
  if (args.workload == "lock") {
    char text[64];
    std::snprintf(text, sizeof(text), ",\"untracked_lock_ns\":%.2f", untracked_lock_ns);
    phase_fields = text;
  }
  if (split_phases) {
    char text[160];
    std::snprintf(text, sizeof(text), ",\"ns_per_zone_recording\":%.2f,\"ns_per_zone_dropping\":%.2f",
                  per_zone(all.recording_s, all.recording_zones),
                  per_zone(all.dropping_s, all.dropping_zones));
    phase_fields += text;
  }
  std::printf(
      "{\"bench\":\"client\",\"mode\":\"%s\",\"workload\":\"%s\",\"sampling_hz\":%u,\"threads\":%d,"
      "\"zones_per_thread\":%ld,\"ns_per_zone\":%.2f,\"ns_per_zone_worst_thread\":%.2f%s,"
      "\"timer_pair_ns\":%.2f,\"dropped_events\":%llu,\"zones_received\":%llu%s,\"sink\":%llu}\n",
      args.mode.c_str(), args.workload.c_str(), args.sampling_hz, args.threads, args.zones,
      sum / args.threads, worst, phase_fields.c_str(), timer_pair_ns, (unsigned long long)dropped,
      (unsigned long long)received, own_file_fields.c_str(), (unsigned long long)(sink & 1));
  return 0;
}

// A stream shaped like the client's: one thread, rdtsc-like ticks with jitter.
gnomon::test::StreamWriter SyntheticStream(const Args& args) {
  gnomon::test::StreamWriter w;
  w.AppInfo("bench", 1, gnomon::protocol::TimerKind::kTsc, 2600000000);
  w.Calibration(1000, 1000, 1000, 20).Calibration(2600001000, 1000001000, 1000001000, 20);
  for (uint32_t id = 1; id <= 20; ++id)
    w.SourceLocation(id, "zone " + std::to_string(id), "fn", "bench.cpp", id);
  w.ThreadContext(1);
  std::mt19937_64 rng(3);
  uint64_t tick = 1000;
  long zones = 0;
  if (args.workload == "tight") {
    for (; zones < args.zones; ++zones) {
      w.ZoneBegin(1, tick);
      tick += 30 + rng() % 8;
      w.ZoneEnd(tick);
      tick += 30 + rng() % 8;
    }
    w.End(tick);  // the program's goodbye, as the client sends it
    return w;
  }
  const bool attributes = args.workload == "attributes";  // as RealisticWorkload's
  const bool callstacks = args.workload == "callstack";
  // A zone begins, with its stack when the workload has them: 8 frames, one stack for
  // each of the 20 locations.
  auto begin = [&](uint32_t location, uint64_t at) {
    w.ZoneBegin(location, at);
    if (callstacks) {
      const uint64_t base = 0x400000 + uint64_t(location) * 0x100;
      w.Callstack({base, base + 0x1010, base + 0x2020, base + 0x3030, 0x41000, 0x42000, 0x43000, 0x44000});
    }
  };
  while (zones < args.zones) {
    begin(1, tick);
    ++zones;
    for (int child = 0; child < 8 && zones < args.zones; ++child) {
      begin(2 + uint32_t(rng() % 9), tick += 40);
      ++zones;
      for (int leaf = 0; leaf < 4 && zones < args.zones; ++leaf) {
        begin(11 + uint32_t(rng() % 10), tick += 40);
        ++zones;
        if (attributes) w.ZoneValue(uint64_t(zones));
        w.ZoneEnd(tick += 50 + rng() % 500);
      }
      if (attributes) w.ZoneText("batch " + std::to_string(child));
      w.ZoneEnd(tick += 40);
    }
    if (attributes) w.ZoneColor(0x3366CC);
    w.ZoneEnd(tick += 40);
    w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, tick);
  }
  w.End(tick);
  return w;
}

// --capture, else the gnomon-capture beside this program (installed), else the build
// tree's.
// A tool of the project: beside this bench (installed), or in its folder of the build.
std::string ToolPath(const std::string& name, const char* build_folder) {
  const std::filesystem::path self = SelfPath();
  const std::filesystem::path beside = self.parent_path() / name;
  if (std::filesystem::exists(beside)) return beside.string();
  return (self.parent_path().parent_path() / build_folder / name).string();
}

std::string CapturePath(const Args& args) {
  return args.capture.empty() ? ToolPath("gnomon-capture", "server") : args.capture;
}

// Now on the steady clock, which every process of the host shares: the program's,
// the receiver's and the bench's times compare.
long long SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// CPU time of the calling thread.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// The CPU time of every thread of some processes, and how long each waited for a core,
// read from /proc while they run (a thread's last reading stands once it is gone), summed
// by thread name: which of a capture's threads is its ceiling, and whether it was short
// of work or of cores.
class ThreadCpuSampler {
 public:
  explicit ThreadCpuSampler(std::vector<std::pair<std::string, pid_t>> processes)
      : processes_(std::move(processes)), thread_([this] { Run(); }) {}
  ~ThreadCpuSampler() { Stop(); }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  // {"capture gnomon-receive":{"threads":1,"cpu_s":1.2,"busiest_s":1.2,"faults":30,
  //  "sleeps":12,"preempted":4,"wait_s":0.1},...}
  // (summed over the threads: faults, pages of fresh memory touched; sleeps, the times a
  // thread waited for something; preempted, the times its core was taken for another
  // thread; wait_s, runnable but not running, absent where the kernel keeps no such count)
  std::string Json() const {
    struct Sum {
      int threads = 0;
      double cpu_s = 0, busiest_s = 0, wait_s = 0;
      unsigned long long faults = 0, sleeps = 0, preempted = 0;
      bool waits = true;
    };
    std::map<std::string, Sum> sums;
    for (const auto& [tid, reading] : readings_) {
      Sum& sum = sums[reading.name];
      ++sum.threads;
      sum.cpu_s += reading.cpu_s;
      sum.busiest_s = std::max(sum.busiest_s, reading.cpu_s);
      sum.wait_s += reading.wait_s;
      sum.waits = sum.waits && reading.wait_s >= 0;
      sum.faults += reading.faults;
      sum.sleeps += reading.sleeps;
      sum.preempted += reading.preempted;
    }
    std::string json = "{";
    char text[400];
    for (const auto& [name, sum] : sums) {
      char wait[48] = "";
      if (sum.waits) std::snprintf(wait, sizeof(wait), ",\"wait_s\":%.2f", sum.wait_s);
      std::snprintf(text, sizeof(text),
                    "%s\"%s\":{\"threads\":%d,\"cpu_s\":%.2f,\"busiest_s\":%.2f,\"faults\":%llu,"
                    "\"sleeps\":%llu,\"preempted\":%llu%s}",
                    json.size() > 1 ? "," : "", name.c_str(), sum.threads, sum.cpu_s, sum.busiest_s,
                    sum.faults, sum.sleeps, sum.preempted, wait);
      json += text;
    }
    return json + "}";
  }

 private:
  struct Reading {
    std::string name;
    double cpu_s = 0;
    double wait_s = -1;  // from schedstat; -1: not kept
    unsigned long long faults = 0, sleeps = 0, preempted = 0;
  };
  void Run() {
    const double tick_s = 1.0 / double(sysconf(_SC_CLK_TCK));
    while (!stop_.load()) {
      for (const auto& [label, pid] : processes_) {
        std::error_code error;
        const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
        for (const auto& entry : std::filesystem::directory_iterator(tasks, error)) {
          std::ifstream stat(entry.path() / "stat");
          std::string line;
          if (!std::getline(stat, line)) continue;
          const size_t open = line.find('('), close = line.rfind(')');
          if (open == std::string::npos || close == std::string::npos) continue;
          unsigned long long minflt = 0, utime = 0, stime = 0;
          // After the name: state and 6 more fields, minor faults, 3 more, utime and stime.
          if (std::sscanf(line.c_str() + close + 2, "%*c %*d %*d %*d %*d %*d %*u %llu %*u %*u %*u %llu %llu",
                          &minflt, &utime, &stime) != 3) {
            continue;
          }
          Reading reading{label + " " + line.substr(open + 1, close - open - 1),
                          double(utime + stime) * tick_s};
          reading.faults = minflt;
          std::ifstream status(entry.path() / "status");
          for (std::string field; std::getline(status, field);) {
            std::sscanf(field.c_str(), "voluntary_ctxt_switches: %llu", &reading.sleeps);
            std::sscanf(field.c_str(), "nonvoluntary_ctxt_switches: %llu", &reading.preempted);
          }
          // schedstat: nanoseconds on a core, nanoseconds waiting for one, time slices.
          std::ifstream sched(entry.path() / "schedstat");
          unsigned long long on_cpu_ns = 0, waited_ns = 0;
          if (sched >> on_cpu_ns >> waited_ns) {
            reading.cpu_s = double(on_cpu_ns) * 1e-9;  // finer than the clock ticks of stat
            reading.wait_s = double(waited_ns) * 1e-9;
          }
          readings_[label + "/" + entry.path().filename().string()] = std::move(reading);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  std::vector<std::pair<std::string, pid_t>> processes_;
  std::map<std::string, Reading> readings_;  // by process/tid
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The program side of `ingest --live`: N zones of the workload on each thread, as fast
// as possible.
int IngestProducer(const Args& args) {
  // First every thread reads the timer in pairs, all at once, before the capture starts
  // (what two reads cost with this many cores busy: the clock slows as more of them
  // run); then each records its zones, timed by the wall clock and by the thread's own
  // CPU time (which leaves out waiting for a core).
  gnomon_startup();  // the timer the zones read (the TSC where there is one) is chosen here
  std::vector<double> timer_pair_ns(size_t(args.threads)), workload_cpu_ns(size_t(args.threads));
  {
    // Then the program's own work with nothing recorded, all threads at once: what a
    // zone costs the program without Gnomon (the host's cores slow down as more of them
    // are busy, with or without Gnomon).
    std::barrier ready(args.threads);
    std::vector<std::thread> threads;
    for (int t = 0; t < args.threads; ++t) {
      threads.emplace_back([&, t] {
        ready.arrive_and_wait();
        uint64_t sink = 0;
        timer_pair_ns[size_t(t)] = TimerPairNs(2'000'000, sink) + double(sink & 1) * 1e-12;
        ready.arrive_and_wait();
        const double cpu_start = ThreadCpuSeconds();
        if (args.workload != "tight") RealisticWorkload<false>(args.zones);  // tight: no work of its own
        workload_cpu_ns[size_t(t)] = (ThreadCpuSeconds() - cpu_start) * 1e9 / double(args.zones);
      });
    }
    for (auto& t : threads) t.join();
  }
  if (!args.output.empty()) std::ofstream(args.output) << "ready\n";  // the capture may start
  gnomon_wait_for_server(10000);
  std::vector<double> ns_per_zone(size_t(args.threads)), cpu_ns_per_zone(size_t(args.threads));
  // Per thread, what the kernel did to it while it recorded: page faults (fresh memory
  // touched) and switches away from it, voluntary (it slept) and not (a core was wanted).
  std::vector<rusage> used(size_t(args.threads));
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int t = 0; t < args.threads; ++t) {
    threads.emplace_back([&, t] {
      rusage before{};
      getrusage(RUSAGE_THREAD, &before);
      const auto thread_start = Clock::now();
      const double cpu_start = ThreadCpuSeconds();
      if (args.workload == "tight") {
        TightWorkload(args.zones);
      } else {
        RealisticWorkload(args.zones, args.workload == "attributes");
      }
      ns_per_zone[size_t(t)] = Seconds(thread_start) * 1e9 / double(args.zones);
      cpu_ns_per_zone[size_t(t)] = (ThreadCpuSeconds() - cpu_start) * 1e9 / double(args.zones);
      rusage& after = used[size_t(t)];
      getrusage(RUSAGE_THREAD, &after);
      after.ru_minflt -= before.ru_minflt;
      after.ru_nvcsw -= before.ru_nvcsw;
      after.ru_nivcsw -= before.ru_nivcsw;
    });
  }
  for (auto& t : threads) t.join();
  auto mean = [&](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / args.threads;
  };
  auto mean_of = [&](long rusage::*field) {
    double sum = 0;
    for (const rusage& u : used) sum += double(u.*field);
    return sum / args.threads;
  };
  // When the last zone was recorded, on the clock every process of the host shares.
  const long long ended_ns = SteadyNowNs();
  std::printf(
      "recorded in %.3f s, dropped %llu\nended_at_ns %lld\nns_per_zone %.2f worst %.2f cpu %.2f worst %.2f "
      "timer_pair %.2f faults %.0f switches %.0f preempted %.0f unrecorded %.2f\n",
      Seconds(start), (unsigned long long)gnomon_dropped_events(), ended_ns, mean(ns_per_zone),
      *std::max_element(ns_per_zone.begin(), ns_per_zone.end()), mean(cpu_ns_per_zone),
      *std::max_element(cpu_ns_per_zone.begin(), cpu_ns_per_zone.end()), mean(timer_pair_ns),
      mean_of(&rusage::ru_minflt), mean_of(&rusage::ru_nvcsw), mean_of(&rusage::ru_nivcsw),
      mean(workload_cpu_ns));
  return 0;
}

// This process's trace memory (chunk_memory::PageChooser), as JSON fields: the kind of
// pages chosen last ("none" before a block was measured), the blocks of each kind
// measured, and what populating one cost on average, recent ones weighing more (-1:
// none measured).
std::string PagesJson() {
  const auto& pages = gnomon::server::chunk_memory::Pages();
  const uint64_t plain = pages.measured(false), huge = pages.measured(true);
  auto us = [](int64_t ns) { return ns < 0 ? -1.0 : double(ns) / 1e3; };
  char text[192];
  std::snprintf(text, sizeof(text),
                "\"pages\":\"%s\",\"plain_blocks\":%llu,\"huge_blocks\":%llu,\"plain_block_us\":%.1f,"
                "\"huge_block_us\":%.1f",
                plain + huge == 0 ? "none"
                : pages.huge()    ? "huge"
                                  : "plain",
                (unsigned long long)plain, (unsigned long long)huge, us(pages.average_ns(false)),
                us(pages.average_ns(true)));
  return text;
}

int IngestLive(const Args& args) {
  gnomon::test::ScratchDir dir;
  const std::string self = SelfPath();
  gnomon::test::ChildProcess producer(
      {self, "ingest-producer", "--zones", std::to_string(args.zones), "--workload", args.workload,
       "--threads", std::to_string(args.threads), "--output", dir.File("ready")},
      {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}, {"GNOMON_EXIT_FLUSH_MS", "600000"}},
      dir.File("producer.log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  if (port == 0) Usage("the producer did not start");
  for (int waited_ms = 0; !std::filesystem::exists(dir.File("ready")); waited_ms += 5) {
    if (waited_ms > 60'000) Usage("the producer did not get ready");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<std::string> receiver =
      args.viewer ? std::vector<std::string>{self,       "live-model",           "-p", std::to_string(port),
                                             "--output", dir.File("live.gnomon")}
                  : std::vector<std::string>{CapturePath(args),    "-q", "-p",
                                             std::to_string(port), "-o", dir.File("live.gnomon")};
  if (!args.lanes.empty()) receiver.insert(receiver.end(), {"--lanes", args.lanes});
  if (!args.level.empty()) receiver.insert(receiver.end(), {args.viewer ? "--level" : "-l", args.level});
  const auto start = Clock::now();
  gnomon::test::ChildProcess capture(receiver, {}, dir.File("capture.log"));
  ThreadCpuSampler sampler({{"program", producer.pid()}, {"capture", capture.pid()}});
  capture.Wait(std::chrono::hours(1));
  const double seconds = Seconds(start);
  const long long capture_ended_ns = SteadyNowNs();
  sampler.Stop();
  producer.Wait(std::chrono::seconds(60));
  TraceModel model;
  auto loaded = gnomon::server::LoadTrace(dir.File("live.gnomon"), model);
  if (!loaded.ok()) Usage(loaded.status().message().c_str());
  const double zones = double(model.zone_count);
  const std::string producer_log = gnomon::test::ReadFile(dir.File("producer.log"));
  std::fprintf(stderr, "program: %s", producer_log.c_str());
  // The lanes the capture opened, as its summary says.
  unsigned lanes = 0;
  const std::string capture_log = gnomon::test::ReadFile(dir.File("capture.log"));
  if (const size_t at = capture_log.find("came over "); at != std::string::npos)
    std::sscanf(capture_log.c_str() + at, "came over %u", &lanes);
  // The blocks the capture compressed at its cheaper level, the cores being short.
  unsigned long long short_blocks = 0;
  if (const size_t at = capture_log.find(" blocks were compressed at zstd level"); at != std::string::npos) {
    const size_t line = capture_log.rfind("gnomon-capture: ", at);
    if (line != std::string::npos)
      std::sscanf(capture_log.c_str() + line, "gnomon-capture: %llu", &short_blocks);
  }
  double client_ns = 0, client_worst_ns = 0, client_cpu_ns = 0, client_cpu_worst_ns = 0, timer_pair_ns = 0;
  double faults = 0, switches = 0, preempted = 0;  // a producer thread's, on average
  double workload_cpu_ns = 0;                      // the same threads' work, unrecorded
  // How long the program recorded, and how long after its last zone the receiver was
  // done (the file whole): what it had not kept up with.
  double program_seconds = 0, behind_seconds = 0, model_behind_seconds = -1;
  long long producer_ended_ns = 0, model_done_ns = 0;
  if (const size_t at = producer_log.find("recorded in "); at != std::string::npos)
    std::sscanf(producer_log.c_str() + at, "recorded in %lf", &program_seconds);
  if (const size_t at = producer_log.find("ended_at_ns ");
      at != std::string::npos &&
      std::sscanf(producer_log.c_str() + at, "ended_at_ns %lld", &producer_ended_ns) == 1) {
    behind_seconds = double(capture_ended_ns - producer_ended_ns) / 1e9;
    // A viewer's model, whole before its tee file is.
    if (const size_t done = capture_log.find("model_done_at_ns ");
        done != std::string::npos &&
        std::sscanf(capture_log.c_str() + done, "model_done_at_ns %lld", &model_done_ns) == 1) {
      model_behind_seconds = double(model_done_ns - producer_ended_ns) / 1e9;
    }
  }
  // A viewer's pages, as it says them; a capture builds no model ("none", as here).
  std::string pages = PagesJson();
  if (const size_t at = capture_log.find("pages_json "); at != std::string::npos) {
    const size_t from = at + std::strlen("pages_json ");
    pages = capture_log.substr(from, capture_log.find('\n', from) - from);
  }
  if (const size_t at = producer_log.find("ns_per_zone "); at != std::string::npos) {
    std::sscanf(
        producer_log.c_str() + at,
        "ns_per_zone %lf worst %lf cpu %lf worst %lf timer_pair %lf faults %lf switches %lf preempted %lf "
        "unrecorded %lf",
        &client_ns, &client_worst_ns, &client_cpu_ns, &client_cpu_worst_ns, &timer_pair_ns, &faults,
        &switches, &preempted, &workload_cpu_ns);
  }
  std::printf(
      "{\"bench\":\"ingest\",\"live\":true,\"receiver\":\"%s\",\"lanes\":%u,\"level\":%d,\"workload\":\"%s\","
      "\"threads\":%d,"
      "\"zones\":%.0f,"
      "\"seconds\":%.3f,\"zones_per_s\":%.0f,\"program_seconds\":%.3f,\"behind_seconds\":%.3f,"
      "\"model_behind_seconds\":%.3f,"
      "\"capture_cpu_s\":%.3f,\"capture_cpu_ns_per_zone\":%.2f,"
      "\"capture_peak_rss_mb\":%.1f,\"file_bytes_per_zone\":%.3f,\"client_ns_per_zone\":%.2f,"
      "\"client_ns_per_zone_worst_thread\":%.2f,\"client_cpu_ns_per_zone\":%.2f,"
      "\"client_cpu_ns_per_zone_worst_thread\":%.2f,\"workload_cpu_ns_per_zone\":%.2f,"
      "\"recording_cpu_ns_per_zone\":%.2f,\"timer_pair_ns\":%.2f,\"client_thread_faults\":%.0f,"
      "\"client_thread_switches\":%.0f,\"client_thread_preempted\":%.0f,\"dropped_events\":%llu,"
      "\"blocks_short_of_cores\":%llu,%s,\"thread_cpu\":%s}\n",
      args.viewer ? "viewer" : "capture", lanes, ReceiverLevel(args), args.workload.c_str(), args.threads,
      zones, seconds, zones / seconds, program_seconds, behind_seconds, model_behind_seconds,
      capture.cpu_seconds(), capture.cpu_seconds() * 1e9 / std::max(zones, 1.0),
      double(capture.peak_rss_bytes()) / double(1 << 20),
      double(std::filesystem::file_size(dir.File("live.gnomon"))) / std::max(zones, 1.0), client_ns,
      client_worst_ns, client_cpu_ns, client_cpu_worst_ns, workload_cpu_ns, client_cpu_ns - workload_cpu_ns,
      timer_pair_ns, faults, switches, preempted, (unsigned long long)model.diagnostics.client_dropped_events,
      short_blocks, pages.c_str(), sampler.Json().c_str());
  std::fflush(stdout);
  return 0;
}

// The receiving side of `ingest --live --viewer`: what a viewer connected to a running
// program does, without drawing: a worker builds the model as the bytes come and tees
// them to a trace file.
int LiveModel(const Args& args) {
  auto tee = gnomon::tracefile::TraceWriter::Create(args.output, {.compression_level = ReceiverLevel(args)});
  if (!tee.ok() || !tee.value()->Publish(gnomon::tracefile::Overwrite::kYes).ok())
    Usage("cannot write the tee");
  Worker::Options options;
  options.port = uint16_t(std::stoi(args.port));
  options.writer = &tee.value()->first_stream();
  options.lanes = args.lanes.empty() ? gnomon::server::DefaultLanes(true) : uint32_t(std::stoul(args.lanes));
  Worker worker(options);
  if (const auto connected = worker.Connect(); !connected.ok()) Usage(connected.message().c_str());
  worker.Start();
  while (!worker.WaitFinished(std::chrono::seconds(1))) {
  }
  // The model is whole (what the viewer draws); the tee file may still be compressing.
  const long long model_done_ns = SteadyNowNs();
  worker.Join();
  if (!tee.value()->Finish().ok()) Usage("the tee could not be written");
  std::fprintf(stderr, "model_done_at_ns %lld\n", model_done_ns);
  std::fprintf(stderr, "pages_json %s\n", PagesJson().c_str());
  std::printf("model zones %llu\n", (unsigned long long)worker.model().zone_count);
  // As gnomon-capture's summary says it, for IngestLive.
  if (worker.lanes() > 0)
    std::fprintf(stderr, "its threads' events came over %u more connections\n", worker.lanes());
  return 0;
}

// `ingest --live` over the matrix of threads and workloads, each in a process of its
// own (a fresh program and a fresh capture per row).
int Matrix(const Args& args) {
  const std::string self = SelfPath();
  gnomon::test::ScratchDir dir;
  std::string rows;
  for (const char* workload : {"tight", "realistic"}) {
    for (int threads : {1, 2, 4, 8, 16}) {
      std::fprintf(stderr, "matrix: %s, %d thread(s), %ld zones each\n", workload, threads, args.zones);
      const std::string out = dir.File("row.txt");
      std::vector<std::string> argv{self,
                                    "ingest",
                                    "--live",
                                    "--workload",
                                    workload,
                                    "--threads",
                                    std::to_string(threads),
                                    "--zones",
                                    std::to_string(args.zones),
                                    "--capture",
                                    CapturePath(args)};
      if (args.viewer) argv.push_back("--viewer");
      if (!args.lanes.empty()) argv.insert(argv.end(), {"--lanes", args.lanes});
      if (!args.level.empty()) argv.insert(argv.end(), {"--level", args.level});
      gnomon::test::ChildProcess row(argv, {}, out);
      row.Wait(std::chrono::hours(1));
      const std::string text = gnomon::test::ReadFile(out);
      const size_t line = text.rfind("{\"bench\"");
      if (line == std::string::npos) Usage(("a row failed: " + text).c_str());
      rows += (rows.empty() ? "" : ",") + text.substr(line, text.find('\n', line) - line);
    }
  }
  std::printf("{\"bench\":\"matrix\",\"zones_per_thread\":%ld,\"rows\":[%s]}\n", args.zones, rows.c_str());
  return 0;
}

// `ingest --paired`: the stream in pieces of whole messages about as big as a lane's
// turn, each copied into a buffer (as received), decoded there with its zones paired
// ahead (ZoneOps, as the lane does before its turn), replayed on the builder (the turn),
// and the runs it holds back stored (after the turn), while a thread of its own faults
// in the model's memory ahead, as the worker's does. Each step timed apart.
int IngestPaired(const Args& args) {
  const auto stream = SyntheticStream(args);
  TraceModel model;
  gnomon::server::TraceBuilder builder(model);
  gnomon::server::ZoneOps ops;
  gnomon::server::KnownCallstacks known;  // as a lane's
  ops.UseKnownCallstacks(&known);
  struct Held {
    gnomon::server::ZoneOps::Run run;
    gnomon::server::ThreadTimeline* thread = nullptr;
    std::vector<gnomon::server::TraceBuilder::OpenZone>* open = nullptr;
  };
  std::vector<Held> held;
  gnomon::server::chunk_memory::BlockReserve reserve;
  std::atomic<bool> done{false};
  std::thread prefault([&] {
    while (!done.load()) {
      if (!reserve.AddOne(8)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  double copy_s = 0, pair_s = 0, turn_s = 0, store_s = 0;
  {
    const gnomon::server::chunk_memory::UseBlockReserve use(reserve);
    constexpr size_t kPiece = 700u << 10;  // a viewer's lane's turn at 16 threads, about
    // Each piece is copied into a buffer first, as received, and paired from there.
    std::vector<uint8_t> received(kPiece);
    for (size_t pos = 0; pos < stream.size();) {
      auto start = Clock::now();
      const size_t piece = std::min(kPiece, stream.size() - pos);
      std::memcpy(received.data(), stream.data() + pos, piece);
      copy_s += Seconds(start);
      start = Clock::now();
      ops.Clear();
      const auto result = gnomon::server::DecodeMessages(received.data(), piece, ops);
      pair_s += Seconds(start);
      start = Clock::now();
      ops.Replay(
          builder, [&](const uint8_t* p, size_t n) { gnomon::server::DecodeMessages(p, n, builder); },
          [&](const gnomon::server::ZoneOps::Run& run) {
            Held h{run};
            if (!builder.HoldRun(run, h.thread, h.open)) return false;
            held.push_back(h);
            return true;
          });
      turn_s += Seconds(start);
      start = Clock::now();
      for (const Held& h : held) gnomon::server::TraceBuilder::StoreRun(h.run, *h.thread, *h.open);
      held.clear();
      store_s += Seconds(start);
      pos += result.consumed;
    }
  }
  done = true;
  prefault.join();
  const double zones = double(model.zone_count);
  std::printf(
      "{\"bench\":\"ingest\",\"paired\":true,\"workload\":\"%s\",\"zones\":%.0f,\"zones_per_s\":%.0f,"
      "\"copy_ns_per_zone\":%.2f,\"pair_ns_per_zone\":%.2f,\"turn_ns_per_zone\":%.2f,"
      "\"store_ns_per_zone\":%.2f}\n",
      args.workload.c_str(), zones, zones / (copy_s + pair_s + turn_s + store_s), copy_s * 1e9 / zones,
      pair_s * 1e9 / zones, turn_s * 1e9 / zones, store_s * 1e9 / zones);
  return 0;
}

int Ingest(const Args& args) {
  if (args.live) return IngestLive(args);
  if (args.paired) return IngestPaired(args);
  const auto stream = SyntheticStream(args);
  TraceModel model;
  gnomon::server::TraceBuilder builder(model);
  const auto start = Clock::now();
  constexpr size_t kPiece = 4u << 20;  // the worker's receive buffer
  for (size_t pos = 0; pos < stream.size();) {
    const auto result =
        gnomon::server::DecodeMessages(stream.data() + pos, std::min(kPiece, stream.size() - pos), builder);
    pos += result.consumed;
  }
  const double seconds = Seconds(start);
  const double zones = double(model.zone_count);
  size_t attribute_bytes = 0, callstack_bytes = 0;
  for (const auto& thread : model.threads) {
    attribute_bytes += thread.attributes.capacity_bytes();
    callstack_bytes += thread.callstacks.capacity_bytes();
  }
  std::printf(
      "{\"bench\":\"ingest\",\"workload\":\"%s\",\"zones\":%.0f,\"seconds\":%.3f,\"zones_per_s\":%.0f,"
      "\"wire_bytes_per_zone\":%.2f,\"worker_bytes_per_zone\":%.2f,\"attribute_bytes_per_zone\":%.2f,"
      "\"callstack_bytes_per_zone\":%.2f}\n",
      args.workload.c_str(), zones, seconds, zones / seconds, double(stream.size()) / zones,
      double(model.zone_bytes()) / zones, double(attribute_bytes) / zones, double(callstack_bytes) / zones);
  return 0;
}

int File(const Args& args) {
  const std::string path = args.output.empty() ? (std::filesystem::temp_directory_path() /
                                                  ("gnomon-bench-" + std::to_string(getpid()) + ".gnomon"))
                                                     .string()
                                               : args.output;
  auto writer = gnomon::tracefile::TraceWriter::Create(path);
  if (!writer.ok()) Usage(writer.status().message().c_str());
  if (auto s = writer.value()->Publish(gnomon::tracefile::Overwrite::kYes); !s.ok())
    Usage(s.message().c_str());
  // This measures size, not speed: hold the whole backlog rather than drop any of it.
  gnomon_set_buffer_budget(uint64_t(args.zones) * 64 + (64u << 20));
  auto worker = ConnectToSelf(writer.value().get());
  if (args.workload == "tight") {
    TightWorkload(args.zones);
  } else {
    RealisticWorkload(args.zones, args.workload == "attributes");
  }
  gnomon_shutdown();  // ships everything and says goodbye
  worker->Join();
  if (auto s = writer.value()->Finish(); !s.ok()) Usage(s.message().c_str());
  const double zones = double(worker->zones_received());
  const double bytes = double(std::filesystem::file_size(path));
  if (args.output.empty()) std::filesystem::remove(path);
  std::printf(
      "{\"bench\":\"file\",\"workload\":\"%s\",\"zones\":%.0f,\"file_bytes\":%.0f,"
      "\"file_bytes_per_zone\":%.3f,\"raw_bytes_per_zone\":%.2f,\"dropped_events\":%llu}\n",
      args.workload.c_str(), zones, bytes, bytes / zones, double(writer.value()->raw_bytes()) / zones,
      (unsigned long long)gnomon_dropped_events());
  return 0;
}

int Summaries(const Args& args) {
  if (args.file.empty()) Usage("summaries needs a trace file");
  std::ifstream in(args.file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  gnomon::tracefile::FileHeader header{};
  if (bytes.size() < sizeof(header)) Usage("not a trace file");
  std::memcpy(&header, bytes.data(), sizeof(header));
  if (header.format_version < 7) Usage("summaries reads files of format 7 and later");
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel,
                         gnomon::tracefile::TraceWriterOptions{}.compression_level);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  std::vector<uint8_t> block, stream, compact, scratch, out;
  gnomon::tracefile::BlockSummary summary;
  double compact_s = 0, summarized_s = 0, compress_s = 0;
  uint64_t zones = 0, blocks = 0, block_bytes = 0, summary_bytes = 0;
  for (size_t at = header.header_bytes; at + sizeof(gnomon::tracefile::BlockHeader) <= bytes.size();) {
    gnomon::tracefile::BlockHeader h{};
    std::memcpy(&h, bytes.data() + at, sizeof(h));
    if (h.magic != gnomon::tracefile::kBlockMagic) break;
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data()) + at + sizeof(h);
    at += sizeof(h) + h.compressed_bytes;
    if (at > bytes.size()) break;
    block.resize(h.raw_bytes);
    const size_t frame = ZSTD_findFrameCompressedSize(data, h.compressed_bytes);
    if (ZSTD_isError(frame) || ZSTD_decompress(block.data(), block.size(), data, frame) != block.size())
      continue;
    // The stream the block was made of, as a writer is handed it.
    stream.clear();
    auto begin = [&](uint32_t location, uint64_t tick) {
      gnomon::protocol::AppendMessage(stream,
                                      gnomon::protocol::ZoneBegin{.srcloc_id = location, .tick = tick});
      return true;
    };
    auto end = [&](uint64_t tick) {
      gnomon::protocol::AppendMessage(stream, gnomon::protocol::ZoneEnd{.tick = tick});
      return true;
    };
    const auto walk = gnomon::tracefile::WalkCompactBlock(
        block.data(), block.size(), header.format_version, begin, end,
        [&](uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
          return begin(location, begin_tick) && end(end_tick);
        },
        [&](const uint8_t* message, size_t length) {
          stream.insert(stream.end(), message, message + length);
          return true;
        });
    if (!walk.ok) continue;
    const std::span<const uint8_t> whole(stream);
    compact.resize(gnomon::tracefile::CompactBound(stream.size()));
    scratch.resize(compact.size());
    const auto a = Clock::now();
    const size_t length = gnomon::tracefile::CompactBlock({&whole, 1}, compact.data(), scratch.data());
    const auto b = Clock::now();
    bool summarized = false;
    gnomon::tracefile::CompactAndSummarize({&whole, 1}, compact.data(), scratch.data(), summary, summarized);
    const std::vector<uint8_t> encoded = gnomon::tracefile::EncodeSummary(summary);
    out.resize(ZSTD_compressBound(std::max(length, encoded.size())));
    const size_t summarized_bytes =
        ZSTD_compress2(cctx.get(), out.data(), out.size(), encoded.data(), encoded.size());
    const auto c = Clock::now();
    const size_t compressed = ZSTD_compress2(cctx.get(), out.data(), out.size(), compact.data(), length);
    compress_s += Seconds(c);
    compact_s += std::chrono::duration<double>(b - a).count();
    summarized_s += std::chrono::duration<double>(c - b).count();
    if (!summarized) continue;
    for (const auto& segment : summary.segments) zones += segment.begins;
    ++blocks;
    block_bytes += compressed;
    summary_bytes += summarized_bytes;
  }
  if (zones == 0) Usage("no block with zones to summarize");
  const double per_zone = 1e9 / double(zones);
  std::printf(
      "{\"bench\":\"summaries\",\"blocks\":%llu,\"zones\":%llu,\"compact_ns_per_zone\":%.2f,"
      "\"compact_and_summary_ns_per_zone\":%.2f,\"compress_ns_per_zone\":%.2f,"
      "\"block_bytes_per_zone\":%.4f,\"summary_bytes_per_zone\":%.4f}\n",
      (unsigned long long)blocks, (unsigned long long)zones, compact_s * per_zone, summarized_s * per_zone,
      compress_s * per_zone, double(block_bytes) / double(zones), double(summary_bytes) / double(zones));
  return 0;
}

int Load(Args args) {
  bool remove_file = false;
  if (args.file.empty()) {
    // No file: write one of --zones zones of --workload first (in a child, so that its
    // client and worker are gone before the load is timed).
    args.file = (std::filesystem::temp_directory_path() /
                 ("gnomon-bench-load-" + std::to_string(getpid()) + ".gnomon"))
                    .string();
    const std::string command = "\"" + SelfPath() + "\" file --zones " + std::to_string(args.zones) +
                                " --workload " + args.workload + " --output \"" + args.file + "\" >&2";
    if (std::system(command.c_str()) != 0) Usage("could not write the trace to load");
    remove_file = true;
  }
  TraceModel model;
  const auto start = Clock::now();
  const double cpu_start = ThreadCpuSeconds();
  auto report = gnomon::server::LoadTrace(args.file, model);
  const double load_s = Seconds(start);
  const double builder_cpu_s = ThreadCpuSeconds() - cpu_start;  // this thread decodes and builds
  if (!report.ok()) Usage(report.status().message().c_str());
  const auto stats_start = Clock::now();
  const auto stats = gnomon::server::ComputeZoneStatistics(model);
  const double stats_s = Seconds(stats_start);
  const double zones = double(model.zone_count);
  std::printf(
      "{\"bench\":\"load\",\"zones\":%.0f,\"load_s\":%.3f,\"load_stats_s\":%.3f,\"builder_cpu_s\":%.3f,"
      "\"file_bytes_per_zone\":%.3f,\"worker_bytes_per_zone\":%.2f,\"source_locations\":%zu,%s}\n",
      zones, load_s, load_s + stats_s, builder_cpu_s, double(std::filesystem::file_size(args.file)) / zones,
      double(model.zone_bytes()) / zones, stats.size(), PagesJson().c_str());
  if (remove_file) std::filesystem::remove(args.file);
  return 0;
}

// The soak's program: `threads` threads, each recording rate/threads zones per second
// (two nested zones per step, a plot and now and then a message), for `seconds`.
int SoakProducer(const Args& args) {
  gnomon_wait_for_server(10000);
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  const double per_thread = double(args.rate) / args.threads;
  const auto start = Clock::now();
  for (int t = 0; t < args.threads; ++t) {
    threads.emplace_back([&, t] {
      const std::string name = "soak " + std::to_string(t);
      gnomon::SetThreadName(name.c_str());
      uint64_t made = 0;
      while (!done.load(std::memory_order_relaxed)) {
        const double due = Seconds(start) * per_thread;
        while (double(made) < due) {
          GNOMON_ZONE("Soak step");
          { GNOMON_ZONE("Soak inner"); }
          made += 2;
          if (made % 4096 == 0) GNOMON_PLOT("soak progress", double(made));
          if (made % 1048576 == 0) gnomon::Message("a million more");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  while (Seconds(start) < args.seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  done = true;
  for (auto& t : threads) t.join();
  std::printf("dropped %llu\n", (unsigned long long)gnomon_dropped_events());
  return 0;
}

long ReadRssKb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  long value = 0;
  while (status >> key) {
    if (key == "VmRSS:") {
      status >> value;
      return value;
    }
  }
  return 0;
}

int Soak(const Args& args) {
  gnomon::test::ScratchDir dir;
  const std::string self = SelfPath();
  const std::string capture_path = CapturePath(args);
  const std::string trace = dir.File("soak.gnomon");
  gnomon::test::ChildProcess producer(
      {self, "soak-producer", "--seconds", std::to_string(args.seconds), "--threads",
       std::to_string(args.threads), "--rate", std::to_string(args.rate)},
      {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}}, dir.File("producer.log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  if (port == 0) Usage("the soak program did not start");
  gnomon::test::ChildProcess capture({capture_path, "-q", "-p", std::to_string(port), "-o", trace}, {},
                                     dir.File("capture.log"));
  const auto start = Clock::now();
  long rss_min = LONG_MAX, rss_max = 0;
  uint64_t last_bytes = 0;
  double last_t = 0;
  std::vector<double> rates;
  while (capture.Wait(std::chrono::milliseconds(10000)) < 0) {
    const double t = Seconds(start);
    const long rss = ReadRssKb(capture.pid());
    std::error_code ec;
    const uint64_t bytes = std::filesystem::file_size(trace, ec);
    const double mb_per_s = double(bytes - last_bytes) / 1e6 / (t - last_t);
    if (rss > 0) {
      rss_min = std::min(rss_min, rss);
      rss_max = std::max(rss_max, rss);
    }
    if (t > 15 && t < args.seconds - 5) rates.push_back(mb_per_s);
    std::printf("{\"t_s\":%.0f,\"capture_rss_mb\":%.1f,\"file_mb\":%.1f,\"file_mb_per_s\":%.2f}\n", t,
                double(rss) / 1024, double(bytes) / 1e6, mb_per_s);
    std::fflush(stdout);
    last_bytes = bytes;
    last_t = t;
  }
  producer.Wait(std::chrono::seconds(60));
  const std::string producer_log = gnomon::test::ReadFile(dir.File("producer.log"));
  const size_t dropped_at = producer_log.find("dropped ");
  const unsigned long long dropped =
      dropped_at == std::string::npos ? 0 : std::stoull(producer_log.substr(dropped_at + 8));
  TraceModel model;
  const auto load_start = Clock::now();
  auto loaded = gnomon::server::LoadTrace(trace, model);
  const double load_s = Seconds(load_start);
  if (!loaded.ok()) Usage(loaded.status().message().c_str());
  double rate_min = 1e300, rate_max = 0;
  for (double r : rates) {
    rate_min = std::min(rate_min, r);
    rate_max = std::max(rate_max, r);
  }
  std::printf(
      "{\"bench\":\"soak\",\"seconds\":%.0f,\"threads\":%d,\"zones\":%llu,\"zones_per_s\":%.0f,"
      "\"capture_rss_min_mb\":%.1f,\"capture_rss_max_mb\":%.1f,\"file_mb\":%.1f,"
      "\"file_mb_per_s_min\":%.2f,\"file_mb_per_s_max\":%.2f,\"program_dropped\":%llu,\"load_s\":%.2f,"
      "\"load_warning\":\"%s\",\"ended_cleanly\":%s}\n",
      args.seconds, args.threads, (unsigned long long)model.zone_count,
      double(model.zone_count) / args.seconds, double(rss_min) / 1024, double(rss_max) / 1024,
      double(last_bytes) / 1e6, rates.empty() ? 0 : rate_min, rate_max, dropped, load_s,
      loaded->warning.c_str(), model.diagnostics.ended_cleanly ? "true" : "false");
  return 0;
}

}  // namespace

// A tool run to its end as a process of its own, its output to `log`: its exit code
// (-1: it could not start, or a signal ended it), wall time and peak resident memory.
struct ToolRun {
  int exit_code = -1;
  double seconds = 0;
  double peak_rss_mb = 0;
};
ToolRun RunTool(const std::vector<std::string>& command, const std::string& log) {
  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);  // the copies are not close-on-exec
      dup2(fd, 2);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  ToolRun run;
  if (pid < 0) return run;
  int status = 0;
  rusage usage{};
  pid_t waited = -1;
  do {
    waited = wait4(pid, &status, 0, &usage);
  } while (waited < 0 && errno == EINTR);
  if (waited != pid) return run;
  run.seconds = Seconds(start);
  run.peak_rss_mb = double(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// The whole trace's statistics as the viewer gives them past its memory limit: the file
// loaded from its summaries, then its zones read again on every core
// (StreamZoneStatistics); against the least any reader pays, every block read and
// decompressed once, on one thread.
int Statistics(const Args& args) {
  if (args.file.empty()) Usage("statistics needs a trace file");
  auto opened = gnomon::server::TraceSource::OpenFile(args.file);
  if (!opened.ok()) Usage(opened.status().message().c_str());
  const gnomon::server::TraceSource& source = opened.value();

  gnomon::tracefile::FileHeader header{};
  if (!source.ReadAt(&header, sizeof(header), 0)) Usage("not a trace file");
  gnomon::server::FileAnomalies anomalies;
  gnomon::server::Notes notes;
  const std::vector<gnomon::server::IndexedBlock> blocks = gnomon::server::IndexBlocks(
      source, source.size(), header, gnomon::tracefile::kDefaultMaxExpansion, anomalies, notes);
  gnomon::server::FrameDecompressor decompressor;
  std::vector<uint8_t> compressed, raw;
  uint64_t raw_bytes = 0;
  double read_s = 0;
  for (int round = 0; round < 2; ++round) {  // the faster of two reads: the lesser time to beat
    const auto read_start = Clock::now();
    raw_bytes = 0;
    for (const gnomon::server::IndexedBlock& block : blocks) {
      if (block.rejected) continue;
      compressed.resize(block.compressed_bytes);
      if (!source.ReadAt(compressed.data(), compressed.size(), block.data_offset()))
        Usage("cannot read the file");
      if (decompressor
              .Decompress(compressed.data(), compressed.size(), block.raw_bytes, header.format_version >= 4,
                          raw)
              .empty())
        raw_bytes += block.raw_bytes;
    }
    read_s = round == 0 ? Seconds(read_start) : std::min(read_s, Seconds(read_start));
  }

  // As the viewer's session loads a file (viewer/src/app/session.cpp).
  gnomon::server::LoadOptions options;
  options.zone_memory_limit = args.memory_limit;
  options.overview_runs = std::max<size_t>(65'536, args.memory_limit / 4 / 48);
  gnomon::server::TraceSet set;
  const auto load_start = Clock::now();
  auto loaded = gnomon::server::LoadTraceSet(source, set, options);
  const double load_s = Seconds(load_start);
  if (!loaded.ok()) Usage(loaded.status().message().c_str());
  if (set.processes.empty()) Usage("the trace holds no program");
  uint64_t zones = 0;
  for (const auto& process : set.processes) zones += process.model.zone_count;
  auto cpu_seconds = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  };
  const double cpu_start = cpu_seconds();
  const auto stats_start = Clock::now();
  auto stats = set.processes.front().model.zones_held
                   ? gnomon::server::Result<std::vector<std::vector<gnomon::server::ZoneStatistics>>>(
                         std::vector<std::vector<gnomon::server::ZoneStatistics>>{
                             gnomon::server::ComputeZoneStatistics(set.processes.front().model)})
                   : gnomon::server::StreamZoneStatistics(source, set, options);
  const double stats_s = Seconds(stats_start);
  const double stats_cpu_s = cpu_seconds() - cpu_start;
  if (!stats.ok()) Usage(stats.status().message().c_str());
  // The first program's flame graph, every thread merged, as its window reads it.
  const auto flame_start = Clock::now();
  const gnomon::server::TraceProcess& first = set.processes.front();
  auto flame = first.model.zones_held
                   ? gnomon::server::Result<gnomon::server::FlameGraph>(
                         gnomon::server::BuildFlameGraph(first.model, {}))
                   : gnomon::server::StreamFlameGraph(source, {first.stream, &first.model}, {}, options);
  const double flame_s = Seconds(flame_start);
  if (!flame.ok()) Usage(flame.status().message().c_str());
  // Find zone on its location of the most zones, as its window reads them.
  double find_s = 0;
  if (!first.model.zones_held && !stats->empty() && !stats->front().empty()) {
    const auto busiest = std::max_element(stats->front().begin(), stats->front().end(),
                                          [](const auto& a, const auto& b) { return a.count < b.count; });
    const auto find_start = Clock::now();
    auto found = gnomon::server::FindZonesInFile(source, {first.stream, &first.model},
                                                 {.location = busiest->source_location}, options);
    find_s = Seconds(find_start);
    if (!found.ok()) Usage(found.status().message().c_str());
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "{\"bench\":\"statistics\",\"file\":\"%s\",\"zones\":%llu,\"zones_held\":%d,\"summarized_blocks\":%llu,"
      "\"read_s\":%.2f,\"raw_mb\":%.0f,\"load_s\":%.2f,\"statistics_s\":%.2f,\"statistics_cpu_s\":%.2f,"
      "\"statistics_per_read\":%.2f,\"flame_graph_s\":%.2f,\"flame_graph_per_read\":%.2f,"
      "\"find_zone_s\":%.2f,\"find_zone_per_read\":%.2f,\"peak_rss_mb\":%.0f}\n",
      args.file.c_str(), (unsigned long long)zones, int(first.model.zones_held),
      (unsigned long long)loaded->summarized_blocks, read_s, double(raw_bytes) / (1 << 20), load_s, stats_s,
      stats_cpu_s, read_s > 0 ? stats_s / read_s : 0.0, flame_s, read_s > 0 ? flame_s / read_s : 0.0, find_s,
      read_s > 0 ? find_s / read_s : 0.0, double(usage.ru_maxrss) / 1024);
  return 0;
}

// A big trace opened as a user opens it (the header says what is measured).
int Bigtrace(Args args) {
  gnomon::test::ScratchDir dir;
  double make_s = 0;
  const bool made = args.file.empty();
  if (made) {
    args.file = args.output.empty() ? dir.File("big.gnomon") : args.output;
    const ToolRun written = RunTool({SelfPath(), "file", "--zones", std::to_string(args.zones), "--workload",
                                     args.workload, "--output", args.file},
                                    dir.File("file.log"));
    if (written.exit_code != 0)
      Usage(("could not write the trace: " + gnomon::test::ReadFile(dir.File("file.log"))).c_str());
    make_s = written.seconds;
    std::fprintf(stderr, "gnomon-bench: wrote %s (%ld zones) in %.1f s\n", args.file.c_str(), args.zones,
                 make_s);
  }
  std::error_code error;
  const double file_mb = double(std::filesystem::file_size(args.file, error)) / (1 << 20);
  if (error) Usage((args.file + ": " + error.message()).c_str());
  auto run = [&](const char* name, std::vector<std::string> command) -> std::string {
    std::fprintf(stderr, "gnomon-bench: %s ...\n", name);
    const ToolRun ran = RunTool(command, dir.File(std::string(name) + ".log"));
    if (ran.exit_code != 0) {  // what it said, before its folder goes
      std::fprintf(stderr, "gnomon-bench: %s exited with %d:\n%s\n", name, ran.exit_code,
                   gnomon::test::ReadFile(dir.File(std::string(name) + ".log")).c_str());
    }
    return gnomon::server::Format("\"%s_exit\":%d,\"%s_s\":%.2f,\"%s_peak_rss_mb\":%.0f", name, ran.exit_code,
                                  name, ran.seconds, name, ran.peak_rss_mb);
  };
  // Each within the bar's memory: past it, zones are counted as they load, not held; the
  // report reads their statistics from the file again, the viewer draws their overview.
  const std::string report = run("report", {ToolPath("gnomon-report", "server"), args.file, "--json",
                                            dir.File("report.json"), "--memory-limit", "1G"});
  // The whole trace's statistics as the viewer reads them, against one read of the file.
  std::string statistics = "\"statistics\":{}";
  {
    std::fprintf(stderr, "gnomon-bench: statistics ...\n");
    const ToolRun ran = RunTool({SelfPath(), "statistics", args.file}, dir.File("statistics.log"));
    const std::string log = gnomon::test::ReadFile(dir.File("statistics.log"));
    const size_t line = log.rfind("{\"bench\":\"statistics\"");
    if (ran.exit_code == 0 && line != std::string::npos) {
      statistics = "\"statistics\":" + log.substr(line, log.find('\n', line) - line);
    } else {
      std::fprintf(stderr, "gnomon-bench: statistics exited with %d:\n%s\n", ran.exit_code, log.c_str());
    }
  }
  std::string viewer = "\"viewer\":\"not run: no DISPLAY (run under xvfb-run)\"";
  if (std::getenv("DISPLAY") != nullptr) {
    viewer = run("viewer",
                 {ToolPath("gnomon-viewer", "viewer"), args.file, "--frames", "1", "--memory-limit", "2G"});
  }
  std::printf(
      "{\"bench\":\"bigtrace\",\"file\":\"%s\",\"file_mb\":%.0f,\"make_s\":%.1f,%s,%s,%s,"
      "\"targets\":{\"viewer_s\":5,\"viewer_peak_rss_mb\":2048,\"report_peak_rss_mb\":1024,"
      "\"statistics_per_read\":2}}\n",
      args.file.c_str(), file_mb, make_s, report.c_str(), statistics.c_str(), viewer.c_str());
  return 0;
}

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  if (args.command == "bigtrace") return Bigtrace(args);
  if (args.command == "client") return Client(args);
  if (args.command == "ingest") return Ingest(args);
  if (args.command == "file") return File(args);
  if (args.command == "load") return Load(args);
  if (args.command == "summaries") return Summaries(args);
  if (args.command == "statistics") return Statistics(args);
  if (args.command == "soak") return Soak(args);
  if (args.command == "soak-producer") return SoakProducer(args);
  if (args.command == "ingest-producer") return IngestProducer(args);
  if (args.command == "matrix") return Matrix(args);
  if (args.command == "live-model") return LiveModel(args);
  Usage(("unknown subcommand " + args.command).c_str());
}
