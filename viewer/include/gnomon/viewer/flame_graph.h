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

// The same for any tree whose nodes list their `children` (widest first), each as wide
// as weight(node) (a sample tree: its counts).
template <typename Node, typename Weight>
std::vector<FlameBox> LayOutTree(const std::vector<Node>& nodes, uint32_t focus, double min_width,
                                 Weight weight) {
  std::vector<FlameBox> boxes;
  if (focus >= nodes.size() || weight(nodes[focus]) <= 0) return boxes;
  const double scale = 1.0 / double(weight(nodes[focus]));
  struct Pending {
    uint32_t node;
    double x0;
    uint32_t row;
  };
  std::vector<Pending> stack{{focus, 0.0, 0}};
  while (!stack.empty()) {
    const Pending p = stack.back();
    stack.pop_back();
    const Node& n = nodes[p.node];
    const double width = double(weight(n)) * scale;
    if (width < min_width) continue;
    boxes.push_back({p.node, p.x0, p.x0 + width, p.row});
    double x = p.x0;
    for (uint32_t c : n.children) {
      stack.push_back({c, x, p.row + 1});
      x += double(weight(nodes[c])) * scale;
    }
  }
  return boxes;
}

}  // namespace gnomon::viewer
