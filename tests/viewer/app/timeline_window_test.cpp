// The timeline (src/app/timeline_window.cpp) in the real viewer window under Xvfb: it
// opens a fixture trace, renders, and saves a screenshot (glReadPixels) and its layout;
// the pixels must show each zone's colour where the layout put the zone.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "known_trace.h"
#include "viewer_run.h"

using gnomon::test::Close;
using gnomon::test::JsonValue;
using gnomon::test::RunViewer;
using gnomon::test::ViewerRun;

namespace {

// A trace with a thread of big, differently coloured zones and a GPU context.
std::string WriteFixture(const gnomon::test::ScratchDir& dir) {
  gnomon::test::StreamWriter w;
  w.AppInfo("fixture")
      .SourceLocation(1, "Red", "r", "f.cpp", 1, 0xD03030)
      .SourceLocation(2, "Blue", "b", "f.cpp", 2, 0x3050D0);
  w.SourceLocation(3, "Green", "g", "f.cpp", 3, 0x30B040)
      .ThreadInfo(1, 100, "fixture thread")
      .ThreadContext(1);
  for (int i = 0; i < 10; ++i) {
    const uint64_t t = 1'000'000 + uint64_t(i) * 100'000;
    w.ZoneBegin(1 + i % 2, t).ZoneBegin(3, t + 10'000).ZoneEnd(t + 60'000).ZoneEnd(t + 90'000);
    w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, t);
  }
  w.GpuContext(1, "fixture GPU", 1, 1, 64, 0, 0, gnomon::protocol::CpuTimeDomain::kMonotonicRaw, 5);
  for (uint32_t i = 0; i < 10; ++i) {
    const uint64_t t = 1'000'000 + uint64_t(i) * 100'000;
    w.GpuZoneBegin(1, 2 * i, 2, t)
        .GpuZoneEnd(1, 2 * i + 1, t + 1)
        .GpuTime(1, 2 * i, t + 20'000)
        .GpuTime(1, 2 * i + 1, t + 80'000);
  }
  w.End(2'100'000);
  return gnomon::test::WriteTraceFile(dir.File("fixture.gnomon"), w);
}

}  // namespace

TEST_CASE("the viewer window draws every lane and zone where its layout says") {
  gnomon::test::ScratchDir dir;
  const std::string fixture = WriteFixture(dir);
  // The fixture's first event is at 1 ms (tick 1,000,000): show its first 0.5 ms.
  ViewerRun run = RunViewer(dir, {fixture, "--frames", "3", "--range", "0:0.5"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  REQUIRE(run.shot.pixels != nullptr);
  CHECK(run.shot.width == 1200);
  CHECK(run.shot.height == 700);

  const auto& lanes = run.layout.Find("lanes")->array;
  REQUIRE(lanes.size() == 3);
  CHECK(lanes[0].Find("title")->string == "Frames");
  CHECK(lanes[1].Find("title")->string == "GPU: fixture GPU");
  CHECK(lanes[2].Find("title")->string == "fixture thread (20 zones)");

  int checked = 0, gpu_checked = 0;
  std::set<std::string> labels;
  for (const JsonValue& item : run.layout.Find("items")->array) {
    const int kind = int(item.Find("kind")->number);
    if (kind != 0 && kind != 2) continue;  // CPU and GPU zones
    const double x0 = item.Find("x0")->number, x1 = item.Find("x1")->number;
    const double y1 = item.Find("y1")->number;
    if (x1 - x0 < 20 || x0 < 0 || x1 > run.shot.width) continue;
    // Sample right of centre, below the label's glyphs, inside the border.
    const int x = int(x1) - 6;
    const int y = int(y1) - 3;
    const uint32_t expected = uint32_t(item.Find("color")->number);
    CHECK_MESSAGE(Close(run.shot.At(x, y), expected), "zone '", item.Find("label")->string, "' at ", x, ",",
                  y, ": pixel ", run.shot.At(x, y), " expected ", expected);
    labels.insert(item.Find("label")->string);
    ++checked;
    gpu_checked += kind == 2;
  }
  CHECK(checked >= 12);
  CHECK(gpu_checked >= 4);
  CHECK(labels == std::set<std::string>{"Red", "Blue", "Green"});
  // Between two lanes there is only background.
  const double gap_y = lanes[2].Find("y")->number - 21;
  const uint32_t background = run.shot.At(run.shot.width / 2, int(gap_y));
  CHECK_FALSE(Close(background, 0xFF3030D0u));
  CHECK_FALSE(Close(background, 0xFFD05030u));
}

TEST_CASE("the frame strip draws every frame in the colour Frame times gives it, for the target chosen") {
  gnomon::test::ScratchDir dir;
  const std::string trace = gnomon::test::WriteKnownTrace(dir, "known");
  for (const char* fps : {"60", "30"}) {
    CAPTURE(fps);
    ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--size", "1200x800", "--show", "frame-histogram",
                                    "--frame-target", fps});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue& strip = gnomon::test::WindowReport(run, "frame-strips");
    const JsonValue& histogram = gnomon::test::WindowReport(run, "frame-histogram");
    const double target_ns = std::string(fps) == "60" ? 16'666'667 : 33'333'333;
    CHECK(gnomon::test::Number(strip, "target_ns") == target_ns);
    CHECK(gnomon::test::Number(histogram, "target_ns") == target_ns);
    const auto& bars = gnomon::test::Array(strip, "bars");
    REQUIRE(bars.size() == 19);                   // 10 frames of 10 ms, 6 of 20 ms, 3 of 40 ms: each its bar
    std::map<double, std::set<uint32_t>> colors;  // by frame length
    double tallest = 0;
    for (const JsonValue& bar : bars) {
      colors[gnomon::test::Number(bar, "duration_ns")].insert(uint32_t(gnomon::test::Number(bar, "color")));
      tallest = std::max(tallest, gnomon::test::Number(bar, "height_px"));
      // The pixel at the bar's foot is its colour.
      const int x = int((gnomon::test::Number(bar, "x0") + gnomon::test::Number(bar, "x1")) / 2);
      const int y = int(gnomon::test::Number(bar, "y1")) - 2;
      CHECK_MESSAGE(Close(run.shot.At(x, y), uint32_t(gnomon::test::Number(bar, "color"))), "bar at ", x, ",",
                    y);
    }
    REQUIRE(colors.size() == 3);
    for (const auto& [length, set] : colors) CHECK(set.size() == 1);
    const uint32_t ten = *colors[10e6].begin(), twenty = *colors[20e6].begin(), forty = *colors[40e6].begin();
    CHECK(ten != forty);
    // The same frame is the same colour in the strip and in Frame times' counts.
    if (std::string(fps) == "60") {
      CHECK(twenty != ten);
      CHECK(twenty != forty);
      CHECK(gnomon::test::Number(histogram, "yellow") == 6);
    } else {
      CHECK(twenty == ten);  // within 1/30 s: on time
      CHECK(gnomon::test::Number(histogram, "green") == 16);
      CHECK(gnomon::test::Number(histogram, "yellow") == 3);
      CHECK(gnomon::test::Number(histogram, "red") == 0);
    }
    CHECK(tallest > 20);
  }
}

TEST_CASE("a named frame series has its own strip, and Frame times shows the series asked for") {
  gnomon::test::ScratchDir dir;
  gnomon::test::StreamWriter w;
  w.AppInfo("two series").ThreadInfo(1, 100, "main").ThreadContext(1);
  w.String(7, gnomon::protocol::StringKind::kFrameName, "physics");
  using gnomon::protocol::MessageType;
  for (uint64_t k = 0; k <= 10; ++k) w.Frame(MessageType::kFrameMark, 0, 1'000'000 + k * 10'000'000);
  for (uint64_t k = 0; k < 4; ++k) {
    const uint64_t begin = 1'000'000 + k * 25'000'000;
    w.Frame(MessageType::kFrameBegin, 7, begin).Frame(MessageType::kFrameEnd, 7, begin + (k + 1) * 2'000'000);
  }
  w.End(101'000'000);
  const std::string trace = gnomon::test::WriteTraceFile(dir.File("series.gnomon"), w);
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--size", "1200x800", "--show", "frame-histogram",
                                  "--frame-series", "physics"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const auto& lanes = run.layout.Find("lanes")->array;
  REQUIRE(lanes.size() >= 2);
  CHECK(lanes[0].Find("title")->string == "Frames");
  CHECK(lanes[1].Find("title")->string == "Frames: physics");
  const JsonValue& histogram = gnomon::test::WindowReport(run, "frame-histogram");
  CHECK(histogram.Find("series")->string == "physics");
  CHECK(gnomon::test::Number(histogram, "frames") == 4);
  size_t main = 0, physics = 0;
  for (const JsonValue& bar : gnomon::test::Array(gnomon::test::WindowReport(run, "frame-strips"), "bars")) {
    (bar.Find("series")->string == "physics" ? physics : main)++;
  }
  CHECK(main == 10);
  CHECK(physics == 4);
}
