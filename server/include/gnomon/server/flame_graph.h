// A flame graph as plain data: the zones of one thread, or of every thread merged, as a
// tree of call paths by source location, each node with the time spent in it (total),
// outside its children (self), and how many zones it merges.
//
//   FlameGraph g = BuildFlameGraph(model, {.thread_id = 0});   // 0: every thread merged
//   for (uint32_t child : g.nodes[FlameGraph::kRoot].children) ...
//
// Over a range, each zone counts the part of it inside the range, and a zone that does
// not reach into it counts nowhere. A zone still open at the end of the trace counts as
// running until then. A node is kept while it or a node under it counts a zone.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "gnomon/server/status.h"
#include "gnomon/server/streamed_statistics.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

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

// From the zones held: walks every zone once.
FlameGraph BuildFlameGraph(const TraceModel& model, const FlameQuery& query);

// The same graph for a program loaded without its zones (TraceModel::zones_held false),
// read from its file again as StreamZoneStatistics reads it: every block the load
// decoded, on every core, in the memory of each thread's stack of open zones and of the
// call paths. A zone nested more than ZoneArray::kMaxDepth levels deep keeps its true
// depth here (held, it is a sibling of the zones below it). A block the load read from
// its summary that no longer decompresses is read from its summary: the zones begun and
// ended inside it are left out, and `note` says so. Fails only when the file cannot be
// read again as it was loaded (or options.cancel is set).
Result<FlameGraph> StreamFlameGraph(const TraceSource& source, const StreamedProgram& program,
                                    const FlameQuery& query, const LoadOptions& options = {},
                                    std::string* note = nullptr);

}  // namespace gnomon::server
