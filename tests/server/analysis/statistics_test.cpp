#include "gnomon/server/statistics.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../../support/build_model.h"
#include "model/trace_builder.h"

using namespace gnomon::server;

TEST_CASE("count, total, self, min, max, mean, median and deviation per source location") {
  gnomon::test::StreamWriter w;
  w.AppInfo("app").SourceLocation(1, "Frame", "f", "a.cpp", 1).SourceLocation(2, "A", "a", "a.cpp", 2);
  w.SourceLocation(3, "B", "b", "a.cpp", 3).ThreadContext(1);
  w.ZoneBegin(1, 0);
  w.ZoneBegin(2, 10).ZoneEnd(30);                               // A: 20
  w.ZoneBegin(2, 40).ZoneBegin(3, 45).ZoneEnd(50).ZoneEnd(70);  // A: 30 with B: 5
  w.ZoneEnd(100);                                               // Frame: 100
  w.ZoneBegin(3, 200);                                          // unfinished: left out
  const TraceModel model = gnomon::test::BuildModel(w);
  const auto stats = ComputeZoneStatistics(model);
  REQUIRE(stats.size() == 3);
  CHECK(stats[0].source_location == 1);
  CHECK(stats[0].total_ns == 100);
  CHECK(stats[0].self_ns == 50);
  const ZoneStatistics& a = stats[1];
  CHECK(a.source_location == 2);
  CHECK(a.count == 2);
  CHECK(a.total_ns == 50);
  CHECK(a.self_ns == 45);
  CHECK(a.min_ns == 20);
  CHECK(a.max_ns == 30);
  CHECK(a.mean_ns == doctest::Approx(25));
  CHECK(a.median_ns == 25);
  CHECK(a.stddev_ns == doctest::Approx(5));
  CHECK(stats[2].count == 1);
  CHECK(stats[2].self_ns == 5);
}

namespace {

// Statistics the plain way: one stack walk per thread, every duration kept and sorted.
// With a range, only the zones that begin inside it are walked.
std::vector<ZoneStatistics> ReferenceStatistics(const TraceModel& model,
                                                const gnomon::server::TickRange& range = {}) {
  struct Open {
    uint32_t depth, location;
    int64_t duration, children;
  };
  std::vector<ZoneStatistics> by_location(model.source_locations.size());
  std::vector<std::vector<int64_t>> durations(by_location.size());
  auto close = [&](const Open& o) {
    if (o.duration >= 0) by_location[o.location].self_ns += std::max<int64_t>(0, o.duration - o.children);
  };
  for (const ThreadTimeline& thread : model.threads) {
    std::vector<Open> stack;
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const Zone z = thread.zones[i];
      if (!range.Contains(z.begin_tick)) continue;
      for (; !stack.empty() && stack.back().depth >= z.depth; stack.pop_back()) close(stack.back());
      const int64_t duration = z.is_open() ? -1 : model.DurationNs(z.begin_tick, z.end_tick);
      if (duration >= 0) {
        ZoneStatistics& s = by_location[z.source_location];
        s.min_ns = s.count == 0 ? duration : std::min(s.min_ns, duration);
        s.max_ns = std::max(s.max_ns, duration);
        ++s.count;
        s.total_ns += duration;
        durations[z.source_location].push_back(duration);
        if (!stack.empty() && stack.back().duration >= 0) stack.back().children += duration;
      }
      stack.push_back({z.depth, z.source_location, duration, 0});
    }
    for (; !stack.empty(); stack.pop_back()) close(stack.back());
  }
  std::vector<ZoneStatistics> result;
  for (uint32_t id = 0; id < by_location.size(); ++id) {
    ZoneStatistics& s = by_location[id];
    if (s.count == 0) continue;
    s.source_location = id;
    std::vector<int64_t>& d = durations[id];
    std::sort(d.begin(), d.end());
    s.median_ns = d.size() % 2 == 1 ? d[d.size() / 2]
                                    : d[d.size() / 2 - 1] + (d[d.size() / 2] - d[d.size() / 2 - 1]) / 2;
    s.mean_ns = double(s.total_ns) / double(s.count);
    result.push_back(s);
  }
  std::sort(result.begin(), result.end(), [](const ZoneStatistics& a, const ZoneStatistics& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.source_location < b.source_location;
  });
  return result;
}

}  // namespace

