// The viewer's analyses, without a window: find zone, flame graph, frame times, trace
// comparison, and the background job that runs them.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "../support/build_model.h"
#include "../support/stream_writer.h"
#include "gnomon/viewer/allocation_list.h"
#include "gnomon/viewer/background_job.h"
#include "gnomon/viewer/flame_graph.h"
#include "gnomon/viewer/frame_times.h"
#include "gnomon/viewer/trace_comparison.h"
#include "gnomon/viewer/zone_search.h"

using namespace gnomon::viewer;
using gnomon::server::TraceModel;
using gnomon::test::StreamWriter;

namespace {

// Thread 1: frames of 100 ns every 1,000 ns; in each, A (40 ns) then B (20 + i % 3 ns),
// B holding C (5 ns). Thread 2: ten As of 1,000 ns. Frame marks every 1,000 ns, and
// frame 7 takes 40 ms.
TraceModel Sample() {
  StreamWriter w;
  w.AppInfo("sample");
  w.SourceLocation(1, "Frame", "f", "x.cpp", 1).SourceLocation(2, "A", "f", "x.cpp", 2);
  w.SourceLocation(3, "B", "f", "x.cpp", 3).SourceLocation(4, "C", "f", "x.cpp", 4);
  w.ThreadInfo(1, 11, "main").ThreadInfo(2, 12, "worker").ThreadContext(1);
  uint64_t frame_at = 0;
  for (uint64_t i = 0; i < 10; ++i) {
    const uint64_t t = 1000 * i;
    w.ZoneBegin(1, t).ZoneBegin(2, t + 10).ZoneEnd(t + 50).ZoneBegin(3, t + 60).ZoneBegin(4, t + 61);
    w.ZoneEnd(t + 66).ZoneEnd(t + 80 + i % 3).ZoneEnd(t + 100);
    w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, frame_at);
    frame_at += i == 7 ? 40'000'000 : 1000;
  }
  w.ThreadContext(2);
  for (uint64_t i = 0; i < 10; ++i) w.ZoneBegin(2, 20'000 + 2000 * i).ZoneEnd(21'000 + 2000 * i);
  return gnomon::test::BuildModel(w);
}

}  // namespace

