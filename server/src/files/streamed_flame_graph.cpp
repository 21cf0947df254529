// The flame graph of a program loaded without its zones, read from its file again
// (StreamFlameGraph). Each block is walked apart (block_pass.h) into a small tree of its
// own: the call paths of the zones it closes, each rooted at an anchor, the zone that was
// open around them when the block began (the first, the innermost of those; the next,
// the one around it, after the block's first end of a zone begun before it; and so on).
// Settled in file order, each anchor is found on the thread's stack of open zones and the
// block's tree is added under it.
#include <map>
#include <unordered_map>
#include <utility>

#include "analysis/flame_builder.h"
#include "files/block_pass.h"
#include "gnomon/server/flame_graph.h"

namespace gnomon::server {
namespace {

constexpr uint32_t kAnchor = 1u << 31;  // a block tree's parent: kAnchor + ends before it

// A zone begun and not yet ended: its node (in the block's tree, or once settled, the
// graph's) and its begin.
struct Opened {
  uint32_t node;
  uint64_t begin_tick;
  int64_t begin_ns;  // trace-relative
};

// What one block says of one thread's zones.
struct ThreadTree {
  struct Node {
    uint32_t parent;  // a node before it, or kAnchor + the ends of earlier zones before it
    uint32_t location;
    uint64_t count = 0;
    int64_t total_ns = 0;
  };
  std::vector<Node> nodes;                       // parents before children
  std::vector<Opened> stack;                     // begun in the block, still open
  std::vector<uint64_t> earlier_ends;            // the ticks of the ends of zones begun before it
  std::unordered_map<uint64_t, uint32_t> index;  // (parent, location) -> node
  std::vector<uint32_t> last_child;              // by depth in the block: the last node made or found there
};
using Trees = std::map<uint32_t, ThreadTree>;  // by the program's thread id

// Walks a block (WalkBlock's walker) into a tree per thread.
class TreeWalk {
 public:
  TreeWalk(const Program& program, const FlameQuery& query, int64_t origin, int64_t last, uint32_t thread)
      : program_(program), query_(query), origin_(origin), last_(last) {
    Switch(thread);
  }
  void Begin(uint32_t location, uint64_t tick) {
    if (ThreadTree* tree = Current())
      tree->stack.push_back({Child(*tree, program_.Location(location)), tick, Ns(tick)});
  }
  void Leaf(uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
    ThreadTree* tree = Current();
    if (tree == nullptr) return;
    const uint32_t node = Child(*tree, program_.Location(location));
    Count(*tree, {node, begin_tick, Ns(begin_tick)}, end_tick);
  }
  void End(uint64_t tick) {
    ThreadTree* tree = Current();
    if (tree == nullptr) return;
    if (tree->stack.empty()) {
      tree->earlier_ends.push_back(tick);
      return;
    }
    const Opened open = tree->stack.back();
    tree->stack.pop_back();
    Count(*tree, open, tick);
  }
  void Message(const uint8_t* m, size_t) {
    WalkZoneMessage(
        m, [this](uint32_t thread) { Switch(thread); },
        [this](uint32_t location, uint64_t tick) { Begin(location, tick); },
        [this](uint64_t tick) { End(tick); });
  }
  bool on_thread() const { return thread_ != 0; }
  Trees TakeTrees() { return std::move(trees_); }

  // The end of the zone `open` at `tick`, trace-relative, as the held zone reads it: one
  // it takes for open runs until the trace's last tick.
  static int64_t EndNs(const Program& program, const Opened& open, uint64_t tick, int64_t origin,
                       int64_t last) {
    const int64_t duration = program.Duration(open.begin_tick, open.begin_ns + origin, tick);
    return duration < 0 ? last : open.begin_ns + duration;
  }

