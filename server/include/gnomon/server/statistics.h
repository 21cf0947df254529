// Per-source-location zone statistics.
//
// For every source location: count, total time, self time (total minus time in child
// zones), min, max, mean, standard deviation and median, in nanoseconds. Zones still
// open when the capture ended have no duration and are left out (counted apart).
// The median of an even count is the mean of the two middle values.
//
// Large traces are walked in parallel: a thread's zones are cut into pieces (at least
// a million zones each) on up to `threads` threads (0: one per core), and the median is
// exact without keeping every duration: a histogram finds the bucket that holds the
// middle, and a second pass reads the durations in that bucket only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::server {

// A location's median is exact while it has at most this many zones, however its
// statistics are gathered; past it, statistics read from a file without holding the zones
// (streamed_statistics.h) take it from a histogram unless asked for it exact.
inline constexpr uint64_t kExactMedianZones = 4096;

struct ZoneStatistics {
  uint32_t source_location = 0;
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t self_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double mean_ns = 0;
  double stddev_ns = 0;
  int64_t median_ns = 0;
  // 0: the median is exact. Else it is within this many ns of the true one: statistics
  // read from a file without holding the zones (streamed_statistics.h) take a median
  // of more than kExactMedianZones zones from its histogram bucket.
  int64_t median_error_ns = 0;
};

// A part of the trace to limit statistics to: the zones that begin inside
// [begin_tick, end_tick] (ticks of the program's timer; a GPU zone by its begin mapped
// onto the CPU timeline). A zone whose parent began before the range counts in full; its
// parent is not counted.
struct TickRange {
  uint64_t begin_tick = 0;
  uint64_t end_tick = UINT64_MAX;
  bool Contains(uint64_t tick) const { return tick >= begin_tick && tick <= end_tick; }
};

// Statistics for every source location that has at least one closed zone, sorted by
// total time, longest first.
std::vector<ZoneStatistics> ComputeZoneStatistics(const TraceModel& model, unsigned threads = 0,
                                                  const TickRange& range = {});

// The same for GPU zones of every context, with durations on the GPU's own clock (ticks
// times the exact period). Zones whose timestamps never arrived are left out.
std::vector<ZoneStatistics> ComputeGpuZoneStatistics(const TraceModel& model, unsigned threads = 0,
                                                     const TickRange& range = {});

// The frame times of one frame series (between consecutive marks, or each span of a
// discontinuous series): their spread, and a histogram of kFrameBins equal bins from the
// shortest to the longest. Percentiles are the nearest rank.
struct FrameTimeSummary {
  static constexpr size_t kFrameBins = 10;
  uint64_t count = 0;
  double mean_ns = 0;
  int64_t min_ns = 0, max_ns = 0;
  int64_t p50_ns = 0, p90_ns = 0, p99_ns = 0;
  uint64_t bins[kFrameBins] = {};
};
FrameTimeSummary SummarizeFrameTimes(const TraceModel& model, const FrameSeries& series);

// The programs of one trace compared (a capture of several, e.g. the ranks of a job).
// A zone (by name) that runs in two programs or more: each one's count and mean, the
// spread of the means, and the slowest. Sorted by spread, largest first.
struct CrossProcessZone {
  std::string name;
  std::vector<size_t> processes;  // indices into the programs given, ascending
  std::vector<uint64_t> counts;   // per entry of processes
  std::vector<double> mean_ns;
  size_t slowest = 0;  // the entry of processes with the highest mean
  size_t fastest = 0;
  double spread_ns() const { return mean_ns[slowest] - mean_ns[fastest]; }
};
// `stats[i]`: ComputeZoneStatistics of processes[i].
std::vector<CrossProcessZone> CompareProcessZones(const std::vector<const TraceModel*>& processes,
                                                  const std::vector<std::vector<ZoneStatistics>>& stats);
// The main frame series compared step by step: the k-th frame of every program that has
// one, for k up to the fewest frames any of them has; how often each was the slowest.
struct SlowestPerFrame {
  uint64_t frames = 0;                // steps compared
  std::vector<uint64_t> slowest;      // per program: steps where it was the slowest
  std::vector<int64_t> worst_lag_ns;  // per program: its longest lead over the next slowest
};
SlowestPerFrame CompareProcessFrames(const std::vector<const TraceModel*>& processes);

}  // namespace gnomon::server
