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
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::server {

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
};

// Statistics for every source location that has at least one closed zone, sorted by
// total time, longest first.
std::vector<ZoneStatistics> ComputeZoneStatistics(const TraceModel& model, unsigned threads = 0);

// The same for GPU zones of every context, with durations on the GPU's own clock (ticks
// times the exact period). Zones whose timestamps never arrived are left out.
std::vector<ZoneStatistics> ComputeGpuZoneStatistics(const TraceModel& model, unsigned threads = 0);

}  // namespace gnomon::server
