// The program when nobody is listening: on demand, the flight recorder (ring), its own
// trace file, and saving the recording on request or on a signal. Real programs, real
// TCP, real trace files.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "capture_helper.h"
#include "gnomon/server/trace_loader.h"

using gnomon::server::TraceModel;
using gnomon::test::CaptureProgram;
using gnomon::test::ChildProcess;
using gnomon::test::CountsByName;
using gnomon::test::ReadFile;
using gnomon::test::ScratchDir;
using namespace std::chrono_literals;

namespace {

uint64_t Count(const std::map<std::string, uint64_t>& counts, const std::string& name) {
  const auto it = counts.find(name);
  return it == counts.end() ? 0 : it->second;
}

// What a ring of `budget_mb` keeps of the test program's "ring" sequence: whole chunks
// of 64 KiB of one thread's events (each chunk 64 bytes more with its header), each
// iteration a zone begin (13 bytes), a plot value (21) and a zone end (9).
struct RingCapacity {
  long chunks;
  long per_chunk;
};
RingCapacity RingOf(long budget_mb) { return {(budget_mb << 20) / (65536 + 64), 65536 / (13 + 21 + 9)}; }

// The ring kept the newest iterations, exactly: plot values contiguous, ending with the
// last one, as many as the budget's chunks hold (the oldest kept chunk may start
// inside an iteration whose begin was recycled).
void CheckNewestKept(const TraceModel& m, long zones, long budget_mb) {
  REQUIRE(m.plots.size() == 1);
  const auto& points = m.plots.begin()->second.points;
  REQUIRE(!points.empty());
  for (size_t i = 1; i < points.size(); ++i) {
    if (points[i].second != points[i - 1].second + 1) FAIL("plot values not contiguous at " << i);
  }
  CHECK(points.back().second == double(zones - 1));
  const RingCapacity ring = RingOf(budget_mb);
  const auto kept = long(points.size());
  CHECK(kept >= (ring.chunks - 1) * ring.per_chunk);
  CHECK(kept <= ring.chunks * ring.per_chunk);
  const auto counts = CountsByName(m);
  CHECK(long(Count(counts, "Ring")) >= kept - 1);
  CHECK(long(Count(counts, "Ring")) <= kept + 1);
  CHECK(m.diagnostics.client_dropped_events == 0);  // recycled, not dropped
}

TraceModel LoadFile(const std::string& path) {
  TraceModel model;
  auto loaded = gnomon::server::LoadTrace(path, model);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  CHECK(loaded.value().warning == "");
  return model;
}

}  // namespace

TEST_CASE("on demand: nothing before a capture connects, everything after, no half zone across") {
  auto capture =
      CaptureProgram({GNOMON_TEST_PROGRAM, "on-demand"}, {{"GNOMON_ON_DEMAND", "1"}}, 0, "waiting");
  CHECK(capture.exit_code == 0);
  const TraceModel& m = capture.model();
  const auto counts = CountsByName(m);
  CHECK(Count(counts, "Before") == 0);
  CHECK(Count(counts, "After") == 1000);
  CHECK(Count(counts, "Across") == 0);  // begun before the capture: left out whole
  CHECK(Count(counts, "Across (C API)") == 0);
  CHECK(Count(counts, "Inside (C API)") == 0);
  CHECK(m.open_zone_count == 0);
  CHECK(m.diagnostics.zone_ends_without_begin == 0);
  CHECK(m.diagnostics.frame_ends_without_begin == 0);  // the span open across is left out whole
  size_t spans = 0, marks = 0;
  for (const auto& [id, series] : m.frames) {
    spans += series.spans.size();
    marks += series.marks.size();
  }
  CHECK(spans == 1);
  CHECK(marks == 2);
  CHECK(m.diagnostics.client_dropped_events == 0);  // not asked for is not dropped
  CHECK(capture.log.find("dropped 0") != std::string::npos);
  // The definitions made before were replayed: the frame name, made before the
  // connection. (A zone's location is defined once it is recorded, the first time.)
  bool loading_named = false;
  for (const auto& [id, name] : m.frame_names) loading_named = loading_named || name == "Loading";
  CHECK(loading_named);
  // A zone's location is defined when the zone is first recorded (or, for the program's
  // very first zone, when it starts the profiler).
  bool after = false;
  for (const auto& location : m.source_locations) after = after || location.name == "After";
  CHECK(after);
}

