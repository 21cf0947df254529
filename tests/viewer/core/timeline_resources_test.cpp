// The timeline's memory and lock lanes and the threads' running strips
// (src/core/timeline_resources.cpp), without a window.
#include <doctest/doctest.h>

#include <algorithm>

#include "../../support/build_model.h"
#include "gnomon/viewer/timeline.h"
#include "model/trace_builder.h"

using namespace gnomon::viewer;
using gnomon::server::TraceModel;

namespace {

// Memory: "textures" gets 100 bytes at 1000, 300 more at 1200, frees the 100 at 1500.
// A lock: thread 1 holds it 1000..1400; thread 2 waits from 1100 and holds it
// 1400..1600; thread 3 reads it (shared) 1650..1700.
TraceModel ResourceSample() {
  gnomon::test::StreamWriter w;  // a nanosecond timer: ticks read as ns
  w.AppInfo("resources").ThreadInfo(1, 10, "one").ThreadInfo(2, 20, "two");
  w.String(3, gnomon::protocol::StringKind::kMemoryPool, "textures");
  w.String(4, gnomon::protocol::StringKind::kLockName, "queue");
  w.ThreadContext(1).Alloc(3, 0xA, 100, 1000).Alloc(3, 0xB, 300, 1200).Free(3, 0xA, 1500);
  w.LockObtain(4, 1000).LockRelease(4, 1400);
  w.ThreadContext(2).LockWait(4, 1100).LockObtain(4, 1400).LockRelease(4, 1600);
  w.ThreadContext(3).LockObtain(4, 1650, gnomon::protocol::kLockShared).LockRelease(4, 1700);
  return gnomon::test::BuildModel(w);
}

}  // namespace

TEST_CASE("a memory pool is a lane of bytes in use, drawn as steps, with its peak") {
  const TraceModel model = ResourceSample();
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  const Lane* memory = nullptr;
  for (const Lane& lane : timeline.lanes()) {
    if (lane.key.kind == LaneKind::kMemory) memory = &lane;
  }
  REQUIRE(memory != nullptr);
  CHECK(timeline.Title(model, *memory) == "Memory: textures");
  const auto peak = timeline.MemoryPeak(3);
  REQUIRE(peak.has_value());
  CHECK(peak->second == 400);
  CHECK(peak->first == 200);  // trace-relative: the second allocation
  CHECK(timeline.PlotValueAt(model, memory->key, 1400 - 1000)->second == 400);
  CHECK(timeline.PlotValueAt(model, memory->key, 1600 - 1000)->second == 300);
  const PlotRange range = timeline.VisiblePlotRange(
      model,
      [] {
        TimelineView v;
        v.Fit(0, 1000, 1000);
        return v;
      }(),
      memory->key);
  CHECK(range.min == 0);  // bytes are scaled from 0
  CHECK(range.max == 400);
  // Steps: every segment is horizontal or vertical.
  TimelineView view;
  view.Fit(0, 1000, 1000);
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  size_t segments = 0;
  for (const DrawItem& item : items) {
    if (item.kind != DrawItem::Kind::kPlot || timeline.lanes()[item.lane].key.kind != LaneKind::kMemory)
      continue;
    ++segments;
    CHECK((item.x0 == item.x1 || item.y0 == item.y1));
  }
  CHECK(segments >= 4);
}

