// The App (src/app/app.cpp) in the real viewer under Xvfb: the other programs of a file
// as groups of lanes on one time axis, the side windows tiled below the timeline, and
// the settings kept between runs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

namespace {

bool Overlaps(const JsonValue& a, const JsonValue& b) {
  return Number(a, "x0") < Number(b, "x1") - 0.5 && Number(b, "x0") < Number(a, "x1") - 0.5 &&
         Number(a, "y0") < Number(b, "y1") - 0.5 && Number(b, "y0") < Number(a, "y1") - 0.5;
}

}  // namespace

TEST_CASE("programs on clocks 1,000 s apart are drawn on one time axis, each in its group of lanes") {
  // Two programs of one capture, the same zones; the second's clock reads 1,000 s ahead
  // (its clock exchange says so) and its zones run 30 us later.
  gnomon::test::ScratchDir dir;
  constexpr uint64_t kAhead = 1'000'000'000'000, kLater = 30'000;
  gnomon::test::StreamWriter first, second;
  for (auto* w : {&first, &second}) {
    const bool ahead = w == &second;
    const uint64_t base = (ahead ? kAhead + kLater : 0) + 1'000'000;
    w->AppInfo(ahead ? "second" : "first", ahead ? 2 : 1)
        .SourceLocation(1, "Step", "step", "s.cpp", 1, 0xD03030)
        .ThreadInfo(1, ahead ? 20 : 10, "steps")
        .ThreadContext(1);
    for (uint64_t i = 0; i < 10; ++i)
      w->ZoneBegin(1, base + i * 100'000).ZoneEnd(base + i * 100'000 + 60'000);
    // capture = program + offset, bracketed by [-1000 s - 10 ns, -1000 s + 15 ns] (or 0).
    const uint64_t t = base, shift = ahead ? kAhead : 0;
    w->Add(gnomon::protocol::ClockReply{.sequence = 1, .receive_ns = t, .send_ns = t + 5});
    w->Add(gnomon::protocol::ClockSample{
        .sequence = 1, .probe_sent_ns = t - shift - 10, .reply_received_ns = t - shift + 20});
    w->End(base + 1'100'000);
  }
  const std::string path = gnomon::test::WriteTraceFile(dir.File("two.gnomon"), {&first, &second});
  ViewerRun run = RunViewer(dir, {path, "--frames", "4", "--range", "0:1.2", "--size", "1200x900"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const auto& groups = run.layout.Find("groups")->array;
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].Find("title")->string.find("program 2: second (pid 2)") == 0);
  CHECK(groups[0].Find("title")->string.find("; clock +/- ") != std::string::npos);
  // The shown program's own clock bound, which its zones' tooltips add: its one
  // exchange's half round trip, 12.5 ns.
  const JsonValue* bound = run.layout.Find("session")->Find("clock_bound_ns");
  REQUIRE(bound != nullptr);
  CHECK(bound->number >= 12);
  CHECK(bound->number <= 13);
  std::vector<double> shown, other;
  for (const JsonValue& item : run.layout.Find("items")->array) {
    if (int(item.Find("kind")->number) == 0) shown.push_back(item.Find("x0")->number);
  }
  for (const JsonValue& item : groups[0].Find("items")->array) {
    if (int(item.Find("kind")->number) == 0) other.push_back(item.Find("x0")->number);
  }
  REQUIRE(shown.size() == 10);
  REQUIRE(other.size() == 10);
  const double px_per_ns = (shown[1] - shown[0]) / 100'000;
  for (size_t i = 0; i < 10; ++i) {
    CAPTURE(i);
    CHECK(std::fabs(other[i] - shown[i] - kLater * px_per_ns) <= 1.0);  // 30 us later, not 1,000 s
  }
  // The group's title row is drawn where the layout says, in the group bar's colour.
  const int y = int(groups[0].Find("y")->number) + 4;
  CHECK(Close(run.shot.At(run.shot.width - 40, y), 0xFF423834u));
}

namespace {

// Side windows as tiled: below the timeline, on the screen, none smaller than half a
// tile's least size, and every title bar in view (two windows never share a corner).
void CheckTiles(const ViewerRun& run, size_t expected, double min_width, double min_height) {
  const JsonValue* timeline = run.layout.Find("timeline");
  REQUIRE(timeline != nullptr);
  CHECK(Number(*timeline, "y1") - Number(*timeline, "y0") >= 60);
  const auto& windows = Array(run.layout, "side_windows");
  CHECK(windows.size() == expected);
  for (size_t i = 0; i < windows.size(); ++i) {
    CAPTURE(windows[i].Find("title")->string);
    CHECK_FALSE(Overlaps(windows[i], *timeline));
    CHECK(Number(windows[i], "x0") >= 0);
    CHECK(Number(windows[i], "y0") >= 0);
    CHECK(Number(windows[i], "x1") <= run.shot.width + 0.5);
    CHECK(Number(windows[i], "y1") <= run.shot.height + 0.5);
    CHECK(Number(windows[i], "x1") - Number(windows[i], "x0") >= min_width);
    CHECK(Number(windows[i], "y1") - Number(windows[i], "y0") >= min_height);
    for (size_t j = i + 1; j < windows.size(); ++j) {
      CHECK_FALSE((std::fabs(Number(windows[i], "x0") - Number(windows[j], "x0")) < 2 &&
                   std::fabs(Number(windows[i], "y0") - Number(windows[j], "y0")) < 2));
    }
  }
}

}  // namespace

TEST_CASE("side windows open in tiles below the timeline, side by side while they fit, then in decks") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  for (const char* size : {"800x600", "1200x700", "1920x1080", "640x1000"}) {
    CAPTURE(size);
    ViewerRun run =
        RunViewer(dir, {trace, "--frames", "3", "--size", size, "--show",
                        "statistics,find-zone=Work,flame-graph,frame-histogram,messages,gpu-clocks"});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    CheckTiles(run, 6, 150, 100);
  }
  // Side by side, at 1920x1080 (no deck): no window covers another.
  ViewerRun wide = RunViewer(dir, {trace, "--frames", "3", "--size", "1920x1080", "--show",
                                   "statistics,find-zone=Work,flame-graph"});
  REQUIRE_MESSAGE(wide.exit_code == 0, wide.log);
  const auto& windows = Array(wide.layout, "side_windows");
  REQUIRE(windows.size() == 3);
  for (size_t i = 0; i < windows.size(); ++i) {
    for (size_t j = i + 1; j < windows.size(); ++j) CHECK_FALSE(Overlaps(windows[i], windows[j]));
  }
}

