// What the statistical samples and context switches of a trace say: the functions the
// program spent its time in (self and total), the same as a flame graph, and when each
// thread was running.
//
// Samples are attributed by function (frames symbolized by a Symbolizer, merged by
// name and module): `self` counts the samples whose first frame is in it, `total`
// those with it anywhere on the stack (once per sample, however deep the recursion).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "gnomon/server/statistics.h"  // TickRange
#include "gnomon/server/symbolizer.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

// Which samples count: a range of ticks, one thread (by its OS id) or all.
struct SampleFilter {
  uint64_t begin_tick = 0;
  uint64_t end_tick = UINT64_MAX;  // exclusive
  uint32_t os_thread_id = 0;       // 0: every thread
  bool Accepts(const Sample& sample) const {
    return sample.tick >= begin_tick && sample.tick < end_tick &&
           (os_thread_id == 0 || sample.os_thread_id == os_thread_id);
  }
  friend bool operator==(const SampleFilter&, const SampleFilter&) = default;
};

struct FunctionSamples {
  std::string function;
  std::string module;
  std::string file;  // of the first address seen in it
  uint32_t line = 0;
  uint64_t self_count = 0;
  uint64_t total_count = 0;
};

struct SampleSummary {
  uint64_t sample_count = 0;               // accepted by the filter
  std::vector<FunctionSamples> functions;  // by self count, then total count, descending
};
SampleSummary SummarizeSamples(const TraceModel& model, Symbolizer& symbolizer, const SampleFilter& filter);

// A source line's samples: `self` those whose first frame is on it, `total` those with it
// anywhere on the stack (a call made from it included; once per sample).
struct LineSamples {
  std::string file;
  uint32_t line = 0;
  std::string function;  // the function its code is in (of the first address seen)
  std::string module;
  uint64_t self_count = 0;
  uint64_t total_count = 0;
};
struct LineSummary {
  uint64_t sample_count = 0;       // accepted by the filter
  std::vector<LineSamples> lines;  // by self count, then total count, descending
};
// The lines of the samples' frames whose source is known (debug information).
LineSummary SummarizeLines(const TraceModel& model, Symbolizer& symbolizer, const SampleFilter& filter);

// The accepted samples' stacks merged from the outermost frame in, for a flame graph.
// Node 0 is the root (every sample); a node's children are sorted by count, descending.
struct SampleTree {
  struct Node {
    uint32_t function = 0;    // index into `functions`
    uint32_t parent = 0;      // the root's is itself
    uint64_t count = 0;       // samples through this node
    uint64_t self_count = 0;  // samples that ended here
    std::vector<uint32_t> children;
  };
  std::vector<std::string> functions;  // [0]: "all"
  std::vector<Node> nodes;
  uint32_t depth = 0;  // levels below the root
};
SampleTree BuildSampleTree(const TraceModel& model, Symbolizer& symbolizer, const SampleFilter& filter);

// A memory pool's allocations merged by the call stacks they were made with: top-down
// (from the outermost caller in) or bottom-up (from the function that allocated out).
// Each node: the allocations through it, their bytes, and those not freed by the end.
// With a range: the allocations made in it, and those not freed by its end.
struct AllocationTree {
  struct Node {
    uint32_t function = 0;  // index into `functions`
    uint32_t parent = 0;    // the root's is itself
    uint64_t count = 0, bytes = 0;
    uint64_t alive_count = 0, alive_bytes = 0;
    std::vector<uint32_t> children = {};  // by bytes, descending
  };
  std::vector<std::string> functions;  // [0]: "all"
  std::vector<Node> nodes;             // [0]: the root, every allocation of the pool
  uint64_t without_stack = 0;          // allocations made without a call stack
};
AllocationTree BuildAllocationTree(const TraceModel& model, Symbolizer& symbolizer, uint32_t pool_id,
                                   bool bottom_up = false, TickRange range = {});

// A span of time a thread was running on a CPU (from its context switches).
struct RunSpan {
  uint64_t begin_tick = 0;
  uint64_t end_tick = 0;
  uint32_t cpu = 0;
  bool preempted = false;  // it ended with the thread preempted (it could have run on)
};
struct ThreadRunning {
  std::vector<RunSpan> spans;  // in order, not overlapping
  uint64_t switches_out = 0;   // times it was switched out
  uint64_t preempted = 0;      // of those, while it could have run on
};
// Every thread with context switches, by OS thread id. A thread running when the
// recording began (its first switch is out) runs from the trace's first tick; one
// running at the end, to its last.
std::unordered_map<uint32_t, ThreadRunning> ComputeThreadRunning(const TraceModel& model);

// Times a thread of the program was switched out.
uint64_t CountSwitchesOut(const TraceModel& model);

}  // namespace gnomon::server