TEST_CASE("a lock is a lane of holds and waits: overlapping ones take rows of their own, each pickable") {
  const TraceModel model = ResourceSample();
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  const Lane* lock = nullptr;
  for (const Lane& lane : timeline.lanes()) {
    if (lane.key.kind == LaneKind::kLock) lock = &lane;
  }
  REQUIRE(lock != nullptr);
  CHECK(timeline.Title(model, *lock) == "Lock: queue");
  CHECK(lock->rows == 2);  // holds never overlap here; one wait
  TimelineView view;
  view.Fit(0, 1000, 1000);
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  size_t holds = 0, waits = 0;
  for (const DrawItem& item : items) {
    if (item.kind == DrawItem::Kind::kLockHold) ++holds;
    if (item.kind == DrawItem::Kind::kLockWait) {
      ++waits;
      CHECK(item.x0 == doctest::Approx(100).epsilon(0.01));  // 1100 - 1000 ns at 1 px/ns
      CHECK(item.x1 == doctest::Approx(400).epsilon(0.01));
      CHECK(item.y0 > lock->y);  // the second row
    }
  }
  CHECK(holds == 3);
  CHECK(waits == 1);
  const auto hold = timeline.HitTest(model, view, 500, lock->y + 2);
  REQUIRE(hold.has_value());
  CHECK(hold->kind == DrawItem::Kind::kLockHold);
  CHECK(hold->index == 1);  // thread two's hold, 1400..1600
  const auto wait = timeline.HitTest(model, view, 200, lock->y + timeline.metrics().row_height + 2);
  REQUIRE(wait.has_value());
  CHECK(wait->kind == DrawItem::Kind::kLockWait);
  CHECK(wait->index == 1);
  CHECK(timeline.LockSpan(4, 1, true).begin_ns == 100);
}

TEST_CASE("lanes follow a model that grows: memory, locks, and GPU times moved by brackets that came later") {
  TraceModel model;
  gnomon::server::TraceBuilder builder(model);
  auto feed = [&](const gnomon::test::StreamWriter& w) {
    REQUIRE(gnomon::server::DecodeMessages(w.data(), w.size(), builder).consumed == w.size());
  };
  gnomon::test::StreamWriter first;
  first.AppInfo("growing").ThreadInfo(1, 10, "one").ThreadContext(1);
  first.Alloc(0, 0xA, 100, 1000).LockObtain(7, 1000);
  // A GPU context with three knots on one line, stating 3 us each, and a zone.
  first.GpuContext(1, "GPU", 1, 1, 64, 0, 0, gnomon::protocol::CpuTimeDomain::kMonotonicRaw, 3000);
  first.GpuCalibration(1, 20'000'000, 20'000'000, 20'000'000, 3000);
  first.GpuCalibration(1, 40'000'000, 40'000'000, 20'000'000, 3000);
  first.GpuZoneBegin(1, 1, 1, 1100)
      .GpuZoneEnd(1, 2, 1150)
      .GpuTime(1, 1, 30'000'000)
      .GpuTime(1, 2, 30'001'000);
  feed(first);
  Timeline timeline;
  timeline.Sync(model);
  CHECK(timeline.MemoryPeak(0)->second == 100);
  const Span held = timeline.LockSpan(7, 0, false);
  const Span before = timeline.GpuSpan(1, 0);

  gnomon::test::StreamWriter more;
  more.ThreadContext(1).Alloc(0, 0xB, 300, 2000).LockRelease(7, 2500);
  // The GPU's 30 ms write was seen by the CPU 1 us before the knots place it.
  more.GpuTimeBracket(1, 30'000'000, 0, 29'999'000);
  feed(more);
  timeline.Sync(model);
  CHECK(timeline.MemoryPeak(0)->second == 400);
  CHECK(held.end_ns != 1500);                            // open: to the end of the trace
  CHECK(timeline.LockSpan(7, 0, false).end_ns == 1500);  // released at 2500, 1000 after the start
  const Span after = timeline.GpuSpan(1, 0);
  CHECK(after.begin_ns < before.begin_ns);  // moved earlier by what the bracket proves
  CHECK(after.end_ns - after.begin_ns == before.end_ns - before.begin_ns);
}

