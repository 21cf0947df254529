#include "gnomon/viewer/flame_graph.h"

#include <algorithm>
#include <unordered_map>

namespace gnomon::viewer {
namespace {

class Builder {
 public:
  explicit Builder(FlameGraph& graph) : graph_(graph) { graph_.nodes.assign(1, FlameNode{}); }

  // The child of `parent` for `location`, made when new.
  uint32_t Child(uint32_t parent, uint32_t location) {
    const uint64_t key = uint64_t(parent) << 32 | location;
    auto [it, inserted] = index_.try_emplace(key, uint32_t(graph_.nodes.size()));
    if (inserted) {
      FlameNode node;
      node.location = location;
      node.parent = parent;
      node.depth = graph_.nodes[parent].depth + 1;
      graph_.max_depth = std::max(graph_.max_depth, node.depth);
      graph_.nodes.push_back(node);
      graph_.nodes[parent].children.push_back(it->second);
    }
    return it->second;
  }

  void Add(uint32_t node, int64_t ns) {
    graph_.nodes[node].total_ns += ns;
    ++graph_.nodes[node].count;
  }

  void Finish() {
    std::vector<FlameNode>& nodes = graph_.nodes;
    for (const FlameNode& n : nodes) nodes[FlameGraph::kRoot].total_ns += n.depth == 1 ? n.total_ns : 0;
    for (FlameNode& n : nodes) {
      int64_t children = 0;
      for (uint32_t c : n.children) children += nodes[c].total_ns;
      n.self_ns = std::max<int64_t>(0, n.total_ns - children);
      std::stable_sort(n.children.begin(), n.children.end(),
                       [&](uint32_t a, uint32_t b) { return nodes[a].total_ns > nodes[b].total_ns; });
    }
  }

 private:
  FlameGraph& graph_;
  std::unordered_map<uint64_t, uint32_t> index_;
};

constexpr uint32_t kSkipped = UINT32_MAX;  // a zone outside the range: its subtree is too

}  // namespace

FlameGraph BuildFlameGraph(const server::TraceModel& model, const FlameQuery& query) {
  FlameGraph graph;
  graph.query = query;
  Builder builder(graph);
  const int64_t origin = model.clock.TickToNs(model.first_tick);
  for (const server::ThreadTimeline& thread : model.threads) {
    if (query.thread_id != 0 && thread.id != query.thread_id) continue;
    std::vector<uint32_t> path;        // node of the open zone at each depth
    std::vector<uint32_t> last_child;  // by depth: the node the previous sibling went to
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const server::Zone z = thread.zones[i];
      const int64_t begin = model.clock.TickToNs(z.begin_tick) - origin;
      if (begin > query.end_ns) break;  // zones are in begin order
      if (path.size() <= z.depth) {
        path.resize(z.depth + 1, kSkipped);
        last_child.resize(z.depth + 1, kSkipped);
      }
      const uint32_t parent = z.depth == 0 ? FlameGraph::kRoot : path[z.depth - 1];
      if (z.is_open() || parent == kSkipped) {
        path[z.depth] = kSkipped;
        continue;
      }
      const int64_t end = model.clock.TickToNs(z.end_tick) - origin;
      const int64_t ns = std::min(end, query.end_ns) - std::max(begin, query.begin_ns);
      if (ns < 0 || end < query.begin_ns) {
        path[z.depth] = kSkipped;
        continue;
      }
      // Siblings of one parent mostly repeat a location: try the last one first.
      uint32_t node = last_child[z.depth];
      if (node == kSkipped || graph.nodes[node].parent != parent ||
          graph.nodes[node].location != z.source_location) {
        node = builder.Child(parent, z.source_location);
        last_child[z.depth] = node;
      }
      builder.Add(node, ns);
      path[z.depth] = node;
    }
  }
  builder.Finish();
  return graph;
}

std::vector<FlameBox> LayOutFlameGraph(const FlameGraph& graph, uint32_t focus, double min_width) {
  return LayOutTree(graph.nodes, focus, min_width, [](const FlameNode& n) { return n.total_ns; });
}

}  // namespace gnomon::viewer
