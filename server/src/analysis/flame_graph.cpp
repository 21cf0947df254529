#include "gnomon/server/flame_graph.h"

#include "analysis/flame_builder.h"

namespace gnomon::server {

FlameGraph BuildFlameGraph(const TraceModel& model, const FlameQuery& query) {
  FlameGraph graph;
  graph.query = query;
  analysis::FlameBuilder builder(graph);
  const int64_t origin = model.clock.TickToNs(model.first_tick);
  const int64_t last = model.clock.TickToNs(model.last_tick) - origin;
  for (const ThreadTimeline& thread : model.threads) {
    if (query.thread_id != 0 && thread.id != query.thread_id) continue;
    std::vector<uint32_t> path;        // node of the open zone at each depth
    std::vector<uint32_t> last_child;  // by depth: the node the previous sibling went to
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const Zone z = thread.zones[i];
      const int64_t begin = model.clock.TickToNs(z.begin_tick) - origin;
      if (begin > query.end_ns) break;  // zones are in begin order
      if (path.size() <= z.depth) {
        path.resize(z.depth + 1, FlameGraph::kRoot);
        last_child.resize(z.depth + 1, FlameGraph::kRoot);
      }
      const uint32_t parent = z.depth == 0 ? FlameGraph::kRoot : path[z.depth - 1];
      // Siblings of one parent mostly repeat a location: try the last one first.
      uint32_t node = last_child[z.depth];
      if (node == FlameGraph::kRoot || graph.nodes[node].parent != parent ||
          graph.nodes[node].location != z.source_location) {
        node = builder.Child(parent, z.source_location);
        last_child[z.depth] = node;
      }
      path[z.depth] = node;
      builder.Count(node, begin, z.is_open() ? last : model.clock.TickToNs(z.end_tick) - origin);
    }
  }
  builder.Finish();
  return graph;
}

}  // namespace gnomon::server
