// The Frame times window (src/app/frame_times_window.cpp), drawn in the real viewer
// under Xvfb for the known trace.
#include <doctest/doctest.h>

#include <string>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

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
