// The overview a load keeps of zones it counts without holding them (ZoneOverview):
// checked against the same zones held. Every closed zone lies in a run of its row and is
// counted there once; a zone at least the resolution long is a run of its own, exact;
// the runs stay within their budget.
#include "gnomon/server/zone_overview.h"

#include <doctest/doctest.h>

#include <fstream>
#include <random>

#include "../../support/trace_files.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/zone_window.h"

namespace {

using gnomon::server::kMixedLocations;
using gnomon::server::OverviewRun;
using gnomon::server::TraceModel;
using gnomon::server::ZoneOverview;
using gnomon::test::ScratchDir;
using gnomon::test::StreamWriter;

// Two threads of randomly nested zones, from a few ticks to a few million long.
StreamWriter NestedZones(uint64_t seed, int events) {
  std::mt19937_64 rng(seed);
  StreamWriter w;
  w.AppInfo("nested", 3);
  w.Calibration(1'000, 500, 500, 5).Calibration(270'001'000, 100'000'500, 100'000'500, 5);
  for (uint32_t id = 1; id <= 4; ++id) w.SourceLocation(id, "loc" + std::to_string(id), "f", "n.cpp", id);
  uint64_t tick = 1'000;
  int depth[3] = {0, 0, 0};
  for (int i = 0; i < events; ++i) {
    const uint32_t thread = 1 + uint32_t(rng() % 2);
    w.ThreadContext(thread);
    tick += rng() % 8 == 0 ? rng() % 3'000'000 : 1 + rng() % 40;
    if (depth[thread] == 0 || (depth[thread] < 12 && rng() % 2 == 0)) {
      w.ZoneBegin(1 + uint32_t(rng() % 4), tick);
      ++depth[thread];
    } else {
      w.ZoneEnd(tick);
      --depth[thread];
    }
  }
  return w;
}

// `path` loaded counting its zones, with an overview of at most `runs` (0: none), from
// the blocks' summaries or, with `summaries` false, decoding every block; its warning
// into `warning`.
TraceModel LoadCounted(const std::string& path, size_t runs, bool summaries = true,
                       std::string* warning = nullptr, uint64_t* summarized = nullptr) {
  TraceModel counted;
  gnomon::server::LoadOptions options;
  options.zone_memory_limit = 1;
  options.overview_runs = runs;
  options.use_summaries = summaries;
  auto report = gnomon::server::LoadTrace(path, counted, options);
  REQUIRE(report.ok());
  if (warning != nullptr) *warning = report->warning;
  if (summarized != nullptr) *summarized = report->summarized_blocks;
  CHECK(report->summarized_blocks <= (summaries ? report->blocks : 0));
  return counted;
}

void CheckOverviewHolds(const std::string& path, const TraceModel& counted, size_t runs);

// `path` loaded holding its zones, and counting them with an overview of at most `runs`,
// decoding every block (coarser than 1 tick: `expect_coarser`) and from the blocks'
// summaries (no finer than theirs).
void CheckOverview(const std::string& path, size_t runs, bool expect_coarser) {
  for (const bool summaries : {false, true}) {
    CAPTURE(summaries);
    const TraceModel counted = LoadCounted(path, runs, summaries);
    if (summaries) {
      CHECK(counted.overview_resolution >= gnomon::tracefile::kSummaryFirstResolution);
    } else {
      CHECK((counted.overview_resolution > 1) == expect_coarser);
    }
    CheckOverviewHolds(path, counted, runs);
  }
}

// The overview of `counted` against `path` loaded holding its zones.
void CheckOverviewHolds(const std::string& path, const TraceModel& counted, size_t runs) {
  TraceModel held;
  REQUIRE(gnomon::server::LoadTrace(path, held).ok());
  REQUIRE_FALSE(counted.zones_held);
  const uint64_t resolution = counted.overview_resolution;
  size_t total_cost = 0;
  REQUIRE(held.threads.size() == counted.threads.size());
  for (size_t t = 0; t < held.threads.size(); ++t) {
    const auto& zones = held.threads[t].zones;
    const ZoneOverview& overview = counted.threads[t].overview;
    total_cost += overview.cost();
    CAPTURE(t);
    // Each row's runs in begin order, each counting its zones once.
    uint64_t counted_zones = 0;
    for (const std::vector<OverviewRun>& row : overview.rows()) {
      for (size_t i = 0; i < row.size(); ++i) {
        CHECK(row[i].count >= 1);
        CHECK(row[i].end_tick >= row[i].begin_tick);
        if (i > 0) CHECK(row[i].begin_tick >= row[i - 1].begin_tick);
        counted_zones += row[i].count;
      }
    }
    for (size_t i = 0; i < zones.size(); ++i) {
      gnomon::server::Zone z = zones[i];
      if (z.is_open()) z.end_tick = held.last_tick;  // drawn to the end, as the timeline draws it
      CAPTURE(i);
      REQUIRE(z.depth < overview.rows().size());
      const std::vector<OverviewRun>& row = overview.rows()[z.depth];
      // The last run beginning at or before the zone holds it, or one before it that
      // reaches it (a zone of no length may begin where a long one begins).
      auto after =
          std::upper_bound(row.begin(), row.end(), z.begin_tick,
                           [](uint64_t tick, const OverviewRun& run) { return tick < run.begin_tick; });
      REQUIRE(after != row.begin());
      auto holds = [&z](const OverviewRun& run) {
        return run.begin_tick <= z.begin_tick && z.end_tick <= run.end_tick &&
               (run.location == z.source_location || run.location == kMixedLocations);
      };
      auto run_it = after - 1;
      while (!holds(*run_it) && run_it != row.begin() && (run_it - 1)->end_tick >= z.begin_tick) --run_it;
      const OverviewRun& run = *run_it;
      CHECK(holds(run));
      if (z.end_tick - z.begin_tick >= resolution) {
        CHECK(run == OverviewRun{z.begin_tick, z.end_tick, 1, z.source_location});
      }
    }
    CHECK(counted_zones == zones.size());
  }
  CHECK(total_cost <= runs);
  CHECK_FALSE(counted.overview_truncated);
}

}  // namespace

TEST_CASE("an overview keeps zones as long as its resolution and merges shorter ones close together") {
  ZoneOverview overview;
  CHECK(overview.Add(0, 100, 200, 1, 50) == 2);  // wide: its own run, in a new row
  CHECK(overview.Add(0, 210, 220, 2, 50) == 1);  // narrow after a wide one: a new run
  CHECK(overview.Add(0, 230, 240, 2, 50) == 0);  // joins it
  CHECK(overview.Add(0, 260, 265, 3, 50) == 0);  // joins it, another location
  CHECK(overview.Add(0, 400, 410, 2, 50) == 1);  // 135 ticks after: apart
  CHECK(overview.Add(0, 420, 500, 2, 50) == 1);  // wide
  CHECK(overview.Add(2, 5, 4, 7, 50) == 3);      // an end before its begin counts as the begin; rows 1 and 2
  REQUIRE(overview.rows().size() == 3);
  CHECK(overview.rows()[1].empty());
  CHECK(overview.rows()[0] ==
        std::vector<OverviewRun>{
            {100, 200, 1, 1}, {210, 265, 3, kMixedLocations}, {400, 410, 1, 2}, {420, 500, 1, 2}});
  CHECK(overview.rows()[2] == std::vector<OverviewRun>{{5, 5, 1, 7}});
  CHECK(overview.runs() == 5);
  CHECK(overview.cost() == 8);  // and its three rows
  // At 200 ticks, nothing is wide: what is less than 200 apart merges.
  CHECK(overview.Coarsen(200) == 5);
  CHECK(overview.rows()[0] == std::vector<OverviewRun>{{100, 500, 6, kMixedLocations}});
  // Out of order (a damaged stream): merged with a short run it comes near, on either side.
  CHECK(overview.Add(0, 50, 60, 1, 200) == 0);
  CHECK(overview.rows()[0] == std::vector<OverviewRun>{{50, 500, 7, kMixedLocations}});
  CHECK(overview.Add(0, 5'000, 5'001, 1, 200) == 1);  // far after it: a run of its own
  CHECK(overview.Add(0, 1'000, 1'001, 1, 200) == 1);  // out of order, far from both
  CHECK(overview.rows()[0].size() == 3);
}

TEST_CASE("a load that counts its zones keeps an overview of them within its budget") {
  ScratchDir dir;
  const std::string nested = gnomon::test::WriteTrace(dir, NestedZones(11, 60'000), 8192);
  SUBCASE("room for every zone") { CheckOverview(nested, 1'000'000, false); }
  SUBCASE("a budget that makes it coarser") { CheckOverview(nested, 600, true); }
  SUBCASE("the sample stream, its odd zones included") {
    const std::string sample = gnomon::test::WriteTrace(dir, gnomon::test::SampleStream(3'000), 4096);
    CheckOverview(sample, 100'000, false);
    CheckOverview(sample, 64, true);
  }
}

TEST_CASE("overviews with more rows than their budget stop, and say so") {
  // 300 threads, each zones 20 deep: 6,000 rows for a budget of 1,000 runs and rows.
  StreamWriter w;
  w.AppInfo("rows").SourceLocation(1, "deep", "f", "d.cpp", 1);
  for (uint32_t thread = 1; thread <= 300; ++thread) {
    w.ThreadContext(thread);
    for (uint64_t d = 0; d < 20; ++d) w.ZoneBegin(1, thread * 100 + d);
    for (uint64_t d = 0; d < 20; ++d) w.ZoneEnd(thread * 100 + 90 - d);
  }
  ScratchDir dir;
  const std::string path = gnomon::test::WriteTrace(dir, w, 8192);
  const TraceModel counted = LoadCounted(path, 1'000);
  CHECK(counted.overview_truncated);
  size_t cost = 0;
  for (const auto& thread : counted.threads) cost += thread.overview.cost();
  CHECK(cost <= 1'000 + 21);           // and the zone that passed it: at most its rows and its run
  CHECK(counted.zone_count == 6'000);  // every zone counted all the same
}

TEST_CASE("a load that counts its zones keeps no overview unless asked") {
  ScratchDir dir;
  const std::string path = gnomon::test::WriteTrace(dir, NestedZones(2, 5'000), 8192);
  const TraceModel counted = LoadCounted(path, 0);
  for (const auto& thread : counted.threads) CHECK(thread.overview.runs() == 0);
}

TEST_CASE("a window of zones read from the file again holds the held zones that overlap it, whole") {
  ScratchDir dir;
  StreamWriter w = NestedZones(5, 80'000);
  w.ThreadContext(1).ZoneBegin(2, uint64_t{1} << 40).End((uint64_t{1} << 40) + 10);  // never ended
  const std::string path = gnomon::test::WriteTrace(dir, w, 4096);
  TraceModel held;
  REQUIRE(gnomon::server::LoadTrace(path, held).ok());
  // Coarser than the zones: windows finer are read from the file.
  const TraceModel counted = LoadCounted(path, 10'000);
  REQUIRE(counted.overview_resolution > 16);
  REQUIRE(counted.zone_blocks.size() > 20);
  auto source = gnomon::server::TraceSource::OpenFile(path);
  REQUIRE(source.ok());
  std::mt19937_64 rng(3);
  uint64_t data_end = 0;  // the last closed zone's end: the zone never ended begins far after
  for (const auto& thread : held.threads) {
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      if (!thread.zones[i].is_open()) data_end = std::max(data_end, thread.zones[i].end_tick);
    }
  }
  const uint64_t span = data_end - held.first_tick;
  size_t compared = 0;
  for (int round = 0; round < 40; ++round) {
    const uint64_t width = round % 4 == 0 ? span / 2 : 1 + rng() % (counted.overview_resolution * 8);
    const uint64_t begin = held.first_tick + rng() % span;
    const uint64_t end = begin + width;
    CAPTURE(begin);
    CAPTURE(end);
    auto window = gnomon::server::ReadZoneWindow(source.value(), counted, begin, end, uint64_t{1} << 30);
    REQUIRE_MESSAGE(window.ok(), window.status().message());
    for (const auto& thread : held.threads) {
      CAPTURE(thread.id);
      std::vector<std::vector<OverviewRun>> expected;
      for (size_t i = 0; i < thread.zones.size(); ++i) {
        const gnomon::server::Zone z = thread.zones[i];
        const uint64_t zone_end = z.is_open() ? held.last_tick : z.end_tick;
        if (zone_end < begin || z.begin_tick > end) continue;
        if (expected.size() <= z.depth) expected.resize(size_t(z.depth) + 1);
        expected[z.depth].push_back({z.begin_tick, zone_end, 1, z.source_location});
        ++compared;
      }
      const auto found = window->threads.find(thread.id);
      std::vector<std::vector<OverviewRun>> got;
      if (found != window->threads.end()) got = found->second;
      while (!expected.empty() && expected.back().empty()) expected.pop_back();
      while (!got.empty() && got.back().empty()) got.pop_back();
      CHECK(got == expected);
    }
  }
  CHECK(compared > 10'000);
  // Too wide for its budget: said, not read.
  auto wide = gnomon::server::ReadZoneWindow(source.value(), counted, held.first_tick, held.last_tick, 4096);
  REQUIRE_FALSE(wide.ok());
  CHECK(wide.status().message().find("more than 4096 bytes") != std::string::npos);
  // A model that holds its zones keeps no record to read from.
  CHECK_FALSE(gnomon::server::ReadZoneWindow(source.value(), held, 0, 1, 1 << 30).ok());
}

TEST_CASE("a narrow window reads only the blocks around it, whatever zone spans the trace") {
  // A root zone from the first tick to the last, 200,000 leaves inside it.
  StreamWriter w;
  w.AppInfo("root").SourceLocation(1, "root", "f", "r.cpp", 1).SourceLocation(2, "leaf", "f", "r.cpp", 2);
  w.ThreadContext(1).ZoneBegin(1, 1'000);
  for (uint64_t i = 0; i < 200'000; ++i) w.ZoneBegin(2, 2'000 + i * 100).ZoneEnd(2'050 + i * 100);
  w.ZoneEnd(30'000'000);
  ScratchDir dir;
  const std::string path = gnomon::test::WriteTrace(dir, w, 4096);
  const TraceModel counted = LoadCounted(path, 1'000);
  REQUIRE(counted.zone_blocks.size() > 100);
  auto source = gnomon::server::TraceSource::OpenFile(path);
  REQUIRE(source.ok());
  auto window = gnomon::server::ReadZoneWindow(source.value(), counted, 10'000'000, 10'001'000, 1 << 20);
  REQUIRE_MESSAGE(window.ok(), window.status().message());
  CHECK(window->block_bytes <= 3 * 4096 + 1024);  // the block or two that hold it
  REQUIRE(window->threads.contains(1));
  const auto& rows = window->threads.at(1);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == std::vector<OverviewRun>{{1'000, 30'000'000, 1, 1}});  // the root, whole
  CHECK(rows[1].size() == 11);  // the leaves from 10,000,000 to 10,001,000
}

namespace {

// A load from the summaries counts what decoding counts, keeps the same records of its
// blocks, and draws what decoding's overview draws at the summaries' resolution.
void CheckSummariesDecode(const std::string& path, size_t runs) {
  const TraceModel decoded = LoadCounted(path, runs, false);
  uint64_t from_summaries = 0;
  const TraceModel summarized = LoadCounted(path, runs, true, nullptr, &from_summaries);
  CHECK(from_summaries == summarized.zone_blocks.size());
  CHECK(summarized.zone_count == decoded.zone_count);
  CHECK(summarized.open_zone_count == decoded.open_zone_count);
  CHECK(summarized.diagnostics == decoded.diagnostics);
  CHECK(summarized.first_tick == decoded.first_tick);
  CHECK(summarized.last_tick == decoded.last_tick);
  CHECK(summarized.source_locations.size() == decoded.source_locations.size());
  CHECK(summarized.zone_blocks == decoded.zone_blocks);
  CHECK(summarized.open_at_blocks == decoded.open_at_blocks);
  CHECK(summarized.block_start_threads == decoded.block_start_threads);
  CHECK(summarized.frames.size() == decoded.frames.size());
  CHECK(summarized.messages.size() == decoded.messages.size());
  CHECK(summarized.overview_truncated == decoded.overview_truncated);
  CHECK(summarized.overview_resolution >= decoded.overview_resolution);
  REQUIRE(summarized.threads.size() == decoded.threads.size());
  for (size_t t = 0; t < decoded.threads.size(); ++t) {
    CAPTURE(t);
    CHECK(summarized.threads[t].id == decoded.threads[t].id);
    CHECK(summarized.threads[t].zones_not_held == decoded.threads[t].zones_not_held);
    ZoneOverview coarser = decoded.threads[t].overview;
    coarser.Coarsen(summarized.overview_resolution);
    CHECK(summarized.threads[t].overview == coarser);
  }
}

}  // namespace

TEST_CASE("a load from the blocks' summaries counts and draws what decoding the blocks does") {
  ScratchDir dir;
  SUBCASE("nested zones on two threads, many blocks") {
    const std::string path = gnomon::test::WriteTrace(dir, NestedZones(21, 60'000), 4096);
    CheckSummariesDecode(path, 1'000'000);
    CheckSummariesDecode(path, 2'000);
  }
  SUBCASE("a real capture of two programs: GPU zones, locks, allocations, call stacks") {
    CheckSummariesDecode(std::string(GNOMON_DATA_DIR) + "/golden/format8-two-programs.gnomon", 100'000);
  }
  SUBCASE("the sample stream: attributes, messages, plots, odd zones") {
    CheckSummariesDecode(gnomon::test::WriteTrace(dir, gnomon::test::SampleStream(3'000), 2048), 100'000);
  }
  SUBCASE("zones begun before any thread, ends without begins, a zone never ended") {
    StreamWriter w;
    w.AppInfo("odd").SourceLocation(1, "a", "f", "o.cpp", 1);
    w.ZoneBegin(1, 5).ZoneEnd(6);
    w.ThreadContext(1).ZoneEnd(10).ZoneEnd(11).ZoneBegin(1, 20).ZoneValue(3).ZoneEnd(30);
    for (uint64_t i = 0; i < 5'000; ++i) w.ZoneBegin(1, 100 + i * 10).ZoneEnd(105 + i * 10);
    w.ZoneBegin(1, 1'000'000).ZoneText("still open");
    w.ThreadContext(2).ZoneValue(9).ZoneBegin(1, 1'000'010).ZoneEnd(1'000'005);
    CheckSummariesDecode(gnomon::test::WriteTrace(dir, w, 1024), 100'000);
  }
}

TEST_CASE("a block whose summary is damaged is decoded instead, and the load says so") {
  ScratchDir dir;
  const std::string path = gnomon::test::WriteTrace(dir, NestedZones(8, 20'000), 4096);
  const TraceModel decoded = LoadCounted(path, 100'000, false);
  std::string bytes = gnomon::test::ReadFile(path);
  // The last block's summary: its frame lies just before the block's last 8 bytes.
  const size_t trailer = bytes.rfind("GSUM");
  REQUIRE(trailer != std::string::npos);
  bytes[trailer - 10] ^= 0x5A;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  std::string warning;
  const TraceModel summarized = LoadCounted(path, 100'000, true, &warning);
  CHECK(warning.find("decoded the block instead") != std::string::npos);
  CHECK(summarized.zone_count == decoded.zone_count);
  CHECK(summarized.zone_blocks == decoded.zone_blocks);
}
