// The timeline (src/app/timeline_window.cpp) in the real viewer window under Xvfb: it
// opens a fixture trace, renders, and saves a screenshot (glReadPixels) and its layout;
// the pixels must show each zone's colour where the layout put the zone.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <string>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
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