TEST_CASE("the ring keeps exactly the newest events, for a capture that connects late") {
  constexpr long kZones = 200000;  // 8.6 MB of events through a 1 MiB ring
  auto capture = CaptureProgram({GNOMON_TEST_PROGRAM, "ring", std::to_string(kZones)},
                                {{"GNOMON_BUFFER_POLICY", "ring"}, {"GNOMON_BUFFER_MB", "1"}}, 0, "recorded");
  CHECK(capture.exit_code == 0);
  CheckNewestKept(capture.model(), kZones, 1);
}

TEST_CASE("the ring saved to a file by the program: the newest events, a file that loads cleanly") {
  constexpr long kZones = 200000;
  ScratchDir dir;
  const std::string path = dir.File("ring.gnomon");
  ChildProcess program({GNOMON_TEST_PROGRAM, "ring", std::to_string(kZones), path},
                       {{"GNOMON_BUFFER_POLICY", "ring"}, {"GNOMON_BUFFER_MB", "2"}}, dir.File("log"));
  REQUIRE(program.Wait() == 0);
  CHECK(ReadFile(dir.File("log")).find("saved the recording to " + path) != std::string::npos);
  CheckNewestKept(LoadFile(path), kZones, 2);
}

TEST_CASE("a program's own trace file (GNOMON_OUTPUT) loads and matches a capture of the same program") {
  ScratchDir dir;
  const std::string path = dir.File("own.gnomon");
  ChildProcess program({GNOMON_TEST_PROGRAM, "zones"}, {{"GNOMON_OUTPUT", path}}, dir.File("log"));
  REQUIRE(program.Wait() == 0);
  CHECK(ReadFile(dir.File("log")).find("wrote the trace file " + path) != std::string::npos);
  const TraceModel own = LoadFile(path);
  auto capture = CaptureProgram({GNOMON_TEST_PROGRAM, "zones"});
  REQUIRE(capture.exit_code == 0);
  const TraceModel& live = capture.model();
  CHECK(CountsByName(own) == CountsByName(live));
  CHECK(own.zone_count == live.zone_count);
  CHECK(own.zone_count > 400);
  CHECK(own.open_zone_count == 0);
  CHECK(own.threads.size() == live.threads.size());
  CHECK(own.frames.size() == live.frames.size());
  CHECK(own.messages.size() == live.messages.size());
  CHECK(own.plots.begin()->second.points.size() == live.plots.begin()->second.points.size());
  CHECK(own.diagnostics.ended_cleanly);
  CHECK(own.diagnostics == live.diagnostics);
  CHECK(own.program.name == live.program.name);
}

TEST_CASE("a busy program started before its capture keeps the start of its run for it") {
  // Eight threads record 1 M zones each at full speed (176 MB of events, past the 64 MiB
  // budget) before the capture connects: the default policy keeps every one of them.
  const std::vector<std::string> flood = {GNOMON_TEST_PROGRAM, "flood", "1000000", "8"};
  auto capture = CaptureProgram(flood, {}, 0, "dropped");
  REQUIRE(capture.exit_code == 0);
  CHECK(capture.log.find("dropped 0\n") != std::string::npos);
  CHECK(capture.model().zone_count == 8'000'000);
  CHECK(capture.model().diagnostics.client_dropped_events == 0);
  // Without the start kept, the budget drops what does not fit (and says how many).
  auto bounded = CaptureProgram(flood, {{"GNOMON_KEEP_START_S", "0"}}, 0, "dropped");
  REQUIRE(bounded.exit_code == 0);
  CHECK(bounded.model().zone_count < 8'000'000);
  CHECK(bounded.model().diagnostics.client_dropped_events > 0);
}

TEST_CASE("definitions made again and again do not grow the program: names and locks are kept once") {
  // Two million renames of the thread and two million locks, made and destroyed, under a
  // 4 MiB ring: what the program keeps for a late capture stays a few definitions.
  constexpr long kTimes = 2'000'000;
  ScratchDir dir;
  ChildProcess program({GNOMON_TEST_PROGRAM, "definitions", std::to_string(kTimes)},
                       {{"GNOMON_BUFFER_POLICY", "ring"}, {"GNOMON_BUFFER_MB", "4"}}, dir.File("log"));
  REQUIRE(program.Wait(std::chrono::seconds(120)) == 0);
  CHECK(ReadFile(dir.File("log")).find("defined 2000000") != std::string::npos);
  MESSAGE("peak RSS ", program.peak_rss_bytes() >> 20, " MiB");
  if (gnomon::test::kResidentMemoryIsMeasurable) CHECK(program.peak_rss_bytes() < (40u << 20));
  // A capture that connects late learns the thread's name and the lock's.
  auto capture = CaptureProgram({GNOMON_TEST_PROGRAM, "definitions", "20000"},
                                {{"GNOMON_BUFFER_POLICY", "ring"}, {"GNOMON_BUFFER_MB", "4"}}, 0, "defined");
  REQUIRE(capture.exit_code == 0);
  const TraceModel& m = capture.model();
  bool named = false;
  for (const auto& thread : m.threads) named |= thread.name == "worker 2";
  CHECK(named);
  REQUIRE(m.locks.size() == 1);
  CHECK(m.locks.begin()->second.name == "short-lived");
}

