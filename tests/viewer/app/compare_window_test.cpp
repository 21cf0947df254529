// The Compare window (src/app/compare_window.cpp), drawn in the real viewer under Xvfb
// for two known traces.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

namespace {

// The known trace (A) compared with one whose worker's ten zones take twice as long (B).
ViewerRun CompareKnownTraces(const ScratchDir& dir, const std::vector<std::string>& options = {}) {
  const std::string a = WriteKnownTrace(dir, "a");
  const std::string b = WriteKnownTrace(dir, "b", 16);
  std::vector<std::string> args = {a, "--compare", b, "--frames", "3", "--size", "1200x900"};
  args.insert(args.end(), options.begin(), options.end());
  ViewerRun run = RunViewer(dir, args);
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  return run;
}

// "Work" in both: 80 zones, 200 ms in A and 280 ms in B.
void CheckWorkCounts(const JsonValue& work) {
  CHECK(Number(work, "count_a") == 80);
  CHECK(Number(work, "count_b") == 80);
  CHECK(Number(work, "total_a_ns") == 200e6);
  CHECK(Number(work, "total_b_ns") == 280e6);
}

}  // namespace

TEST_CASE("compare: both traces' counts and totals, and their histograms overlaid") {
  ScratchDir dir;
  ViewerRun run = CompareKnownTraces(dir);
  const JsonValue& report = WindowReport(run, "compare");
  CHECK(Number(report, "rows") == 2);
  const JsonValue& work = Zone(report, "Work");
  CheckWorkCounts(work);
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

TEST_CASE("compare: totals per frame, and the regression check's median change with its interval") {
  ScratchDir dir;
  ViewerRun run = CompareKnownTraces(dir);
  const JsonValue& report = WindowReport(run, "compare");
  const JsonValue& work = Zone(report, "Work");
  // 19 frames in each.
  CHECK(Number(work, "total_a_per_frame_ns") == doctest::Approx(200e6 / 19));
  CHECK(Number(work, "total_b_per_frame_ns") == doctest::Approx(280e6 / 19));
  // The median (2 ms) is the same in both; the p90 doubles (8 to 16 ms), on too few zones
  // to be sure of it at 99 %.
  CHECK_MESSAGE(work.Find("median_change")->string.rfind("+0.0 % [", 0) == 0,
                work.Find("median_change")->string);
  CHECK_MESSAGE(work.Find("p90_change")->string.rfind("+100.0 % [", 0) == 0, work.Find("p90_change")->string);
  // The frames are the same in both.
  CHECK_MESSAGE(report.Find("frames_change")->string.rfind("+0.0 % [", 0) == 0,
                report.Find("frames_change")->string);
}

TEST_CASE("compare: traces over --memory-limit compared from their files, frames still checked") {
  ScratchDir dir;
  ViewerRun run = CompareKnownTraces(dir, {"--memory-limit", "1K"});
  const JsonValue& report = WindowReport(run, "compare");
  CHECK(Number(report, "zones_from_file") == 1);
  CHECK(Number(report, "rows") == 2);
  const JsonValue& work = Zone(report, "Work");
  CheckWorkCounts(work);
  CHECK(Number(work, "total_a_per_frame_ns") == doctest::Approx(200e6 / 19));
  // Without the zones held, no CPU zone's median change or histogram; the frames' check stays.
  CHECK(work.Find("median_change") == nullptr);
  CHECK(report.Find("histograms") == nullptr);
  CHECK_MESSAGE(report.Find("frames_change")->string.rfind("+0.0 % [", 0) == 0,
                report.Find("frames_change")->string);
}
