// Find zone read from the file (server/zone_finder.h, and OccurrencesFromFile): every
// occurrence of a location, its depth, parent and self time, checked against the same
// zones held, and the longest kept whole when there are too many.
#include "gnomon/server/zone_finder.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <vector>

#include "../../support/trace_files.h"
#include "gnomon/server/flame_graph.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/viewer/zone_search.h"

using namespace gnomon::viewer;
using gnomon::server::LoadOptions;
using gnomon::server::TraceModel;
using gnomon::server::TraceSet;

namespace {

using Row = std::tuple<uint32_t, uint32_t, uint32_t, int64_t, int64_t, int64_t>;

// Occurrences as sortable rows: thread, parent, depth, begin, duration, self.
std::vector<Row> Rows(const std::vector<Occurrence>& items) {
  std::vector<Row> rows;
  for (const Occurrence& o : items)
    rows.push_back({o.thread_id, o.parent, o.depth, o.begin_ns, o.duration_ns, o.self_ns});
  std::sort(rows.begin(), rows.end());
  return rows;
}

struct Loaded {
  TraceSet held, counted;
  gnomon::server::TraceSource source;
  LoadOptions options;
};

std::unique_ptr<Loaded> Load(const std::string& path) {
  auto source = gnomon::server::TraceSource::OpenFile(path);
  REQUIRE(source.ok());
  auto loaded = std::unique_ptr<Loaded>(new Loaded{{}, {}, std::move(source.value()), {}});
  REQUIRE(gnomon::server::LoadTraceSet(path, loaded->held).ok());
  loaded->options.zone_memory_limit = 1;   // nothing fits
  loaded->options.overview_runs = 65'536;  // as the viewer loads: its blocks recorded
  REQUIRE(gnomon::server::LoadTraceSet(loaded->source, loaded->counted, loaded->options).ok());
  REQUIRE(loaded->held.processes.size() == loaded->counted.processes.size());
  return loaded;
}

ZoneOccurrences FromFile(const Loaded& l, size_t p, const ZoneQuery& query, size_t keep = size_t{1} << 18) {
  const auto& process = l.counted.processes[p];
  REQUIRE_FALSE(process.model.zones_held);
  auto found = gnomon::server::FindZonesInFile(
      l.source, {process.stream, &process.model},
      {.location = query.location, .begin_ns = query.begin_ns, .end_ns = query.end_ns, .keep = keep},
      l.options);
  REQUIRE_MESSAGE(found.ok(), found.status().message());
  CHECK(found->note.empty());
  return OccurrencesFromFile(found.value(), query);
}

// Every location of every program, over the whole trace and its middle third: the same
// occurrences and figures. The occurrences compared.
size_t CompareOn(const std::string& path) {
  const auto l = Load(path);
  size_t compared = 0;
  for (size_t p = 0; p < l->held.processes.size(); ++p) {
    const TraceModel& model = l->held.processes[p].model;
    const int64_t length = model.DurationNs(model.first_tick, model.last_tick);
    for (uint32_t location = 0; location < model.source_locations.size(); ++location) {
      for (const ZoneQuery query :
           {ZoneQuery{location}, ZoneQuery{location, false, length / 3, 2 * length / 3}}) {
        CAPTURE(p);
        CAPTURE(location);
        CAPTURE(query.begin_ns);
        const ZoneOccurrences held = FindOccurrences(model, query);
        const ZoneOccurrences read = FromFile(*l, p, query, SIZE_MAX);  // every one kept
        CHECK(read.from_file);
        CHECK(read.count == held.count);
        CHECK(Rows(read.items) == Rows(held.items));
        CHECK(read.durations.sorted_ns == held.durations.sorted_ns);
        CHECK(read.self_times.sorted_ns == held.self_times.sorted_ns);
        CHECK(read.durations.total_ns == held.durations.total_ns);
        CHECK(read.by_lane.longest_ns == held.by_lane.longest_ns);
        compared += held.items.size();
      }
    }
  }
  return compared;
}

}  // namespace