TEST_CASE("programs given one GNOMON_OUTPUT each keep their own trace: none is ever replaced") {
  ScratchDir dir;
  const std::string path = dir.File("shared.gnomon");
  // Two at once (as `GNOMON_OUTPUT=shared.gnomon ctest -j` runs them), then a third later.
  std::vector<std::unique_ptr<ChildProcess>> runs;
  for (int i = 0; i < 2; ++i) {
    runs.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{GNOMON_TEST_PROGRAM, "zones"},
                                                  std::map<std::string, std::string>{{"GNOMON_OUTPUT", path}},
                                                  dir.File("log" + std::to_string(i))));
  }
  for (auto& run : runs) REQUIRE(run->Wait() == 0);
  runs.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{GNOMON_TEST_PROGRAM, "zones"},
                                                std::map<std::string, std::string>{{"GNOMON_OUTPUT", path}},
                                                dir.File("log2")));
  REQUIRE(runs.back()->Wait() == 0);
  std::set<std::string> written;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string log = ReadFile(dir.File("log" + std::to_string(i)));
    const std::string own = dir.File("shared." + std::to_string(runs[i]->pid()) + ".gnomon");
    const bool first = log.find("wrote the trace file " + path + " (") != std::string::npos;
    const bool variant = log.find("wrote the trace file " + own + " (") != std::string::npos;
    CHECK(first != variant);
    if (variant) {
      CHECK(log.find("GNOMON_OUTPUT=" + path +
                     " holds another run's trace, which is kept; this run's trace is " + own) !=
            std::string::npos);
    }
    written.insert(variant ? own : path);
  }
  REQUIRE(written.size() == 3);
  for (const std::string& file : written) {
    CAPTURE(file);
    const TraceModel m = LoadFile(file);
    CHECK(m.zone_count > 400);
    CHECK(m.diagnostics.ended_cleanly);
  }
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++files;
  CHECK(files == 3 + 3);  // the traces and the logs: no temporary file left
  // "%p" in the name is the pid: a file of each process's own from the start.
  ChildProcess named({GNOMON_TEST_PROGRAM, "zones"}, {{"GNOMON_OUTPUT", dir.File("run-%p.gnomon")}},
                     dir.File("log-named"));
  REQUIRE(named.Wait() == 0);
  const std::string own = dir.File("run-" + std::to_string(named.pid()) + ".gnomon");
  CHECK(ReadFile(dir.File("log-named")).find("wrote the trace file " + own + " (") != std::string::npos);
  CHECK(LoadFile(own).zone_count > 400);
}

TEST_CASE("the save signal writes the recording while four threads record") {
  ScratchDir dir;
  const std::string path = dir.File("signalled.gnomon");
  const std::string log = dir.File("log");
  ChildProcess program(
      {GNOMON_TEST_PROGRAM, "save-signal", dir.File("stop")},
      {{"GNOMON_BUFFER_POLICY", "ring"}, {"GNOMON_OUTPUT", path}, {"GNOMON_SAVE_SIGNAL", "USR1"}}, log);
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (ReadFile(log).find("recording") == std::string::npos && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(5ms);
  }
  std::this_thread::sleep_for(200ms);
  program.Signal(SIGUSR1);
  while (ReadFile(log).find("saved the recording") == std::string::npos &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(5ms);
  }
  std::this_thread::sleep_for(100ms);  // the threads record on past the save
  {
    std::FILE* stop = std::fopen(dir.File("stop").c_str(), "w");
    std::fclose(stop);
  }
  CHECK(program.Wait() == 0);
  REQUIRE(ReadFile(log).find("saved the recording to " + path) != std::string::npos);
  const TraceModel m = LoadFile(path);
  int recorders = 0;
  for (const auto& thread : m.threads) {
    if (thread.name.starts_with("recorder ") && thread.zones.size() > 100) ++recorders;
  }
  CHECK(recorders == 4);
  CHECK(m.diagnostics.ended_cleanly);
}

