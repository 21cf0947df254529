// The lanes' order (dragged, sorted), the groups hidden, and what zones' colours tell.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "../../support/build_model.h"
#include "gnomon/viewer/timeline.h"
#include "model/trace_builder.h"

using namespace gnomon::viewer;
using gnomon::server::TraceModel;

namespace {

// Four threads ("worker 10", "worker 2", "main", "io") with 3, 1, 2 and 0 ms in their
// outermost zones, a GPU context, a plot and a frame series.
TraceModel Threads() {
  gnomon::test::StreamWriter w;  // ticks read as ns
  w.AppInfo("lanes").SourceLocation(1, "Work", "f", "a.cpp", 1).SourceLocation(2, "Inner", "g", "a.cpp", 2);
  w.ThreadInfo(1, 10, "worker 10")
      .ThreadInfo(2, 11, "worker 2")
      .ThreadInfo(3, 12, "main")
      .ThreadInfo(4, 13, "io");
  w.ThreadContext(1).ZoneBegin(1, 1'000'000).ZoneBegin(2, 1'100'000).ZoneEnd(1'200'000).ZoneEnd(4'000'000);
  w.ThreadContext(2).ZoneBegin(1, 1'000'000).ZoneEnd(2'000'000);
  w.ThreadContext(3).ZoneBegin(1, 1'000'000).ZoneEnd(2'000'000).ZoneBegin(1, 3'000'000).ZoneEnd(4'000'000);
  w.ThreadContext(4).Frame(gnomon::protocol::MessageType::kFrameMark, 0, 1'000'000);
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, 2'000'000);
  w.GpuContext(1, "GPU", 1, 1, 64, 0, 0, gnomon::protocol::CpuTimeDomain::kMonotonicRaw, 10);
  w.GpuZoneBegin(1, 1, 1, 1'100'000)
      .GpuZoneEnd(1, 2, 1'150'000)
      .GpuTime(1, 1, 1'500'000)
      .GpuTime(1, 2, 1'700'000);
  w.String(5, gnomon::protocol::StringKind::kPlotName, "load")
      .Plot(5, 1'000'000, 1.0)
      .Plot(5, 2'000'000, 2.0);
  return gnomon::test::BuildModel(w);
}

std::vector<std::string> Names(const TraceModel& model, const Timeline& timeline) {
  std::vector<std::string> names;
  for (const Lane& lane : timeline.lanes()) names.push_back(Timeline::Name(model, lane.key));
  return names;
}

const Lane& LaneNamed(const TraceModel& model, const Timeline& timeline, const std::string& name) {
  for (const Lane& lane : timeline.lanes()) {
    if (Timeline::Name(model, lane.key) == name) return lane;
  }
  FAIL("no lane " << name);
  return timeline.lanes().front();
}

}  // namespace

TEST_CASE("a dragged lane goes where it is dropped, and lanes stay stacked in their new order") {
  const TraceModel model = Threads();
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  const std::vector<std::string> before = Names(model, timeline);
  REQUIRE(before.size() == 7);  // frames, GPU, four threads, the plot
  CHECK(before[2] == "worker 10");
  CHECK(before[5] == "io");
  // "io" dropped on the upper half of "worker 10": before it.
  timeline.MoveLane(LaneNamed(model, timeline, "io").key, LaneNamed(model, timeline, "worker 10").key, false);
  timeline.Layout(model, {}, 0);
  std::vector<std::string> after = Names(model, timeline);
  CHECK(after ==
        std::vector<std::string>{before[0], before[1], "io", "worker 10", "worker 2", "main", "load"});
  // Stacked top to bottom without overlap, in that order.
  for (size_t i = 1; i < timeline.lanes().size(); ++i)
    CHECK(timeline.lanes()[i].y > timeline.lanes()[i - 1].y + timeline.lanes()[i - 1].height);
  // The plot dropped below "main": a lane of one kind may go among another's.
  timeline.MoveLane(LaneNamed(model, timeline, "load").key, LaneNamed(model, timeline, "main").key, true);
  timeline.Layout(model, {}, 0);
  after = Names(model, timeline);
  CHECK(after ==
        std::vector<std::string>{before[0], before[1], "io", "worker 10", "worker 2", "main", "load"});
  timeline.MoveLane(LaneNamed(model, timeline, "load").key, LaneNamed(model, timeline, "worker 2").key, true);
  timeline.Layout(model, {}, 0);
  after = Names(model, timeline);
  CHECK(after ==
        std::vector<std::string>{before[0], before[1], "io", "worker 10", "worker 2", "load", "main"});
  // The default order back.
  timeline.SetLaneOrder({});
  timeline.Layout(model, {}, 0);
  CHECK(Names(model, timeline) == before);
}

TEST_CASE("a lane the order does not know (a new thread) keeps its default place") {
  const TraceModel model = Threads();
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  const auto& lanes = timeline.lanes();
  // An order that knows only two threads, swapped: the other lanes stay where they were.
  timeline.SetLaneOrder(
      {LaneNamed(model, timeline, "main").key, LaneNamed(model, timeline, "worker 10").key});
  timeline.Layout(model, {}, 0);
  CHECK(Names(model, timeline) == std::vector<std::string>{Timeline::Name(model, lanes[0].key),
                                                           Timeline::Name(model, lanes[1].key), "main",
                                                           "worker 2", "worker 10", "io", "load"});
  // A key of nothing in the trace changes nothing.
  timeline.SetLaneOrder({{LaneKind::kThread, 999}});
  timeline.Layout(model, {}, 0);
  CHECK(Names(model, timeline)[2] == "worker 10");
}

