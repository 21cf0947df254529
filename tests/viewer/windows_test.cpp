// Each window of the viewer, drawn in the real window under Xvfb for a trace whose every
// number is known: what it reports of itself (--layout-dump) must be those numbers, and
// the pixels must be where it says it drew them.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <thread>
#include <tuple>

#include "../support/stream_writer.h"
#include "../support/xvfb.h"
#include "viewer_run.h"

using gnomon::test::Close;
using gnomon::test::JsonValue;
using gnomon::test::RunViewer;
using gnomon::test::ScratchDir;
using gnomon::test::ViewerRun;
using gnomon::test::WindowReport;

namespace {

constexpr uint64_t kMs = 1'000'000;    // the fixture's ticks are nanoseconds
constexpr uint64_t kOrigin = 1 * kMs;  // its first event: trace-relative 0

// The known trace. On "main": 70 "Work" zones, 40 of 1 ms, 20 of 2 ms and 10 of 4 ms, a
// millisecond apart, starting at trace time 0; on "worker", from 299 ms, 10 "Work" zones
// of `worker_ms` each. Every Work holds one "Inner" of half its length. 20 frame marks
// on main: 10 frames of 10 ms, 6 of 20 ms, 3 of 40 ms. Three messages from the worker,
// and a GPU context with ten calibrations whose residuals differ.
std::string WriteKnownTrace(const ScratchDir& dir, const std::string& name, uint64_t worker_ms = 8) {
  gnomon::test::StreamWriter w;
  w.AppInfo(name)
      .Calibration(kOrigin, int64_t(kOrigin), int64_t(kOrigin), 0)
      .SourceLocation(1, "Work", "work", "known.cpp", 10, 0x3070C0)
      .SourceLocation(2, "Inner", "inner", "known.cpp", 20, 0xC05030)
      .ThreadInfo(1, 101, "main")
      .ThreadInfo(2, 102, "worker")
      .ThreadContext(1);
  auto work = [&](uint64_t begin, uint64_t length) {
    w.ZoneBegin(1, begin)
        .ZoneBegin(2, begin + length / 4)
        .ZoneEnd(begin + length / 4 * 3)
        .ZoneEnd(begin + length);
  };
  uint64_t t = kOrigin;
  for (int i = 0; i < 70; ++i) {
    const uint64_t length = (i < 40 ? 1 : i < 60 ? 2 : 4) * kMs;
    work(t, length);
    t += length + kMs;
  }
  uint64_t frame = kOrigin;
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, frame);
  for (int i = 0; i < 19; ++i) {
    frame += (i < 10 ? 10 : i < 16 ? 20 : 40) * kMs;
    w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, frame);
  }
  w.ThreadContext(2);
  for (int i = 0; i < 10; ++i)
    work(kOrigin + 299 * kMs + uint64_t(i) * (worker_ms + 2) * kMs, worker_ms * kMs);
  for (int i = 0; i < 3; ++i)
    w.Message(kOrigin + uint64_t(300 + i) * kMs, 2, "worker says " + std::to_string(i));
  w.GpuContext(1, "known GPU", 1, 1, 64, kOrigin, kOrigin, gnomon::protocol::CpuTimeDomain::kMonotonicRaw, 5);
  for (int i = 1; i <= 10; ++i) {
    const uint64_t cpu = kOrigin + uint64_t(i) * 30 * kMs;
    w.GpuCalibration(1, cpu + uint64_t((i * 7) % 5) * 300, cpu, 100, 50);
  }
  w.ThreadContext(1).Calibration(kOrigin + 420 * kMs, int64_t(kOrigin + 420 * kMs),
                                 int64_t(kOrigin + 420 * kMs), 0);
  w.End(kOrigin + 420 * kMs);
  return gnomon::test::WriteTraceFile(dir.File(name + ".gnomon"), w);
}

