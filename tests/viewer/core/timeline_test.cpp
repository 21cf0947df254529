#include "gnomon/viewer/timeline.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <random>
#include <set>

#include "../../support/build_model.h"
#include "../../support/trace_files.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/zone_window.h"
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

namespace {

std::vector<DrawItem> FrameBars(const Timeline& timeline, const std::vector<DrawItem>& items, LaneKey key) {
  std::vector<DrawItem> bars;
  for (const DrawItem& item : items) {
    if (item.kind == DrawItem::Kind::kFrame && timeline.lanes()[item.lane].key == key) bars.push_back(item);
  }
  return bars;
}

}  // namespace

TEST_CASE("a pixel of the frame strip shows the longest frame under it, not the first") {
  // 100,000 frames of 1 us, and one of 5 ms among them: zoomed out, about 100 frames
  // share each pixel, and the long one is not the first of its pixel.
  gnomon::test::StreamWriter w;
  w.AppInfo("frames").ThreadContext(1);
  uint64_t tick = 1000;
  constexpr uint32_t kLong = 50'042;  // the long frame's number (from 1)
  for (uint32_t k = 0; k <= 100'000; ++k) {
    w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, tick);
    tick += k + 1 == kLong ? 5'000'000 : 1000;
  }
  const TraceModel model = gnomon::test::BuildModel(w);
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  REQUIRE(timeline.lanes().size() == 1);
  const Lane& lane = timeline.lanes()[0];
  TimelineView view;
  view.Fit(0, int64_t(tick - 1000), 1000);
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  const auto bars = FrameBars(timeline, items, lane.key);
  CHECK(bars.size() <= 1100);  // a bar per pixel, not per frame
  const DrawItem* tallest = nullptr;
  for (const DrawItem& bar : bars) {
    if (tallest == nullptr || bar.y1 - bar.y0 > tallest->y1 - tallest->y0) tallest = &bar;
  }
  REQUIRE(tallest != nullptr);
  CHECK(tallest->index == kLong);
  CHECK(tallest->y1 - tallest->y0 == doctest::Approx(lane.height));
  CHECK(tallest->color == FrameTarget{}.Color(5'000'000));
  // Each pixel shows a frame: no gaps in the strip.
  float covered = 0;
  for (const DrawItem& bar : bars) covered += bar.x1 - bar.x0;
  CHECK(covered >= 0.95f * 1000);
  // The bar under the cursor is the frame the tooltip names.
  const auto hit = timeline.HitTest(model, view, (tallest->x0 + tallest->x1) / 2, lane.y + lane.height - 1);
  REQUIRE(hit.has_value());
  CHECK(hit->kind == DrawItem::Kind::kFrame);
  CHECK(hit->index == kLong);
  const auto span = timeline.FrameSpan(model, 0, kLong);
  REQUIRE(span.has_value());
  CHECK(span->end_ns - span->begin_ns == 5'000'000);
}

TEST_CASE("the Vulkan demo's 25 ms frames all show between 20 and 60 ms, each after its 3 us frame") {
  TraceModel model;
  REQUIRE(gnomon::server::LoadTrace(GNOMON_DATA_DIR "/lavapipe_vulkan_counters.gnomon", model).ok());
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  const Lane& lane = timeline.lanes()[0];
  REQUIRE(lane.key == LaneKey{LaneKind::kFrames, 0});
  TimelineView view;
  view.Fit(20'000'000, 60'000'000, 1200);
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  const auto bars = FrameBars(timeline, items, lane.key);
  // Every frame of 1 ms or more that lies in the view has its own bar, at its height.
  const auto& series = model.frames.at(0);
  int64_t longest = 0;
  std::vector<uint32_t> long_frames;
  for (uint32_t n = 1; n <= series.frame_count(); ++n) {
    const auto span = timeline.FrameSpan(model, 0, n);
    if (span->end_ns < 20'000'000 || span->begin_ns > 60'000'000) continue;
    longest = std::max(longest, span->end_ns - span->begin_ns);
    if (span->end_ns - span->begin_ns >= 1'000'000) long_frames.push_back(n);
  }
  REQUIRE(long_frames.size() >= 3);
  for (const uint32_t n : long_frames) {
    const auto span = timeline.FrameSpan(model, 0, n);
    const auto bar = std::find_if(bars.begin(), bars.end(), [n](const DrawItem& b) { return b.index == n; });
    REQUIRE_MESSAGE(bar != bars.end(), "frame ", n, " is missing from the strip");
    CHECK(bar->y1 - bar->y0 ==
          doctest::Approx(lane.height * float(span->end_ns - span->begin_ns) / float(longest)).epsilon(0.01));
  }
}

