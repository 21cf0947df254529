#include "gnomon/server/statistics.h"

#include <algorithm>
#include <cmath>

namespace gnomon::server {
namespace {

// Sums of durations saturate rather than overflow (hostile streams can hold many zones
// of absurd, saturated lengths).
int64_t AddSaturated(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? INT64_MAX : INT64_MIN;
  return sum;
}

// Accumulates statistics over sequences of zones given in begin order with their depth;
// a duration < 0 marks a zone that has none (never closed, or never timed).
class StatisticsBuilder {
 public:
  explicit StatisticsBuilder(size_t locations) : by_location_(std::max<size_t>(locations, 1)) {}

  // Room for `count` durations of `location` (a first pass counts them, so that the
  // durations of a 100-million-zone location are never copied by a growing vector).
  void Reserve(uint32_t location, size_t count) {
    if (location >= by_location_.size()) location = 0;
    auto& durations = by_location_[location].durations;
    durations.reserve(durations.size() + count);
  }

  void BeginSequence() { Flush(); }

  void Add(uint16_t depth, uint32_t location, int64_t duration) {
    while (!stack_.empty() && stack_.back().depth >= depth) Close();
    if (location >= by_location_.size()) location = 0;
    if (duration >= 0) {
      Accumulator& a = by_location_[location];
      ZoneStatistics& s = a.stats;
      if (s.count == 0 || duration < s.min_ns) s.min_ns = duration;
      if (s.count == 0 || duration > s.max_ns) s.max_ns = duration;
      ++s.count;
      s.total_ns = AddSaturated(s.total_ns, duration);
      a.sum_squares += double(duration) * double(duration);
      a.durations.push_back(duration);
      if (!stack_.empty() && stack_.back().duration >= 0) {
        stack_.back().children = AddSaturated(stack_.back().children, duration);
      }
    }
    stack_.push_back({depth, duration, 0, location});
  }

  std::vector<ZoneStatistics> Finish() {
    Flush();
    std::vector<ZoneStatistics> result;
    for (uint32_t id = 0; id < by_location_.size(); ++id) {
      Accumulator& a = by_location_[id];
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

 private:
  struct Accumulator {
    ZoneStatistics stats;
    double sum_squares = 0;
    std::vector<int64_t> durations;
  };
  struct Open {
    uint16_t depth;
    int64_t duration;
    int64_t children;
    uint32_t location;
  };
  void Close() {
    const Open& open = stack_.back();
    if (open.duration >= 0) {
      ZoneStatistics& s = by_location_[open.location].stats;
      s.self_ns = AddSaturated(s.self_ns, std::max<int64_t>(0, open.duration - open.children));
    }
    stack_.pop_back();
  }
  void Flush() {
    while (!stack_.empty()) Close();
  }

  std::vector<Accumulator> by_location_;
  std::vector<Open> stack_;
};

}  // namespace

std::vector<ZoneStatistics> ComputeZoneStatistics(const TraceModel& model) {
  StatisticsBuilder builder(model.source_locations.size());
  std::vector<size_t> counts(std::max<size_t>(model.source_locations.size(), 1));
  for (const ThreadTimeline& thread : model.threads) {
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const uint32_t location = thread.zones[i].source_location;
      ++counts[location < counts.size() ? location : 0];
    }
  }
  for (uint32_t location = 0; location < counts.size(); ++location) builder.Reserve(location, counts[location]);
  for (const ThreadTimeline& thread : model.threads) {
    builder.BeginSequence();
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const Zone& zone = thread.zones[i];
      builder.Add(zone.depth, zone.source_location,
                  zone.is_open() ? -1 : model.DurationNs(zone.begin_tick, zone.end_tick));
    }
  }
  return builder.Finish();
}

std::vector<ZoneStatistics> ComputeGpuZoneStatistics(const TraceModel& model) {
  StatisticsBuilder builder(model.source_locations.size());
  for (const auto& [id, context] : model.gpu_contexts) {
    // Zones of one context interleave threads; nest each thread's zones on their own.
    std::map<uint32_t, std::vector<const GpuZone*>> by_thread;
    for (size_t i = 0; i < context.zones.size(); ++i) by_thread[context.zones[i].thread_id].push_back(&context.zones[i]);
    for (const auto& [thread, zones] : by_thread) {
      builder.BeginSequence();
      for (const GpuZone* zone : zones) {
        int64_t duration = -1;
        if (zone->is_timed()) {
          duration = zone->gpu_end >= zone->gpu_begin ? std::llround(context.clock.TicksToNs(zone->gpu_end - zone->gpu_begin)) : 0;
        }
        builder.Add(zone->depth, zone->source_location, duration);
      }
    }
  }
  return builder.Finish();
}

}  // namespace gnomon::server
