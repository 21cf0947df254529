#include "gnomon/server/trace_model.h"

#include <algorithm>
#include <sstream>

namespace gnomon::server {

TraceModel::TraceModel() {
  source_locations.resize(1);
  source_locations[0].name = "<unknown>";
}

std::string TraceModel::ThreadName(uint32_t thread_id) const {
  auto it = thread_index.find(thread_id);
  if (it != thread_index.end() && it->second < threads.size() && !threads[it->second].name.empty())
    return threads[it->second].name;
  return "thread " + std::to_string(thread_id);
}

std::string TraceModel::FrameSeriesName(uint32_t id) const {
  if (id == 0) return "main";
  auto it = frames.find(id);
  if (it != frames.end() && !it->second.name.empty()) return it->second.name;
  auto name = frame_names.find(id);
  return name != frame_names.end() ? name->second : "frame series " + std::to_string(id);
}

const std::string& TraceModel::ZoneName(const ThreadTimeline& thread, size_t zone_index) const {
  const Zone& zone = thread.zones[zone_index];
  if (zone.flags & kZoneHasAttributes) {
    const std::string& name = thread.attributes.Name(zone_index);
    if (!name.empty()) return name;
  }
  return Location(zone.source_location).name;
}

const CounterInfo* CounterSet::Find(size_t index) const {
  auto it = std::lower_bound(counters.begin(), counters.end(), index,
                             [](const CounterInfo& c, size_t i) { return c.index < i; });
  return it != counters.end() && it->index == index ? &*it : nullptr;
}

std::string CounterSet::CounterName(size_t index) const {
  const CounterInfo* counter = Find(index);
  return counter != nullptr ? counter->name : "counter " + std::to_string(index);
}

std::string SourceLocation::ShortLabel() const {
  if (file.empty()) return function;
  const size_t slash = file.find_last_of('/');
  return (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" + std::to_string(line);
}

TraceModel::MappedGpuZone TraceModel::MapGpuZone(const GpuContextTimeline& context,
                                                 const GpuZone& zone) const {
  const auto begin = context.clock.Map(zone.gpu_begin, zone.epoch);
  const auto end = context.clock.Map(zone.gpu_end, zone.epoch);
  return {begin.cpu_ns, std::max(begin.cpu_ns, end.cpu_ns), std::max(begin.early_ns, end.early_ns),
          std::max(begin.late_ns, end.late_ns), std::max(begin.relative_ns, end.relative_ns)};
}

size_t TraceModel::zone_bytes() const {
  size_t bytes = 0;
  for (const ThreadTimeline& thread : threads) bytes += thread.zones.capacity_bytes();
  return bytes;
}

void TraceModel::ShrinkToFit() {
  for (ThreadTimeline& thread : threads) {
    thread.zones.ShrinkToFit();
    thread.attributes.ShrinkToFit();
    thread.callstacks.ShrinkToFit();
    thread.overview.ShrinkToFit();
  }
  for (auto& [id, context] : gpu_contexts) context.zones.ShrinkToFit();
  for (auto& [id, pool] : memory_pools) pool.allocations.ShrinkToFit();
  for (auto& [id, lock] : locks) lock.holds.ShrinkToFit();
  samples.ShrinkToFit();
  context_switches.ShrinkToFit();
}

std::string DescribeFirstDifference(const TraceModel& a, const TraceModel& b) {
  if (a.has_program_info != b.has_program_info || !(a.program == b.program)) return "program info differs";
  if (!(a.clock.pairs() == b.clock.pairs())) return "calibration pairs differ";
  if (!(a.source_locations == b.source_locations)) return "source locations differ";
  if (a.threads.size() != b.threads.size()) return "thread counts differ";
  for (size_t t = 0; t < a.threads.size(); ++t) {
    const ThreadTimeline& x = a.threads[t];
    const ThreadTimeline& y = b.threads[t];
    if (x.zones.size() != y.zones.size()) {
      std::ostringstream out;
      out << "thread " << x.id << ": " << x.zones.size() << " vs " << y.zones.size() << " zones";
      return out.str();
    }
    for (size_t i = 0; i < x.zones.size(); ++i) {
      if (!(x.zones[i] == y.zones[i])) {
        std::ostringstream out;
        out << "thread " << x.id << " zone " << i << " differs";
        return out.str();
      }
    }
    if (!(x == y)) return "thread " + std::to_string(x.id) + " name or attributes differ";
  }
  if (!(a.frames == b.frames)) return "frames differ";
  if (!(a.plots == b.plots)) return "plots differ";
  if (!(a.frame_names == b.frame_names)) return "frame names differ";
  if (!(a.messages == b.messages)) return "messages differ";
  if (!(a.gpu_contexts == b.gpu_contexts)) return "GPU contexts differ";
  if (!(a.diagnostics == b.diagnostics)) return "diagnostics differ";
  if (a.first_tick != b.first_tick || a.last_tick != b.last_tick) return "time range differs";
  if (a.zone_count != b.zone_count || a.open_zone_count != b.open_zone_count) return "zone counts differ";
  if (!(a.counter_sets == b.counter_sets)) return "counter sets differ";
  if (!(a.memory_pools == b.memory_pools)) return "memory pools differ";
  if (!(a.locks == b.locks)) return "locks differ";
  if (!(a.callstacks == b.callstacks) || !(a.modules == b.modules)) return "call stacks or modules differ";
  if (!(a.samples == b.samples) || !(a.context_switches == b.context_switches))
    return "samples or context switches differ";
  if (!(a.clock == b.clock)) return "CPU clock models differ";
  if (!(a.host_clock_exchanges == b.host_clock_exchanges) || !(a.capture == b.capture))
    return "host clock exchanges or capture clock readings differ";
  // Whatever the lines above do not name (indexes of ids, say) is still compared.
  if (!(a == b)) return "the models differ (id indexes)";
  return "";
}

}  // namespace gnomon::server
