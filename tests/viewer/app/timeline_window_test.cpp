// The timeline (src/app/timeline_window.cpp) in the real viewer window under Xvfb: it
// opens a fixture trace, renders, and saves a screenshot (glReadPixels) and its layout;
// the pixels must show each zone's colour where the layout put the zone.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "known_trace.h"
#include "viewer_run.h"

using gnomon::test::Close;
using gnomon::test::ItemsOfKind;
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

namespace {

std::vector<std::string> LaneTitles(const ViewerRun& run) {
  std::vector<std::string> titles;
  for (const JsonValue& lane : run.layout.Find("lanes")->array) titles.push_back(lane.Find("title")->string);
  return titles;
}

// The screen y of the middle of a lane's title bar (the lane's rows start below it).
int TitleY(const ViewerRun& run, const std::string& title_start) {
  for (const JsonValue& lane : run.layout.Find("lanes")->array) {
    if (lane.Find("title")->string.rfind(title_start, 0) == 0) return int(lane.Find("y")->number) - 8;
  }
  FAIL("no lane " << title_start);
  return 0;
}

}  // namespace

TEST_CASE("lanes: a title dragged moves its lane, and lanes sort, hide by group and colour by thread") {
  gnomon::test::ScratchDir dir;
  // The worker's 10 zones of 20 ms keep it busier (200 ms) than main (120 ms).
  const std::string trace = gnomon::test::WriteKnownTrace(dir, "known", 20);
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {trace, "--frames", "14"});
    ViewerRun r = RunViewer(dir, args);
    REQUIRE_MESSAGE(r.exit_code == 0, r.log);
    return r;
  };
  const ViewerRun plain = run({});
  const std::vector<std::string> before = LaneTitles(plain);
  REQUIRE(before.size() == 4);
  CHECK(before[2].rfind("main", 0) == 0);
  CHECK(before[3].rfind("worker", 0) == 0);

  // The worker's title dropped on the upper half of main's: the worker above main. The
  // view did not pan while the title was dragged.
  const std::string drag = "drag@30," + std::to_string(TitleY(plain, "worker")) + ",30," +
                           std::to_string(TitleY(plain, "main") - 2);
  const ViewerRun dragged = run({"--mouse", drag});
  CHECK(LaneTitles(dragged) == std::vector<std::string>{before[0], before[1], before[3], before[2]});
  CHECK(dragged.layout.Find("view")->Find("begin_ns")->number == 0);
  // A short press on a title is still a click: it collapses the lane, which stays put.
  const ViewerRun clicked = run({"--mouse", "click@30," + std::to_string(TitleY(plain, "main"))});
  CHECK(LaneTitles(clicked) == before);
  CHECK(clicked.layout.Find("lanes")->array[2].Find("height")->number <
        plain.layout.Find("lanes")->array[2].Find("height")->number);

  // Busiest first puts the worker above main; by name, main first again.
  CHECK(LaneTitles(run({"--sort-lanes", "busiest"})) ==
        std::vector<std::string>{before[0], before[1], before[3], before[2]});
  CHECK(LaneTitles(run({"--sort-lanes", "name"})) == before);

  // The GPU group hidden: its lane is gone.
  const std::vector<std::string> no_gpu = LaneTitles(run({"--hide-lanes", "gpu"}));
  CHECK(no_gpu.size() == 3);
  CHECK(std::none_of(no_gpu.begin(), no_gpu.end(),
                     [](const std::string& t) { return t.find("GPU") != t.npos; }));

  // By thread: every zone of a lane in one colour, the two lanes' different, as painted.
  const ViewerRun by_thread = run({"--color-by", "thread"});
  std::map<double, std::set<uint32_t>> colors_by_lane_y;
  for (const JsonValue& item : by_thread.layout.Find("items")->array) {
    if (item.Find("kind")->number != 0) continue;  // CPU zones
    const double y0 = item.Find("y0")->number;
    double lane_y = 0;
    for (const JsonValue& lane : by_thread.layout.Find("lanes")->array) {
      if (lane.Find("y")->number <= y0 + 0.5) lane_y = lane.Find("y")->number;
    }
    colors_by_lane_y[lane_y].insert(uint32_t(item.Find("color")->number));
    const int x = int((item.Find("x0")->number + item.Find("x1")->number) / 2);
    if (item.Find("x1")->number - item.Find("x0")->number >= 4)
      CHECK(Close(by_thread.shot.At(x, int(y0) + 3), uint32_t(item.Find("color")->number)));
  }
  REQUIRE(colors_by_lane_y.size() == 2);
  CHECK(colors_by_lane_y.begin()->second.size() == 1);
  CHECK(colors_by_lane_y.rbegin()->second.size() == 1);
  CHECK(*colors_by_lane_y.begin()->second.begin() != *colors_by_lane_y.rbegin()->second.begin());

  // The settings' groups hidden and colouring are used; the command line's hold for its
  // run only, and the settings keep theirs.
  std::filesystem::create_directories(dir.File("gnomon"));
  std::ofstream(dir.File("gnomon/viewer-settings")) << "hidden-lanes 2\nzone-colors duration\n";
  const ViewerRun once = run({"--keep-settings", "--hide-lanes", "plots", "--color-by", "thread"});
  CHECK(LaneTitles(once).size() == 3);  // the GPU lane hidden by the settings
  const std::string settings = gnomon::test::ReadFile(dir.File("gnomon/viewer-settings"));
  CHECK(settings.find("hidden-lanes 2\n") != std::string::npos);
  CHECK(settings.find("zone-colors duration\n") != std::string::npos);
  const ViewerRun kept = run({"--keep-settings"});
  CHECK(LaneTitles(kept).size() == 3);
  std::set<uint32_t> duration_colors;
  for (const JsonValue& item : kept.layout.Find("items")->array) {
    if (item.Find("kind")->number == 0) duration_colors.insert(uint32_t(item.Find("color")->number));
  }
  CHECK(duration_colors.size() >= 3);  // main's 0.5, 1, 2 and 4 ms zones, the worker's 10 and 20 ms

  // Bad names say what would do.
  std::string output;
  CHECK(gnomon::test::RunCommand(std::string(GNOMON_VIEWER) + " " + trace + " --hide-lanes gpu,cats",
                                 &output) == 1);
  CHECK(output.find("'cats' is not a group of lanes") != std::string::npos);
  CHECK(gnomon::test::RunCommand(std::string(GNOMON_VIEWER) + " " + trace + " --color-by size", &output) ==
        1);
  CHECK(output.find("'size' is not location, thread or duration") != std::string::npos);
}

