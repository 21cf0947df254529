// A flame graph's layout: the graph itself (server/flame_graph.h) as rectangles in rows.
#pragma once

#include <cstdint>
#include <vector>

#include "gnomon/server/flame_graph.h"

namespace gnomon::viewer {

using server::BuildFlameGraph;
using server::FlameGraph;
using server::FlameNode;
using server::FlameQuery;

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
