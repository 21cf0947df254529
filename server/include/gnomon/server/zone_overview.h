// A thread's zones seen from afar, for a model that counts its zones instead of holding
// them (TraceModel::zones_held false): what the viewer draws of a trace bigger than its
// memory.
//
// By depth row, runs of zones in begin order. A zone at least `resolution` ticks long is
// a run of its own and keeps its location and its exact ticks; shorter zones that follow
// each other with gaps under `resolution` merge into one run that says how many they
// are. Each row thus holds fewer than about three runs per `resolution` of the trace's
// time, whatever its zones: the builder doubles the resolution, and merges the runs
// again, whenever the model's runs and rows pass their budget
// (TraceBuilder::CountZonesOnly). Zones out of order (a damaged stream) merge with a
// short run they overlap or come within the resolution of, on either side.
// Drawn at a pixel no narrower than the resolution, the runs are what the held zones
// would draw (lane_index.h merges zones under two pixels in the same way).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gnomon::server {

// A run's location when its zones have more than one.
inline constexpr uint32_t kMixedLocations = UINT32_MAX;

struct OverviewRun {
  uint64_t begin_tick = 0;
  uint64_t end_tick = 0;  // the latest end of its zones
  uint32_t count = 0;     // zones in the run
  uint32_t location = 0;  // their index in TraceModel::source_locations, or kMixedLocations
  // A zone of its own, kept as it is at `resolution`.
  bool IsWide(uint64_t resolution) const { return count == 1 && end_tick - begin_tick >= resolution; }
  friend bool operator==(const OverviewRun&, const OverviewRun&) = default;
};

class ZoneOverview {
 public:
  // Adds a closed zone of row `depth` (a row's zones come in begin order: they do not
  // overlap). An end before the begin counts as the begin. Returns what its cost()
  // grew by: 0 when the zone joined the row's last run.
  size_t Add(uint32_t depth, uint64_t begin_tick, uint64_t end_tick, uint32_t location, uint64_t resolution) {
    const size_t before = cost();
    if (rows_.size() <= depth) rows_.resize(size_t(depth) + 1);
    std::vector<OverviewRun>& row = rows_[depth];
    const OverviewRun zone{begin_tick, std::max(begin_tick, end_tick), 1, location};
    if (!row.empty() && Joins(row.back(), zone, resolution)) {
      Merge(row.back(), zone);
    } else {
      row.push_back(zone);
      ++runs_;
    }
    return cost() - before;
  }
  // What the budget counts: its runs and its rows (each row is a vector of its own).
  size_t cost() const { return runs_ + rows_.size(); }
  // Merges the runs again at a coarser resolution; returns its cost() now.
  size_t Coarsen(uint64_t resolution) {
    runs_ = 0;
    for (std::vector<OverviewRun>& row : rows_) {
      size_t kept = 0;
      for (const OverviewRun& run : row) {
        if (kept > 0 && Joins(row[kept - 1], run, resolution)) {
          Merge(row[kept - 1], run);
        } else {
          row[kept++] = run;
        }
      }
      row.resize(kept);
      runs_ += kept;
    }
    return cost();
  }
  void ShrinkToFit() {
    for (std::vector<OverviewRun>& row : rows_) row.shrink_to_fit();
  }
  const std::vector<std::vector<OverviewRun>>& rows() const { return rows_; }
  size_t runs() const { return runs_; }
  friend bool operator==(const ZoneOverview&, const ZoneOverview&) = default;

 private:
  // Whether `next` merges into `run`: both narrower than the resolution, less than the
  // resolution apart (in order: `next` after `run`'s end; out of order, either side).
  static bool Joins(const OverviewRun& run, const OverviewRun& next, uint64_t resolution) {
    if (run.IsWide(resolution) || next.IsWide(resolution)) return false;
    const bool after = next.begin_tick <= run.end_tick || next.begin_tick - run.end_tick < resolution;
    const bool before = next.end_tick >= run.begin_tick || run.begin_tick - next.end_tick < resolution;
    return after && before;
  }
  static void Merge(OverviewRun& run, const OverviewRun& next) {
    run.begin_tick = std::min(run.begin_tick, next.begin_tick);
    run.end_tick = std::max(run.end_tick, next.end_tick);
    run.count = uint32_t(std::min<uint64_t>(uint64_t(run.count) + next.count, UINT32_MAX));
    if (run.location != next.location) run.location = kMixedLocations;
  }

  std::vector<std::vector<OverviewRun>> rows_;
  size_t runs_ = 0;
};

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
