// Find zone's search (src/core/zone_search.cpp): locations by name, every occurrence
// of one, percentiles, histograms, filters and groups.
#include "gnomon/viewer/zone_search.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "../../support/build_model.h"
#include "analysis_sample.h"
#include "model/trace_builder.h"

using namespace gnomon::viewer;
using gnomon::server::TraceModel;
using gnomon::test::AnalysisSample;

TEST_CASE("find zone: every occurrence, its parent, percentiles, histogram, filters and groups") {
  const TraceModel m = AnalysisSample();
  const auto matches = SearchLocations(m, "b", 10);
  REQUIRE(matches.size() == 1);  // "B" only: names, functions and files are searched, any case
  CHECK(matches[0].location == 3);
  CHECK(SearchLocations(m, "X.CPP", 10).size() == 4);

  const ZoneOccurrences a = FindOccurrences(m, {2});
  REQUIRE(a.items.size() == 20);
  CHECK(a.durations.total_ns == 10 * 40 + 10 * 1000);
  CHECK(a.durations.Percentile(0) == 40);
  CHECK(a.durations.Percentile(1) == 1000);
  for (size_t i = 1; i < a.items.size(); ++i) CHECK(a.items[i - 1].begin_ns <= a.items[i].begin_ns);
  const ZoneOccurrences b = FindOccurrences(m, {3});
  REQUIRE(b.items.size() == 10);
  CHECK(b.items[0].parent == 1);
  CHECK(b.items[0].thread_id == 1);
  CHECK(b.durations.Percentile(0.5) == 21);
  CHECK(FindOccurrences(m, {4}).items[0].parent == 3);

  const DurationHistogram linear = MakeHistogram(a.durations, 10, HistogramScale::kLinear);
  CHECK(linear.counts.front() == 10);  // the 40 ns ones
  CHECK(linear.counts.back() == 10);   // the 1,000 ns ones
  CHECK(linear.tallest == 10);
  const DurationHistogram log = MakeHistogram(a.durations, 10, HistogramScale::kLog);
  CHECK(log.BinOf(40) == 0);
  CHECK(log.BinOf(1000) == 9);
  CHECK(log.EdgeNs(0) == doctest::Approx(40));
  CHECK(log.EdgeNs(10) == doctest::Approx(1000));

  const auto long_ones = SelectOccurrences(a, {500, INT64_MAX}, OccurrenceOrder::kStart);
  CHECK(long_ones.size() == 10);
  const auto by_duration = SelectOccurrences(a, {}, OccurrenceOrder::kDuration);
  CHECK(a.items[by_duration.front()].duration_ns == 1000);
  const auto groups = GroupOccurrences(a, {}, OccurrenceGrouping::kThread);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].key == 2);  // worker: 10,000 ns in all, first
  CHECK(groups[0].count == 10);
  const auto parents = GroupOccurrences(a, {}, OccurrenceGrouping::kParent);
  REQUIRE(parents.size() == 2);
  CHECK(parents[0].key == 0);  // the worker's As are top-level

  // In a range: only the zones that begin in it.
  ZoneQuery in_range{2};
  in_range.begin_ns = 0;
  in_range.end_ns = 5000;
  CHECK(FindOccurrences(m, in_range).items.size() == 5);
}

TEST_CASE("histogram counts by binary search agree with binning each duration") {
  std::mt19937_64 rng(7);
  for (const auto scale : {gnomon::viewer::HistogramScale::kLog, gnomon::viewer::HistogramScale::kLinear}) {
    std::vector<int64_t> sorted;
    for (int i = 0; i < 20000; ++i)
      sorted.push_back(int64_t(rng() % 50'000'000) * (i % 7 == 0 ? 1 : 0) + 1 + i % 3);
    std::sort(sorted.begin(), sorted.end());
    gnomon::viewer::DurationHistogram h;
    h.scale = scale;
    h.min_ns = sorted.front();
    h.max_ns = sorted.back();
    h.counts.assign(64, 0);
    h.Count(sorted);
    std::vector<uint64_t> expected(64, 0);
    for (int64_t ns : sorted) ++expected[h.BinOf(ns)];
    CHECK(h.counts == expected);
    CHECK(h.tallest == *std::max_element(expected.begin(), expected.end()));
  }
}

