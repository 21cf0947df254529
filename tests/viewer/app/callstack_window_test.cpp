// The Call stack window (src/app/callstack_window.cpp), drawn in the real viewer under
// Xvfb: the stack of the zone selected (--show callstack selects the longest), and of a
// sample clicked on the timeline.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

TEST_CASE("call stack: the selected zone's own stack, innermost first, and none in a trace without stacks") {
  ScratchDir dir;
  // Addresses outside every module (no ModuleDef): each function is named by its
  // address. On main, "Short" (2 ms) called through 0x400 <- 0x100, then "Long" (6 ms)
  // through 0x700 <- 0x600 <- 0x100 (return addresses + 1).
  gnomon::test::StreamWriter w;
  w.AppInfo("stacks")
      .Calibration(kOrigin, int64_t(kOrigin), int64_t(kOrigin), 0)
      .SourceLocation(1, "Short", "short", "stacks.cpp", 10)
      .SourceLocation(2, "Long", "long", "stacks.cpp", 20)
      .ThreadInfo(1, 101, "main")
      .ThreadContext(1)
      .ZoneBegin(1, kOrigin)
      .Callstack({0x401, 0x101})
      .ZoneEnd(kOrigin + 2 * kMs)
      .ZoneBegin(2, kOrigin + 4 * kMs)
      .Callstack({0x701, 0x601, 0x101})
      .ZoneEnd(kOrigin + 10 * kMs);
  w.Calibration(kOrigin + 20 * kMs, int64_t(kOrigin + 20 * kMs), int64_t(kOrigin + 20 * kMs), 0);
  w.End(kOrigin + 20 * kMs);
  const std::string trace = gnomon::test::WriteTraceFile(dir.File("stacks.gnomon"), w);
  ViewerRun run = RunViewer(dir, {trace, "--frames", "4", "--size", "1200x800", "--show", "callstack"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& stack = WindowReport(run, "callstack");
  CHECK(stack.Find("of")->string == "zone Long");
  CHECK(Number(stack, "frames") == 3);
  CHECK(stack.Find("first")->string == "0x700");

  // The known trace holds no stacks: the window shows none.
  const std::string known = WriteKnownTrace(dir, "known");
  ViewerRun none = RunViewer(dir, {known, "--frames", "4", "--show", "callstack"});
  REQUIRE_MESSAGE(none.exit_code == 0, none.log);
  const JsonValue& empty = WindowReport(none, "callstack");
  CHECK(Number(empty, "frames") == 0);
  CHECK(empty.Find("first") == nullptr);
}

TEST_CASE("call stack: a sample's tick on its thread's lane, clicked, shows where the thread was") {
  ScratchDir dir;
  // main runs 20 ms; a sample each millisecond from 1 to 19 ms at 0x500 <- 0x101, but the
  // one at 15 ms, at 0x900 <- 0x601 <- 0x101. The samples arrive out of order (as from
  // two CPUs): the 15 ms one first.
  gnomon::test::StreamWriter w;
  w.AppInfo("samples")
      .Calibration(kOrigin, int64_t(kOrigin), int64_t(kOrigin), 0)
      .SourceLocation(1, "Work", "work", "samples.cpp", 10)
      .ThreadInfo(1, 101, "main")
      .ThreadContext(1)
      .ZoneBegin(1, kOrigin)
      .Sample(101, kOrigin + 15 * kMs, {0x900, 0x601, 0x101});
  for (uint64_t ms = 1; ms < 20; ++ms) {
    if (ms != 15) w.Sample(101, kOrigin + ms * kMs, {0x500, 0x101});
  }
  w.ThreadContext(1).ZoneEnd(kOrigin + 20 * kMs);
  w.Calibration(kOrigin + 20 * kMs, int64_t(kOrigin + 20 * kMs), int64_t(kOrigin + 20 * kMs), 0);
  w.End(kOrigin + 20 * kMs);
  const std::string trace = gnomon::test::WriteTraceFile(dir.File("samples.gnomon"), w);
  const std::vector<std::string> shown = {trace, "--frames", "4", "--size", "1200x800", "--range", "0:20"};
  ViewerRun run = RunViewer(dir, shown);
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  // A tick per sample, in main's title bar, in time order.
  const JsonValue* main_lane = nullptr;
  for (const JsonValue& lane : Array(run.layout, "lanes")) {
    if (lane.Find("title")->string.starts_with("main")) main_lane = &lane;
  }
  REQUIRE(main_lane != nullptr);
  std::vector<const JsonValue*> ticks;
  for (const JsonValue& item : Array(run.layout, "items")) {
    if (Number(item, "kind") == 11) ticks.push_back(&item);  // DrawItem::Kind::kSample
  }
  REQUIRE(ticks.size() == 19);
  for (size_t i = 0; i < ticks.size(); ++i) {
    CHECK(Number(*ticks[i], "count") == 1);
    CHECK(Number(*ticks[i], "y1") <= Number(*main_lane, "y"));
    CHECK(Number(*ticks[i], "y0") >= Number(*main_lane, "y") - 20);
    if (i > 0)
      CHECK(Number(*ticks[i], "x0") == doctest::Approx(Number(*ticks[i - 1], "x0") + 60).epsilon(0.05));
  }
  // Clicked, the 15 ms tick opens the Call stack window on its own stack, its first frame
  // the sampled address itself (not a return address).
  const JsonValue& tick = *ticks[14];
  const std::string at = std::to_string(int(Number(tick, "x0"))) + "," +
                         std::to_string(int((Number(tick, "y0") + Number(tick, "y1")) / 2));
  std::vector<std::string> clicking = shown;
  clicking[2] = "10";  // frames: the mouse rests, presses, releases
  clicking.insert(clicking.end(), {"--mouse", "click@" + at});
  ViewerRun clicked = RunViewer(dir, clicking);
  REQUIRE_MESSAGE(clicked.exit_code == 0, clicked.log);
  const JsonValue& stack = WindowReport(clicked, "callstack");
  CHECK(stack.Find("of")->string == "sample of main");
  CHECK(Number(stack, "frames") == 3);
  CHECK(stack.Find("first")->string == "0x900");
}