double Number(const JsonValue& v, const std::string& key) {
  const JsonValue* found = v.Find(key);
  REQUIRE_MESSAGE(found != nullptr, "no '", key, "'");
  return found->number;
}

const std::vector<JsonValue>& Array(const JsonValue& v, const std::string& key) {
  const JsonValue* found = v.Find(key);
  REQUIRE_MESSAGE(found != nullptr, "no '", key, "'");
  return found->array;
}

// The zone named `name` in a report's list of zones.
const JsonValue& Zone(const JsonValue& report, const std::string& name) {
  for (const JsonValue& z : Array(report, "zones")) {
    if (z.Find("name")->string == name) return z;
  }
  FAIL("no zone '" << name << "' in the report");
  return report;
}

// Histogram bars: the counts are those given (in any order), each bar's height is its
// count's share of the tallest, and its pixels are the bar colour (0xAABBGGRR).
void CheckBars(const ViewerRun& run, const std::vector<JsonValue>& bars, std::vector<double> counts,
               uint32_t color) {
  std::vector<double> seen;
  double tallest_count = 0, tallest_height = 0;
  for (const JsonValue& b : bars) {
    seen.push_back(Number(b, "count"));
    if (Number(b, "count") > tallest_count) {
      tallest_count = Number(b, "count");
      tallest_height = Number(b, "y1") - Number(b, "y0");
    }
  }
  std::sort(seen.begin(), seen.end());
  std::sort(counts.begin(), counts.end());
  CHECK(seen == counts);
  CHECK(tallest_height >= 40);  // not a sliver
  for (const JsonValue& b : bars) {
    const double height = Number(b, "y1") - Number(b, "y0");
    CHECK(height == doctest::Approx(tallest_height * Number(b, "count") / tallest_count).epsilon(0.03));
    const int x = int((Number(b, "x0") + Number(b, "x1")) / 2);
    const int y = int(Number(b, "y1")) - 2;
    CHECK_MESSAGE(Close(run.shot.At(x, y), color), "bar at ", x, ",", y, ": ", run.shot.At(x, y));
    const int above = int(Number(b, "y0")) - 3;
    if (height < tallest_height - 5) CHECK_FALSE(Close(run.shot.At(x, above), color));
  }
}

bool Overlaps(const JsonValue& a, const JsonValue& b) {
  return Number(a, "x0") < Number(b, "x1") - 0.5 && Number(b, "x0") < Number(a, "x1") - 0.5 &&
         Number(a, "y0") < Number(b, "y1") - 0.5 && Number(b, "y0") < Number(a, "y1") - 0.5;
}

constexpr uint32_t kFindZoneBars = 0xFFE6965Au;  // IM_COL32(90, 150, 230): find zone, compare A
constexpr uint32_t kFrameBars = 0xFF6EAA5Au;     // IM_COL32(90, 170, 110)

}  // namespace

TEST_CASE("find zone: the known durations, as bars of the right heights, and the selected range") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  {
    ViewerRun run =
        RunViewer(dir, {trace, "--frames", "3", "--size", "1200x800", "--show", "find-zone=work"});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue& report = WindowReport(run, "find-zone");
    CHECK(report.Find("location")->string == "Work");  // the search is case-insensitive
    CHECK(Number(report, "occurrences") == 80);
    CHECK(Number(report, "rows") == 80);
    CHECK(Number(report, "p50_ns") >= 1e6);
    CHECK(Number(report, "p50_ns") <= 2e6);
    CHECK(Number(report, "p99_ns") == 8e6);
    CheckBars(run, Array(report, "bars"), {40, 20, 10, 10}, kFindZoneBars);
  }
  // Limited to the first 79.5 ms: only the 1 ms zones.
  ViewerRun run = RunViewer(
      dir, {trace, "--frames", "3", "--size", "1200x800", "--show", "find-zone=Work", "--select", "0:79.5"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& report = WindowReport(run, "find-zone");
  CHECK(Number(report, "occurrences") == 40);
  CheckBars(run, Array(report, "bars"), {40}, kFindZoneBars);
}

TEST_CASE("statistics: counts and totals of the whole trace and of the selected range") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  {
    ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--show", "statistics"});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue& report = WindowReport(run, "statistics");
    CHECK(Number(report, "rows") == 2);
    CHECK(Number(Zone(report, "Work"), "count") == 80);
    CHECK(Number(Zone(report, "Work"), "total_ns") == 200e6);
    CHECK(Number(Zone(report, "Work"), "self_ns") == 100e6);
    CHECK(Number(Zone(report, "Inner"), "total_ns") == 100e6);
  }
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--show", "statistics", "--select", "0:79.5"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& report = WindowReport(run, "statistics");
  CHECK(Number(Zone(report, "Work"), "count") == 40);
  CHECK(Number(Zone(report, "Work"), "total_ns") == 40e6);
  CHECK(Number(Zone(report, "Inner"), "count") == 40);
}

