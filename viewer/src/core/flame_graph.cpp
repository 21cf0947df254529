#include "gnomon/viewer/flame_graph.h"

namespace gnomon::viewer {

std::vector<FlameBox> LayOutFlameGraph(const FlameGraph& graph, uint32_t focus, double min_width) {
  return LayOutTree(graph.nodes, focus, min_width, [](const FlameNode& n) { return n.total_ns; });
}

}  // namespace gnomon::viewer