TEST_CASE("each frame series has its strip, a series with no frame has none, messages keep a lane") {
  gnomon::test::StreamWriter w;
  w.AppInfo("series").ThreadContext(1);
  w.String(7, gnomon::protocol::StringKind::kFrameName, "physics");
  w.String(8, gnomon::protocol::StringKind::kFrameName, "loading");
  w.String(9, gnomon::protocol::StringKind::kFrameName, "one mark");
  using gnomon::protocol::MessageType;
  for (uint64_t t = 1000; t <= 5000; t += 1000) w.Frame(MessageType::kFrameMark, 0, t);
  w.Frame(MessageType::kFrameBegin, 7, 1500).Frame(MessageType::kFrameEnd, 7, 1700);
  w.Frame(MessageType::kFrameBegin, 7, 3000).Frame(MessageType::kFrameEnd, 7, 3900);
  w.Frame(MessageType::kFrameBegin, 8, 4000);  // never ends: no frame yet
  w.Frame(MessageType::kFrameMark, 9, 4500);   // one mark: no frame yet
  const TraceModel model = gnomon::test::BuildModel(w);
  REQUIRE(model.frames.size() == 4);

  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  REQUIRE(timeline.lanes().size() == 2);
  CHECK(timeline.Title(model, timeline.lanes()[0]) == "Frames");
  CHECK(timeline.Title(model, timeline.lanes()[1]) == "Frames: physics");
  TimelineView view;
  view.Fit(0, 4000, 1000);
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  const auto main = FrameBars(timeline, items, {LaneKind::kFrames, 0});
  const auto physics = FrameBars(timeline, items, {LaneKind::kFrames, 7});
  CHECK(main.size() == 4);
  REQUIRE(physics.size() == 2);
  CHECK(physics[0].x0 == doctest::Approx(125));  // 500 ns in, at 4 ns a pixel
  CHECK(physics[1].index == 2);
  CHECK(physics[1].y1 - physics[1].y0 == doctest::Approx(timeline.lanes()[1].height));  // the longer one
  CHECK(physics[0].y1 - physics[0].y0 == doctest::Approx(timeline.lanes()[1].height * 200 / 900));
  const auto hit = timeline.HitTest(model, view, 600, timeline.lanes()[1].y + timeline.lanes()[1].height - 1);
  REQUIRE(hit.has_value());
  CHECK(hit->lane == LaneKey{LaneKind::kFrames, 7});
  CHECK(hit->index == 2);
  CHECK_FALSE(timeline.HitTest(model, view, 400, timeline.lanes()[1].y + timeline.lanes()[1].height - 1));
  CHECK(timeline.FrameSpan(model, 7, 2)->begin_ns == 2000);
  CHECK_FALSE(timeline.FrameSpan(model, 7, 3).has_value());
  CHECK_FALSE(timeline.FrameSpan(model, 8, 1).has_value());

  // Without frames, messages have a lane of their own.
  gnomon::test::StreamWriter m;
  m.AppInfo("messages").ThreadContext(1).Message(1000, 1, "hello").Message(2000, 1, "bye");
  const TraceModel messages = gnomon::test::BuildModel(m);
  Timeline plain;
  plain.Sync(messages);
  plain.Layout(messages, {}, 0);
  REQUIRE(plain.lanes().size() == 2);
  CHECK(plain.Title(messages, plain.lanes()[0]) == "Messages");
  plain.BuildItems(messages, view, items);
  CHECK(std::count_if(items.begin(), items.end(),
                      [](const DrawItem& i) { return i.kind == DrawItem::Kind::kMessage; }) == 2);
}

