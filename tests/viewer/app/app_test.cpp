// The App (src/app/app.cpp) in the real viewer under Xvfb: the other programs of a file
// as groups of lanes on one time axis, the side windows tiled below the timeline, and
// the settings kept between runs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "known_trace.h"
#include "viewer_run.h"

using gnomon::test::Array;
using gnomon::test::Close;
using gnomon::test::JsonValue;
using gnomon::test::Number;
using gnomon::test::RunViewer;
using gnomon::test::ScratchDir;
using gnomon::test::ViewerRun;
using gnomon::test::WriteKnownTrace;

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

TEST_CASE("side windows never cover the timeline or each other, at any window size") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  for (const char* size : {"800x600", "1200x700", "1920x1080", "640x1000"}) {
    CAPTURE(size);
    ViewerRun run =
        RunViewer(dir, {trace, "--frames", "3", "--size", size, "--show",
                        "statistics,find-zone=Work,flame-graph,frame-histogram,messages,gpu-clocks"});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue* timeline = run.layout.Find("timeline");
    REQUIRE(timeline != nullptr);
    CHECK(Number(*timeline, "y1") - Number(*timeline, "y0") >= 60);
    const auto& windows = Array(run.layout, "side_windows");
    CHECK(windows.size() == 6);
    for (size_t i = 0; i < windows.size(); ++i) {
      CAPTURE(windows[i].Find("title")->string);
      CHECK_FALSE(Overlaps(windows[i], *timeline));
      CHECK(Number(windows[i], "x0") >= 0);
      CHECK(Number(windows[i], "y0") >= 0);
      CHECK(Number(windows[i], "x1") <= run.shot.width + 0.5);
      CHECK(Number(windows[i], "y1") <= run.shot.height + 0.5);
      for (size_t j = i + 1; j < windows.size(); ++j) CHECK_FALSE(Overlaps(windows[i], windows[j]));
    }
  }
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
