#include "gnomon/server/counter_values.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

#include "gnomon/protocol/messages.h"

namespace gnomon::server {

namespace {

using protocol::CounterType;

bool IsType(const CounterInfo& counter, CounterType type) { return counter.type == uint8_t(type); }

// The counter a normalised duration is divided by, or -1.
int RenderClocks(const CounterSet& set) {
  for (const CounterInfo& c : set.counters) {
    if (!IsType(c, CounterType::kEvent) && !IsType(c, CounterType::kRaw)) continue;
    std::string name = c.name;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return char(std::tolower(ch)); });
    if (name.find("clocks") != std::string::npos) return int(c.index);
  }
  return -1;
}

// Seconds the GPU spent on what the sample measured, or 0 when unknown.
double MeasuredSeconds(const TraceModel& model, const GpuContextTimeline& context,
                       const CounterSample& sample) {
  if (sample.target == uint8_t(protocol::CounterTarget::kGpuZone)) {
    if (sample.target_index >= context.zones.size()) return 0;
    const GpuZone& zone = context.zones[sample.target_index];
    if (!zone.is_timed() || zone.gpu_end <= zone.gpu_begin) return 0;
    return double(context.clock.TicksToNs(zone.gpu_end - zone.gpu_begin)) * 1e-9;
  }
  auto frames = model.frames.find(0);
  if (frames == model.frames.end() || sample.target_index + 1 >= frames->second.marks.size()) return 0;
  const auto& marks = frames->second.marks;
  return double(model.DurationNs(marks[sample.target_index], marks[sample.target_index + 1])) * 1e-9;
}

}  // namespace

std::string CounterUnit(const CounterSet& set, size_t index) {
  const CounterInfo* counter = set.Find(index);
  if (counter == nullptr) return "";
  const CounterInfo& c = *counter;
  if (IsType(c, CounterType::kDurationNorm) && RenderClocks(set) >= 0) return "%";
  if (IsType(c, CounterType::kThroughput)) return "/s";
  return "";
}

double NormalizedCounterValue(const TraceModel& model, const GpuContextTimeline& context,
                              const CounterSample& sample, size_t index) {
  if (index >= sample.value_count) return 0;
  const double value = context.counter_values[sample.first_value + index];
  auto set = model.counter_sets.find(sample.set_id);
  const CounterInfo* counter = set == model.counter_sets.end() ? nullptr : set->second.Find(index);
  if (counter == nullptr) return value;
  const CounterInfo& c = *counter;
  if (IsType(c, CounterType::kDurationNorm)) {
    const int clocks = RenderClocks(set->second);
    if (clocks < 0 || size_t(clocks) >= sample.value_count) return value;
    const double total = context.counter_values[sample.first_value + size_t(clocks)];
    return total > 0 ? 100.0 * value / total : 0;
  }
  if (IsType(c, CounterType::kThroughput)) {
    const double seconds = MeasuredSeconds(model, context, sample);
    return seconds > 0 ? value / seconds : 0;
  }
  return value;
}

const CounterSample* FindZoneCounters(const GpuContextTimeline& context, uint32_t zone_index) {
  auto it = context.counter_sample_of_zone.find(zone_index);
  return it == context.counter_sample_of_zone.end() ? nullptr : &context.counter_samples[it->second];
}

std::vector<CounterStatistics> ComputeCounterStatistics(const TraceModel& model) {
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, CounterStatistics> by_key;
  for (const auto& [id, context] : model.gpu_contexts) {
    for (const CounterSample& sample : context.counter_samples) {
      if (sample.target != uint8_t(protocol::CounterTarget::kGpuZone) ||
          sample.target_index >= context.zones.size()) {
        continue;
      }
      const uint32_t location = context.zones[sample.target_index].source_location;
      for (uint32_t i = 0; i < sample.value_count; ++i) {
        const double value = NormalizedCounterValue(model, context, sample, i);
        CounterStatistics& s = by_key[{location, sample.set_id, i}];
        if (s.count == 0) {
          s.source_location = location;
          s.set_id = sample.set_id;
          s.counter = i;
          s.min = s.max = value;
        }
        ++s.count;
        s.sum += value;
        s.min = std::min(s.min, value);
        s.max = std::max(s.max, value);
      }
    }
  }
  std::vector<CounterStatistics> result;
  result.reserve(by_key.size());
  for (auto& [key, s] : by_key) {
    s.mean = s.sum / double(s.count);
    result.push_back(s);
  }
  return result;
}

}  // namespace gnomon::server