TEST_CASE("zoomed in past the overview of zones not held, the timeline reads them from the file") {
  // 600,000 zones of 50 ns, 50 ns apart, two deep: far more than an overview of the
  // least memory keeps apart, so that it merges them into blocks.
  gnomon::test::ScratchDir dir;
  gnomon::test::StreamWriter w;
  w.AppInfo("dense")
      .SourceLocation(1, "Outer", "outer", "dense.cpp", 1)
      .SourceLocation(2, "Leaf", "leaf", "dense.cpp", 2);
  w.ThreadInfo(1, 11, "main").ThreadContext(1);
  for (uint64_t i = 0; i < 6'000; ++i) {
    const uint64_t t = 1'000'000 + i * 10'100;
    w.ZoneBegin(1, t);
    for (uint64_t k = 0; k < 100; ++k) w.ZoneBegin(2, t + 1 + k * 100).ZoneEnd(t + 51 + k * 100);
    w.ZoneEnd(t + 10'050);
  }
  const std::string trace = gnomon::test::WriteTraceFile(dir.File("dense.gnomon"), w);
  const std::vector<std::string> zoomed{"--frames", "3", "--range", "30.000:30.012"};
  std::vector<std::string> held_args{trace}, counted_args{trace, "--memory-limit", "1K"};
  held_args.insert(held_args.end(), zoomed.begin(), zoomed.end());
  counted_args.insert(counted_args.end(), zoomed.begin(), zoomed.end());
  ViewerRun held = RunViewer(dir, held_args);
  ViewerRun counted = RunViewer(dir, counted_args);
  REQUIRE_MESSAGE(held.exit_code == 0, held.log);
  REQUIRE_MESSAGE(counted.exit_code == 0, counted.log);
  const auto held_zones = ItemsOfKind(held, 0);
  CHECK(held_zones.size() > 20);  // the leaves named in view
  CHECK(ItemsOfKind(counted, 12) == held_zones);
  // Zoomed out, the same trace draws its overview: the leaves merged into blocks.
  ViewerRun whole = RunViewer(dir, {trace, "--frames", "3", "--memory-limit", "1K"});
  REQUIRE_MESSAGE(whole.exit_code == 0, whole.log);
  CHECK(ItemsOfKind(whole, 12).size() < 10);
}
