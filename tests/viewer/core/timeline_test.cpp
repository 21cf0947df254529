#include "gnomon/viewer/timeline.h"

#include <doctest/doctest.h>

#include "../../support/build_model.h"
#include "model/trace_builder.h"

using namespace gnomon::viewer;
using gnomon::server::TraceModel;

namespace {
TraceModel Sample() {
  gnomon::test::StreamWriter w;  // a nanosecond timer: ticks read as ns
  w.AppInfo("viewer test")
      .SourceLocation(1, "Outer", "f", "a.cpp", 1)
      .SourceLocation(2, "Inner", "g", "a.cpp", 2);
  w.ThreadInfo(1, 10, "main").ThreadContext(1);
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, 1000);
  w.ZoneBegin(1, 1000).ZoneBegin(2, 1200).ZoneEnd(1400).ZoneEnd(1800);
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, 2000);
  w.GpuContext(1, "GPU", 1, 1, 64, 0, 0, gnomon::protocol::CpuTimeDomain::kMonotonicRaw, 10);
  w.GpuZoneBegin(1, 1, 1, 1100).GpuZoneEnd(1, 2, 1150).GpuTime(1, 1, 1500).GpuTime(1, 2, 1700);
  w.String(5, gnomon::protocol::StringKind::kPlotName, "load")
      .Plot(5, 1000, 1.0)
      .Plot(5, 1500, 3.0)
      .Plot(5, 2000, 2.0);
  return gnomon::test::BuildModel(w);
}
}  // namespace

TEST_CASE("lanes stack frames, GPU contexts, threads and plots, and honour collapse and hide") {
  const TraceModel model = Sample();
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  const auto& lanes = timeline.lanes();
  REQUIRE(lanes.size() == 4);
  CHECK(lanes[0].key.kind == LaneKind::kFrames);
  CHECK(lanes[1].key.kind == LaneKind::kGpu);
  CHECK(timeline.Title(model, lanes[1]) == "GPU: GPU");
  CHECK(timeline.Title(model, lanes[2]) == "main (2 zones)");
  CHECK(lanes[2].key.kind == LaneKind::kThread);
  CHECK(lanes[2].rows == 2);
  CHECK(lanes[3].key.kind == LaneKind::kPlot);
  for (size_t i = 1; i < lanes.size(); ++i) CHECK(lanes[i].y >= lanes[i - 1].y + lanes[i - 1].height);

  std::map<LaneKey, LaneState> states;
  states[{LaneKind::kThread, 1}].collapsed = true;
  states[{LaneKind::kGpu, 1}].hidden = true;
  timeline.Layout(model, states, 0);
  REQUIRE(timeline.lanes().size() == 3);
  CHECK(timeline.lanes()[1].rows == 1);
}

TEST_CASE("items land where the view puts their times, and picking returns the same zones") {
  const TraceModel model = Sample();
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  TimelineView view;
  view.Fit(0, 1000, 1000);  // 1 ns per pixel from the first event (tick 1000)
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  const DrawItem* outer = nullptr;
  const DrawItem* inner = nullptr;
  const DrawItem* gpu = nullptr;
  int frames = 0, plot_segments = 0;
  for (const DrawItem& item : items) {
    if (item.kind == DrawItem::Kind::kZone && item.label && *item.label == "Outer") outer = &item;
    if (item.kind == DrawItem::Kind::kZone && item.label && *item.label == "Inner") inner = &item;
    if (item.kind == DrawItem::Kind::kGpuZone) gpu = &item;
    frames += item.kind == DrawItem::Kind::kFrame;
    plot_segments += item.kind == DrawItem::Kind::kPlot;
  }
  REQUIRE(outer != nullptr);
  REQUIRE(inner != nullptr);
  REQUIRE(gpu != nullptr);
  CHECK(outer->x0 == doctest::Approx(0));
  CHECK(outer->x1 == doctest::Approx(800));
  CHECK(inner->x0 == doctest::Approx(200));
  CHECK(inner->y0 == doctest::Approx(outer->y0 + timeline.metrics().row_height));
  CHECK(gpu->x0 == doctest::Approx(500));  // GPU ticks map 1:1 onto the raw clock here
  CHECK(gpu->x1 == doctest::Approx(700));
  CHECK(frames == 1);
  CHECK(plot_segments == 2);

  const auto hit = timeline.HitTest(model, view, (inner->x0 + inner->x1) / 2, (inner->y0 + inner->y1) / 2);
  REQUIRE(hit.has_value());
  CHECK(hit->kind == DrawItem::Kind::kZone);
  CHECK(hit->index == 1);
  const auto gpu_hit = timeline.HitTest(model, view, 600, gpu->y0 + 2);
  REQUIRE(gpu_hit.has_value());
  CHECK(gpu_hit->kind == DrawItem::Kind::kGpuZone);
  CHECK_FALSE(timeline.HitTest(model, view, 900, inner->y0 + 2).has_value());
}

