// The real viewer window under Xvfb: it opens a fixture trace, renders, and saves a
// screenshot (glReadPixels) and its layout; the pixels must show each zone's colour
// where the layout put the zone. And a live run: the viewer's worker connected to the
// running demo draws the demo's threads.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <set>
#include <thread>

#include "../support/json_check.h"
#include "../support/process.h"
#include "../support/stream_writer.h"
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

TEST_CASE("a file of several programs: the one asked for is shown, and the viewer says which of how many") {
  gnomon::test::ScratchDir dir;
  std::vector<gnomon::test::StreamWriter> programs(3);
  for (size_t i = 0; i < programs.size(); ++i) {
    const std::string name = "rank" + std::to_string(i);
    programs[i].AppInfo(name, uint32_t(100 + i)).SourceLocation(1, "Step", "step", "train.cpp", 7);
    programs[i].ThreadInfo(1, uint32_t(200 + i), name + " main").ThreadContext(1);
    for (uint64_t k = 0; k <= i; ++k)
      programs[i].ZoneBegin(1, 1'000'000 + k * 1000).ZoneEnd(1'000'500 + k * 1000);
    programs[i].End(1'010'000);
  }
  const std::string path =
      gnomon::test::WriteTraceFile(dir.File("job.gnomon"), {&programs[0], &programs[1], &programs[2]});
  for (int k = 1; k <= 3; ++k) {
    CAPTURE(k);
    ViewerRun run = RunViewer(dir, {path, "--frames", "3", "--program", std::to_string(k)});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue* session = run.layout.Find("session");
    REQUIRE(session != nullptr);
    CHECK(session->Find("program")->number == k);
    CHECK(session->Find("programs")->number == 3);
    CHECK(session->Find("warning")->string.empty());  // the status line says which of how many
    // The other two below it, each a group of lanes titled with its place and name.
    const auto& groups = run.layout.Find("groups")->array;
    REQUIRE(groups.size() == 2);
    for (const JsonValue& group : groups) {
      const int program = int(group.Find("program")->number);
      CHECK(program != k);
      CHECK(group.Find("title")->string.starts_with("program " + std::to_string(program) + ": rank" +
                                                    std::to_string(program - 1) + " (pid"));
      CHECK(group.Find("lanes")->array.size() >= 1);
    }
    std::set<std::string> titles;
    for (const JsonValue& lane : run.layout.Find("lanes")->array) titles.insert(lane.Find("title")->string);
    const std::string expected =
        "rank" + std::to_string(k - 1) + " main (" + std::to_string(k) + (k == 1 ? " zone)" : " zones)");
    CHECK_MESSAGE(titles.count(expected) == 1, expected);
  }
  // One the file does not hold: said, and nothing shown.
  ViewerRun beyond = RunViewer(dir, {path, "--frames", "3", "--program", "4"});
  REQUIRE_MESSAGE(beyond.exit_code == 0, beyond.log);
  CHECK(beyond.layout.Find("session")->Find("warning")->string.find("there is no program 4") !=
        std::string::npos);
  CHECK(beyond.layout.Find("lanes")->array.empty());
  CHECK(beyond.layout.Find("groups")->array.size() == 3);
  std::string output;
  CHECK(gnomon::test::RunCommand(std::string(GNOMON_VIEWER) + " " + path + " --program 0", &output) == 1);
  CHECK(output.find("--program: '0' is not a whole number from 1 to 65536") != std::string::npos);
}

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

TEST_CASE("live: the viewer's worker connects to the running demo and draws its threads") {
  gnomon::test::ScratchDir dir;
  gnomon::test::ChildProcess demo({GNOMON_DEMO, "--seconds", "4"},
                                  {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}},
                                  dir.File("demo.log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  ViewerRun run = RunViewer(dir, {"127.0.0.1:" + std::to_string(port), "--frames", "60"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  std::set<std::string> titles;
  for (const JsonValue& lane : run.layout.Find("lanes")->array) titles.insert(lane.Find("title")->string);
  bool main_thread = false, worker = false;
  for (const std::string& t : titles) {
    main_thread |= t.rfind("main (", 0) == 0;
    worker |= t.rfind("worker ", 0) == 0;
  }
  CHECK(main_thread);
  CHECK(worker);
  CHECK(titles.count("Frames") == 1);
  CHECK(run.layout.Find("items")->array.size() > 10);
  // The address went to the recent list.
  CHECK(gnomon::test::ReadFile(dir.File("gnomon/recent-addresses")).find(std::to_string(port)) !=
        std::string::npos);
}
