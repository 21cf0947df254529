// The Samples window (src/app/samples_window.cpp), its flame graph, and the Call stack
// window beside it, drawn in the real viewer under Xvfb.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

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