TEST_CASE("statistics walked in pieces on several threads equal a single plain walk") {
  // Three million zones on one thread under a root that spans them all (so children
  // cross every piece boundary), nested three deep, with durations from 1 ns to ~1 ms
  // (medians fall in wide histogram buckets and need the second pass), an odd and an
  // even count, zones left open at the end, and a second, small thread.
  gnomon::test::StreamWriter w;
  w.AppInfo("app");
  for (uint32_t id = 1; id <= 6; ++id) w.SourceLocation(id, "L" + std::to_string(id), "f", "a.cpp", id);
  TraceModel model = gnomon::test::BuildModel(w);
  TraceBuilder b(model);
  b.OnThreadContext({.thread_id = 1});
  b.BeginZone(1, 0);
  uint64_t t = 1, random = 12345;
  auto next = [&](uint64_t range) {
    random = random * 6364136223846793005ull + 1442695040888963407ull;
    return (random >> 33) % range;
  };
  size_t zones = 1;
  while (zones < 3'000'000) {
    b.BeginZone(2, t);
    const int children = int(next(4));
    for (int c = 0; c < children; ++c) {
      b.BeginZone(3, t += 1 + next(3));
      if (next(2) == 0) {
        b.BeginZone(4, t += 1);
        b.EndZone(t += next(1'000'000));
        ++zones;
      }
      b.EndZone(t += next(300));
      ++zones;
    }
    b.EndZone(t += 1 + next(50));
    ++zones;
  }
  b.EndZone(t += 100);     // the root
  b.BeginZone(5, t += 5);  // open at the end, with a closed child
  b.BeginZone(6, t += 5);
  b.EndZone(t += 7);
  b.OnThreadContext({.thread_id = 2});
  for (int i = 0; i < 1001; ++i) {
    b.BeginZone(6, t + uint64_t(i) * 10);
    b.EndZone(t + uint64_t(i) * 10 + uint64_t(i % 7));
  }
  const auto expected = ReferenceStatistics(model);
  REQUIRE(expected.size() == 5);  // location 5 never closed
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    CAPTURE(threads);
    const auto got = ComputeZoneStatistics(model, threads);
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      CHECK(got[i].source_location == expected[i].source_location);
      CHECK(got[i].count == expected[i].count);
      CHECK(got[i].total_ns == expected[i].total_ns);
      CHECK(got[i].self_ns == expected[i].self_ns);
      CHECK(got[i].min_ns == expected[i].min_ns);
      CHECK(got[i].max_ns == expected[i].max_ns);
      CHECK(got[i].median_ns == expected[i].median_ns);
      CHECK(got[i].mean_ns == doctest::Approx(expected[i].mean_ns));
    }
  }
}

TEST_CASE("statistics of a range count the zones that begin in it, walked in pieces or not") {
  gnomon::test::StreamWriter w;
  w.AppInfo("app");
  for (uint32_t id = 1; id <= 3; ++id) w.SourceLocation(id, "L" + std::to_string(id), "f", "a.cpp", id);
  TraceModel model = gnomon::test::BuildModel(w);
  TraceBuilder b(model);
  b.OnThreadContext({.thread_id = 1});
  uint64_t t = 0;
  for (int i = 0; i < 2'500'000; ++i) {  // big enough to be cut into pieces
    b.BeginZone(1, t);
    b.BeginZone(2, t + 1);
    b.EndZone(t + 3 + uint64_t(i % 5));
    b.EndZone(t + 10);
    t += 12;
  }
  const gnomon::server::TickRange range{t / 3 + 5, 2 * t / 3};  // starts inside a parent
  const auto expected = ReferenceStatistics(model, range);
  REQUIRE(expected.size() == 2);
  for (unsigned threads : {1u, 4u}) {
    CAPTURE(threads);
    const auto got = ComputeZoneStatistics(model, threads, range);
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i].source_location == expected[i].source_location);
      CHECK(got[i].count == expected[i].count);
      CHECK(got[i].total_ns == expected[i].total_ns);
      CHECK(got[i].self_ns == expected[i].self_ns);
      CHECK(got[i].median_ns == expected[i].median_ns);
    }
  }
  // Nothing begins in an empty range; the whole trace is the default.
  CHECK(ComputeZoneStatistics(model, 1, {t + 100, t + 200}).empty());
  CHECK(ComputeZoneStatistics(model, 1)[0].count == 2'500'000);
}

