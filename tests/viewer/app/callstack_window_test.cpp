// The Call stack window (src/app/callstack_window.cpp), drawn in the real viewer under
// Xvfb: the stack of the zone selected (--show callstack selects the longest).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

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
