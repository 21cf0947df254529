#include "gnomon/server/chrome_export.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <unordered_set>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/counter_values.h"
#include "gnomon/server/memory_statistics.h"
#include "gnomon/server/process_timeline.h"
#include "gnomon/server/report.h"

namespace gnomon::server {
namespace {

// Trace-event timestamps are microseconds; keep nanosecond precision as decimals.
std::string Micros(int64_t ns) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f", double(ns) / 1e3);
  return buffer;
}

// A counter's (tick, value) points that the filter's range holds, as (ns from the first
// event, value); the value in force when the range begins comes first, at its beginning:
// a counter is a step function, and one set before the range still holds in it.
template <typename Points, typename Emit>
void ForEachInRange(const ProcessTimeline& timeline, const ExportFilter& filter, const Points& points,
                    Emit emit) {
  const auto* before = static_cast<const typename Points::value_type*>(nullptr);
  for (const auto& point : points) {
    const int64_t ns = timeline.Tick(point.first);
    if (ns < filter.begin_ns) {
      before = &point;
      continue;
    }
    if (ns > filter.end_ns) break;
    if (before != nullptr && ns > filter.begin_ns) emit(filter.begin_ns, before->second);
    before = nullptr;
    emit(ns, point.second);
  }
  if (before != nullptr) emit(filter.begin_ns, before->second);
}

constexpr uint32_t kFramesTrackId = 0xFFFFFFF0u;
constexpr uint32_t kGpuTrackBase = 0x40000000u;         // + context id: one track per GPU context
constexpr uint64_t kLockTrackBase = uint64_t{1} << 32;  // + lock id: one track per lock, past every thread id

// One program's events, as its process, at their places on `timeline`.
template <typename BeginEvent>
void WriteProcess(const ProcessTimeline& timeline, std::ostream& out, const ExportFilter& filter,
                  BeginEvent begin_event) {
  const TraceModel& model = timeline.model();
  const uint32_t pid = timeline.pid();
  std::unordered_set<uint32_t> kept_threads;  // by the model's thread id
  for (const ThreadTimeline& thread : model.threads) {
    if (filter.KeepsThread(thread)) kept_threads.insert(thread.id);
  }
  auto keeps_thread = [&](uint32_t id) { return filter.threads.empty() || kept_threads.contains(id); };
  begin_event();
  out << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << pid
      << ",\"args\":{\"name\":" << JsonQuote(timeline.name()) << "}}";
  for (const ThreadTimeline& thread : model.threads) {
    if (!keeps_thread(thread.id)) continue;
    begin_event();
    out << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << pid << ",\"tid\":" << thread.id
        << ",\"args\":{\"name\":"
        << JsonQuote(thread.name.empty() ? "thread " + std::to_string(thread.id) : thread.name) << "}}";
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const Zone& zone = thread.zones[i];
      const SourceLocation& location = model.Location(zone.source_location);
      const uint64_t end = zone.is_open() ? model.last_tick : zone.end_tick;
      const std::string& name = model.ZoneName(thread, i);
      if (!filter.KeepsZone(name) || !filter.Overlaps(timeline.Tick(zone.begin_tick), timeline.Tick(end)))
        continue;
      begin_event();
      out << "{\"ph\":\"X\",\"cat\":\"zone\",\"name\":" << JsonQuote(name) << ",\"pid\":" << pid
          << ",\"tid\":" << thread.id << ",\"ts\":" << Micros(timeline.Tick(zone.begin_tick))
          << ",\"dur\":" << Micros(model.DurationNs(zone.begin_tick, end))
          << ",\"args\":{\"function\":" << JsonQuote(location.function)
          << ",\"file\":" << JsonQuote(location.file) << ",\"line\":" << location.line;
      if (zone.is_open()) out << ",\"unfinished\":true";
      if (zone.flags & kZoneHasAttributes) {
        if (const auto attributes = thread.attributes.find(i)) {
          if (!attributes->text.empty()) out << ",\"text\":" << JsonQuote(attributes->text);
          if (attributes->has_value) out << ",\"value\":" << attributes->value;
        }
      }
      out << "}}";
    }
  }
  for (const auto& [id, context] : model.gpu_contexts) {
    const uint32_t track = kGpuTrackBase + id;
    begin_event();
    out << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << pid << ",\"tid\":" << track
        << ",\"args\":{\"name\":" << JsonQuote("GPU: " + context.label()) << "}}";
    for (size_t i = 0; i < context.zones.size(); ++i) {
      const GpuZone& zone = context.zones[i];
      if (!zone.is_timed() || !keeps_thread(zone.thread_id)) continue;
      const std::string& name = model.Location(zone.source_location).name;
      const auto mapped = model.MapGpuZone(context, zone);
      if (!filter.KeepsZone(name) ||
          !filter.Overlaps(timeline.Ns(mapped.begin_ns), timeline.Ns(mapped.end_ns)))
        continue;
      begin_event();
      out << "{\"ph\":\"X\",\"cat\":\"gpu\",\"name\":" << JsonQuote(name) << ",\"pid\":" << pid
          << ",\"tid\":" << track << ",\"ts\":" << Micros(timeline.Ns(mapped.begin_ns))
          << ",\"dur\":" << Micros(mapped.end_ns - mapped.begin_ns)
          << ",\"args\":{\"gpu_begin_ticks\":" << zone.gpu_begin << ",\"gpu_end_ticks\":" << zone.gpu_end
          << ",\"relative_bound_ns\":" << mapped.relative_ns
          << ",\"absolute_bound_ns\":" << mapped.absolute_ns() << ",\"absolute_early_ns\":" << mapped.early_ns
          << ",\"absolute_late_ns\":" << mapped.late_ns << ",\"cpu_thread\":" << zone.thread_id
          << ",\"cpu_to_gpu_latency_ns\":" << (mapped.begin_ns - model.clock.TickToNs(zone.cpu_begin_tick));
      // On a timeline of several programs the program's own clock is placed too: its bound
      // adds to the zone's.
      if (const auto host = timeline.At(mapped.begin_ns); host.valid) {
        out << ",\"host_bound_ns\":" << host.uncertainty_ns
            << ",\"timeline_bound_ns\":" << AddBounds(mapped.absolute_ns(), host.uncertainty_ns);
      }
      out << "}}";
    }
    // Counters as counter tracks: a zone's (or a frame's) value from its begin, back to 0
    // at its end.
    const auto main_frames = model.frames.find(0);
    for (const CounterSample& sample : context.counter_samples) {
      int64_t begin_ns = 0, end_ns = 0;
      if (sample.target == uint8_t(protocol::CounterTarget::kGpuZone) &&
          sample.target_index < context.zones.size() && context.zones[sample.target_index].is_timed()) {
        const auto mapped = model.MapGpuZone(context, context.zones[sample.target_index]);
        begin_ns = mapped.begin_ns;
        end_ns = mapped.end_ns;
      } else if (sample.target == uint8_t(protocol::CounterTarget::kFrame) &&
                 main_frames != model.frames.end() &&
                 size_t(sample.target_index) + 1 < main_frames->second.marks.size()) {
        begin_ns = model.clock.TickToNs(main_frames->second.marks[sample.target_index]);
        end_ns = model.clock.TickToNs(main_frames->second.marks[sample.target_index + 1]);
      } else {
        continue;  // untimed, or a frame past the last mark
      }
      if (!filter.Overlaps(timeline.Ns(begin_ns), timeline.Ns(end_ns))) continue;
      const CounterSet& set = model.counter_sets.at(sample.set_id);
      for (size_t i = 0; i < sample.value_count; ++i) {
        const std::string name = context.label() + ": " + set.CounterName(i);
        const double value = NormalizedCounterValue(model, context, sample, i);
        char number[40];
        std::snprintf(number, sizeof(number), "%.17g", std::isfinite(value) ? value : 0.0);
        for (const auto& [ts, text] : {std::pair{begin_ns, std::string(number)}, {end_ns, "0"}}) {
          begin_event();
          out << "{\"ph\":\"C\",\"cat\":\"counter\",\"name\":" << JsonQuote(name) << ",\"pid\":" << pid
              << ",\"ts\":" << Micros(timeline.Ns(ts)) << ",\"args\":{\"value\":" << text << "}}";
        }
      }
    }
  }
  begin_event();
  out << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << pid << ",\"tid\":" << kFramesTrackId
      << ",\"args\":{\"name\":\"Frames\"}}";
  for (const auto& [id, series] : model.frames) {
    const std::string name = id == 0                          ? "Frame"
                             : model.frame_names.contains(id) ? model.frame_names.at(id)
                                                              : "Frame " + std::to_string(id);
    for (size_t i = 1; i < series.marks.size(); ++i) {
      if (!filter.Overlaps(timeline.Tick(series.marks[i - 1]), timeline.Tick(series.marks[i]))) continue;
      begin_event();
      out << "{\"ph\":\"X\",\"cat\":\"frame\",\"name\":" << JsonQuote(name) << ",\"pid\":" << pid
          << ",\"tid\":" << kFramesTrackId << ",\"ts\":" << Micros(timeline.Tick(series.marks[i - 1]))
          << ",\"dur\":" << Micros(model.DurationNs(series.marks[i - 1], series.marks[i])) << "}";
    }
    for (const auto& [begin, end] : series.spans) {
      if (!filter.Overlaps(timeline.Tick(begin), timeline.Tick(end))) continue;
      begin_event();
      out << "{\"ph\":\"X\",\"cat\":\"frame\",\"name\":" << JsonQuote(name) << ",\"pid\":" << pid
          << ",\"tid\":" << kFramesTrackId << ",\"ts\":" << Micros(timeline.Tick(begin))
          << ",\"dur\":" << Micros(model.DurationNs(begin, end)) << "}";
    }
  }
  for (const LogMessage& message : model.messages) {
    if (!keeps_thread(message.thread_id) || !filter.Contains(timeline.Tick(message.tick))) continue;
    begin_event();
    out << "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"message\",\"name\":" << JsonQuote(message.text)
        << ",\"pid\":" << pid << ",\"tid\":" << message.thread_id
        << ",\"ts\":" << Micros(timeline.Tick(message.tick))
        << ",\"args\":{\"severity\":" << unsigned{message.severity} << "}}";
  }
  for (const auto& [id, plot] : model.plots) {
    const std::string name = plot.name.empty() ? "plot " + std::to_string(id) : plot.name;
    ForEachInRange(timeline, filter, plot.points, [&](int64_t ns, double value) {
      char number[40];
      std::snprintf(number, sizeof(number), "%.17g", std::isfinite(value) ? value : 0.0);
      begin_event();
      out << "{\"ph\":\"C\",\"name\":" << JsonQuote(name) << ",\"pid\":" << pid << ",\"ts\":" << Micros(ns)
          << ",\"args\":{\"value\":" << number << "}}";
    });
  }
  // Memory: each pool's bytes in use, as a counter.
  for (const auto& [id, pool] : model.memory_pools) {
    const std::string name = "memory: " + pool.name;
    ForEachInRange(timeline, filter, MemoryUsage(pool), [&](int64_t ns, auto bytes) {
      begin_event();
      out << "{\"ph\":\"C\",\"cat\":\"memory\",\"name\":" << JsonQuote(name) << ",\"pid\":" << pid
          << ",\"ts\":" << Micros(ns) << ",\"args\":{\"bytes\":" << bytes << "}}";
    });
  }
  // Locks: a track each, with every hold (named after its thread) and every wait.
  for (const auto& [id, lock] : model.locks) {
    const uint64_t track = kLockTrackBase + id;
    begin_event();
    out << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << pid << ",\"tid\":" << track
        << ",\"args\":{\"name\":" << JsonQuote("Lock: " + lock.name) << "}}";
    for (size_t i = 0; i < lock.holds.size(); ++i) {
      const LockHold& hold = lock.holds[i];
      const std::string holder = "thread " + std::to_string(hold.thread_id);
      const uint64_t end = hold.is_released() ? hold.release_tick : model.last_tick;
      const uint64_t begin = hold.is_contended() ? hold.wait_tick : hold.obtain_tick;
      if (!keeps_thread(hold.thread_id) || !filter.Overlaps(timeline.Tick(begin), timeline.Tick(end)))
        continue;
      if (hold.is_contended()) {
        begin_event();
        out << "{\"ph\":\"X\",\"cat\":\"lock wait\",\"name\":" << JsonQuote(holder + " waits")
            << ",\"pid\":" << pid << ",\"tid\":" << hold.thread_id
            << ",\"ts\":" << Micros(timeline.Tick(hold.wait_tick))
            << ",\"dur\":" << Micros(model.DurationNs(hold.wait_tick, hold.obtain_tick))
            << ",\"args\":{\"lock\":" << JsonQuote(lock.name) << "}}";
      }
      begin_event();
      out << "{\"ph\":\"X\",\"cat\":\"lock\",\"name\":" << JsonQuote(holder) << ",\"pid\":" << pid
          << ",\"tid\":" << track << ",\"ts\":" << Micros(timeline.Tick(hold.obtain_tick))
          << ",\"dur\":" << Micros(model.DurationNs(hold.obtain_tick, end))
          << ",\"args\":{\"thread\":" << hold.thread_id
          << ",\"shared\":" << ((hold.flags & protocol::kLockShared) ? "true" : "false") << "}}";
    }
  }
}

}  // namespace

void WriteChromeTrace(const TraceModel& model, std::ostream& out, const ExportFilter& filter) {
  WriteChromeTrace(std::vector<const TraceModel*>{&model}, out, filter);
}

void WriteChromeTrace(const std::vector<const TraceModel*>& processes, std::ostream& out,
                      const ExportFilter& filter) {
  const std::vector<ProcessTimeline> timelines = ProcessTimeline::Of(processes);
  bool first = true;
  auto begin_event = [&] {
    out << (first ? "\n" : ",\n");
    first = false;
  };
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  for (const ProcessTimeline& timeline : timelines) WriteProcess(timeline, out, filter, begin_event);
  out << "\n]}\n";
}

}  // namespace gnomon::server