TEST_CASE("bad settings and requests: a clear message, and the program carries on") {
  ScratchDir dir;
  SUBCASE("an output path that cannot be written: the program listens instead") {
    auto capture = CaptureProgram({GNOMON_TEST_PROGRAM, "before-connect"},
                                  {{"GNOMON_OUTPUT", dir.File("no such folder/trace.gnomon")}}, 300);
    CHECK(capture.exit_code == 0);
    CHECK(capture.log.find("cannot write the trace file GNOMON_OUTPUT=") != std::string::npos);
    CHECK(capture.log.find("listening for a capture instead") != std::string::npos);
    CHECK(Count(CountsByName(capture.model()), "After") == 1000);
  }
  SUBCASE("a save to a path that cannot be written") {
    ChildProcess program({GNOMON_TEST_PROGRAM, "ring", "1000", dir.File("no such folder/ring.gnomon")},
                         {{"GNOMON_BUFFER_POLICY", "ring"}}, dir.File("log"));
    CHECK(program.Wait() == 4);  // SaveRecording() said no, and the program went on to exit
    CHECK(ReadFile(dir.File("log")).find("cannot save the recording: ") != std::string::npos);
  }
  SUBCASE("a folder or a FIFO is not a trace file: refused before anything is written") {
    ChildProcess program({GNOMON_TEST_PROGRAM, "ring", "1000", dir.path()},
                         {{"GNOMON_BUFFER_POLICY", "ring"}}, dir.File("log"));
    CHECK(program.Wait() == 4);
    const std::string log = ReadFile(dir.File("log"));
    CHECK(log.find("cannot save the recording: " + dir.path() + " is a folder") != std::string::npos);
    CHECK(log.find("partial") == std::string::npos);  // no temporary file was made, or named
    REQUIRE(mkfifo(dir.File("fifo").c_str(), 0600) == 0);
    auto capture =
        CaptureProgram({GNOMON_TEST_PROGRAM, "before-connect"}, {{"GNOMON_OUTPUT", dir.File("fifo")}}, 300);
    CHECK(capture.exit_code == 0);
    CHECK(capture.log.find("is a FIFO, not a trace file") != std::string::npos);
    CHECK(capture.log.find("listening for a capture instead") != std::string::npos);
    CHECK(Count(CountsByName(capture.model()), "After") == 1000);
  }
  SUBCASE("two saves at once: each writes a whole file, or says a save is running") {
    ChildProcess program({GNOMON_TEST_PROGRAM, "save-twice", dir.File("a.gnomon"), dir.File("b.gnomon")},
                         {{"GNOMON_BUFFER_POLICY", "ring"}, {"GNOMON_BUFFER_MB", "8"}}, dir.File("log"));
    CHECK(program.Wait() == 0);
    const std::string log = ReadFile(dir.File("log"));
    const bool a = std::filesystem::exists(dir.File("a.gnomon"));
    const bool b = std::filesystem::exists(dir.File("b.gnomon"));
    CHECK((a || b));
    if (!(a && b)) CHECK(log.find("a save of the recording is already running") != std::string::npos);
    CHECK(log.find(std::string("saved ") + (a ? "1" : "0") + " " + (b ? "1" : "0")) != std::string::npos);
    if (a) CheckNewestKept(LoadFile(dir.File("a.gnomon")), 200000, 8);
    if (b) CheckNewestKept(LoadFile(dir.File("b.gnomon")), 200000, 8);
  }
  SUBCASE("a budget too small for one chunk per thread") {
    // 20 threads, 15 chunks, nobody draining: at least five threads never get one.
    auto capture = CaptureProgram({GNOMON_TEST_PROGRAM, "flood", "20000", "20"},
                                  {{"GNOMON_BUFFER_MB", "1"}, {"GNOMON_KEEP_START_S", "0"}}, 0, "dropped ");
    CHECK(capture.exit_code == 0);
    CHECK(capture.log.find("too small for one chunk per thread") != std::string::npos);
    CHECK(capture.model().zone_count > 0);
  }
  SUBCASE("settings that do not parse are named, with what they take") {
    auto capture = CaptureProgram({GNOMON_TEST_PROGRAM, "before-connect"},
                                  {{"GNOMON_ON_DEMAND", "maybe"}, {"GNOMON_SAVE_SIGNAL", "KILL"}}, 300);
    CHECK(capture.exit_code == 0);
    CHECK(capture.log.find("ignoring GNOMON_ON_DEMAND: 'maybe' is not 1 or 0") != std::string::npos);
    CHECK(capture.log.find("ignoring GNOMON_SAVE_SIGNAL: 'KILL' is not one of USR1") != std::string::npos);
    CHECK(Count(CountsByName(capture.model()), "Before") == 1000);  // not on demand
  }
}