TEST_CASE("the strip grades frames against the frame target it is given") {
  gnomon::test::StreamWriter w;
  w.AppInfo("target").ThreadContext(1);
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, 0)
      .Frame(gnomon::protocol::MessageType::kFrameMark, 0, 22'000'000);
  const TraceModel model = gnomon::test::BuildModel(w);
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  TimelineView view;
  view.Fit(0, 30'000'000, 1000);
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  REQUIRE(FrameBars(timeline, items, {LaneKind::kFrames, 0}).size() == 1);
  CHECK(FrameBars(timeline, items, {LaneKind::kFrames, 0})[0].color == FrameTarget{}.Color(22'000'000));
  CHECK(FrameTarget{}.Grade(22'000'000) == FrameGrade::kLate);  // yellow at 60 FPS, as in Frame times
  timeline.SetFrameTarget(FrameTarget::Fps(30));
  timeline.BuildItems(model, view, items);
  CHECK(FrameBars(timeline, items, {LaneKind::kFrames, 0})[0].color == FrameTarget::Fps(30).Color(0));
}

TEST_CASE(
    "a flat plot is drawn mid-lane, and a curve from its lowest value at the bottom to its highest at the "
    "top") {
  gnomon::test::StreamWriter w;
  w.AppInfo("plots").ThreadContext(1);
  w.String(5, gnomon::protocol::StringKind::kPlotName, "flat")
      .Plot(5, 1000, 7.0)
      .Plot(5, 1500, 7.0)
      .Plot(5, 2000, 7.0);
  w.String(6, gnomon::protocol::StringKind::kPlotName, "rising").Plot(6, 1000, 1.0).Plot(6, 2000, 3.0);
  const TraceModel model = gnomon::test::BuildModel(w);
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  REQUIRE(timeline.lanes().size() == 2);
  TimelineView view;
  view.Fit(0, 1000, 1000);
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  const Lane& flat = timeline.lanes()[0];
  const Lane& rising = timeline.lanes()[1];
  int flat_segments = 0;
  for (const DrawItem& item : items) {
    if (item.kind != DrawItem::Kind::kPlot) continue;
    if (item.lane == 0) {
      ++flat_segments;
      CHECK(item.y0 == doctest::Approx(flat.y + flat.height / 2));
      CHECK(item.y1 == doctest::Approx(flat.y + flat.height / 2));
    } else {
      CHECK(item.y0 == doctest::Approx(rising.y + rising.height - 1));  // 1.0, the lowest
      CHECK(item.y1 == doctest::Approx(rising.y + 1));                  // 3.0, the highest
    }
  }
  CHECK(flat_segments == 2);
  const PlotRange range = timeline.VisiblePlotRange(model, view, flat.key);
  CHECK(Timeline::CurveY(flat, range, 7.0) == doctest::Approx(flat.y + flat.height / 2));
}

TEST_CASE("the library's own threads have no lane until asked for, then one titled as the library's") {
  gnomon::test::StreamWriter w;
  w.AppInfo("sampled").ThreadInfo(1, 100, "main").ThreadInfo(2, 101, "gnomon sampler");
  w.Add(gnomon::protocol::LibraryThread{.thread_id = 2});
  w.ThreadContext(1).SourceLocation(1, "Work", "f", "a.cpp", 1).ZoneBegin(1, 1000).ZoneEnd(2000);
  const TraceModel model = gnomon::test::BuildModel(w);
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  REQUIRE(timeline.lanes().size() == 1);
  CHECK(timeline.Title(model, timeline.lanes()[0]) == "main (1 zone)");
  timeline.HideLaneGroups(0);
  timeline.Layout(model, {}, 0);
  REQUIRE(timeline.lanes().size() == 2);
  CHECK(timeline.Title(model, timeline.lanes()[1]) == "gnomon sampler (Gnomon's, 0 zones)");
}

