#include "gnomon/server/samples.h"

#include <algorithm>
#include <map>
#include <optional>

#include "gnomon/protocol/messages.h"

namespace gnomon::server {
namespace {

// Functions by name and module, each given an index the first time it is met.
class FunctionIndex {
 public:
  uint32_t Of(const SymbolizedFrame& frame) {
    if (auto known = by_frame_.find(&frame); known != by_frame_.end()) return known->second;
    auto [it, inserted] = index_.try_emplace({frame.function, frame.module}, uint32_t(frames_.size()));
    if (inserted) frames_.push_back(&frame);
    by_frame_.emplace(&frame, it->second);
    return it->second;
  }
  size_t size() const { return index_.size(); }
  const std::string& Name(uint32_t i) const { return names_[i]; }

  // The symbolizer's frames stay put while it is not updated: kept by pointer, named
  // once they are all in.
  void Finish() {
    for (const SymbolizedFrame* frame : frames_) names_.push_back(frame->function);
  }
  const SymbolizedFrame& Frame(uint32_t i) const { return *frames_[i]; }

 private:
  std::unordered_map<const SymbolizedFrame*, uint32_t> by_frame_;  // each address's frame, once seen
  std::map<std::pair<std::string, std::string>, uint32_t> index_;
  std::vector<const SymbolizedFrame*> frames_;
  std::vector<std::string> names_;
};

// The function of each frame of a sample's stack, innermost first (its first frame is
// where the thread was, the rest are return addresses), up to the first caller that
// is no code of the program's.
void StackFunctions(const TraceModel& model, Symbolizer& symbolizer, FunctionIndex& index, uint32_t callstack,
                    std::vector<uint32_t>& out) {
  out.clear();
  const std::span<const uint64_t> frames = model.callstacks.Frames(callstack);
  for (size_t i = 0; i < frames.size(); ++i) {
    const SymbolizedFrame& frame = symbolizer.Resolve(frames[i], i != 0);
    // A caller outside every module: the kernel's walk of frame pointers went astray
    // in code built without them, and what follows is no call chain.
    if (i != 0 && frame.module.empty() && symbolizer.module_count() != 0) break;
    out.push_back(index.Of(frame));
  }
}

}  // namespace

SampleSummary SummarizeSamples(const TraceModel& model, Symbolizer& symbolizer, const SampleFilter& filter) {
  symbolizer.Update(model.modules);
  SampleSummary summary;
  FunctionIndex index;
  std::vector<uint64_t> self, total;
  std::vector<uint64_t> last_counted;  // per function: the sample that last counted it
  std::vector<uint32_t> stack;
  uint64_t sample_number = 0;
  model.samples.ForEach([&](const Sample& sample) {
    if (!filter.Accepts(sample)) return;
    ++summary.sample_count;
    ++sample_number;
    StackFunctions(model, symbolizer, index, sample.callstack, stack);
    if (stack.empty()) return;
    self.resize(index.size());
    total.resize(index.size());
    last_counted.resize(index.size());
    ++self[stack.front()];
    for (uint32_t f : stack) {
      if (last_counted[f] == sample_number) continue;  // recursion counts once
      last_counted[f] = sample_number;
      ++total[f];
    }
  });
  index.Finish();
  for (uint32_t f = 0; f < index.size(); ++f) {
    const SymbolizedFrame& frame = index.Frame(f);
    summary.functions.push_back({.function = frame.function,
                                 .module = frame.module,
                                 .file = frame.file,
                                 .line = frame.line,
                                 .self_count = self[f],
                                 .total_count = total[f]});
  }
  std::stable_sort(summary.functions.begin(), summary.functions.end(),
                   [](const FunctionSamples& a, const FunctionSamples& b) {
                     return a.self_count != b.self_count ? a.self_count > b.self_count
                                                         : a.total_count > b.total_count;
                   });
  return summary;
}

LineSummary SummarizeLines(const TraceModel& model, Symbolizer& symbolizer, const SampleFilter& filter) {
  symbolizer.Update(model.modules);
  LineSummary summary;
  std::map<std::pair<std::string_view, uint32_t>, uint32_t> index;  // (file, line): place in `lines`
  std::vector<uint64_t> last_counted;  // per line: the sample that last counted it
  uint64_t sample_number = 0;
  model.samples.ForEach([&](const Sample& sample) {
    if (!filter.Accepts(sample)) return;
    ++summary.sample_count;
    ++sample_number;
    const std::span<const uint64_t> frames = model.callstacks.Frames(sample.callstack);
    for (size_t i = 0; i < frames.size(); ++i) {
      const SymbolizedFrame& frame = symbolizer.Resolve(frames[i], i != 0);
      if (i != 0 && frame.module.empty() && symbolizer.module_count() != 0) break;  // as StackFunctions
      if (frame.file.empty() || frame.line == 0) continue;
      // The symbolizer's frames stay put: the key views its file name.
      auto [it, inserted] = index.try_emplace({frame.file, frame.line}, uint32_t(summary.lines.size()));
      if (inserted) {
        summary.lines.push_back(
            {.file = frame.file, .line = frame.line, .function = frame.function, .module = frame.module});
        last_counted.push_back(0);
      }
      LineSamples& line = summary.lines[it->second];
      if (i == 0) ++line.self_count;
      if (last_counted[it->second] == sample_number) continue;  // recursion counts once
      last_counted[it->second] = sample_number;
      ++line.total_count;
    }
  });
  std::stable_sort(
      summary.lines.begin(), summary.lines.end(), [](const LineSamples& a, const LineSamples& b) {
        return a.self_count != b.self_count ? a.self_count > b.self_count : a.total_count > b.total_count;
      });
  return summary;
}

SampleTree BuildSampleTree(const TraceModel& model, Symbolizer& symbolizer, const SampleFilter& filter) {
  symbolizer.Update(model.modules);
  SampleTree graph;
  graph.nodes.emplace_back();  // the root
  FunctionIndex index;
  std::vector<uint32_t> stack;
  // A node's child for a function: looked up among its children (few, in practice).
  auto child = [&](uint32_t parent, uint32_t function) {
    for (uint32_t c : graph.nodes[parent].children) {
      if (graph.nodes[c].function == function) return c;
    }
    const uint32_t c = uint32_t(graph.nodes.size());
    graph.nodes.push_back(
        {.function = function, .parent = parent, .count = 0, .self_count = 0, .children = {}});
    graph.nodes[parent].children.push_back(c);
    return c;
  };
  model.samples.ForEach([&](const Sample& sample) {
    if (!filter.Accepts(sample)) return;
    StackFunctions(model, symbolizer, index, sample.callstack, stack);
    uint32_t node = 0;
    ++graph.nodes[0].count;
    for (size_t i = stack.size(); i-- > 0;) {
      node = child(node, stack[i] + 1);  // function 0 is the root's
      ++graph.nodes[node].count;
    }
    ++graph.nodes[node].self_count;
    graph.depth = std::max(graph.depth, uint32_t(stack.size()));
  });
  index.Finish();
  graph.functions.push_back("all");
  for (uint32_t f = 0; f < index.size(); ++f) graph.functions.push_back(index.Name(f));
  for (SampleTree::Node& node : graph.nodes) {
    std::sort(node.children.begin(), node.children.end(),
              [&](uint32_t a, uint32_t b) { return graph.nodes[a].count > graph.nodes[b].count; });
  }
  return graph;
}

AllocationTree BuildAllocationTree(const TraceModel& model, Symbolizer& symbolizer, uint32_t pool_id,
                                   bool bottom_up, TickRange range) {
  symbolizer.Update(model.modules);
  AllocationTree tree;
  tree.nodes.emplace_back();  // the root
  auto pool = model.memory_pools.find(pool_id);
  if (pool == model.memory_pools.end()) return tree;
  FunctionIndex index;
  std::vector<uint32_t> stack;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> child_of;  // (parent, function + 1): node
  auto add = [&range](AllocationTree::Node& node, const MemoryAllocation& a) {
    const bool alive = !a.is_freed() || a.free_tick > range.end_tick;
    ++node.count;
    node.bytes += a.size_bytes;
    node.alive_count += alive ? 1 : 0;
    node.alive_bytes += alive ? a.size_bytes : 0;
  };
  pool->second.allocations.ForEach([&](const MemoryAllocation& a) {
    if (!range.Contains(a.alloc_tick)) return;
    add(tree.nodes[0], a);
    if (a.callstack == 0) {
      ++tree.without_stack;
      return;
    }
    StackFunctions(model, symbolizer, index, a.callstack, stack);
    if (!bottom_up) std::reverse(stack.begin(), stack.end());  // from the outermost caller in
    uint32_t node = 0;
    for (uint32_t f : stack) {
      auto [it, added] = child_of.try_emplace({node, f + 1}, uint32_t(tree.nodes.size()));
      if (added) {
        tree.nodes.push_back({.function = f + 1, .parent = node});
        tree.nodes[node].children.push_back(it->second);
      }
      node = it->second;
      add(tree.nodes[node], a);
    }
  });
  index.Finish();
  tree.functions.push_back("all");
  for (uint32_t f = 0; f < index.size(); ++f) tree.functions.push_back(index.Name(f));
  for (AllocationTree::Node& node : tree.nodes) {
    std::sort(node.children.begin(), node.children.end(),
              [&](uint32_t a, uint32_t b) { return tree.nodes[a].bytes > tree.nodes[b].bytes; });
  }
  return tree;
}

std::unordered_map<uint32_t, ThreadRunning> ComputeThreadRunning(const TraceModel& model) {
  // Each CPU's switches in time order say what ran there: a thread from its switch in
  // to its switch out, or to the next switch on that CPU where its out was not recorded
  // (lost, or never sent), so that a CPU never runs two of the program's threads at
  // once. A first switch out without its in (a thread running when the recording began,
  // or one started since, which comes in unrecorded) ran from the CPU's switch before,
  // or the trace's start.
  std::unordered_map<uint32_t, std::vector<ContextSwitch>> by_cpu;
  model.context_switches.ForEach([&](const ContextSwitch& s) { by_cpu[s.cpu].push_back(s); });
  std::unordered_map<uint32_t, ThreadRunning> running;
  for (auto& [core, switches] : by_cpu) {
    const uint32_t cpu = core;  // a lambda below captures it
    std::stable_sort(switches.begin(), switches.end(),
                     [](const ContextSwitch& a, const ContextSwitch& b) { return a.tick < b.tick; });
    bool on = false;  // a thread runs here: on_tid, since on_since
    uint32_t on_tid = 0;
    uint64_t on_since = 0;
    uint64_t previous = std::min(model.first_tick, switches.front().tick);  // the last switch's tick
    auto run = [&](uint32_t tid, uint64_t begin, uint64_t end, bool preempted = false) {
      if (begin < end)
        running[tid].spans.push_back(
            {.begin_tick = begin, .end_tick = end, .cpu = cpu, .preempted = preempted});
    };
    for (const ContextSwitch& s : switches) {
      if (s.kind == uint8_t(protocol::ContextSwitchKind::kIn)) {
        if (on && on_tid != s.os_thread_id) run(on_tid, on_since, s.tick);  // its out is missing
        if (!on || on_tid != s.os_thread_id) {
          on = true;
          on_tid = s.os_thread_id;
          on_since = s.tick;
        }
      } else if (protocol::IsSwitchOut(s.kind)) {
        const bool preempted = s.kind == uint8_t(protocol::ContextSwitchKind::kOutPreempted);
        ThreadRunning& thread = running[s.os_thread_id];
        ++thread.switches_out;
        thread.preempted += preempted ? 1 : 0;
        if (on && on_tid == s.os_thread_id) {
          run(s.os_thread_id, on_since, s.tick, preempted);
        } else {
          if (on) run(on_tid, on_since, previous);  // another's out is missing
          run(s.os_thread_id, previous, s.tick, preempted);
        }
        on = false;
      }
      previous = s.tick;
    }
    if (on && on_since < model.last_tick) run(on_tid, on_since, model.last_tick);
  }
  for (auto& [tid, thread] : running) {
    std::sort(thread.spans.begin(), thread.spans.end(),
              [](const RunSpan& a, const RunSpan& b) { return a.begin_tick < b.begin_tick; });
  }
  return running;
}

uint64_t CountSwitchesOut(const TraceModel& model) {
  uint64_t count = 0;
  model.context_switches.ForEach(
      [&](const ContextSwitch& s) { count += protocol::IsSwitchOut(s.kind) ? 1 : 0; });
  return count;
}

}  // namespace gnomon::server