TEST_CASE("flame graph: widths are total time, for the whole trace and for the selected range") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  for (const bool selected : {false, true}) {
    CAPTURE(selected);
    std::vector<std::string> args{trace, "--frames", "3", "--show", "flame-graph"};
    if (selected) args.insert(args.end(), {"--select", "0:79.5"});
    ViewerRun run = RunViewer(dir, args);
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const auto& boxes = Array(WindowReport(run, "flame-graph"), "boxes");
    REQUIRE(boxes.size() == 3);  // all zones > Work > Inner
    const double root_width = Number(boxes[0], "x1") - Number(boxes[0], "x0");
    CHECK(root_width > 500);
    CHECK(Number(boxes[0], "total_ns") == (selected ? 40e6 : 200e6));
    CHECK(Number(boxes[1], "total_ns") == (selected ? 40e6 : 200e6));
    CHECK(Number(boxes[2], "total_ns") == (selected ? 20e6 : 100e6));
    CHECK(Number(boxes[1], "x1") - Number(boxes[1], "x0") == doctest::Approx(root_width).epsilon(0.01));
    CHECK(Number(boxes[2], "x1") - Number(boxes[2], "x0") == doctest::Approx(root_width / 2).epsilon(0.01));
    // Inner's box is drawn in Inner's colour (0xC05030), under its label's baseline.
    const int x = int(Number(boxes[2], "x1")) - 6, y = int(Number(boxes[2], "y0")) + 2;
    CHECK_MESSAGE(Close(run.shot.At(x, y), 0xFF3050C0u), "pixel ", run.shot.At(x, y));
  }
}

TEST_CASE("frame times: the histogram, the percentiles and the bars coloured by target") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--size", "1200x800", "--show", "frame-histogram"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& report = WindowReport(run, "frame-histogram");
  CHECK(Number(report, "frames") == 19);
  CHECK(Number(report, "p50_ns") == 10e6);
  CHECK(Number(report, "p99_ns") == 40e6);
  CHECK(Number(report, "green") == 10);  // under 16.7 ms
  CHECK(Number(report, "yellow") == 6);  // under 33.3 ms
  CHECK(Number(report, "red") == 3);
  CheckBars(run, Array(report, "bars"), {10, 6, 3}, kFrameBars);
}

