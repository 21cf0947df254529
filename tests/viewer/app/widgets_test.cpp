// The drawing pieces the windows share (src/app/widgets.cpp), seen in the real viewer
// under Xvfb: the histogram the Find zone window draws, and the JSON a window reports
// of itself.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

namespace {

constexpr uint32_t kHistogramBackground = 0xFF1A1716u;  // IM_COL32(22, 23, 26)

}  // namespace

TEST_CASE(
    "histogram: a bar per counted bin, in bin order on one baseline, the empty bins left as background") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--size", "1200x800", "--show", "find-zone=Work"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  REQUIRE(run.shot.pixels != nullptr);
  // Work lasts 1, 2, 4 or 8 ms: four of the 80 bins hold them, far apart.
  const auto& bars = Array(WindowReport(run, "find-zone"), "bars");
  REQUIRE(bars.size() == 4);
  const double width = Number(bars[0], "x1") - Number(bars[0], "x0");
  CHECK(width >= 2);
  for (size_t i = 0; i < bars.size(); ++i) {
    CAPTURE(i);
    CHECK(Number(bars[i], "y1") == doctest::Approx(Number(bars[0], "y1")));  // one baseline
    CHECK(Number(bars[i], "x1") - Number(bars[i], "x0") == doctest::Approx(width).epsilon(0.05));
    if (i == 0) continue;
    CHECK(Number(bars[i], "x0") > Number(bars[i - 1], "x1") + width);  // empty bins between
    // Half way between two bars, at the foot: the plot's background, not a bar.
    const int x = int((Number(bars[i - 1], "x1") + Number(bars[i], "x0")) / 2);
    const int y = int(Number(bars[i], "y1")) - 2;
    CHECK_MESSAGE(Close(run.shot.At(x, y), kHistogramBackground), "at ", x, ",", y, ": ", run.shot.At(x, y));
    CHECK_FALSE(Close(run.shot.At(x, y), kFindZoneBars));
  }
}

TEST_CASE("a window's report gives a zone's name exactly: quotes, backslashes, tabs and UTF-8") {
  ScratchDir dir;
  const std::string odd = "say \"hi\" \\ to the caf\xC3\xA9\tnow";
  gnomon::test::StreamWriter w;
  w.AppInfo("names")
      .Calibration(kOrigin, int64_t(kOrigin), int64_t(kOrigin), 0)
      .SourceLocation(1, odd, "odd", "names.cpp", 10)
      .SourceLocation(2, "Plain", "plain", "names.cpp", 20)
      .ThreadInfo(1, 101, "main")
      .ThreadContext(1);
  for (uint64_t i = 0; i < 3; ++i)
    w.ZoneBegin(1, kOrigin + i * 10 * kMs).ZoneEnd(kOrigin + i * 10 * kMs + kMs);
  w.ZoneBegin(2, kOrigin + 40 * kMs).ZoneEnd(kOrigin + 42 * kMs);
  w.Calibration(kOrigin + 50 * kMs, int64_t(kOrigin + 50 * kMs), int64_t(kOrigin + 50 * kMs), 0);
  w.End(kOrigin + 50 * kMs);
  const std::string trace = gnomon::test::WriteTraceFile(dir.File("names.gnomon"), w);
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--show", "statistics"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);  // and the dump parsed as JSON
  const JsonValue& report = WindowReport(run, "statistics");
  CHECK(Number(report, "rows") == 2);
  CHECK(Number(Zone(report, odd), "count") == 3);
  CHECK(Number(Zone(report, odd), "total_ns") == 3e6);
  CHECK(Number(Zone(report, "Plain"), "count") == 1);
}