TEST_CASE("find zone outlines each occurrence in view on its row, and zoomed out a rectangle per pixel") {
  // 100,000 "Hit" zones on one thread, each followed by a "Miss" of the same length,
  // every tenth Hit 5 us long and the others 1 us.
  gnomon::test::StreamWriter w;
  w.AppInfo("outlines").SourceLocation(1, "Hit", "h", "a.cpp", 1).SourceLocation(2, "Miss", "m", "a.cpp", 2);
  w.ThreadInfo(1, 10, "main").ThreadContext(1);
  uint64_t t = 1000;
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t length = i % 10 == 0 ? 5000 : 1000;
    w.ZoneBegin(1, t).ZoneEnd(t + length).ZoneBegin(2, t + length).ZoneEnd(t + 2 * length);
    t += 2 * length;
  }
  const TraceModel model = gnomon::test::BuildModel(w);
  Timeline timeline;
  timeline.Sync(model);
  timeline.Layout(model, {}, 0);
  const ZoneOccurrences hits = FindOccurrences(model, {1});
  REQUIRE(hits.items.size() == 100'000);
  const Lane& lane = timeline.lanes().at(0);
  REQUIRE(hits.by_lane.lanes.size() == 1);
  CHECK(hits.by_lane.lanes[0].second.size() == 100'000);
  CHECK(hits.by_lane.longest_ns == 5000);
  std::vector<Outline> outlines;

  // Zoomed in on the first 40 us: each Hit its own rectangle, where its zone is drawn.
  TimelineView view;
  view.Fit(0, 40'000, 1000);
  OutlineOccurrences(timeline, view, hits, {4000, INT64_MAX}, outlines);
  std::vector<DrawItem> items;
  timeline.BuildItems(model, view, items);
  size_t drawn_hits = 0;
  for (const DrawItem& item : items) {
    if (item.kind != DrawItem::Kind::kZone || *item.label != "Hit") continue;
    ++drawn_hits;
    const auto match = std::find_if(outlines.begin(), outlines.end(),
                                    [&](const Outline& o) { return std::fabs(o.x0 - item.x0) < 0.5f; });
    REQUIRE(match != outlines.end());
    CHECK(match->y0 == doctest::Approx(item.y0));
    CHECK(match->count == 1);
    CHECK(match->strong == (item.x1 - item.x0 > 100));  // the 5 us ones: the durations chosen
  }
  CHECK(drawn_hits >= 10);
  CHECK(outlines.size() == drawn_hits);

  // The whole trace: every Hit counted once, in at most a rectangle a pixel.
  view.Fit(0, int64_t(t - 1000), 1000);
  OutlineOccurrences(timeline, view, hits, {4000, INT64_MAX}, outlines);
  uint64_t counted = 0;
  for (const Outline& o : outlines) {
    counted += o.count;
    CHECK(o.y0 == doctest::Approx(lane.y));
  }
  CHECK(counted == 100'000);
  CHECK(outlines.size() <= 1001);
  // A hidden lane has none.
  std::map<LaneKey, LaneState> hidden{{lane.key, LaneState{.collapsed = false, .hidden = true}}};
  timeline.Layout(model, hidden, 0);
  OutlineOccurrences(timeline, view, hits, {}, outlines);
  CHECK(outlines.empty());
}

TEST_CASE("find zone: self times take each occurrence's children off, and the spread has its deviation") {
  const TraceModel m = AnalysisSample();
  // Frame (100 ns) holds A (40 ns) and B (20-22 ns), and B holds C (5 ns): only the
  // direct children count.
  const ZoneOccurrences frames = FindOccurrences(m, {1});
  REQUIRE(frames.items.size() == 10);
  for (const Occurrence& o : frames.items) CHECK(o.self_ns == 100 - 40 - (20 + (o.begin_ns / 1000) % 3));
  CHECK(frames.self_times.Percentile(0) == 38);
  CHECK(frames.self_times.Percentile(1) == 40);
  CHECK(frames.self_times.total_ns == 4 * 40 + 3 * 39 + 3 * 38);
  const ZoneOccurrences b = FindOccurrences(m, {3});
  CHECK(b.self_times.Percentile(0) == 15);
  CHECK(b.self_times.Percentile(1) == 17);
  CHECK(FindOccurrences(m, {4}).self_times.Percentile(1) == 5);  // no children: its duration
  // A: ten of 40 ns and ten of 1,000 ns.
  const ZoneOccurrences a = FindOccurrences(m, {2});
  CHECK(a.durations.mean_ns == doctest::Approx(520));
  CHECK(a.durations.stddev_ns == doctest::Approx(480));
  // A filter of self times keeps by self time, and outlines follow it.
  OccurrenceFilter self_40{40, 40};
  self_40.self = true;
  CHECK(SelectOccurrences(frames, self_40, OccurrenceOrder::kStart).size() == 4);
  CHECK(SelectOccurrences(frames, {40, 40}, OccurrenceOrder::kStart).empty());  // no duration of 40
  const DurationHistogram h = MakeHistogram(frames.self_times, 3, HistogramScale::kLinear);
  CHECK(h.counts == std::vector<uint64_t>{3, 3, 4});
  CHECK(h.Fraction(39) == doctest::Approx(0.5));
  // A range limits the occurrences, and their children still count.
  const ZoneOccurrences later = FindOccurrences(m, {1, false, 5000, INT64_MAX});
  REQUIRE(later.items.size() == 5);
  CHECK(later.items[0].self_ns == 100 - 40 - 22);
}