TEST_CASE("compare: both traces' counts and totals, and their histograms overlaid") {
  ScratchDir dir;
  const std::string a = WriteKnownTrace(dir, "a");
  const std::string b = WriteKnownTrace(dir, "b", 16);  // the worker's zones take twice as long
  ViewerRun run = RunViewer(dir, {a, "--compare", b, "--frames", "3", "--size", "1200x900"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& report = WindowReport(run, "compare");
  CHECK(Number(report, "rows") == 2);
  const JsonValue& work = Zone(report, "Work");
  CHECK(Number(work, "count_a") == 80);
  CHECK(Number(work, "count_b") == 80);
  CHECK(Number(work, "total_a_ns") == 200e6);
  CHECK(Number(work, "total_b_ns") == 280e6);
  const JsonValue* histograms = report.Find("histograms");
  REQUIRE(histograms != nullptr);
  std::vector<double> a_counts, b_counts;
  for (const JsonValue& bar : Array(*histograms, "a")) a_counts.push_back(Number(bar, "count"));
  for (const JsonValue& bar : Array(*histograms, "b")) b_counts.push_back(Number(bar, "count"));
  std::sort(a_counts.begin(), a_counts.end());
  std::sort(b_counts.begin(), b_counts.end());
  const std::string picked = report.Find("picked")->string;
  if (picked == "Work") {
    CHECK(a_counts == std::vector<double>{10, 10, 20, 40});
    CHECK(b_counts == std::vector<double>{10, 10, 20, 40});
    // B's slowest bar lies right of A's: 16 ms against 8 ms.
    double a_right = 0, b_right = 0;
    for (const JsonValue& bar : Array(*histograms, "a")) a_right = std::max(a_right, Number(bar, "x1"));
    for (const JsonValue& bar : Array(*histograms, "b")) b_right = std::max(b_right, Number(bar, "x1"));
    CHECK(b_right > a_right + 20);
  } else {
    CHECK(picked == "Inner");
    CHECK(a_counts == std::vector<double>{10, 10, 20, 40});
  }
}

TEST_CASE("GPU clocks: the residual plot spans its height, and messages name their threads") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  ViewerRun run =
      RunViewer(dir, {trace, "--frames", "3", "--size", "1200x800", "--show", "gpu-clocks,messages"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const auto& contexts = Array(WindowReport(run, "gpu-clocks"), "contexts");
  REQUIRE(contexts.size() == 1);
  CHECK(Number(contexts[0], "calibrations") == 11);  // the context's own pair, then ten
  const JsonValue* plot = contexts[0].Find("plot");
  REQUIRE(plot != nullptr);
  CHECK(Number(*plot, "y1") - Number(*plot, "y0") >= 60);
  CHECK(Number(contexts[0], "points_bottom") - Number(contexts[0], "points_top") >= 50);
  const JsonValue& messages = WindowReport(run, "messages");
  CHECK(Number(messages, "rows") == 3);
  for (const JsonValue& thread : Array(messages, "threads")) CHECK(thread.string == "worker");
}

TEST_CASE("zone details: the first thread's longest zone, its exact duration and its child") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--all-windows"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& details = WindowReport(run, "details");
  CHECK(details.Find("zone")->string == "Work");
  CHECK(details.Find("thread")->string.rfind("main", 0) == 0);
  CHECK(Number(details, "duration_ns") == 4e6);
  CHECK(Number(details, "self_ns") == 2e6);
  CHECK(details.Find("parent")->string.empty());
  CHECK(Number(details, "children") == 1);
}

TEST_CASE("side windows never cover the timeline or each other, at any window size") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  for (const char* size : {"800x600", "1200x700", "1920x1080", "640x1000"}) {
    CAPTURE(size);
    ViewerRun run =
        RunViewer(dir, {trace, "--frames", "3", "--size", size, "--show",
                        "statistics,find-zone=Work,flame-graph,frame-histogram,messages,gpu-clocks"});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue* timeline = run.layout.Find("timeline");
    REQUIRE(timeline != nullptr);
    CHECK(Number(*timeline, "y1") - Number(*timeline, "y0") >= 60);
    const auto& windows = Array(run.layout, "side_windows");
    CHECK(windows.size() == 6);
    for (size_t i = 0; i < windows.size(); ++i) {
      CAPTURE(windows[i].Find("title")->string);
      CHECK_FALSE(Overlaps(windows[i], *timeline));
      CHECK(Number(windows[i], "x0") >= 0);
      CHECK(Number(windows[i], "y0") >= 0);
      CHECK(Number(windows[i], "x1") <= run.shot.width + 0.5);
      CHECK(Number(windows[i], "y1") <= run.shot.height + 0.5);
      for (size_t j = i + 1; j < windows.size(); ++j) CHECK_FALSE(Overlaps(windows[i], windows[j]));
    }
  }
}

TEST_CASE("the open windows and the panel are kept between runs") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  {
    ViewerRun run =
        RunViewer(dir, {trace, "--frames", "3", "--keep-settings", "--show", "statistics,flame-graph"});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  }
  const std::string settings = gnomon::test::ReadFile(dir.File("gnomon/viewer-settings"));
  CHECK(settings.find("window statistics") != std::string::npos);
  CHECK(settings.find("recent-file " + std::filesystem::absolute(trace).string()) != std::string::npos);
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--keep-settings"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  CHECK(run.layout.Find("windows")->Find("statistics") != nullptr);
  CHECK(run.layout.Find("windows")->Find("flame-graph") != nullptr);
  CHECK(run.layout.Find("windows")->Find("messages") == nullptr);
  // A scripted run without --keep-settings neither reads nor writes them.
  ViewerRun plain = RunViewer(dir, {trace, "--frames", "3"});
  CHECK(plain.layout.Find("windows")->Find("statistics") == nullptr);
}