TEST_CASE(
    "a counter lane appears once chosen: a bar per measured zone, as tall as its value, hit as that zone") {
  gnomon::test::StreamWriter w;
  w.AppInfo("counters").SourceLocation(1, "Draw", "f", "a.cpp", 1).ThreadInfo(1, 10, "main").ThreadContext(1);
  w.GpuContext(1, "GPU", 1, 1, 64, 0, 0, gnomon::protocol::CpuTimeDomain::kMonotonicRaw, 10);
  w.CounterSet(1, 3, 1, "stats");
  w.Counter(3, 0, gnomon::protocol::CounterType::kEvent, gnomon::protocol::CounterDataType::kUint64,
            "invocations");
  w.GpuZoneBegin(1, 1, 1, 1000).GpuZoneEnd(1, 2, 1010);
  w.CounterResult(1, 3, gnomon::protocol::CounterTarget::kGpuZone, 1, {100});
  w.GpuTime(1, 1, 1000).GpuTime(1, 2, 1400);
  w.GpuZoneBegin(1, 3, 1, 1500).GpuZoneEnd(1, 4, 1510);
  w.CounterResult(1, 3, gnomon::protocol::CounterTarget::kGpuZone, 3, {50});
  w.GpuTime(1, 3, 1600).GpuTime(1, 4, 2000);
  // A frame's result spans the frame: frame 0 of the main series, from 1000 to 1800.
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, 1000)
      .Frame(gnomon::protocol::MessageType::kFrameMark, 0, 1800);
  w.CounterResult(1, 3, gnomon::protocol::CounterTarget::kFrame, 0, {25});
  const TraceModel model = gnomon::test::BuildModel(w);

  Timeline timeline;
  timeline.Sync(model);
  std::map<LaneKey, LaneState> states;
  timeline.Layout(model, states, 0);
  for (const Lane& lane : timeline.lanes()) CHECK(lane.key.kind != LaneKind::kCounter);  // not chosen

  const LaneKey key{LaneKind::kCounter, CounterLaneId(3, 0)};
  states[key] = LaneState{};
  timeline.Layout(model, states, 0);
  const Lane& lane = timeline.lanes().back();
  REQUIRE(lane.key == key);
  CHECK(timeline.Title(model, lane) == "Counter: invocations on GPU");
  TimelineView view;
  view.Fit(0, 1000, 1000);  // 1 ns per pixel, from the first event (t = 1000)
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  std::vector<DrawItem> bars;
  for (const DrawItem& item : items) {
    if (item.kind == DrawItem::Kind::kCounter) bars.push_back(item);
  }
  REQUIRE(bars.size() == 2);
  CHECK(bars[0].index == 0);
  CHECK(bars[1].index == 1);
  std::vector<DrawItem> frame_bars;
  for (const DrawItem& item : items) {
    if (item.kind == DrawItem::Kind::kFrame && item.lane + 1 == timeline.lanes().size())
      frame_bars.push_back(item);
  }
  REQUIRE(frame_bars.size() == 1);
  CHECK(frame_bars[0].index == 1);  // frame 1 as the frame strip counts: marks 0 to 1
  CHECK(frame_bars[0].x1 - frame_bars[0].x0 == doctest::Approx(800).epsilon(0.05));
  CHECK(frame_bars[0].y1 - frame_bars[0].y0 == doctest::Approx(lane.height / 4));
  CHECK(bars[0].y1 - bars[0].y0 == doctest::Approx(lane.height));        // the largest value
  CHECK(bars[1].y1 - bars[1].y0 == doctest::Approx(lane.height / 2));    // half of it
  CHECK(bars[0].x1 - bars[0].x0 == doctest::Approx(400).epsilon(0.05));  // the zone's 400 ns
  const auto hit = timeline.HitTest(model, view, (bars[1].x0 + bars[1].x1) / 2, lane.y + lane.height - 1);
  REQUIRE(hit.has_value());
  CHECK(hit->kind == DrawItem::Kind::kCounter);
  CHECK(hit->index == 1);
}

TEST_CASE("with thousands of threads, only the lanes in the window make items") {
  gnomon::test::StreamWriter w;
  for (uint32_t t = 1; t <= 5000; ++t) w.ThreadContext(t).ZoneBegin(1, 1000 + t).ZoneEnd(2000 + t);
  const TraceModel model = gnomon::test::BuildModel(w);
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  REQUIRE(timeline.lanes().size() == 5000);
  TimelineView view;
  view.Fit(0, 7000, 1000);
  std::vector<DrawItem> all, shown;
  timeline.BuildItems(model, view, all);
  CHECK(all.size() == 5000);
  const float top = timeline.lanes()[100].y, bottom = top + 400;  // scrolled to the 101st lane
  timeline.BuildItems(model, view, shown, top, bottom);
  REQUIRE_FALSE(shown.empty());
  CHECK(shown.size() < 20);
  for (const DrawItem& item : shown) {
    const Lane& lane = timeline.lanes()[item.lane];
    CHECK(timeline.IsLaneVisible(lane, top, bottom));
    CHECK(item.lane >= 99);
  }
  CHECK(timeline.Title(model, timeline.lanes()[4999]) == "thread 5000 (1 zone)");
}
