// Find zone for a program loaded without its zones (TraceModel::zones_held false): every
// closed CPU zone of one source location read from the file again, on every core, in
// bounded memory whatever the trace's length.
//
//   auto found = FindZonesInFile(source, {stream, &model}, {.location = 7});
//   found->count;     // every zone of location 7: exact, with its total and mean
//   found->longest;   // the longest of them whole (all of them when few enough)
//
// Each zone as held gives it (the viewer's FindOccurrences): its thread, depth, parent
// location, begin, duration, and self time (its duration less its children's). One
// difference is by design: a zone nested more than ZoneArray::kMaxDepth levels deep is
// held at that depth, a sibling of the zones below it; here it keeps its true parent and
// children. Needs the load's record of its blocks and the zones open when each began
// (TraceModel::zone_blocks, kept when LoadOptions::overview_runs is given and within its
// budget), as a window of zones is read by.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gnomon/server/status.h"
#include "gnomon/server/streamed_statistics.h"
#include "gnomon/server/trace_loader.h"

namespace gnomon::server {

struct FoundZone {
  uint32_t thread_id = 0;
  uint32_t parent = 0;  // the parent's source location; 0 for a top-level zone
  uint32_t depth = 0;
  int64_t begin_ns = 0;  // trace-relative
  int64_t duration_ns = 0;
  int64_t self_ns = 0;
  friend bool operator==(const FoundZone&, const FoundZone&) = default;
};

// Durations of every zone found: as (value, zones) pairs, ascending, the values exact
// while there are at most 4,096 of them, else the middle of their histogram bucket (1
// ns wide below 256 ns, at most 1/128 of the value above), with exact sums.
struct FoundSpread {
  std::vector<std::pair<int64_t, uint64_t>> values;
  int64_t total_ns = 0;
  double squares = 0;  // the sum of each value squared
};

struct FoundZones {
  uint64_t count = 0;              // every zone found
  std::vector<FoundZone> longest;  // the `keep` longest (ties: the earliest), in begin order
  FoundSpread durations;
  FoundSpread self_times;
  // Blocks that no longer decompress and were read from their summaries: the zones
  // begun and ended inside them are not found ("" when none).
  std::string note;
};

struct FindZoneQuery {
  uint32_t location = 0;  // index in the model's source_locations
  // Only zones that begin inside [begin_ns, end_ns] (trace-relative).
  int64_t begin_ns = INT64_MIN;
  int64_t end_ns = INT64_MAX;
  size_t keep = size_t{1} << 18;  // zones kept whole, the longest
};

// Fails when the file cannot be read again as it was loaded, when the load kept no
// record of its blocks, or when options.cancel is set.
Result<FoundZones> FindZonesInFile(const TraceSource& source, const StreamedProgram& program,
                                   const FindZoneQuery& query, const LoadOptions& options = {});

}  // namespace gnomon::server