TEST_CASE("a thread's running strip: its spans from context switches, merged within a pixel, each pickable") {
  gnomon::test::StreamWriter w;
  w.AppInfo("running").SourceLocation(1, "Work", "f", "a.cpp", 1);
  w.ThreadInfo(1, 10, "main").ThreadContext(1).ZoneBegin(1, 1000).ZoneEnd(2000);
  using gnomon::protocol::ContextSwitchKind;
  // Runs 1000..1300 on CPU 2 (then preempted), then 1500..1900 on CPU 0 (reported
  // first; then it blocked), and two short runs 0.2 ns apart at 1950 that share a pixel.
  w.Switch(10, ContextSwitchKind::kIn, 0, 1500).Switch(10, ContextSwitchKind::kOut, 0, 1900);
  w.Switch(10, ContextSwitchKind::kIn, 2, 1000).Switch(10, ContextSwitchKind::kOutPreempted, 2, 1300);
  w.Switch(10, ContextSwitchKind::kIn, 2, 1950).Switch(10, ContextSwitchKind::kOut, 2, 1951);
  w.Switch(10, ContextSwitchKind::kIn, 2, 1951).Switch(10, ContextSwitchKind::kOut, 2, 1952);
  const TraceModel model = gnomon::test::BuildWholeModel(w);
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  const Lane& lane = timeline.lanes().at(0);
  REQUIRE(lane.key.kind == LaneKind::kThread);
  const Timeline::Running* running = timeline.ThreadRunning(10);
  REQUIRE(running != nullptr);
  REQUIRE(running->spans.size() == 4);
  CHECK(running->spans[0].begin_ns == 0);  // trace-relative: the first event is at 1000
  CHECK(running->spans[1].begin_ns == 500);
  CHECK(running->cpus[1] == 0);
  CHECK(running->preempted[0] == 1);
  CHECK(running->preempted[1] == 0);
  TimelineView view;
  view.Fit(0, 1000, 1000);  // 1 px per ns
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  std::vector<DrawItem> runs;
  bool background = false;
  for (const DrawItem& item : items) {
    if (item.kind == DrawItem::Kind::kRunning && item.lane == 0) runs.push_back(item);  // the thread's strip
    background |= item.kind == DrawItem::Kind::kNotRunning;
  }
  CHECK(background);
  REQUIRE(runs.size() == 3);  // the two runs at 950 share a pixel
  CHECK(runs[0].x0 == doctest::Approx(0));
  CHECK(runs[0].x1 == doctest::Approx(300));
  CHECK(runs[1].x0 == doctest::Approx(500));
  CHECK(runs[2].count == 2);
  CHECK(runs[0].y1 <= lane.y);  // above the zones, in the title bar
  const auto hit = timeline.HitTest(model, view, 700, (runs[1].y0 + runs[1].y1) / 2);
  REQUIRE(hit.has_value());
  CHECK(hit->kind == DrawItem::Kind::kRunning);
  CHECK(hit->index == 1);
  // Between runs: the wait, picked by the run it follows (whose end says why it stopped).
  const auto wait = timeline.HitTest(model, view, 400, (runs[1].y0 + runs[1].y1) / 2);
  REQUIRE(wait.has_value());
  CHECK(wait->kind == DrawItem::Kind::kNotRunning);
  CHECK(wait->index == 0);
  CHECK_FALSE(
      timeline.HitTest(model, view, 990, (runs[1].y0 + runs[1].y1) / 2).has_value());  // after the last
}

TEST_CASE("sample ticks: one per pixel column however many samples, in time order, each pickable") {
  gnomon::test::StreamWriter w;
  w.AppInfo("ticks").SourceLocation(1, "Work", "f", "a.cpp", 1);
  w.ThreadInfo(1, 10, "main").ThreadContext(1).ZoneBegin(1, 1000);
  // 1,000 samples a tick apart from 110,000, written backwards (as from many CPUs), then
  // one alone at 150,000.
  for (uint64_t i = 1000; i-- > 0;) w.Sample(10, 1100 * 100 + i, {0x500});
  w.Sample(10, 1500 * 100, {0x600});
  w.ThreadContext(1).ZoneEnd(2000 * 100);
  const TraceModel model = gnomon::test::BuildWholeModel(w);
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  const Timeline::SampleTicks* ticks = timeline.ThreadSamples(10);
  REQUIRE(ticks != nullptr);
  REQUIRE(ticks->ns.size() == 1001);
  CHECK(std::is_sorted(ticks->ns.begin(), ticks->ns.end()));
  TimelineView view;
  view.Fit(0, 200000, 100);  // 2,000 ticks a pixel: the crowd's 1,000 ticks in one column or two
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  uint32_t counted = 0;
  std::vector<DrawItem> shown;
  for (const DrawItem& item : items) {
    if (item.kind != DrawItem::Kind::kSample) continue;
    counted += item.count;
    shown.push_back(item);
  }
  CHECK(counted == 1001);
  CHECK(shown.size() <= 3);  // the crowd in one or two columns, and the one alone
  const auto hit = timeline.HitTest(model, view, shown.back().x0, (shown.back().y0 + shown.back().y1) / 2);
  REQUIRE(hit.has_value());
  CHECK(hit->kind == DrawItem::Kind::kSample);
  CHECK(hit->index == 1000);
  CHECK(model.samples[ticks->samples[hit->index]].tick == 1500 * 100);
}

