// The flame graph of zones (src/core/flame_graph.cpp): call paths merged by location,
// limited to a thread or a range, and laid out.
#include "gnomon/viewer/flame_graph.h"

#include <doctest/doctest.h>

#include "analysis_sample.h"

using namespace gnomon::viewer;
using gnomon::server::TraceModel;
using gnomon::test::AnalysisSample;

TEST_CASE("a flame graph merges call paths by location, a range counts the part of each zone inside it") {
  const TraceModel m = AnalysisSample();
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