TEST_CASE("find zone: every occurrence, its parent, percentiles, histogram, filters and groups") {
  const TraceModel m = Sample();
  const auto matches = SearchLocations(m, "b", 10);
  REQUIRE(matches.size() == 1);  // "B" only: names, functions and files are searched, any case
  CHECK(matches[0].location == 3);
  CHECK(SearchLocations(m, "X.CPP", 10).size() == 4);

  const ZoneOccurrences a = FindOccurrences(m, {2});
  REQUIRE(a.items.size() == 20);
  CHECK(a.total_ns == 10 * 40 + 10 * 1000);
  CHECK(a.Percentile(0) == 40);
  CHECK(a.Percentile(1) == 1000);
  for (size_t i = 1; i < a.items.size(); ++i) CHECK(a.items[i - 1].begin_ns <= a.items[i].begin_ns);
  const ZoneOccurrences b = FindOccurrences(m, {3});
  REQUIRE(b.items.size() == 10);
  CHECK(b.items[0].parent == 1);
  CHECK(b.items[0].thread_id == 1);
  CHECK(b.Percentile(0.5) == 21);
  CHECK(FindOccurrences(m, {4}).items[0].parent == 3);

  const DurationHistogram linear = MakeHistogram(a, 10, HistogramScale::kLinear);
  CHECK(linear.counts.front() == 10);  // the 40 ns ones
  CHECK(linear.counts.back() == 10);   // the 1,000 ns ones
  CHECK(linear.tallest == 10);
  const DurationHistogram log = MakeHistogram(a, 10, HistogramScale::kLog);
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

TEST_CASE("a flame graph merges call paths by location; a range counts the part of each zone inside it") {
  const TraceModel m = Sample();
  const FlameGraph all = BuildFlameGraph(m, {});
  const FlameNode& root = all.nodes[FlameGraph::kRoot];
  REQUIRE(root.children.size() == 2);  // Frame (main) and A (worker) at the top
  const FlameNode& top = all.nodes[root.children[0]];
  CHECK(m.Location(top.location).name == "A");  // the worker's 10,000 ns first
  CHECK(top.total_ns == 10'000);
  const FlameNode& frame = all.nodes[root.children[1]];
  CHECK(frame.count == 10);
  CHECK(frame.total_ns == 1000);
  REQUIRE(frame.children.size() == 2);
  const FlameNode& a = all.nodes[frame.children[0]];
  CHECK(m.Location(a.location).name == "A");
  CHECK(a.total_ns == 400);
  CHECK(frame.self_ns == 1000 - 400 - all.nodes[frame.children[1]].total_ns);
  CHECK(all.max_depth == 3);

  const FlameGraph main = BuildFlameGraph(m, {1});
  CHECK(main.nodes[FlameGraph::kRoot].children.size() == 1);
  // [0, 30]: the first frame's first 30 ns, of which A's first 20.
  const FlameGraph part = BuildFlameGraph(m, {0, 0, 30});
  const FlameNode& part_frame = part.nodes[part.nodes[FlameGraph::kRoot].children[0]];
  CHECK(part_frame.total_ns == 30);
  CHECK(part.nodes[part_frame.children[0]].total_ns == 20);

  const auto boxes = LayOutFlameGraph(all, FlameGraph::kRoot, 0.0);
  CHECK(boxes.size() == all.nodes.size());
  CHECK(boxes[0].x0 == 0);
  CHECK(boxes[0].x1 == doctest::Approx(1.0));
}

TEST_CASE("frame times: percentiles, histogram and colours against 1/60 and 1/30 s") {
  const TraceModel m = Sample();
  const FrameTimes f = ComputeFrameTimes(m, 0, 20);
  REQUIRE(f.frame_ns.size() == 9);
  CHECK(f.max_ns == 40'000'000);
  CHECK(f.p50_ns == 1000);
  uint64_t counted = 0;
  for (uint64_t c : f.histogram) counted += c;
  CHECK(counted == 9);
  CHECK(f.histogram.back() == 1);
  CHECK(f.min_ns == f.sorted_ns.front());
  CHECK(f.EdgeNs(0) == double(f.min_ns));
  CHECK(f.EdgeNs(20) == double(f.max_ns));
  CHECK(f.histogram.front() > 0);  // the bins span the frames, not zero to the longest
  CHECK(FrameTargetColor(10'000'000) != FrameTargetColor(20'000'000));
  CHECK(FrameTargetColor(20'000'000) != FrameTargetColor(40'000'000));
  CHECK(ComputeFrameTimes(m, 5, 20).frame_ns.empty());
}

TEST_CASE("two traces compared by name, function and file, whatever their ids") {
  const TraceModel a = Sample();
  StreamWriter w;
  w.AppInfo("other")
      .SourceLocation(7, "B", "f", "/elsewhere/x.cpp", 3)
      .SourceLocation(8, "New", "f", "y.cpp", 1);
  w.ThreadContext(1).ZoneBegin(7, 0).ZoneEnd(42).ZoneBegin(8, 50).ZoneEnd(60);
  const TraceModel b = gnomon::test::BuildModel(w);
  const auto rows =
      CompareTraces(a, gnomon::server::ComputeZoneStatistics(a), b, gnomon::server::ComputeZoneStatistics(b));
  REQUIRE(rows.size() == 5);  // Frame, A, B, C from A; B matched; New from B
  const ComparisonRow* row_b = nullptr;
  const ComparisonRow* row_new = nullptr;
  for (const ComparisonRow& r : rows) {
    if (r.name == "B") row_b = &r;
    if (r.name == "New") row_new = &r;
  }
  REQUIRE(row_b != nullptr);
  CHECK(row_b->count_a == 10);
  CHECK(row_b->count_b == 1);
  CHECK(row_b->mean_ratio() == doctest::Approx(42.0 / row_b->mean_a_ns));
  REQUIRE(row_new != nullptr);
  CHECK(row_new->count_a == 0);
  CHECK(row_new->mean_ratio() == 0);
  CHECK(MatchLocation(a, b.Location(1)) == 3);
}

TEST_CASE("a background job computes the newest request off the calling thread, and keeps the last result") {
  BackgroundJob<int, int> job;
  std::atomic<bool> release{false};
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> elsewhere{false}, started{false};
  job.Request(1, [&] {
    elsewhere = std::this_thread::get_id() != caller;
    started = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return 10;
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  job.Request(2, [] { return 20; });  // waits for the first...
  job.Request(3, [] { return 30; });  // ...and is replaced by this one before it starts
  CHECK(job.result() == nullptr);
  CHECK(job.is_busy());
  release = true;
  job.Wait();
  REQUIRE(job.result() != nullptr);
  CHECK(*job.result() == 30);
  CHECK(*job.result_key() == 3);
  CHECK(elsewhere.load());
  const uint64_t generation = job.result_generation();
  job.Request(3, [] { return 99; });  // the same key: nothing new
  job.Wait();
  CHECK(*job.result() == 30);
  CHECK(job.result_generation() == generation);
}

TEST_CASE("allocations alive at a time, or never freed, biggest first") {
  gnomon::test::StreamWriter w;
  w.ThreadContext(1).Alloc(0, 0x1, 10, 100).Alloc(0, 0x2, 30, 200).Alloc(0, 0x3, 20, 300);
  w.Free(0, 0x2, 400).Alloc(0, 0x4, 30, 500);
  const gnomon::server::TraceModel model = gnomon::test::BuildModel(w);
  const auto& pool = model.memory_pools.at(0);
  const auto at_350 = gnomon::viewer::ListAllocations(pool, false, 350);
  CHECK(at_350.indexes == std::vector<uint64_t>{1, 2, 0});  // 30, 20, 10 bytes
  CHECK(at_350.bytes == 60);
  const auto at_450 = gnomon::viewer::ListAllocations(pool, false, 450);
  CHECK(at_450.indexes == std::vector<uint64_t>{2, 0});
  const auto leaks = gnomon::viewer::ListAllocations(pool, true, 0);
  CHECK(leaks.indexes == std::vector<uint64_t>{3, 2, 0});  // 30 (the later), 20, 10
  CHECK(leaks.bytes == 60);
}