TEST_CASE("every window open at once, at scale 1 and 2, keeps a readable size and its title in view") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  const std::string all =
      "statistics,find-zone=Work,flame-graph,frame-histogram,compare,messages,gpu-clocks,memory,samples,"
      "callstack,debug,trace-info,annotations";
  for (const char* scale : {"1", "2"}) {
    CAPTURE(scale);
    ViewerRun run =
        RunViewer(dir, {trace, "--frames", "3", "--size", "1280x800", "--scale", scale, "--show", all});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    // The call stack of the longest zone opens its details too: 14 windows, in decks.
    CheckTiles(run, 14, 150 * std::stod(scale), 100 * std::stod(scale));
    // Above the decks, a tab for each window names it; the last one opened is in front.
    const JsonValue& strip = WindowReport(run, "window-strip");
    const auto& tabs = Array(strip, "tabs");
    CHECK(tabs.size() == 14);
    CHECK(strip.Find("front")->string == "Annotations");
    for (const JsonValue& window : Array(run.layout, "side_windows"))
      CHECK(Number(window, "y0") >= Number(tabs[0], "y1"));  // no window over the strip

    // A click on a tab in view brings its window to the front.
    const JsonValue* other = nullptr;
    for (const JsonValue& tab : tabs) {
      if (tab.Find("title")->string != "Annotations" && Number(tab, "x0") >= 0 && Number(tab, "x1") <= 1200)
        other = &tab;
    }
    REQUIRE(other != nullptr);
    const std::string click = "click@" +
                              std::to_string(int((Number(*other, "x0") + Number(*other, "x1")) / 2)) + "," +
                              std::to_string(int((Number(*other, "y0") + Number(*other, "y1")) / 2));
    ViewerRun clicked = RunViewer(dir, {trace, "--frames", "8", "--size", "1280x800", "--scale", scale,
                                        "--show", all, "--mouse", click});
    REQUIRE_MESSAGE(clicked.exit_code == 0, clicked.log);
    CHECK(WindowReport(clicked, "window-strip").Find("front")->string == other->Find("title")->string);
  }
  // Windows that all fit side by side need no strip.
  ViewerRun few =
      RunViewer(dir, {trace, "--frames", "3", "--size", "1280x800", "--show", "statistics,messages"});
  REQUIRE_MESSAGE(few.exit_code == 0, few.log);
  CHECK(few.layout.Find("windows")->Find("window-strip") == nullptr);
}