TEST_CASE("find zone read from the file finds what the zones held give, nested across small blocks") {
  gnomon::test::ScratchDir dir;
  const gnomon::test::StreamWriter w = gnomon::test::NestedZones(9, 20'000);
  for (size_t block_bytes : {size_t{4096}, size_t{4} << 20}) {
    CAPTURE(block_bytes);
    CHECK(CompareOn(gnomon::test::WriteTrace(dir, w, block_bytes)) > 50'000);
  }
}

TEST_CASE("find zone read from the file finds what the zones held give, on every file in tests/data") {
  CHECK(gnomon::test::ForEachTraceIn(GNOMON_DATA_DIR, [](const std::string& path) { CompareOn(path); }) >=
        10);
}

TEST_CASE("find zone read from the file keeps the longest whole, and every zone in its figures") {
  gnomon::test::ScratchDir dir;
  const auto l = Load(gnomon::test::WriteTrace(dir, gnomon::test::NestedZones(4, 20'000), 4096));
  const TraceModel& model = l->held.processes[0].model;
  const ZoneQuery query{1};  // location 1: most zones
  const ZoneOccurrences held = FindOccurrences(model, query);
  REQUIRE(held.count > 10'000);
  const ZoneOccurrences read = FromFile(*l, 0, query, 1'000);
  CHECK(read.count == held.count);
  REQUIRE(read.items.size() == 1'000);
  // The thousand longest: none left out is longer than the shortest kept.
  std::vector<int64_t> durations = held.durations.sorted_ns;
  const int64_t shortest_kept =
      std::min_element(read.items.begin(), read.items.end(), [](const auto& a, const auto& b) {
        return a.duration_ns < b.duration_ns;
      })->duration_ns;
  CHECK(shortest_kept == durations[durations.size() - 1'000]);
  CHECK(read.by_lane.longest_ns == durations.back());
  // Every zone's figures: total exact, mean and spread as held, percentiles within a bucket.
  CHECK(read.durations.count() == held.count);
  CHECK(read.self_times.count() == held.count);
  CHECK(read.durations.total_ns == held.durations.total_ns);
  CHECK(read.self_times.total_ns == held.self_times.total_ns);
  CHECK(read.durations.mean_ns == doctest::Approx(held.durations.mean_ns).epsilon(1e-9));
  CHECK(read.durations.stddev_ns == doctest::Approx(held.durations.stddev_ns).epsilon(1e-6));
  for (const double q : {0.0, 0.1, 0.5, 0.9, 0.99, 1.0}) {
    CAPTURE(q);
    const double exact = double(held.durations.Percentile(q));
    CHECK(std::abs(double(read.durations.Percentile(q)) - exact) <= exact / 128 + 1);
  }
  // The histogram counts every zone.
  const DurationHistogram h = MakeHistogram(read.durations, 64, HistogramScale::kLog);
  uint64_t counted = 0;
  for (const uint64_t c : h.counts) counted += c;
  CHECK(counted == held.count);
}

TEST_CASE("find zone read from the file: a zone begun before a block and ended where held reads it as open") {
  // The zone of location 2 begins before a block and ends, blocks later, at a tick the
  // held zone takes for open: the zones around and after it keep their self times.
  gnomon::test::StreamWriter w;
  w.AppInfo("open ends").ThreadContext(1);
  w.ZoneBegin(1, 100).ZoneBegin(2, 200);
  uint64_t tick = 300;
  for (int i = 0; i < 3'000; ++i, tick += 10) w.ZoneBegin(3, tick).ZoneEnd(tick + 5);
  w.ZoneEnd(UINT64_MAX).ZoneBegin(4, tick);  // and one begun beside that end, across blocks too
  for (int i = 0; i < 3'000; ++i, tick += 10) w.ZoneBegin(3, tick).ZoneEnd(tick + 5);
  w.ZoneEnd(tick);
  for (int i = 0; i < 3'000; ++i, tick += 10) w.ZoneBegin(3, tick).ZoneEnd(tick + 5);
  w.ZoneEnd(tick + 1).End(tick + 2);
  gnomon::test::ScratchDir dir;
  CHECK(CompareOn(gnomon::test::WriteTrace(dir, w, 4096)) == 9'000 + 2);
}

TEST_CASE("find zone read from the file: a damaged block loaded from its summary is left out, and said") {
  gnomon::test::ScratchDir dir;
  const std::string path = gnomon::test::WriteTrace(dir, gnomon::test::NestedZones(6, 6'000), 4096);
  const uint64_t all = FindOccurrences(Load(path)->held.processes[0].model, {1}).count;
  const size_t blocks = gnomon::test::DamageBlockFrame(path, 3);
  auto source = gnomon::server::TraceSource::OpenFile(path);
  REQUIRE(source.ok());
  TraceSet counted;
  LoadOptions options;
  options.zone_memory_limit = 1;
  options.overview_runs = 65'536;  // from the summaries: the damage is not seen yet
  REQUIRE(gnomon::server::LoadTraceSet(source.value(), counted, options).ok());
  const auto& model = counted.processes[0].model;
  REQUIRE(model.summarized_blocks.size() == blocks);
  auto found = gnomon::server::FindZonesInFile(source.value(), {counted.processes[0].stream, &model},
                                               {.location = 1}, options);
  REQUIRE_MESSAGE(found.ok(), found.status().message());
  CHECK(found->note.find("does not decompress") != std::string::npos);
  CHECK(found->note.find("read from its summary") != std::string::npos);
  CHECK(found->count < all);  // those begun and ended inside it
  CHECK(found->count > all / 2);
  std::string note;
  auto flame = gnomon::server::StreamFlameGraph(source.value(), {counted.processes[0].stream, &model}, {},
                                                options, &note);
  REQUIRE(flame.ok());
  CHECK(note == found->note);
  CHECK(flame->nodes.size() > 1);
}
