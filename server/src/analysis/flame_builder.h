// Builds a FlameGraph node by node: the held zones' walk (flame_graph.cpp) and the
// file's (streamed_flame_graph.cpp) count their zones through it.
#pragma once

#include <algorithm>
#include <unordered_map>

#include "gnomon/server/flame_graph.h"

namespace gnomon::server::analysis {

class FlameBuilder {
 public:
  explicit FlameBuilder(FlameGraph& graph) : graph_(graph) { graph_.nodes.assign(1, FlameNode{}); }

  // The child of `parent` for `location`, made when new.
  uint32_t Child(uint32_t parent, uint32_t location) {
    const uint64_t key = uint64_t(parent) << 32 | location;
    const auto [it, inserted] = index_.try_emplace(key, uint32_t(graph_.nodes.size()));
    if (inserted) {
      FlameNode node;
      node.location = location;
      node.parent = parent;
      node.depth = graph_.nodes[parent].depth + 1;
      graph_.nodes.push_back(node);
    }
    return it->second;
  }

  // A zone of `node` from begin to end (ns, trace-relative): the part inside the range.
  void Count(uint32_t node, int64_t begin, int64_t end) {
    const FlameQuery& q = graph_.query;
    if (end < q.begin_ns || begin > q.end_ns || end < begin) return;
    Add(node, 1, std::min(end, q.end_ns) - std::max(begin, q.begin_ns));
  }
  void Add(uint32_t node, uint64_t count, int64_t ns) {
    graph_.nodes[node].total_ns += ns;
    graph_.nodes[node].count += count;
  }

  // Drops the nodes under which no zone counted, then gives each its children, longest
  // first, and its self time.
  void Finish() {
    std::vector<FlameNode>& nodes = graph_.nodes;
    std::vector<char> keep(nodes.size(), 0);
    keep[FlameGraph::kRoot] = 1;
    for (size_t n = nodes.size(); n-- > 1;) {  // a parent is made before its children
      if (nodes[n].count > 0) keep[n] = 1;
      if (keep[n]) keep[nodes[n].parent] = 1;
    }
    std::vector<uint32_t> renumbered(nodes.size());
    size_t kept = 0;
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (!keep[n]) continue;
      renumbered[n] = uint32_t(kept);
      FlameNode& node = nodes[kept++];
      if (&node != &nodes[n]) node = std::move(nodes[n]);
      node.parent = renumbered[node.parent];
      node.children.clear();
    }
    nodes.resize(kept);
    graph_.max_depth = 0;
    for (size_t n = 1; n < nodes.size(); ++n) {
      nodes[nodes[n].parent].children.push_back(uint32_t(n));
      graph_.max_depth = std::max(graph_.max_depth, nodes[n].depth);
      if (nodes[n].depth == 1) nodes[FlameGraph::kRoot].total_ns += nodes[n].total_ns;
    }
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

}  // namespace gnomon::server::analysis
