// Samples attributed to functions (self, total, recursion counted once), the tree of
// their stacks, the filter, and threads' running spans from their context switches.
#include "gnomon/server/samples.h"

#include <doctest/doctest.h>

#include "../../support/build_model.h"

using gnomon::protocol::ContextSwitchKind;
using gnomon::server::TraceModel;
using gnomon::test::StreamWriter;

namespace {

// Addresses outside every module: each is its own function, named by its address.
constexpr uint64_t kMain = 0x100, kWork = 0x200, kLeaf = 0x300;

TraceModel SampledModel() {
  StreamWriter w;
  // Stacks innermost first; return addresses are looked up one byte before.
  w.Sample(7, 10, {kLeaf, kWork + 1, kMain + 1});
  w.Sample(7, 11, {kLeaf, kWork + 1, kMain + 1});
  w.Sample(7, 12, {kWork, kMain + 1});
  w.Sample(8, 13, {kWork, kWork + 1, kWork + 1, kMain + 1});  // recursion
  w.Sample(8, 14, {kMain});
  return gnomon::test::BuildWholeModel(w);
}

const gnomon::server::FunctionSamples& Function(const gnomon::server::SampleSummary& s,
                                                const std::string& name) {
  for (const auto& f : s.functions) {
    if (f.function == name) return f;
  }
  FAIL("no function " << name);
  return s.functions.front();
}

}  // namespace

TEST_CASE("self counts the running function, total every function on the stack once") {
  const TraceModel m = SampledModel();
  gnomon::server::Symbolizer symbolizer;
  const auto summary = gnomon::server::SummarizeSamples(m, symbolizer, {});
  CHECK(summary.sample_count == 5);
  REQUIRE(summary.functions.size() == 3);
  CHECK(summary.functions[0].function == "0x200");  // self 2, total 3: before the leaf on total
  CHECK(Function(summary, "0x300").self_count == 2);
  CHECK(Function(summary, "0x300").total_count == 2);
  CHECK(Function(summary, "0x200").self_count == 2);
  CHECK(Function(summary, "0x200").total_count == 4);
  CHECK(Function(summary, "0x100").self_count == 1);
  CHECK(Function(summary, "0x100").total_count == 5);

  const auto thread8 = gnomon::server::SummarizeSamples(m, symbolizer, {.os_thread_id = 8});
  CHECK(thread8.sample_count == 2);
  const auto early = gnomon::server::SummarizeSamples(m, symbolizer, {.begin_tick = 11, .end_tick = 13});
  CHECK(early.sample_count == 2);
  CHECK(Function(early, "0x300").self_count == 1);
}

TEST_CASE("the sample tree merges stacks from the outermost frame") {
  const TraceModel m = SampledModel();
  gnomon::server::Symbolizer symbolizer;
  const auto graph = gnomon::server::BuildSampleTree(m, symbolizer, {});
  const auto name = [&](uint32_t node) { return graph.functions[graph.nodes[node].function]; };
  REQUIRE(!graph.nodes.empty());
  CHECK(graph.nodes[0].count == 5);
  CHECK(name(0) == "all");
  REQUIRE(graph.nodes[0].children.size() == 1);
  const uint32_t main_node = graph.nodes[0].children[0];
  CHECK(name(main_node) == "0x100");
  CHECK(graph.nodes[main_node].count == 5);
  CHECK(graph.nodes[main_node].self_count == 1);
  CHECK(graph.nodes[main_node].parent == 0);
  REQUIRE(graph.nodes[main_node].children.size() == 1);
  const uint32_t work = graph.nodes[main_node].children[0];
  CHECK(name(work) == "0x200");
  CHECK(graph.nodes[work].count == 4);
  CHECK(graph.nodes[work].self_count == 1);
  // Below work: the leaf (2) first, then the recursion (1), by count.
  REQUIRE(graph.nodes[work].children.size() == 2);
  CHECK(name(graph.nodes[work].children[0]) == "0x300");
  CHECK(graph.nodes[graph.nodes[work].children[0]].count == 2);
  CHECK(name(graph.nodes[work].children[1]) == "0x200");
  CHECK(graph.depth == 4);
}

TEST_CASE("running spans from switches that arrive out of order, and threads running at the edges") {
  StreamWriter w;
  w.SourceLocation(1, "z", "f", "a.cpp", 1).ThreadContext(1).ZoneBegin(1, 100).ZoneEnd(1000);
  // Thread 5: running from the start until 200, then 300-400 on CPU 1 and 500-600 on
  // CPU 0 (CPU 0's records come first), then from 900 to the end.
  w.Switch(5, ContextSwitchKind::kOut, 0, 200).Switch(5, ContextSwitchKind::kIn, 0, 500);
  w.Switch(5, ContextSwitchKind::kOut, 0, 600).Switch(5, ContextSwitchKind::kIn, 0, 900);
  // Its stop at 400 was a preemption (it could have run on).
  w.Switch(5, ContextSwitchKind::kIn, 1, 300).Switch(5, ContextSwitchKind::kOutPreempted, 1, 400);
  w.Switch(6, ContextSwitchKind::kIn, 1, 150).Switch(6, ContextSwitchKind::kOut, 1, 160);
  const TraceModel m = gnomon::test::BuildWholeModel(w);
  const auto running = gnomon::server::ComputeThreadRunning(m);
  REQUIRE(running.size() == 2);
  const auto& t5 = running.at(5);
  CHECK(t5.switches_out == 3);
  CHECK(t5.preempted == 1);
  REQUIRE(t5.spans.size() == 4);
  CHECK(!t5.spans[0].preempted);
  CHECK(t5.spans[1].preempted);
  CHECK(!t5.spans[2].preempted);
  CHECK(t5.spans[0].begin_tick == 100);
  CHECK(t5.spans[0].end_tick == 200);
  CHECK(t5.spans[1].begin_tick == 300);
  CHECK(t5.spans[1].cpu == 1);
  CHECK(t5.spans[2].begin_tick == 500);
  CHECK(t5.spans[3].begin_tick == 900);
  CHECK(t5.spans[3].end_tick == 1000);
  CHECK(running.at(6).spans.size() == 1);
  CHECK(gnomon::server::CountSwitchesOut(m) == 4);
}
