// A flame graph as plain data: the zones of one thread, or of every thread merged, as a
// tree of call paths by source location, each node with the time spent in it (total),
// outside its children (self), and how many zones it merges.
//
//   FlameGraph g = BuildFlameGraph(model, {.thread_id = 0});   // 0: every thread merged
//   for (uint32_t child : g.nodes[FlameGraph::kRoot].children) ...
//
// Over a range, each zone counts the part of it inside the range, so a node's children
// never add up to more than the node. Built off the UI thread: it walks every zone once.
#pragma once

#include <cstdint>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::viewer {

struct FlameQuery {
  uint32_t thread_id = 0;        // 0: every thread, merged
  int64_t begin_ns = INT64_MIN;  // the range, trace-relative; the whole trace by default
  int64_t end_ns = INT64_MAX;
  friend bool operator==(const FlameQuery&, const FlameQuery&) = default;
};

struct FlameNode {
  uint32_t location = 0;  // index in model.source_locations; 0 for the root
  uint32_t parent = 0;
  uint32_t depth = 0;  // the root is 0, top-level zones 1
  int64_t total_ns = 0;
  int64_t self_ns = 0;
  uint64_t count = 0;
  std::vector<uint32_t> children;  // longest first
};

struct FlameGraph {
  static constexpr uint32_t kRoot = 0;
  FlameQuery query;
  std::vector<FlameNode> nodes;  // nodes[0] is the root: every top-level zone its child
  uint32_t max_depth = 0;
};

FlameGraph BuildFlameGraph(const server::TraceModel& model, const FlameQuery& query);

// What a flame graph draws: a rectangle per node in [x0, x1) of a row, x in 0..1 of
// the width given to `focus` (a node, or the root); only nodes at least `min_width` wide.
struct FlameBox {
  uint32_t node = 0;
  double x0 = 0, x1 = 0;
  uint32_t row = 0;  // 0: the focus
};
std::vector<FlameBox> LayOutFlameGraph(const FlameGraph& graph, uint32_t focus, double min_width);

}  // namespace gnomon::viewer