TEST_CASE("quick key taps are all seen: three taps between two frames pan three steps") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  auto begin_after = [&](const std::string& keys) {
    std::vector<std::string> args{trace, "--frames", "12", "--range", "100:200"};
    if (!keys.empty()) args.insert(args.end(), {"--keys", keys});
    ViewerRun run = RunViewer(dir, args);
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    return Number(*run.layout.Find("view"), "begin_ns");
  };
  const double still = begin_after("");
  const double one = begin_after("right");
  const double three = begin_after("right,right,right");
  CHECK(one > still);
  CHECK(three - still == doctest::Approx(3 * (one - still)).epsilon(0.01));
  CHECK(begin_after("right,left") == doctest::Approx(still));
}

TEST_CASE("--scale 2 draws lanes and text twice as large") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  auto lane_height = [&](const std::string& scale) {
    ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--scale", scale});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    for (const JsonValue& lane : Array(run.layout, "lanes")) {
      if (lane.Find("title")->string.rfind("main", 0) == 0) return Number(lane, "height");
    }
    FAIL("no lane 'main'");
    return 0.0;
  };
  const double normal = lane_height("1");
  CHECK(lane_height("2") == doctest::Approx(2 * normal).epsilon(0.15));
}

TEST_CASE("the start window lists the programs running, to connect to without an address") {
  ScratchDir dir;
  const std::string runtime = dir.File("runtime");
  std::filesystem::create_directory(runtime);
  std::filesystem::permissions(runtime, std::filesystem::perms::owner_all);
  gnomon::test::ChildProcess demo(
      {GNOMON_DEMO, "--seconds", "20"},
      {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}, {"XDG_RUNTIME_DIR", runtime}},
      dir.File("demo.log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  ViewerRun run = RunViewer(dir, {"--frames", "3"}, {{"XDG_RUNTIME_DIR", runtime}});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const auto& programs = Array(WindowReport(run, "start"), "programs");
  REQUIRE(programs.size() == 1);
  CHECK(programs[0].Find("name")->string == "gnomon-demo");
  CHECK(Number(programs[0], "pid") == demo.pid());
  CHECK(programs[0].Find("address")->string == "127.0.0.1:" + std::to_string(port));
  demo.Signal(SIGTERM);
  demo.Wait();
}

TEST_CASE("an idle viewer waits for events instead of drawing frames") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  gnomon::test::Xvfb xvfb;
  REQUIRE(!xvfb.display().empty());
  std::map<std::string, std::string> env{{"DISPLAY", xvfb.display()}, {"XDG_CONFIG_HOME", dir.path()}};
  if (!std::string(GNOMON_ASAN_PRELOAD).empty()) env["ASAN_OPTIONS"] = "detect_leaks=0";
  gnomon::test::ChildProcess viewer({GNOMON_VIEWER, trace, "--show", "statistics,flame-graph"}, env,
                                    dir.File("viewer.log"));
  std::this_thread::sleep_for(std::chrono::seconds(6));
  viewer.Signal(SIGTERM);
  viewer.Wait();
  // Start-up and loading take a fraction of a second; a viewer drawing all the time
  // would use all six.
  MESSAGE("idle viewer: ", viewer.cpu_seconds(), " CPU seconds in 6 s");
  CHECK(viewer.cpu_seconds() < 2.0);
}

