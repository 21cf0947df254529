// One source location's zone statistics as they are gathered: from the zones held in a
// model (statistics.cpp, in parallel pieces) or read from a trace file
// (streamed_statistics.cpp). Both finish a row the same way, so the two agree on every
// figure but a median that only the held zones can read exactly.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "analysis/duration_set.h"
#include "gnomon/server/statistics.h"

namespace gnomon::server::analysis {

// Sums of durations saturate rather than overflow (hostile streams can hold many zones
// of absurd, saturated lengths).
inline int64_t AddSaturated(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? INT64_MAX : INT64_MIN;
  return sum;
}

struct ZoneAccumulator {
  ZoneStatistics stats;
  double sum_squares = 0;
  DurationSet durations;

  void Add(int64_t duration) {
    ZoneStatistics& s = stats;
    if (s.count == 0 || duration < s.min_ns) s.min_ns = duration;
    if (s.count == 0 || duration > s.max_ns) s.max_ns = duration;
    ++s.count;
    s.total_ns = AddSaturated(s.total_ns, duration);
    sum_squares += double(duration) * double(duration);
    durations.Add(duration);
  }
  // A zone of this location closed with `children` ns in its child zones.
  void AddSelf(int64_t duration, int64_t children) {
    stats.self_ns = AddSaturated(stats.self_ns, std::max<int64_t>(0, duration - children));
  }
  void Merge(ZoneAccumulator& other) {
    ZoneStatistics& s = stats;
    const ZoneStatistics& o = other.stats;
    if (o.count != 0) {
      if (s.count == 0 || o.min_ns < s.min_ns) s.min_ns = o.min_ns;
      if (s.count == 0 || o.max_ns > s.max_ns) s.max_ns = o.max_ns;
      s.count += o.count;
      s.total_ns = AddSaturated(s.total_ns, o.total_ns);
      sum_squares += other.sum_squares;
    }
    s.self_ns = AddSaturated(s.self_ns, o.self_ns);
    durations.Merge(other.durations);
  }
  // The row of `location` (count > 0), with the two middle durations (equal for an odd
  // count): the median is their mean.
  ZoneStatistics Finish(uint32_t location, int64_t lower, int64_t upper) const {
    ZoneStatistics s = stats;
    s.source_location = location;
    s.mean_ns = double(s.total_ns) / double(s.count);
    const double variance = sum_squares / double(s.count) - s.mean_ns * s.mean_ns;
    s.stddev_ns = variance > 0 ? std::sqrt(variance) : 0.0;
    s.median_ns = s.count % 2 == 1 ? upper : lower + (upper - lower) / 2;
    return s;
  }
};

// Longest total first, then by location: the order of every statistics table.
inline void SortByTotal(std::vector<ZoneStatistics>& rows) {
  std::sort(rows.begin(), rows.end(), [](const ZoneStatistics& a, const ZoneStatistics& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.source_location < b.source_location;
  });
}

}  // namespace gnomon::server::analysis
