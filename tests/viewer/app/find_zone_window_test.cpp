// The Find zone window (src/app/find_zone_window.cpp), drawn in the real viewer under
// Xvfb for the known trace: what it reports must be the trace's numbers, and its bars
// must be where it says.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

TEST_CASE("find zone: the known durations, as bars of the right heights, and the selected range") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  // Held, and over --memory-limit: the zones read from the file give the same window.
  for (const bool held : {true, false}) {
    CAPTURE(held);
    const std::vector<std::string> limit =
        held ? std::vector<std::string>{} : std::vector<std::string>{"--memory-limit", "1K"};
    {
      std::vector<std::string> args{trace, "--frames", "3", "--size", "1200x800", "--show", "find-zone=work"};
      args.insert(args.end(), limit.begin(), limit.end());
      ViewerRun run = RunViewer(dir, args);
      REQUIRE_MESSAGE(run.exit_code == 0, run.log);
      const JsonValue& report = WindowReport(run, "find-zone");
      CHECK(report.Find("location")->string == "Work");  // the search is case-insensitive
      CHECK(Number(report, "from_file") == (held ? 0 : 1));
      CHECK(Number(report, "occurrences") == 80);
      CHECK(Number(report, "listed") == 80);
      CHECK(Number(report, "rows") == 80);
      CHECK(Number(report, "p50_ns") >= 1e6);
      CHECK(Number(report, "p50_ns") <= 2e6);
      CHECK(Number(report, "p99_ns") == 8e6);
      CheckBars(run, Array(report, "bars"), {40, 20, 10, 10}, kFindZoneBars);
    }
    // Limited to the first 79.5 ms: only the 1 ms zones.
    std::vector<std::string> args{trace,    "--frames",       "3",        "--size", "1200x800",
                                  "--show", "find-zone=Work", "--select", "0:79.5"};
    args.insert(args.end(), limit.begin(), limit.end());
    ViewerRun run = RunViewer(dir, args);
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue& report = WindowReport(run, "find-zone");
    CHECK(Number(report, "occurrences") == 40);
    CheckBars(run, Array(report, "bars"), {40}, kFindZoneBars);
  }
}

TEST_CASE("find zone outlines every occurrence on the timeline") {
  gnomon::test::ScratchDir dir;
  const std::string trace = gnomon::test::WriteKnownTrace(dir, "known");
  gnomon::test::ViewerRun run = gnomon::test::RunViewer(
      dir, {trace, "--frames", "4", "--size", "1200x800", "--show", "find-zone=Work"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const gnomon::test::JsonValue& outlines = gnomon::test::WindowReport(run, "find-outlines");
  CHECK(gnomon::test::Number(outlines, "outlined") == 80);  // 70 on main, 10 on the worker
  CHECK(gnomon::test::Number(outlines, "rectangles") >= 2);
  CHECK(gnomon::test::Number(outlines, "rectangles") <= 80);
}

TEST_CASE("find zone: the histogram's time axis, its mean and median markers, and self times") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  // Work: 40 of 1 ms, 20 of 2 ms, 10 of 4 ms and 10 of 8 ms, each half Inner.
  for (const bool self : {false, true}) {
    CAPTURE(self);
    ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--size", "1200x800", "--show",
                                    std::string(self ? "find-zone-self" : "find-zone") + "=Work"});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue& report = WindowReport(run, "find-zone");
    const double scale = self ? 0.5 : 1.0;
    CHECK(Number(report, "self") == double(self));
    CHECK(Number(report, "mean_ns") == doctest::Approx(2.5e6 * scale));
    CHECK(Number(report, "p50_ns") == 2e6 * scale);
    CHECK(Number(report, "stddev_ns") == doctest::Approx(2.29128784747792e6 * scale));  // sqrt(5.25) ms
    const auto& axis = Array(report, "axis");
    REQUIRE(axis.size() == 5);
    CHECK(axis.front().string == (self ? "500 us" : "1 ms"));
    CHECK(axis.back().string == (self ? "4 ms" : "8 ms"));
    // On the log scale from the shortest to the longest: the mean at log(2.5)/log(8) of
    // the width, the median at a third.
    const auto& bars = Array(report, "bars");
    REQUIRE(bars.size() == 4);
    const double left = Number(bars.front(), "x0"), right = Number(bars.back(), "x1");
    CHECK(Number(report, "mean_x") ==
          doctest::Approx(left + (right - left) * std::log(2.5) / std::log(8.0)).epsilon(0.01));
    CHECK(Number(report, "median_x") == doctest::Approx(left + (right - left) / 3).epsilon(0.01));
    CheckBars(run, bars, {40, 20, 10, 10}, kFindZoneBars);
  }
}
