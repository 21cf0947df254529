// The Statistics window (src/app/statistics_window.cpp), drawn in the real viewer under
// Xvfb for the known trace.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

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

TEST_CASE("statistics: each total's share of the range, the threads a location ran on, and the CSV") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  // The whole trace is 420 ms; Work (200 ms in all) ran on main and the worker.
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--show", "statistics"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& report = WindowReport(run, "statistics");
  CHECK(Number(Zone(report, "Work"), "range_pct") == doctest::Approx(100.0 * 200 / 420));
  CHECK(Number(Zone(report, "Work"), "threads") == 2);
  const std::string& csv = report.Find("csv")->string;
  CHECK(csv.rfind("name,function,file,line,count,total_ns,self_ns,mean_ns,median_ns,min_ns,max_ns,range_pct,"
                  "threads\n",
                  0) == 0);
  CHECK(csv.find("\n\"Work\",\"work\",\"known.cpp\",10,80,200000000,100000000,2500000.0,") !=
        std::string::npos);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);  // the header and two rows
  // The first 79.5 ms: 40 Work of 1 ms, on main only.
  ViewerRun range = RunViewer(dir, {trace, "--frames", "3", "--show", "statistics", "--select", "0:79.5"});
  REQUIRE_MESSAGE(range.exit_code == 0, range.log);
  const JsonValue& limited = WindowReport(range, "statistics");
  CHECK(Number(Zone(limited, "Work"), "range_pct") == doctest::Approx(100.0 * 40 / 79.5));
  CHECK(Number(Zone(limited, "Work"), "threads") == 1);
}

TEST_CASE("a trace over --memory-limit: its zones drawn from their overview, statistics read from the file") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  ViewerRun held = RunViewer(dir, {trace, "--frames", "3", "--show", "statistics,trace-info"});
  ViewerRun counted =
      RunViewer(dir, {trace, "--frames", "3", "--show", "statistics,trace-info", "--memory-limit", "1K"});
  REQUIRE_MESSAGE(held.exit_code == 0, held.log);
  REQUIRE_MESSAGE(counted.exit_code == 0, counted.log);
  CHECK(Number(WindowReport(held, "statistics"), "from_file") == 0);
  const JsonValue& report = WindowReport(counted, "statistics");
  CHECK(Number(report, "from_file") == 1);
  CHECK(Number(report, "rows") == 2);
  REQUIRE(report.Find("note") != nullptr);
  CHECK(report.Find("note")->string.empty());  // nothing left out: no damaged block
  CHECK(Number(Zone(report, "Work"), "count") == 80);
  CHECK(Number(Zone(report, "Work"), "total_ns") == 200e6);
  CHECK(Number(Zone(report, "Work"), "self_ns") == 100e6);
  CHECK(Number(Zone(report, "Inner"), "total_ns") == 100e6);
  CHECK(Number(Zone(report, "Work"), "range_pct") == doctest::Approx(100.0 * 200 / 420));
  CHECK(WindowReport(counted, "trace-info").Find("Zones")->string.find("not held") != std::string::npos);
  CHECK(WindowReport(held, "trace-info").Find("Zones")->string.find("not held") == std::string::npos);
  // The same zones where the held ones are, named alike: held zones are kind 0, zones
  // drawn from the overview kind 12 (DrawItem::Kind::kOverviewZone).
  const auto held_zones = ItemsOfKind(held, 0);
  CHECK(held_zones.size() > 100);
  CHECK(ItemsOfKind(counted, 0).empty());
  CHECK(ItemsOfKind(counted, 12) == held_zones);
}
