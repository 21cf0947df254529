#include "gnomon/server/statistics.h"

#include <algorithm>
#include <cmath>

namespace gnomon::server {

std::vector<ZoneStatistics> ComputeZoneStatistics(const TraceModel& model) {
  struct Accumulator {
    ZoneStatistics stats;
    double sum_squares = 0;
    std::vector<int64_t> durations;
  };
  std::vector<Accumulator> by_location(model.source_locations.size());
  struct Open {
    uint16_t depth;
    int64_t duration_ns;
    int64_t children_ns;
    uint32_t location;
  };
  std::vector<Open> stack;
  auto close = [&](const Open& open) {
    if (open.duration_ns < 0) return;  // never closed
    ZoneStatistics& s = by_location[open.location].stats;
    s.self_ns += std::max<int64_t>(0, open.duration_ns - open.children_ns);
  };
  for (const ThreadTimeline& thread : model.threads) {
    stack.clear();
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const Zone& zone = thread.zones[i];
      while (!stack.empty() && stack.back().depth >= zone.depth) {
        close(stack.back());
        stack.pop_back();
      }
      const uint32_t location = zone.source_location < by_location.size() ? zone.source_location : 0;
      int64_t duration = -1;
      if (!zone.is_open()) {
        duration = model.DurationNs(zone.begin_tick, zone.end_tick);
        Accumulator& a = by_location[location];
        ZoneStatistics& s = a.stats;
        if (s.count == 0 || duration < s.min_ns) s.min_ns = duration;
        if (s.count == 0 || duration > s.max_ns) s.max_ns = duration;
        ++s.count;
        s.total_ns += duration;
        a.sum_squares += double(duration) * double(duration);
        a.durations.push_back(duration);
        if (!stack.empty() && stack.back().duration_ns >= 0) stack.back().children_ns += duration;
      }
      stack.push_back({zone.depth, duration, 0, location});
    }
    while (!stack.empty()) {
      close(stack.back());
      stack.pop_back();
    }
  }
  std::vector<ZoneStatistics> result;
  for (uint32_t id = 0; id < by_location.size(); ++id) {
    Accumulator& a = by_location[id];
    ZoneStatistics& s = a.stats;
    if (s.count == 0) continue;
    s.source_location = id;
    s.mean_ns = double(s.total_ns) / double(s.count);
    const double variance = a.sum_squares / double(s.count) - s.mean_ns * s.mean_ns;
    s.stddev_ns = variance > 0 ? std::sqrt(variance) : 0.0;
    // The median; for an even count, the mean of the two middle values.
    auto upper = a.durations.begin() + static_cast<ptrdiff_t>(a.durations.size() / 2);
    std::nth_element(a.durations.begin(), upper, a.durations.end());
    s.median_ns = *upper;
    if (a.durations.size() % 2 == 0) {
      const int64_t lower = *std::max_element(a.durations.begin(), upper);
      s.median_ns = lower + (*upper - lower) / 2;
    }
    result.push_back(s);
  }
  std::sort(result.begin(), result.end(), [](const ZoneStatistics& a, const ZoneStatistics& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.source_location < b.source_location;
  });
  return result;
}

}  // namespace gnomon::server
