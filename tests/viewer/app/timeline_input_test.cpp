// Navigating the timeline (src/app/timeline_input.cpp) in the real window under Xvfb:
// zoom to a zone (--zoom-to, double-click), to the selected range (Z), back and
// forward, find zone's next and previous occurrence (its keys live in
// find_zone_window.cpp), what hovering outlines, and how far zooming out goes. The
// known trace's Work zones on "main" begin every other millisecond at 0, 2, 4 ... ms
// (trace time), 1 ms long at first; zone 2k is the k-th Work there, 2k + 1 its Inner.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "known_trace.h"

using gnomon::test::kMs;
using gnomon::test::Number;
using gnomon::test::RunViewer;
using gnomon::test::ScratchDir;
using gnomon::test::ViewerRun;
using gnomon::test::WindowReport;

namespace {

double ViewBegin(const ViewerRun& run) { return Number(*run.layout.Find("view"), "begin_ns"); }
double ViewEnd(const ViewerRun& run) { return Number(*run.layout.Find("view"), "end_ns"); }

// The view shows [begin_ms, end_ms], to a pixel.
void CheckView(const ViewerRun& run, double begin_ms, double end_ms) {
  const double pixel = (end_ms - begin_ms) * double(kMs) / 1000;
  CHECK(std::abs(ViewBegin(run) - begin_ms * double(kMs)) <= pixel);
  CHECK(std::abs(ViewEnd(run) - end_ms * double(kMs)) <= 2 * pixel);
}

// The timeline's report of the selected zone: its index in its thread.
double SelectedIndex(const ViewerRun& run) { return Number(WindowReport(run, "timeline"), "selected_index"); }

ViewerRun Run(const ScratchDir& dir, const std::string& trace, std::vector<std::string> args) {
  args.insert(args.begin(), {trace, "--frames", "8"});  // room for every key's press and release
  ViewerRun run = RunViewer(dir, args);
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  return run;
}

}  // namespace

TEST_CASE(
    "--zoom-to selects a zone and fills the view with it, Backspace goes back and Shift+Backspace forward") {
  ScratchDir dir;
  const std::string trace = gnomon::test::WriteKnownTrace(dir, "known");
  // The second Work: 2 to 3 ms, with 5 % of its length on each side.
  const ViewerRun zoomed = Run(dir, trace, {"--zoom-to", "Work#2"});
  CheckView(zoomed, 1.95, 3.05);
  CHECK(SelectedIndex(zoomed) == 2);
  CHECK(Number(WindowReport(zoomed, "timeline"), "back") == 1);  // the whole trace, left for it

  const ViewerRun back = Run(dir, trace, {"--zoom-to", "Work#2", "--keys", "backspace"});
  CHECK(ViewBegin(back) == 0);
  CHECK(ViewEnd(back) == doctest::Approx(419.0 * double(kMs)).epsilon(0.01));
  CHECK(Number(WindowReport(back, "timeline"), "forward") == 1);

  const ViewerRun forward = Run(dir, trace, {"--zoom-to", "Work#2", "--keys", "backspace,shift+backspace"});
  CheckView(forward, 1.95, 3.05);
  CHECK(Number(WindowReport(forward, "timeline"), "forward") == 0);
  // Alt+left and Alt+right do the same.
  const ViewerRun alt = Run(dir, trace, {"--zoom-to", "Work#2", "--keys", "alt+left,alt+right,alt+left"});
  CHECK(ViewBegin(alt) == 0);

  // A name with no zone says so and leaves the view on the whole trace.
  const ViewerRun none = Run(dir, trace, {"--zoom-to", "Nothing"});
  CHECK(none.log.find("--zoom-to: the trace has no zone Nothing#1") != std::string::npos);
  CHECK(ViewBegin(none) == 0);
}

TEST_CASE("a double-clicked zone fills the view, and hovering one outlines every zone of its location") {
  ScratchDir dir;
  const std::string trace = gnomon::test::WriteKnownTrace(dir, "known");
  // At 0-10 ms, main shows Work at 0, 2, 4, 6, 8 and (at the edge) 10 ms; find the one at 2 ms.
  const ViewerRun plain = Run(dir, trace, {"--range", "0:10"});
  double x = -1, y = -1;
  int works = 0;
  for (const gnomon::test::JsonValue& item : plain.layout.Find("items")->array) {
    if (item.Find("kind")->number != 0 || item.Find("label")->string.rfind("Work", 0) != 0) continue;
    ++works;
    const double x0 = Number(item, "x0"), x1 = Number(item, "x1");
    if (x0 > 200 && x0 < 300) {  // 2 ms of 10 across about 1,200 px
      x = (x0 + x1) / 2;
      y = (Number(item, "y0") + Number(item, "y1")) / 2;
    }
  }
  REQUIRE(x > 0);
  CHECK(works == 6);
  const std::string at = std::to_string(int(x)) + "," + std::to_string(int(y));

  const ViewerRun hover = Run(dir, trace, {"--range", "0:10", "--mouse", "hover@" + at});
  const gnomon::test::JsonValue& report = WindowReport(hover, "timeline");
  CHECK(Number(report, "same_location_outlined") == works);
  CHECK(Number(report, "cursor_x") == doctest::Approx(int(x)));
  const double cursor_ms = std::strtod(report.Find("cursor_time")->string.c_str(), nullptr);
  CHECK(cursor_ms == doctest::Approx(2.5).epsilon(0.04));

  const ViewerRun double_click = Run(dir, trace, {"--range", "0:10", "--mouse", "double-click@" + at});
  CheckView(double_click, 1.95, 3.05);
  CHECK(SelectedIndex(double_click) == 2);
}

TEST_CASE("Z zooms to the selected range, and zooming out stops a tenth past the whole trace") {
  ScratchDir dir;
  const std::string trace = gnomon::test::WriteKnownTrace(dir, "known");
  const ViewerRun range = Run(dir, trace, {"--select", "100:150", "--keys", "z"});
  CheckView(range, 100, 150);
  const ViewerRun out = Run(dir, trace, {"--keys", "down,down,down,down,down,down"});
  const double span = ViewEnd(out) - ViewBegin(out);
  CHECK(span == doctest::Approx(1.1 * 419.0 * double(kMs)).epsilon(0.01));
}

TEST_CASE("with Find zone open, N and Shift+N select and show the next and previous occurrence") {
  ScratchDir dir;
  const std::string trace = gnomon::test::WriteKnownTrace(dir, "known");
  // From the middle of 0-10 ms (5 ms): the next Work begins at 6 ms, the one before at 4.
  const ViewerRun next = Run(dir, trace, {"--range", "0:10", "--show", "find-zone=Work", "--keys", "n"});
  CHECK(SelectedIndex(next) == 6);
  CheckView(next, 5.5, 7.5);
  const ViewerRun twice = Run(dir, trace, {"--range", "0:10", "--show", "find-zone=Work", "--keys", "n,f3"});
  CHECK(SelectedIndex(twice) == 8);
  const ViewerRun before =
      Run(dir, trace, {"--range", "0:10", "--show", "find-zone=Work", "--keys", "shift+n"});
  CHECK(SelectedIndex(before) == 4);
  CheckView(before, 3.5, 5.5);
  // Without Find zone, N does nothing.
  const ViewerRun alone = Run(dir, trace, {"--range", "0:10", "--keys", "n"});
  CHECK(WindowReport(alone, "timeline").Find("selected_index") == nullptr);
  CheckView(alone, 0, 10);
}