TEST_CASE("programs compared: a zone in several by the spread of its means, and the slowest per frame") {
  // Three ranks of one job: "Step" takes 100, 150 and 120 ns on average; "Load" runs on
  // rank 0 only. Rank 1's frames are slow in steps 0 and 1, rank 2's in step 2.
  auto rank = [](int r, std::vector<uint64_t> steps, std::vector<uint64_t> frames) {
    gnomon::test::StreamWriter w;
    w.AppInfo("rank " + std::to_string(r)).SourceLocation(1, "Step", "s", "a.cpp", 1).ThreadContext(1);
    if (r == 0) w.SourceLocation(2, "Load", "l", "a.cpp", 2).ZoneBegin(2, 0).ZoneEnd(5);
    uint64_t t = 10;
    for (uint64_t ns : steps) {
      w.ZoneBegin(1, t).ZoneEnd(t + ns);
      t += 1000;
    }
    uint64_t mark = 0;
    w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, mark);
    for (uint64_t ns : frames) w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, mark += ns);
    return gnomon::test::BuildModel(w);
  };
  const TraceModel a = rank(0, {90, 110}, {1000, 1000, 1000, 1000});
  const TraceModel b = rank(1, {150, 150}, {1300, 1100, 900});
  const TraceModel c = rank(2, {120}, {900, 1000, 1400});
  const std::vector<const TraceModel*> programs{&a, &b, &c};
  const std::vector<std::vector<ZoneStatistics>> stats{ComputeZoneStatistics(a), ComputeZoneStatistics(b),
                                                       ComputeZoneStatistics(c)};
  const auto zones = CompareProcessZones(programs, stats);
  REQUIRE(zones.size() == 1);  // Load runs in one program only
  CHECK(zones[0].name == "Step");
  CHECK(zones[0].processes == std::vector<size_t>{0, 1, 2});
  CHECK(zones[0].counts == std::vector<uint64_t>{2, 2, 1});
  CHECK(zones[0].processes[zones[0].slowest] == 1);
  CHECK(zones[0].processes[zones[0].fastest] == 0);
  CHECK(zones[0].spread_ns() == doctest::Approx(50));

  const SlowestPerFrame frames = CompareProcessFrames(programs);
  CHECK(frames.frames == 3);  // the fewest any program has
  CHECK(frames.slowest == std::vector<uint64_t>{0, 2, 1});
  CHECK(frames.worst_lag_ns == std::vector<int64_t>{0, 300, 400});
}

TEST_CASE("programs compared: frames that go backwards in a crafted trace are compared without harm") {
  auto backwards = [] {
    gnomon::test::StreamWriter w;
    w.AppInfo("p").ThreadContext(1);
    w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, 200)
        .Frame(gnomon::protocol::MessageType::kFrameMark, 0, 100);
    return gnomon::test::BuildModel(w);
  };
  const TraceModel a = backwards(), b = backwards();
  const SlowestPerFrame frames = CompareProcessFrames({&a, &b});
  CHECK(frames.frames == 1);
  CHECK(frames.slowest[0] + frames.slowest[1] == 1);
}