TEST_CASE("windows are free: a place the settings remember is kept, and T puts them back in their tiles") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  // Where a user left the Statistics window: over the timeline, at the right.
  std::filesystem::create_directories(dir.File("gnomon"));
  std::ofstream(dir.File("gnomon/viewer-imgui.ini")) << "[Window][Statistics]\nPos=700,120\nSize=420,300\n"
                                                        "Collapsed=0\n\n";
  std::ofstream(dir.File("gnomon/viewer-settings")) << "window statistics\n";
  auto statistics = [](const ViewerRun& run) {
    for (const JsonValue& w : Array(run.layout, "side_windows")) {
      if (w.Find("title")->string == "Statistics") return w;
    }
    FAIL("no Statistics window");
    return JsonValue{};
  };
  ViewerRun kept = RunViewer(dir, {trace, "--frames", "3", "--keep-settings"});
  REQUIRE_MESSAGE(kept.exit_code == 0, kept.log);
  const JsonValue moved = statistics(kept);
  CHECK(Number(moved, "x0") == 700);
  CHECK(Number(moved, "y0") == 120);
  CHECK(Number(moved, "x1") - Number(moved, "x0") == 420);
  ViewerRun tiled = RunViewer(dir, {trace, "--frames", "3", "--keep-settings", "--keys", "t"});
  REQUIRE_MESSAGE(tiled.exit_code == 0, tiled.log);
  const JsonValue tile = statistics(tiled);
  CHECK(Number(tile, "x0") == 0);
  CHECK(Number(tile, "x1") ==
        doctest::Approx(tiled.shot.width).epsilon(0.01));  // the only window: all the width
  CHECK(Number(tile, "y0") > Number(*tiled.layout.Find("timeline"), "y1") - 1);
  // The tiles are what the next run remembers.
  ViewerRun after = RunViewer(dir, {trace, "--frames", "3", "--keep-settings"});
  CHECK(Number(statistics(after), "x0") == 0);
}

TEST_CASE("the open windows and the panel are kept between runs") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  {
    ViewerRun run =
        RunViewer(dir, {trace, "--frames", "3", "--keep-settings", "--show", "statistics,flame-graph"});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  }
  const std::string settings = gnomon::test::ReadFile(dir.File("gnomon/viewer-settings"));
  CHECK(settings.find("window statistics") != std::string::npos);
  CHECK(settings.find("recent-file " + std::filesystem::absolute(trace).string()) != std::string::npos);
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--keep-settings"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  CHECK(run.layout.Find("windows")->Find("statistics") != nullptr);
  CHECK(run.layout.Find("windows")->Find("flame-graph") != nullptr);
  CHECK(run.layout.Find("windows")->Find("messages") == nullptr);
  // A scripted run without --keep-settings neither reads nor writes them.
  ViewerRun plain = RunViewer(dir, {trace, "--frames", "3"});
  CHECK(plain.layout.Find("windows")->Find("statistics") == nullptr);
}
