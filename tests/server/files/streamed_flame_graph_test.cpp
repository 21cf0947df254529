// The flame graph read from a trace file without holding its zones, checked against the
// graph of the same zones held: every call path with the same count and total, for the
// whole trace, each thread, and ranges.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include "../../support/trace_files.h"
#include "gnomon/server/flame_graph.h"
#include "gnomon/server/trace_loader.h"

namespace {

using gnomon::server::FlameGraph;
using gnomon::server::FlameQuery;
using gnomon::server::LoadOptions;
using gnomon::server::TraceSet;
using gnomon::test::ScratchDir;

// Each node's call path (its locations from the top) with its count and total.
std::map<std::vector<uint32_t>, std::pair<uint64_t, int64_t>> Paths(const FlameGraph& g) {
  std::map<std::vector<uint32_t>, std::pair<uint64_t, int64_t>> paths;
  for (size_t n = 1; n < g.nodes.size(); ++n) {
    std::vector<uint32_t> path;
    for (uint32_t at = uint32_t(n); at != FlameGraph::kRoot; at = g.nodes[at].parent)
      path.insert(path.begin(), g.nodes[at].location);
    CHECK(path.size() == g.nodes[n].depth);
    paths[path] = {g.nodes[n].count, g.nodes[n].total_ns};
  }
  return paths;
}

void CheckAgree(const FlameGraph& held, const FlameGraph& streamed) {
  CHECK(held.nodes.size() == streamed.nodes.size());
  CHECK(held.max_depth == streamed.max_depth);
  CHECK(held.nodes[FlameGraph::kRoot].total_ns == streamed.nodes[FlameGraph::kRoot].total_ns);
  const auto a = Paths(held), b = Paths(streamed);
  CHECK(a == b);
  for (const auto& node : streamed.nodes) {  // longest first, and no more self than total
    for (size_t c = 1; c < node.children.size(); ++c)
      CHECK(streamed.nodes[node.children[c - 1]].total_ns >= streamed.nodes[node.children[c]].total_ns);
    CHECK(node.self_ns <= node.total_ns);
  }
}

// The file at `path` loaded holding its zones and not; each program's graphs compared for
// the whole trace, each thread, and the middle third. The nodes compared.
size_t CompareOn(const std::string& path) {
  TraceSet held, counted;
  REQUIRE(gnomon::server::LoadTraceSet(path, held).ok());
  LoadOptions options;
  options.zone_memory_limit = 1;  // nothing fits
  auto source = gnomon::server::TraceSource::OpenFile(path);
  REQUIRE(source.ok());
  REQUIRE(gnomon::server::LoadTraceSet(source.value(), counted, options).ok());
  REQUIRE(held.processes.size() == counted.processes.size());
  size_t nodes = 0;
  for (size_t p = 0; p < held.processes.size(); ++p) {
    const auto& model = held.processes[p].model;
    REQUIRE_FALSE(counted.processes[p].model.zones_held);
    const int64_t length = model.clock.TickToNs(model.last_tick) - model.clock.TickToNs(model.first_tick);
    std::vector<FlameQuery> queries{{}, {0, length / 3, 2 * length / 3}};
    for (const auto& thread : model.threads) {
      queries.push_back({thread.id});
      queries.push_back({thread.id, length / 2, length});
    }
    for (const FlameQuery& query : queries) {
      CAPTURE(p);
      CAPTURE(query.thread_id);
      CAPTURE(query.begin_ns);
      const FlameGraph expected = gnomon::server::BuildFlameGraph(model, query);
      std::string note = "?";
      auto streamed = gnomon::server::StreamFlameGraph(
          source.value(), {counted.processes[p].stream, &counted.processes[p].model}, query, options, &note);
      REQUIRE_MESSAGE(streamed.ok(), streamed.status().message());
      CHECK(note.empty());
      CheckAgree(expected, streamed.value());
      nodes += expected.nodes.size();
    }
  }
  return nodes;
}

}  // namespace

TEST_CASE("a flame graph read from the file agrees with the zones held, nested across small blocks") {
  ScratchDir dir;
  const gnomon::test::StreamWriter w = gnomon::test::NestedZones(5, 20'000);
  for (size_t block_bytes : {size_t{4096}, size_t{4} << 20}) {
    CAPTURE(block_bytes);
    CHECK(CompareOn(gnomon::test::WriteTrace(dir, w, block_bytes)) > 1'000);  // deep paths
  }
}

TEST_CASE("a flame graph read from the file agrees with the zones held, on every file in tests/data") {
  CHECK(gnomon::test::ForEachTraceIn(GNOMON_DATA_DIR, [](const std::string& path) { CompareOn(path); }) >=
        10);
}

TEST_CASE("a zone still open at the end of the trace counts until then, with what it holds") {
  ScratchDir dir;
  gnomon::test::StreamWriter w;
  w.AppInfo("open").ThreadContext(1);
  w.ZoneBegin(1, 100);
  for (uint64_t i = 0; i < 3'000; ++i) w.ZoneBegin(2, 200 + i * 10).ZoneEnd(205 + i * 10);
  w.ZoneBegin(3, 40'000).ZoneEnd(40'100).End(50'000);
  const std::string path = gnomon::test::WriteTrace(dir, w, 4096);
  gnomon::server::TraceModel model;
  REQUIRE(gnomon::server::LoadTrace(path, model).ok());
  const FlameGraph g = gnomon::server::BuildFlameGraph(model, {});
  REQUIRE(g.nodes[FlameGraph::kRoot].children.size() == 1);
  const auto& open = g.nodes[g.nodes[FlameGraph::kRoot].children[0]];
  CHECK(open.count == 1);
  CHECK(open.total_ns == model.clock.TickToNs(model.last_tick) - model.clock.TickToNs(100));
  REQUIRE(open.children.size() == 2);
  CHECK(g.nodes[open.children[0]].count == 3'000);
  CHECK(g.nodes[open.children[0]].total_ns == 3'000 * 5);
  CHECK(open.self_ns == open.total_ns - 3'000 * 5 - 100);
  CHECK(CompareOn(path) > 0);
}