TEST_CASE("memory and locks: the pool's lane and the memory window, and a lock's holds and wait drawn") {
  ScratchDir dir;
  // "textures": 1 to 5 MiB at 10, 20, 30, 40 and 50 ms; the 1 and 2 MiB freed at 60 ms.
  // "queue": main holds it 0..20 ms; worker waits from 5 ms, holds it 20..30 ms.
  gnomon::test::StreamWriter w;
  w.AppInfo("resources")
      .Calibration(kOrigin, int64_t(kOrigin), int64_t(kOrigin), 0)
      .ThreadInfo(1, 101, "main")
      .ThreadInfo(2, 102, "worker")
      .String(3, gnomon::protocol::StringKind::kMemoryPool, "textures")
      .String(4, gnomon::protocol::StringKind::kLockName, "queue")
      .ThreadContext(1);
  for (uint64_t i = 1; i <= 5; ++i) w.Alloc(3, i << 12, i << 20, kOrigin + i * 10 * kMs);
  w.Free(3, 1 << 12, kOrigin + 60 * kMs).Free(3, 2 << 12, kOrigin + 60 * kMs);
  w.LockObtain(4, kOrigin).LockRelease(4, kOrigin + 20 * kMs);
  w.ThreadContext(2).LockWait(4, kOrigin + 5 * kMs).LockObtain(4, kOrigin + 20 * kMs);
  w.LockRelease(4, kOrigin + 30 * kMs);
  w.ThreadContext(1).Calibration(kOrigin + 80 * kMs, int64_t(kOrigin + 80 * kMs), int64_t(kOrigin + 80 * kMs),
                                 0);
  w.End(kOrigin + 80 * kMs);
  const std::string trace = gnomon::test::WriteTraceFile(dir.File("resources.gnomon"), w);
  for (const auto& [range, rows, mib] : {std::tuple{"0:55", 5, 15}, std::tuple{"0:65", 3, 12}}) {
    const char* select = range;  // CAPTURE's lambda takes it
    CAPTURE(select);
    ViewerRun run = RunViewer(
        dir, {trace, "--frames", "3", "--size", "1200x800", "--show", "memory", "--select", select});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue& report = WindowReport(run, "memory");
    CHECK(report.Find("pool")->string == "textures");
    CHECK(Number(report, "rows") == rows);
    CHECK(Number(report, "bytes") == double(uint64_t(mib) << 20));
  }
  // The lanes, without a selected range over their colours.
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--size", "1200x800"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  bool memory_lane = false, lock_lane = false;
  for (const JsonValue& lane : Array(run.layout, "lanes")) {
    memory_lane |= lane.Find("title")->string == "Memory: textures";
    lock_lane |= lane.Find("title")->string == "Lock: queue";
  }
  CHECK(memory_lane);
  CHECK(lock_lane);
  int holds = 0, waits = 0;
  for (const JsonValue& item : Array(run.layout, "items")) {
    const int kind = int(Number(item, "kind"));
    if (kind != 7 && kind != 8) continue;  // DrawItem::Kind::kLockHold, kLockWait
    (kind == 7 ? holds : waits) += 1;
    const int x = int(Number(item, "x1")) - 3;  // clear of its label, drawn from the left
    const int y = int(Number(item, "y1")) - 2;
    CHECK_MESSAGE(Close(run.shot.At(x, y), uint32_t(Number(item, "color"))), "lock item at ", x, ",", y);
    if (kind == 8) CHECK(Number(item, "x1") - Number(item, "x0") > 50);  // 15 of about 80 ms, 1200 px wide
  }
  CHECK(holds == 2);
  CHECK(waits == 1);
}

