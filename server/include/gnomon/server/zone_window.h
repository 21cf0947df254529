// A time window of a trace's zones, read from its file again, for a model loaded without
// them that keeps an overview (TraceModel::zone_blocks): what the viewer draws where it
// is zoomed in past the overview's resolution.
//
// Only the blocks the window needs are read: from the first whose zones reach the
// window (every block before it ends before the window begins) to the last that begins
// inside it (every block after it begins after the window ends), each walked from the
// zones the load found open when it began. A zone still open after those keeps the end
// the overview gives it when the overview holds it whole (it is at least the resolution
// long); a shorter one is followed into the next blocks until it ends.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "gnomon/server/status.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

struct ZoneWindow {
  uint64_t begin_tick = 0;  // the window asked for
  uint64_t end_tick = 0;
  // By the program's thread id, by depth row: the zones that overlap the window, each a
  // run of one (OverviewRun::count 1), in begin order.
  std::map<uint32_t, std::vector<std::vector<OverviewRun>>> threads;
  uint64_t block_bytes = 0;  // decompressed to read it
};

// The zones of `model` (loaded from `source` without its zones, with an overview) that
// overlap ticks [begin_tick, end_tick]. Fails, saying why, when the model has no record
// of its blocks, when the window needs more than `max_bytes` of decompressed blocks or
// holds more zones than take `max_bytes` (a window that wide is drawn from the
// overview), when options.cancel is set, or when the file no longer reads as it loaded.
Result<ZoneWindow> ReadZoneWindow(const TraceSource& source, const TraceModel& model, uint64_t begin_tick,
                                  uint64_t end_tick, uint64_t max_bytes, const LoadOptions& options = {});

}  // namespace gnomon::server
