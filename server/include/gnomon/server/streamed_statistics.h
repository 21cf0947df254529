// Zone statistics read from a trace file, for models loaded without their zones
// (TraceModel::zones_held false: LoadOptions::zone_memory_limit).
//
// One pass over the file's blocks, in the memory of each thread's stack of open zones
// and one duration histogram per source location: a trace of any length. Each program
// of the set gets what ComputeZoneStatistics gives for the same zones held: count,
// total, self time, min, max and mean exactly, the standard deviation up to rounding,
// and the median exactly for a location of at most kExactMedianZones zones; above, the
// middle of the histogram bucket that holds it, within 1/256 of its value
// (ZoneStatistics::median_error_ns says by how much at most). One difference is by
// design: a zone nested more than ZoneArray::kMaxDepth (4,095) levels deep is held at
// that depth, a sibling of the zones below it, so held statistics give the zones there
// no children; here they keep their true nesting, and the self times of those few
// levels are the true ones.
//
// Blocks are walked apart on up to one thread a core (within 512 MiB of blocks and
// histograms), each from the thread the load found it starting on
// (TraceModel::block_start_threads); what crosses blocks is settled in file order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gnomon/server/statistics.h"
#include "gnomon/server/status.h"
#include "gnomon/server/trace_loader.h"

namespace gnomon::server {

// A median of more than kExactMedianZones zones: the middle of its histogram bucket
// (stated by median_error_ns), or exact, looked for in that bucket by more passes over
// the file: each narrows every range looked for into 2^19 slots shared between them (at
// most 65,536 a range), so while at most 8 locations need it, one pass for a median
// under about 8 ms and two under about 2 minutes; with more, more passes.
enum class StreamedMedians { kWithinBucket, kExact };

// By set.processes (loaded from `source` with the same options): the statistics of each
// program, sorted by total time, longest first. A damaged block is skipped as the load
// skipped it. A block the load read from its summary (LoadOptions::use_summaries) that
// does not decompress is read from its summary here too: the zones it ends and leaves
// open are counted, those begun and ended inside it are left out, and `note` (when
// given; "" when nothing was) says so, block by block. Fails only when the file cannot
// be read again as it was loaded (or options.cancel is set). options.bytes_done follows
// each pass.
Result<std::vector<std::vector<ZoneStatistics>>> StreamZoneStatistics(
    const TraceSource& source, const TraceSet& set, const LoadOptions& options = {},
    StreamedMedians medians = StreamedMedians::kWithinBucket, std::string* note = nullptr);
// The same for programs held elsewhere (the viewer's shown program: a SharedModel), by
// stream as the file numbers them (LoadReport::shown_stream).
struct StreamedProgram {
  uint32_t stream = 0;
  const TraceModel* model = nullptr;
};
Result<std::vector<std::vector<ZoneStatistics>>> StreamZoneStatistics(
    const TraceSource& source, const std::vector<StreamedProgram>& programs, const LoadOptions& options = {},
    StreamedMedians medians = StreamedMedians::kWithinBucket, std::string* note = nullptr);

}  // namespace gnomon::server
