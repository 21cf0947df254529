// A thread's zones seen from afar, for a model that counts its zones instead of holding
// them (TraceModel::zones_held false): what the viewer draws of a trace bigger than its
// memory. The runs (tracefile/zone_runs.h) are kept within the model's budget by the
// builder (TraceBuilder::CountZonesOnly), from the zones it decodes or from the blocks'
// summaries (block_summary.h); their locations are indices in
// TraceModel::source_locations.
#pragma once

#include <cstdint>

#include "gnomon/tracefile/zone_runs.h"

namespace gnomon::server {

using tracefile::kMixedLocations;
using tracefile::OverviewRun;
using tracefile::ZoneOverview;

// Where each block the load decoded picks up, for a model without its zones that keeps
// an overview: what reading a time window's zones from the file again needs
// (ReadZoneWindow, zone_window.h). By the load's order of blocks.
struct ZoneBlock {
  uint32_t sequence = 0;
  uint32_t first_open = 0;           // its zones open when it began: OpenAtBlock from here
  uint64_t first_tick = UINT64_MAX;  // of its zone events, as written (first > last: none)
  uint64_t last_tick = 0;
  uint64_t data_offset = 0;  // where its zstd frame is in the file, and its sizes
  uint32_t compressed_bytes = 0;
  uint32_t raw_bytes = 0;
  friend bool operator==(const ZoneBlock&, const ZoneBlock&) = default;
};
// A zone open when a block began, innermost last for each thread.
struct OpenAtBlock {
  uint32_t thread_id = 0;  // the program's
  uint32_t location = 0;   // index in TraceModel::source_locations
  uint64_t begin_tick = 0;
  friend bool operator==(const OpenAtBlock&, const OpenAtBlock&) = default;
};

}  // namespace gnomon::server
