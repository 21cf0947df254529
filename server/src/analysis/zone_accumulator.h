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

// A run of one location's zones, added up apart (in registers) before they join its
// figures.
struct ZoneRun {
  uint64_t count = 0;
  int64_t total = 0, self = 0;
  int64_t min = INT64_MAX, max = INT64_MIN;
  double sum_squares = 0;
  [[gnu::always_inline]] void Add(int64_t duration, int64_t children) {
    min = std::min(min, duration);
    max = std::max(max, duration);
    sum_squares += double(duration) * double(duration);
    ++count;
    total = AddSaturated(total, duration);
    self = AddSaturated(self, std::max<int64_t>(0, duration - children));
  }
};

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
  // A run of this location's zones, their durations already in `durations` (each >= 0:
  // sums of such saturate the same in any order).
  void Add(const ZoneRun& run) {
    if (run.count == 0) return;
    ZoneStatistics& s = stats;
    if (s.count == 0 || run.min < s.min_ns) s.min_ns = run.min;
    if (s.count == 0 || run.max > s.max_ns) s.max_ns = run.max;
    s.count += run.count;
    s.total_ns = AddSaturated(s.total_ns, run.total);
    s.self_ns = AddSaturated(s.self_ns, run.self);
    sum_squares += run.sum_squares;
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