TEST_CASE("frames that overlap (a damaged trace) never make more bars than the strip has pixels") {
  gnomon::test::StreamWriter w;
  w.AppInfo("overlapping").ThreadContext(1);
  using gnomon::protocol::MessageType;
  // 100,000 discontinuous frames, each a second long, each beginning a nanosecond after
  // the one before: all of them over the whole view.
  for (uint64_t i = 0; i < 100'000; ++i)
    w.Frame(MessageType::kFrameBegin, 0, 1000 + i).Frame(MessageType::kFrameEnd, 0, 1'000'001'000 + i);
  const TraceModel model = gnomon::test::BuildModel(w);
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  TimelineView view;
  view.Fit(0, 2'000'000'000, 1000);
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  const auto bars = FrameBars(timeline, items, {LaneKind::kFrames, 0});
  CHECK(!bars.empty());
  CHECK(bars.size() <= 1002);
  for (const DrawItem& bar : bars) CHECK(bar.y1 - bar.y0 <= timeline.lanes()[0].height + 0.01f);
}

namespace {

// Three threads of randomly nested zones, from a few ns to a few ms long (ticks are ns).
gnomon::test::StreamWriter NestedZones(uint64_t seed, int events) {
  std::mt19937_64 rng(seed);
  gnomon::test::StreamWriter w;
  w.AppInfo("nested");
  for (uint32_t id = 1; id <= 4; ++id) w.SourceLocation(id, "loc" + std::to_string(id), "f", "n.cpp", id);
  uint64_t tick = 1'000;
  int depth[4] = {0, 0, 0, 0};
  for (int i = 0; i < events; ++i) {
    const uint32_t thread = 1 + uint32_t(rng() % 3);
    w.ThreadContext(thread);
    tick += rng() % 256 == 0 ? rng() % 200'000 : 1 + rng() % 300;
    if (depth[thread] == 0 || (depth[thread] < 8 && rng() % 2 == 0)) {
      w.ZoneBegin(1 + uint32_t(rng() % 4), tick);
      ++depth[thread];
    } else {
      w.ZoneEnd(tick);
      --depth[thread];
    }
  }
  for (uint32_t thread = 1; thread <= 3; ++thread) {  // every zone closed
    w.ThreadContext(thread);
    for (; depth[thread] > 0; --depth[thread]) w.ZoneEnd(++tick);
  }
  return w;
}

// The pixel columns each (lane, row) of thread zones covers, and the zones named there.
struct Cover {
  std::map<std::pair<uint32_t, int>, std::set<int>> columns;
  std::map<std::pair<uint32_t, int>, std::set<std::pair<int, std::string>>> named;
};
Cover CoverOf(const std::vector<DrawItem>& items, const Timeline& timeline) {
  Cover cover;
  for (const DrawItem& item : items) {
    if (item.kind != DrawItem::Kind::kZone && item.kind != DrawItem::Kind::kMerged &&
        item.kind != DrawItem::Kind::kOverviewZone)
      continue;
    const auto where = std::pair{item.lane, int(std::lround(item.y0 - timeline.lanes()[item.lane].y))};
    for (int x = int(std::floor(item.x0)); x < int(std::ceil(item.x1)); ++x) cover.columns[where].insert(x);
    if (item.label != nullptr && item.x1 - item.x0 >= 2)
      cover.named[where].insert({int(item.x0), *item.label});
  }
  return cover;
}

}  // namespace

TEST_CASE("zones not held are drawn from their overview as the held zones draw, where a pixel is no finer") {
  gnomon::test::ScratchDir dir;
  const std::string path = gnomon::test::WriteTrace(dir, NestedZones(7, 200'000), 16 << 10);
  TraceModel held, counted;
  REQUIRE(gnomon::server::LoadTrace(path, held).ok());
  gnomon::server::LoadOptions options;
  options.zone_memory_limit = 1;
  options.overview_runs = 40'000;  // under the zones: a resolution of some microseconds
  REQUIRE(gnomon::server::LoadTrace(path, counted, options).ok());
  REQUIRE_FALSE(counted.zones_held);
  const double resolution_ns = counted.clock.ns_per_tick() * double(counted.overview_resolution);
  CHECK(resolution_ns > 100);
  Timeline a, b;
  a.Sync(held);
  b.Sync(counted);
  a.Layout(held, {}, 0);
  b.Layout(counted, {}, 0);
  REQUIRE(a.lanes().size() == b.lanes().size());
  for (size_t i = 0; i < a.lanes().size(); ++i) {
    CHECK(a.lanes()[i].rows == b.lanes()[i].rows);
    CHECK(a.Title(held, a.lanes()[i]) == b.Title(counted, b.lanes()[i]));
  }
  const int64_t end = a.TraceEndNs(held);
  // The whole trace, and views whose pixel is four times the resolution, and the resolution.
  for (const auto& [begin_ns, end_ns] :
       std::vector<std::pair<int64_t, int64_t>>{{0, end},
                                                {end / 3, end / 3 + int64_t(resolution_ns * 1500 * 4)},
                                                {end / 2, end / 2 + int64_t(resolution_ns * 1500)}}) {
    CAPTURE(begin_ns);
    CAPTURE(end_ns);
    TimelineView view;
    view.Fit(begin_ns, end_ns, 1500);
    std::vector<DrawItem> held_items, counted_items;
    a.BuildItems(held, view, held_items);
    b.BuildItems(counted, view, counted_items);
    Cover x = CoverOf(held_items, a), y = CoverOf(counted_items, b);
    CHECK(x.columns.size() == y.columns.size());
    for (const auto& [where, columns] : x.columns) {
      CAPTURE(where.second);
      const std::set<int>& other = y.columns[where];
      std::vector<int> differ;
      std::set_symmetric_difference(columns.begin(), columns.end(), other.begin(), other.end(),
                                    std::back_inserter(differ));
      CHECK(differ.size() <= columns.size() / 200 + 2);  // a column at an edge rounds either way
      CHECK(x.named[where] == y.named[where]);
    }
  }
  // Picking a zone drawn from the overview gives its run: the zone, exact.
  TimelineView whole;
  whole.Fit(0, end, 1500);
  std::vector<DrawItem> items;
  b.BuildItems(counted, whole, items);
  int picked = 0;
  for (const DrawItem& item : items) {
    if (item.kind != DrawItem::Kind::kOverviewZone || item.x1 - item.x0 < 4) continue;
    const auto hit = b.HitTest(counted, whole, (item.x0 + item.x1) / 2, (item.y0 + item.y1) / 2);
    REQUIRE(hit.has_value());
    CHECK(hit->kind == DrawItem::Kind::kOverviewZone);
    CHECK(hit->index == item.index);
    CHECK(hit->row == item.row);
    const gnomon::server::OverviewRun* run = b.OverviewRunAt(counted, hit->lane.id, hit->row, hit->index);
    REQUIRE(run != nullptr);
    CHECK(run->count == 1);
    CHECK(run->end_tick - run->begin_tick >= counted.overview_resolution);
    CHECK(*item.label == counted.Location(run->location).name);
    ++picked;
  }
  CHECK(picked > 10);
  CHECK(b.OverviewRunAt(counted, 1, 999, 0) == nullptr);

  // Finer than the overview: the zones of a window read from the file, as the held ones.
  TimelineView fine;
  fine.Fit(end / 2, end / 2 + int64_t(resolution_ns * 1500 / 8), 1500);
  CHECK(b.NeedsZoneWindow(counted, fine));
  const auto [first_tick, last_tick] = b.ViewTicks(counted, fine);
  auto source = gnomon::server::TraceSource::OpenFile(path);
  REQUIRE(source.ok());
  // As the viewer asks: a view's width on each side (the view's ends round to ticks).
  const uint64_t width = last_tick - first_tick;
  auto window = gnomon::server::ReadZoneWindow(source.value(), counted, first_tick - width, last_tick + width,
                                               1u << 30);
  REQUIRE_MESSAGE(window.ok(), window.status().message());
  b.SetZoneWindow(Timeline::IndexZoneWindow(std::move(window.value())));
  CHECK_FALSE(b.NeedsZoneWindow(counted, fine));
  std::vector<DrawItem> held_items, window_items;
  a.BuildItems(held, fine, held_items);
  b.BuildItems(counted, fine, window_items);
  Cover x = CoverOf(held_items, a), y = CoverOf(window_items, b);
  CHECK(x.columns == y.columns);
  CHECK(x.named == y.named);
  size_t named = 0;
  for (const auto& [where, zones] : x.named) named += zones.size();
  CHECK(named > 5);
  for (const DrawItem& item : window_items) {
    if (item.kind != DrawItem::Kind::kOverviewZone || item.x1 - item.x0 < 4) continue;
    const auto hit = b.HitTest(counted, fine, (item.x0 + item.x1) / 2, (item.y0 + item.y1) / 2);
    REQUIRE(hit.has_value());
    CHECK((hit->row & Timeline::kWindowRow) != 0);
    const gnomon::server::OverviewRun* run = b.OverviewRunAt(counted, hit->lane.id, hit->row, hit->index);
    REQUIRE(run != nullptr);
    CHECK(*item.label == counted.Location(run->location).name);
  }
  // Zoomed out again, the overview.
  TimelineView whole_again;
  whole_again.Fit(0, end, 1500);
  CHECK_FALSE(b.NeedsZoneWindow(counted, whole_again));
}

TEST_CASE(
    "a curve of 200,000 points is scaled and drawn as a walk over every point would, a segment a pixel") {
  std::mt19937_64 rng(17);
  gnomon::test::StreamWriter w;
  w.AppInfo("curve").ThreadContext(1).String(5, gnomon::protocol::StringKind::kPlotName, "noisy");
  uint64_t tick = 1'000;
  for (int i = 0; i < 200'000; ++i) {
    tick += 1 + rng() % 50;
    w.Plot(5, tick, rng() % 5'000 == 0 ? 1e6 : double(rng() % 1'000));  // now and then a spike
  }
  const TraceModel model = gnomon::test::BuildModel(w);
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  REQUIRE(timeline.lanes().size() == 1);
  const Lane& lane = timeline.lanes()[0];
  const auto& points = model.plots.at(5).points;
  const int64_t origin = model.clock.TickToNs(model.first_tick);
  auto ns = [&](size_t i) { return model.clock.TickToNs(points[i].first) - origin; };
  const int64_t span = ns(points.size() - 1);
  for (int round = 0; round < 30; ++round) {
    const int64_t begin = round == 0 ? 0 : int64_t(rng() % uint64_t(span));
    const int64_t width = round == 0 ? span : 10 + int64_t(rng() % uint64_t(span / (1 + rng() % 100)));
    CAPTURE(begin);
    CAPTURE(width);
    TimelineView view;
    view.Fit(begin, begin + width, 1000);
    // Every point walked: the range from the point before the view to the one after it,
    // and a segment to each point a pixel or more right of the last drawn.
    size_t first = 0;
    while (first < points.size() && ns(first) < view.begin_ns()) ++first;
    if (first > 0) --first;
    PlotRange walked;
    walked.min = walked.max = points[first].second;
    std::vector<std::array<float, 4>> expected;
    bool drawn = false;
    float previous_x = 0, previous_y = 0;
    size_t last = first;
    for (size_t i = first; i < points.size(); ++i) {
      walked.min = std::min(walked.min, points[i].second);
      walked.max = std::max(walked.max, points[i].second);
      last = i;
      if (ns(i) > view.end_ns()) break;
    }
    walked.points = last - first + 1;
    const PlotRange range = timeline.VisiblePlotRange(model, view, lane.key);
    CHECK(range.points == walked.points);
    CHECK(range.min == walked.min);
    CHECK(range.max == walked.max);
    for (size_t i = first; i <= last; ++i) {
      const float x = float(view.NsToX(ns(i)));
      const float y = Timeline::CurveY(lane, range, points[i].second);
      if (drawn && x - previous_x < 1.0f && ns(i) <= view.end_ns()) continue;
      if (drawn) expected.push_back({previous_x, previous_y, x, y});
      drawn = true;
      previous_x = x;
      previous_y = y;
    }
    std::vector<DrawItem> items;
    timeline.BuildItems(model, view, items);
    std::vector<std::array<float, 4>> got;
    for (const DrawItem& item : items)
      if (item.kind == DrawItem::Kind::kPlot) got.push_back({item.x0, item.y0, item.x1, item.y1});
    CHECK(got == expected);
    CHECK(got.size() <= 1'002);
  }
}