TEST_CASE("sorting orders each kind of lane among its own places, by name or busiest first") {
  const TraceModel model = Threads();
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  const std::vector<std::string> before = Names(model, timeline);
  timeline.SortLanes(model, LaneSort::kName);
  timeline.Layout(model, {}, 0);
  // Numbers by value: "worker 2" before "worker 10"; the GPU and plot lanes where they were.
  CHECK(Names(model, timeline) ==
        std::vector<std::string>{before[0], before[1], "io", "main", "worker 2", "worker 10", "load"});
  CHECK(timeline.BusyNs(model, LaneNamed(model, timeline, "worker 10").key) == 3'000'000);
  CHECK(timeline.BusyNs(model, LaneNamed(model, timeline, "main").key) == 2'000'000);
  CHECK(timeline.BusyNs(model, LaneNamed(model, timeline, "io").key) == 0);
  timeline.SortLanes(model, LaneSort::kBusiest);
  timeline.Layout(model, {}, 0);
  CHECK(Names(model, timeline) ==
        std::vector<std::string>{before[0], before[1], "worker 10", "main", "worker 2", "io", "load"});
}

TEST_CASE("hidden groups of lanes are not laid out") {
  const TraceModel model = Threads();
  Timeline timeline;
  timeline.Sync(model);
  timeline.HideLaneGroups(kGpuLanes | kPlotLanes);
  timeline.Layout(model, {}, 0);
  for (const Lane& lane : timeline.lanes()) {
    CHECK(lane.key.kind != LaneKind::kGpu);
    CHECK(lane.key.kind != LaneKind::kPlot);
  }
  CHECK(timeline.lanes().size() == 5);
  timeline.HideLaneGroups(0);
  timeline.Layout(model, {}, 0);
  CHECK(timeline.lanes().size() == 7);
}

TEST_CASE("zones coloured by thread share their lane's colour, by duration grow hotter as they last") {
  const TraceModel model = Threads();
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  TimelineView view;
  view.Fit(0, 4'000'000, 1000);
  auto colors = [&](ZoneColoring coloring) {
    timeline.SetZoneColoring(coloring);
    std::vector<DrawItem> items;
    timeline.BuildItems(model, view, items);
    std::vector<std::pair<std::string, uint32_t>> out;  // (lane, colour) of each CPU zone
    for (const DrawItem& item : items) {
      if (item.kind == DrawItem::Kind::kZone)
        out.emplace_back(Timeline::Name(model, timeline.lanes()[item.lane].key), item.color);
    }
    return out;
  };
  const auto by_location = colors(ZoneColoring::kLocation);
  const auto by_thread = colors(ZoneColoring::kThread);
  REQUIRE(by_thread.size() == 5);
  // worker 10's two zones (two locations) differ by location and match by thread.
  CHECK(by_location[0].first == "worker 10");
  CHECK(by_location[1].first == "worker 10");
  CHECK(by_location[0].second != by_location[1].second);
  CHECK(by_thread[0].second == by_thread[1].second);
  CHECK(by_thread[1].second != by_thread[2].second);  // worker 2's
  CHECK(by_thread[3].second == by_thread[4].second);  // main's two
  CHECK(by_thread[2].second != by_thread[3].second);
  // By duration: hue runs from blue (1 us) to red (the target), so red grows with length.
  auto red = [](uint32_t abgr) { return int(abgr & 0xFF); };
  auto blue = [](uint32_t abgr) { return int((abgr >> 16) & 0xFF); };
  CHECK(blue(DurationColor(500, 16'666'667)) > red(DurationColor(500, 16'666'667)));
  CHECK(DurationColor(500, 16'666'667) == DurationColor(1000, 16'666'667));  // 1 us or less alike
  CHECK(red(DurationColor(20'000'000, 16'666'667)) > blue(DurationColor(20'000'000, 16'666'667)));
  CHECK(DurationColor(16'666'667, 16'666'667) == DurationColor(1'000'000'000, 16'666'667));
  const auto by_duration = colors(ZoneColoring::kDuration);
  CHECK(by_duration[0].second == DurationColor(3'000'000, timeline.frame_target().ns));  // worker 10's 3 ms
  CHECK(by_duration[1].second == DurationColor(100'000, timeline.frame_target().ns));    // its 100 us child
  CHECK(red(by_duration[0].second) > red(by_duration[1].second));
}

TEST_CASE(
    "a lane hidden while the order changes keeps its place in it, and hiding one keeps the others' order") {
  const TraceModel model = Threads();
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  const std::vector<std::string> before = Names(model, timeline);
  // "io" to the top of the threads, then hidden.
  timeline.MoveLane(LaneNamed(model, timeline, "io").key, LaneNamed(model, timeline, "worker 10").key, false);
  timeline.Layout(model, {}, 0);
  std::map<LaneKey, LaneState> states;
  states[LaneNamed(model, timeline, "io").key].hidden = true;
  timeline.Layout(model, states, 0);
  // Hidden: the others keep their order (the cached permutation is not reused for them).
  CHECK(Names(model, timeline) ==
        std::vector<std::string>{before[0], before[1], "worker 10", "worker 2", "main", "load"});
  // Sorted by name while it is hidden: shown again, it comes back after the lane it
  // followed (the GPU lane), not at its default place.
  timeline.SortLanes(model, LaneSort::kName);
  timeline.Layout(model, {}, 0);
  CHECK(Names(model, timeline) ==
        std::vector<std::string>{before[0], before[1], "io", "main", "worker 2", "worker 10", "load"});
}
