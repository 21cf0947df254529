// Zones seen from afar: runs of a thread's zones by depth row, merged within a
// resolution. What a viewer draws of a trace bigger than its memory (the server's
// ZoneOverview, zone_overview.h), and what a block's summary holds of its zones
// (block_summary.h), so that a reader can draw a block without decompressing it.
//
// By depth row, runs of zones in begin order. A zone at least `resolution` ticks long is
// a run of its own and keeps its location and its exact ticks; shorter zones that follow
// each other with gaps under `resolution` merge into one run that says how many they
// are. Each row thus holds fewer than about three runs per `resolution` of the trace's
// time, whatever its zones: an owner keeps them within a budget by doubling the
// resolution and merging the runs again (Coarsen). Zones out of order (a damaged stream)
// merge with a short run they overlap or come within the resolution of, on either side.
// Drawn at a pixel no narrower than the resolution, the runs are what the zones would
// draw (the viewer's lane_index.h merges zones under two pixels in the same way), and
// runs merged at one resolution merge again at a coarser one as their zones would.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gnomon::tracefile {

// A run's location when its zones have more than one.
inline constexpr uint32_t kMixedLocations = UINT32_MAX;

struct OverviewRun {
  uint64_t begin_tick = 0;
  uint64_t end_tick = 0;  // the latest end of its zones
  uint32_t count = 0;     // zones in the run
  uint32_t location = 0;  // theirs (a model's index, or in a summary the stream's id), or kMixedLocations
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
    return AddRun(depth, {begin_tick, std::max(begin_tick, end_tick), 1, location}, resolution);
  }
  // The same for a run of zones (end_tick not before begin_tick, count at least 1): as
  // its zones one by one, at a resolution no finer than the one that merged them.
  size_t AddRun(uint32_t depth, const OverviewRun& run, uint64_t resolution) {
    size_t grown = 0;
    if (rows_.size() <= depth) [[unlikely]] {
      grown = size_t(depth) + 1 - rows_.size();
      rows_.resize(size_t(depth) + 1);
    }
    std::vector<OverviewRun>& row = rows_[depth];
    if (!row.empty() && Joins(row.back(), run, resolution)) {
      Merge(row.back(), run);
      return grown;
    }
    row.push_back(run);
    ++runs_;
    return grown + 1;
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
  // The last run of row `depth` (which has one), and `run` merged into such a run when
  // it joins it: what AddRun does when it finds it, for a caller that keeps the run
  // (until its next AddRun or Coarsen).
  OverviewRun& last(uint32_t depth) { return rows_[depth].back(); }
  static bool TryJoin(OverviewRun& last, const OverviewRun& run, uint64_t resolution) {
    if (!Joins(last, run, resolution)) return false;
    Merge(last, run);
    return true;
  }
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

}  // namespace gnomon::tracefile
