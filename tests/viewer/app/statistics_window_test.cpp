// The Statistics window (src/app/statistics_window.cpp), drawn in the real viewer under
// Xvfb for the known trace.
#include <doctest/doctest.h>

#include <string>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

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