 private:
  int64_t Ns(uint64_t tick) const { return program_.model.clock.TickToNs(tick) - origin_; }
  void Switch(uint32_t thread) {
    // None (0), a thread not asked for, or one the load refused or never gave an event.
    const bool wanted = thread != 0 && (query_.thread_id == 0 || thread == query_.thread_id) &&
                        program_.model.thread_index.contains(thread);
    thread_ = wanted ? thread : 0;
    current_ = nullptr;
  }
  ThreadTree* Current() {
    if (current_ == nullptr && thread_ != 0) current_ = &trees_[thread_];
    return current_;
  }
  // The node of a zone begun now, under the innermost zone open.
  uint32_t Child(ThreadTree& tree, uint32_t location) {
    const uint32_t parent =
        tree.stack.empty() ? kAnchor + uint32_t(tree.earlier_ends.size()) : tree.stack.back().node;
    const size_t depth = tree.stack.size();
    if (tree.last_child.size() <= depth) tree.last_child.resize(depth + 1, UINT32_MAX);
    // Siblings of one parent mostly repeat a location: try the last one first.
    const uint32_t last = tree.last_child[depth];
    if (last != UINT32_MAX && tree.nodes[last].parent == parent && tree.nodes[last].location == location)
      return last;
    const auto [it, inserted] =
        tree.index.try_emplace(uint64_t(parent) << 32 | location, uint32_t(tree.nodes.size()));
    if (inserted) tree.nodes.push_back({parent, location});
    return tree.last_child[depth] = it->second;
  }
  void Count(ThreadTree& tree, const Opened& open, uint64_t tick) {
    const int64_t end = EndNs(program_, open, tick, origin_, last_);
    if (end < query_.begin_ns || open.begin_ns > query_.end_ns || end < open.begin_ns) return;
    ThreadTree::Node& node = tree.nodes[open.node];
    ++node.count;
    node.total_ns += std::min(end, query_.end_ns) - std::max(open.begin_ns, query_.begin_ns);
  }

  const Program& program_;
  const FlameQuery& query_;
  const int64_t origin_, last_;
  Trees trees_;
  uint32_t thread_ = 0;
  ThreadTree* current_ = nullptr;
};

Result<FlameGraph> Stream(const TraceSource& source, const StreamedProgram& program, const FlameQuery& query,
                          const LoadOptions& options, std::string* note) {
  Pass pass(source, options);
  if (Status s = OpenPass(pass, {program}); !s.ok()) return s;
  const Program& walked = pass.programs.front();
  const TraceModel& model = *program.model;
  const int64_t origin = model.clock.TickToNs(model.first_tick);
  const int64_t last = model.clock.TickToNs(model.last_tick) - origin;
  FlameGraph graph;
  graph.query = query;
  analysis::FlameBuilder builder(graph);
  std::map<uint32_t, std::vector<Opened>> stacks;  // by thread: the graph's nodes
  Notes damaged;
  const Status walk = WalkInOrder<Trees>(
      pass, Workers(pass, 0),
      [&](size_t, const Wanted& wanted, auto&& feed) {
        TreeWalk walker(walked, query, origin, last, wanted.thread);
        feed(walker);
        return walker.TakeTrees();
      },
      [&](size_t, Trees& trees) {
        for (auto& [thread, tree] : trees) {
          std::vector<Opened>& stack = stacks[thread];
          // Each anchor: the zone open then, or the root where none was.
          std::vector<uint32_t> anchors(tree.earlier_ends.size() + 1, FlameGraph::kRoot);
          for (size_t e = 0; e < anchors.size() && e < stack.size(); ++e)
            anchors[e] = stack[stack.size() - 1 - e].node;
          for (const uint64_t tick : tree.earlier_ends) {
            if (stack.empty()) continue;  // an end without a begin (counted by the load)
            const Opened open = stack.back();
            stack.pop_back();
            builder.Count(open.node, open.begin_ns, TreeWalk::EndNs(walked, open, tick, origin, last));
          }
          std::vector<uint32_t> node_of(tree.nodes.size());
          for (size_t n = 0; n < tree.nodes.size(); ++n) {
            const ThreadTree::Node& node = tree.nodes[n];
            const uint32_t parent =
                node.parent >= kAnchor ? anchors[node.parent - kAnchor] : node_of[node.parent];
            node_of[n] = builder.Child(parent, node.location);
            builder.Add(node_of[n], node.count, node.total_ns);
          }
          for (const Opened& open : tree.stack)
            stack.push_back({node_of[open.node], open.begin_tick, open.begin_ns});
        }
      },
      &damaged);
  if (!walk.ok()) return walk;
  for (const auto& [thread, stack] : stacks) {
    for (const Opened& open : stack) builder.Count(open.node, open.begin_ns, last);  // open to the end
  }
  builder.Finish();
  if (note != nullptr) *note = damaged.Join(source.name());
  return graph;
}

}  // namespace

Result<FlameGraph> StreamFlameGraph(const TraceSource& source, const StreamedProgram& program,
                                    const FlameQuery& query, const LoadOptions& options, std::string* note) {
  if (note != nullptr) note->clear();
  try {
    return Stream(source, program, query, options, note);
  } catch (const std::exception& e) {  // out of memory
    return Status::Error("reading the zones of " + source.name() + " again failed: " + e.what());
  }
}

}  // namespace gnomon::server