TEST_CASE("CPU lanes: a lane per core, one thread at a time on each, coloured by thread, each run pickable") {
  gnomon::test::StreamWriter w;
  w.AppInfo("cpus").SourceLocation(1, "Work", "f", "a.cpp", 1);
  w.ThreadInfo(1, 10, "one").ThreadInfo(2, 20, "two");
  w.ThreadContext(1).ZoneBegin(1, 1000).ZoneEnd(2000);
  using gnomon::protocol::ContextSwitchKind;
  // CPU 0: one 1000..1400, two 1400..1800; CPU 1: two 1000..1300, one 1500..2000.
  w.Switch(10, ContextSwitchKind::kIn, 0, 1000).Switch(10, ContextSwitchKind::kOut, 0, 1400);
  w.Switch(20, ContextSwitchKind::kIn, 0, 1400).Switch(20, ContextSwitchKind::kOut, 0, 1800);
  w.Switch(20, ContextSwitchKind::kIn, 1, 1000).Switch(20, ContextSwitchKind::kOut, 1, 1300);
  w.Switch(10, ContextSwitchKind::kIn, 1, 1500).Switch(10, ContextSwitchKind::kOut, 1, 2000);
  const TraceModel model = gnomon::test::BuildWholeModel(w);
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  std::vector<const Lane*> cpus;
  for (const Lane& lane : timeline.lanes()) {
    if (lane.key.kind == LaneKind::kCpu) cpus.push_back(&lane);
  }
  REQUIRE(cpus.size() == 2);
  CHECK(Timeline::Name(model, cpus[0]->key) == "CPU 0");
  // Each core's runs in order, never overlapping; a thread's time on all cores is its
  // running time.
  int64_t one = 0, two = 0;
  for (uint32_t cpu : {0u, 1u}) {
    const Timeline::CpuRuns* runs = timeline.CpuRunning(cpu);
    REQUIRE(runs != nullptr);
    REQUIRE(runs->spans.size() == 2);
    CHECK(runs->spans[0].end_ns <= runs->spans[1].begin_ns);
    for (size_t i = 0; i < runs->spans.size(); ++i)
      (runs->threads[i] == 10 ? one : two) += runs->spans[i].end_ns - runs->spans[i].begin_ns;
  }
  CHECK(one == 900);
  CHECK(two == 700);
  TimelineView view;
  view.Fit(0, 1000, 1000);  // 1 px per ns
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  std::vector<DrawItem> cpu0;
  for (const DrawItem& item : items) {
    if (timeline.lanes()[item.lane].key == cpus[0]->key) cpu0.push_back(item);
  }
  REQUIRE(cpu0.size() == 2);
  CHECK(cpu0[0].x1 == doctest::Approx(400));
  CHECK(cpu0[0].color == ThreadColor({LaneKind::kThread, 1}));
  CHECK(cpu0[1].color == ThreadColor({LaneKind::kThread, 2}));
  CHECK(*cpu0[1].label == "two");
  const auto hit = timeline.HitTest(model, view, 600, (cpu0[1].y0 + cpu0[1].y1) / 2);
  REQUIRE(hit.has_value());
  CHECK(hit->lane == cpus[0]->key);
  CHECK(hit->kind == DrawItem::Kind::kRunning);
  CHECK(hit->index == 1);
  // Hidden as a group.
  timeline.HideLaneGroups(kCpuLanes);
  timeline.Layout(model, {}, 0);
  for (const Lane& lane : timeline.lanes()) CHECK(lane.key.kind != LaneKind::kCpu);
}