TEST_CASE("samples and call stacks: the top functions, the flame graph, a zone's stack") {
  ScratchDir dir;
  // Addresses outside every module (no ModuleDef): each function is named by its
  // address. 60 samples on main: 40 in 0x300 called by 0x200 called by 0x100, 20 in
  // 0x200; the "Work" zone's stack is 0x300 <- 0x200 <- 0x100 (return addresses + 1).
  gnomon::test::StreamWriter w;
  w.AppInfo("samples")
      .Calibration(kOrigin, int64_t(kOrigin), int64_t(kOrigin), 0)
      .SourceLocation(1, "Work", "work", "known.cpp", 10)
      .ThreadInfo(1, 101, "main")
      .ThreadContext(1)
      .ZoneBegin(1, kOrigin)
      .Callstack({0x301, 0x201, 0x101});
  for (uint64_t i = 0; i < 60; ++i) {
    if (i < 40) {
      w.Sample(101, kOrigin + i * kMs, {0x300, 0x201, 0x101});
    } else {
      w.Sample(101, kOrigin + i * kMs, {0x200, 0x101});
    }
  }
  w.ZoneEnd(kOrigin + 70 * kMs);
  w.Calibration(kOrigin + 80 * kMs, int64_t(kOrigin + 80 * kMs), int64_t(kOrigin + 80 * kMs), 0);
  w.End(kOrigin + 80 * kMs);
  const std::string trace = gnomon::test::WriteTraceFile(dir.File("samples.gnomon"), w);
  {
    ViewerRun run =
        RunViewer(dir, {trace, "--frames", "4", "--size", "1200x800", "--show", "samples,callstack"});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue& samples = WindowReport(run, "samples");
    CHECK(Number(samples, "samples") == 60);
    CHECK(samples.Find("top")->string == "0x300");
    CHECK(Number(samples, "top_self") == 40);
    CHECK(Number(samples, "functions") == 3);
    const JsonValue& stack = WindowReport(run, "callstack");
    CHECK(stack.Find("of")->string == "zone Work");
    CHECK(Number(stack, "frames") == 3);
    CHECK(stack.Find("first")->string == "0x300");
  }
  // The flame graph: all > 0x100 > 0x200 > 0x300, as wide as their samples.
  {
    ViewerRun run = RunViewer(dir, {trace, "--frames", "4", "--size", "1200x800", "--show", "samples=flame"});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const auto& boxes = Array(WindowReport(run, "samples-flame"), "boxes");
    REQUIRE(boxes.size() == 4);
    const double all = Number(boxes[0], "x1") - Number(boxes[0], "x0");
    CHECK(Number(boxes[0], "samples") == 60);
    CHECK(Number(boxes[2], "samples") == 60);  // 0x200: on every stack
    CHECK(Number(boxes[3], "samples") == 40);
    CHECK(Number(boxes[3], "x1") - Number(boxes[3], "x0") == doctest::Approx(all * 40 / 60).epsilon(0.02));
    CHECK(Number(boxes[3], "row") == 3);
  }
  // The selected range holds the last 20: all in 0x200.
  ViewerRun run = RunViewer(dir, {trace, "--frames", "4", "--show", "samples", "--select", "39.5:70"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& samples = WindowReport(run, "samples");
  CHECK(Number(samples, "samples") == 20);
  CHECK(samples.Find("top")->string == "0x200");
}
