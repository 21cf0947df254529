#include "gnomon/server/json_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/host_clock_model.h"
#include "gnomon/server/lock_statistics.h"
#include "gnomon/server/memory_statistics.h"
#include "gnomon/server/process_timeline.h"
#include "gnomon/server/regression.h"
#include "gnomon/server/samples.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/text.h"

namespace gnomon::server {
namespace {

// Writes one JSON value at a time, with the commas between members and elements.
class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  JsonWriter& Key(const char* key) {
    Separate();
    out_ << '"' << key << "\":";
    after_key_ = true;
    return *this;
  }
  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  JsonWriter& String(std::string_view text) {
    Separate();
    out_ << JsonQuote(text);
    return *this;
  }
  JsonWriter& Int(int64_t value) {
    Separate();
    out_ << value;
    return *this;
  }
  JsonWriter& Uint(uint64_t value) {
    Separate();
    out_ << value;
    return *this;
  }
  JsonWriter& Number(double value) {
    Separate();
    if (!std::isfinite(value)) {
      out_ << "null";
    } else {
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "%.15g", value);
      out_ << buffer;
    }
    return *this;
  }
  JsonWriter& Bool(bool value) {
    Separate();
    out_ << (value ? "true" : "false");
    return *this;
  }
  JsonWriter& Null() {
    Separate();
    out_ << "null";
    return *this;
  }

 private:
  JsonWriter& Open(char c) {
    Separate();
    out_ << c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& Close(char c) {
    out_ << c;
    first_.pop_back();
    return *this;
  }
  // A comma before every member or element but the first; none after a key.
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ << ',';
    first_.back() = false;
  }

  std::ostream& out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

void WriteZones(JsonWriter& json, const TraceModel& model, const std::vector<ZoneStatistics>& stats) {
  json.BeginArray();
  for (const ZoneStatistics& s : stats) {
    const SourceLocation& location = model.Location(s.source_location);
    json.BeginObject()
        .Key("name")
        .String(location.name)
        .Key("function")
        .String(location.function)
        .Key("file")
        .String(location.file)
        .Key("line")
        .Uint(location.line)
        .Key("count")
        .Uint(s.count)
        .Key("total_ns")
        .Int(s.total_ns)
        .Key("self_ns")
        .Int(s.self_ns)
        .Key("mean_ns")
        .Number(s.mean_ns)
        .Key("median_ns")
        .Int(s.median_ns)
        .Key("median_error_ns")
        .Int(s.median_error_ns)
        .Key("min_ns")
        .Int(s.min_ns)
        .Key("max_ns")
        .Int(s.max_ns)
        .Key("stddev_ns")
        .Number(s.stddev_ns)
        .EndObject();
  }
  json.EndArray();
}

void WriteFrames(JsonWriter& json, const TraceModel& model) {
  json.BeginArray();
  for (const auto& [id, series] : model.frames) {
    const FrameTimeSummary s = SummarizeFrameTimes(model, series);
    std::string name = id == 0 ? "main" : "frame series " + std::to_string(id);
    if (auto it = model.frame_names.find(id); id != 0 && it != model.frame_names.end()) name = it->second;
    json.BeginObject()
        .Key("name")
        .String(name)
        .Key("count")
        .Uint(s.count)
        .Key("mean_ns")
        .Number(s.mean_ns)
        .Key("min_ns")
        .Int(s.min_ns)
        .Key("max_ns")
        .Int(s.max_ns)
        .Key("p50_ns")
        .Int(s.p50_ns)
        .Key("p90_ns")
        .Int(s.p90_ns)
        .Key("p99_ns")
        .Int(s.p99_ns)
        .Key("histogram")
        .BeginArray();
    for (uint64_t bin : s.bins) json.Uint(bin);
    json.EndArray().EndObject();
  }
  json.EndArray();
}

void WriteGpuContexts(JsonWriter& json, const TraceModel& model) {
  json.BeginArray();
  for (const auto& [id, context] : model.gpu_contexts) {
    uint64_t untimed = 0;
    for (size_t i = 0; i < context.zones.size(); ++i) untimed += context.zones[i].is_timed() ? 0 : 1;
    const GpuClockModel& clock = context.clock;
    json.BeginObject()
        .Key("id")
        .Uint(id)
        .Key("name")
        .String(context.label())
        .Key("device")
        .String(context.device_name)
        .Key("api")
        .Uint(context.api)
        .Key("zones")
        .Uint(context.zones.size())
        .Key("untimed_zones")
        .Uint(untimed)
        .Key("calibrations")
        .Uint(clock.sample_count())
        .Key("rejected_calibrations")
        .Uint(clock.rejected_count())
        .Key("drift_ppm")
        .Number(clock.drift_ppm())
        .Key("relative_bound_ns")
        .Uint(clock.current_relative_ns())
        .Key("absolute_early_ns")
        .Uint(clock.current_early_ns())
        .Key("absolute_late_ns")
        .Uint(clock.current_late_ns())
        .Key("brackets")
        .Uint(clock.offset_range().brackets)
        .Key("bracket_correction_ns")
        .Number(clock.offset_range().correction_ns())
        .Key("flagged_calibrations")
        .Uint(clock.flags().total())
        .EndObject();
  }
  json.EndArray();
}

void WriteMemory(JsonWriter& json, const TraceModel& model) {
  json.BeginArray();
  for (const MemoryPoolStatistics& s : ComputeMemoryStatistics(model)) {
    json.BeginObject()
        .Key("pool")
        .String(s.name)
        .Key("allocations")
        .Uint(s.allocations)
        .Key("frees")
        .Uint(s.frees)
        .Key("unmatched_frees")
        .Uint(s.unmatched_frees)
        .Key("allocated_bytes")
        .Uint(s.allocated_bytes)
        .Key("peak_bytes")
        .Uint(s.peak_bytes)
        .Key("peak_time_ns")
        .Int(s.peak_bytes == 0 ? 0 : model.RelativeNs(s.peak_tick))
        .Key("leaked_allocations")
        .Uint(s.leaked_allocations)
        .Key("leaked_bytes")
        .Uint(s.leaked_bytes)
        .EndObject();
  }
  json.EndArray();
}

void WriteLocks(JsonWriter& json, const TraceModel& model) {
  json.BeginArray();
  for (const LockStatistics& s : ComputeLockStatistics(model)) {
    json.BeginObject()
        .Key("name")
        .String(s.name)
        .Key("acquisitions")
        .Uint(s.acquisitions)
        .Key("contended")
        .Uint(s.contended)
        .Key("shared")
        .Uint(s.shared)
        .Key("threads")
        .Uint(s.threads)
        .Key("wait_total_ns")
        .Int(s.wait_total_ns)
        .Key("wait_max_ns")
        .Int(s.wait_max_ns)
        .Key("hold_total_ns")
        .Int(s.hold_total_ns)
        .Key("hold_max_ns")
        .Int(s.hold_max_ns)
        .EndObject();
  }
  json.EndArray();
}

// The functions most often running (kTopFunctions), as the text report lists them, and
// the `hot_lines` source lines most often running.
void WriteSamples(JsonWriter& json, const TraceModel& model, size_t hot_lines) {
  constexpr size_t kTopFunctions = 20;
  Symbolizer symbolizer;  // each address looked up once for both
  json.BeginObject().Key("count").Uint(model.samples.size()).Key("top").BeginArray();
  if (model.samples.size() != 0) {
    const SampleSummary summary = SummarizeSamples(model, symbolizer, {});
    for (size_t i = 0; i < summary.functions.size() && i < kTopFunctions; ++i) {
      const FunctionSamples& f = summary.functions[i];
      if (f.self_count == 0) break;
      json.BeginObject()
          .Key("function")
          .String(f.function)
          .Key("module")
          .String(f.module)
          .Key("file")
          .String(f.file)
          .Key("line")
          .Uint(f.line)
          .Key("self_count")
          .Uint(f.self_count)
          .Key("total_count")
          .Uint(f.total_count)
          .EndObject();
    }
  }
  json.EndArray().Key("hot_lines").BeginArray();
  if (model.samples.size() != 0) {
    const LineSummary lines = SummarizeLines(model, symbolizer, {});
    for (size_t i = 0; i < lines.lines.size() && i < hot_lines; ++i) {
      const LineSamples& l = lines.lines[i];
      json.BeginObject()
          .Key("file")
          .String(l.file)
          .Key("line")
          .Uint(l.line)
          .Key("function")
          .String(l.function)
          .Key("module")
          .String(l.module)
          .Key("self_count")
          .Uint(l.self_count)
          .Key("total_count")
          .Uint(l.total_count)
          .EndObject();
    }
  }
  json.EndArray().EndObject();
}

void WriteContextSwitches(JsonWriter& json, const TraceModel& model) {
  json.BeginObject().Key("count").Uint(CountSwitchesOut(model)).Key("threads").BeginArray();
  const auto running = ComputeThreadRunning(model);
  std::vector<uint32_t> tids;
  for (const auto& [tid, thread] : running) tids.push_back(tid);
  std::sort(tids.begin(), tids.end());
  for (uint32_t tid : tids) {
    const ThreadRunning& thread = running.at(tid);
    int64_t running_ns = 0;
    for (const RunSpan& span : thread.spans) running_ns += model.DurationNs(span.begin_tick, span.end_tick);
    json.BeginObject()
        .Key("os_thread_id")
        .Uint(tid)
        .Key("switches")
        .Uint(thread.switches_out)
        .Key("preempted")
        .Uint(thread.preempted)
        .Key("running_ns")
        .Int(running_ns)
        .EndObject();
  }
  json.EndArray().EndObject();
}

// A program of the trace, with its clock against the trace's: the capture's, or in a
// merged trace the first capture's through the reference (`timeline`). Null where the
// trace holds no clock exchanges (a program that wrote its own file, an older trace).
// What the program ran on and with (ProgramEnvironment), as members of the open object.
void WriteEnvironment(JsonWriter& json, const ProgramInfo& program) {
  json.Key("system")
      .String(program.system)
      .Key("cpu")
      .String(program.cpu)
      .Key("logical_cpus")
      .Uint(program.logical_cpus)
      .Key("memory_bytes")
      .Uint(program.memory_bytes)
      .Key("settings")
      .String(program.settings);
}

void WriteProcess(JsonWriter& json, const TraceModel& model, const ProcessTimeline* timeline) {
  const HostClockModel clock(model.host_clock_exchanges);
  const std::optional<HostClockSummary> summary =
      timeline != nullptr && timeline->through_reference() ? timeline->Summary() : SummarizeHostClock(clock);
  json.BeginObject();
  json.Key("name").String(model.program.name).Key("pid").Uint(model.program.pid);
  json.Key("host").String(model.program.host).Key("rank");
  if (model.program.rank >= 0) {
    json.Int(model.program.rank);
  } else {
    json.Null();
  }
  WriteEnvironment(json, model.program);
  if (summary) {
    json.Key("clock_offset_ns").Int(summary->offset_ns).Key("clock_drift_ppm");
    if (summary->drift_ppm) {
      json.Number(*summary->drift_ppm);
    } else {
      json.Null();
    }
    json.Key("clock_uncertainty_ns").Uint(summary->uncertainty_ns);
  } else {
    json.Key("clock_offset_ns").Null().Key("clock_drift_ppm").Null().Key("clock_uncertainty_ns").Null();
  }
  // False for a program of a merged trace that could not be placed against the others.
  json.Key("clock_aligned").Bool(timeline == nullptr || timeline->aligned());
  json.Key("clock_exchanges").Uint(clock.exchanges()).Key("clock_epochs").Uint(clock.epochs().size());
  json.Key("clock_rejected").Uint(clock.rejected()).Key("clock_contradicted").Uint(clock.contradicted());
  json.Key("threads").Uint(model.threads.size()).Key("zones").Uint(model.zone_count);
  json.EndObject();
}

// The programs compared: zones in several of them, and the slowest program per frame.
void WriteProcessComparison(JsonWriter& json, const std::vector<const TraceModel*>& processes,
                            const std::vector<std::vector<ZoneStatistics>>& stats) {
  auto identify = [&](size_t p) {
    json.Key("pid").Uint(processes[p]->program.pid).Key("rank");
    if (processes[p]->program.rank >= 0) {
      json.Int(processes[p]->program.rank);
    } else {
      json.Null();
    }
  };
  json.Key("across_processes").BeginObject().Key("zones").BeginArray();
  for (const CrossProcessZone& z : CompareProcessZones(processes, stats)) {
    json.BeginObject().Key("name").String(z.name).Key("processes").Uint(z.processes.size());
    json.Key("fastest_mean_ns")
        .Number(z.mean_ns[z.fastest])
        .Key("slowest_mean_ns")
        .Number(z.mean_ns[z.slowest]);
    json.Key("spread_ns").Number(z.spread_ns()).Key("slowest").BeginObject();
    identify(z.processes[z.slowest]);
    json.EndObject().EndObject();
  }
  json.EndArray();
  const SlowestPerFrame frames = CompareProcessFrames(processes);
  json.Key("frames").BeginObject().Key("steps").Uint(frames.frames).Key("slowest").BeginArray();
  for (size_t p = 0; p < processes.size(); ++p) {
    if (frames.slowest.empty() || frames.slowest[p] == 0) continue;
    json.BeginObject();
    identify(p);
    json.Key("steps").Uint(frames.slowest[p]).Key("worst_lag_ns").Int(frames.worst_lag_ns[p]).EndObject();
  }
  json.EndArray().EndObject().EndObject();
}

void WriteDiagnostics(JsonWriter& json, const Diagnostics& d) {
  json.BeginObject();
  const std::pair<const char*, uint64_t> counts[] = {
      {"zone_ends_without_begin", d.zone_ends_without_begin},
      {"attributes_without_zone", d.attributes_without_zone},
      {"events_without_thread", d.events_without_thread},
      {"clamped_zone_ends", d.clamped_zone_ends},
      {"invalid_ids", d.invalid_ids},
      {"frame_ends_without_begin", d.frame_ends_without_begin},
      {"gpu_events_for_unknown_context", d.gpu_events_for_unknown_context},
      {"gpu_queries_reused_before_time", d.gpu_queries_reused_before_time},
      {"gpu_rejected_calibrations", d.gpu_rejected_calibrations},
      {"gpu_zone_ends_without_begin", d.gpu_zone_ends_without_begin},
      {"counter_results_dropped", d.counter_results_dropped},
      {"memory_absurd_sizes", d.memory_absurd_sizes},
      {"memory_allocations_over_live", d.memory_allocations_over_live},
      {"lock_releases_without_hold", d.lock_releases_without_hold},
      {"callstacks_cut", d.callstacks_cut},
      {"callstacks_without_event", d.callstacks_without_event},
      {"clock_samples_without_reply", d.clock_samples_without_reply},
      {"capture_clocks_rejected", d.capture_clocks_rejected},
  };
  for (const auto& [name, count] : counts) json.Key(name).Uint(count);
  json.EndObject();
}

}  // namespace

void WriteJsonReport(const TraceModel& model, std::ostream& out,
                     const std::vector<const TraceModel*>& processes, size_t hot_lines,
                     const std::vector<std::vector<ZoneStatistics>>* zone_statistics) {
  std::vector<std::vector<ZoneStatistics>> computed;
  if (zone_statistics == nullptr) {
    if (processes.empty()) computed.push_back(ComputeZoneStatistics(model));
    for (const TraceModel* process : processes) computed.push_back(ComputeZoneStatistics(*process));
    zone_statistics = &computed;
  }
  JsonWriter json(out);
  const bool has_events = model.first_tick != kOpenZone;
  json.BeginObject();
  json.Key("program")
      .BeginObject()
      .Key("name")
      .String(model.program.name)
      .Key("pid")
      .Uint(model.program.pid)
      .Key("start_unix_ns")
      .Int(model.program.start_unix_ns);
  WriteEnvironment(json, model.program);
  json.EndObject();
  json.Key("processes").BeginArray();
  if (processes.size() <= 1) WriteProcess(json, processes.empty() ? model : *processes[0], nullptr);
  if (processes.size() > 1) {
    const std::vector<ProcessTimeline> timelines = ProcessTimeline::Of(processes);
    for (size_t i = 0; i < processes.size(); ++i) WriteProcess(json, *processes[i], &timelines[i]);
  }
  json.EndArray();
  if (processes.size() > 1) WriteProcessComparison(json, processes, *zone_statistics);
  json.Key("duration_ns").Int(has_events ? model.DurationNs(model.first_tick, model.last_tick) : 0);
  json.Key("threads").BeginArray();
  for (const ThreadTimeline& thread : model.threads) {
    json.BeginObject()
        .Key("id")
        .Uint(thread.id)
        .Key("os_thread_id")
        .Uint(thread.os_thread_id)
        .Key("name")
        .String(thread.name)
        .Key("library")
        .Bool(thread.library)
        .Key("zones")
        .Uint(thread.zone_count())
        .EndObject();
  }
  json.EndArray();
  // False: the zones were read from the file, not held (--memory-limit); a median with
  // a median_error_ns is then within that many ns.
  json.Key("zones_held").Bool(model.zones_held);
  json.Key("zones");
  WriteZones(json, model, zone_statistics->front());
  json.Key("gpu_zones");
  WriteZones(json, model, ComputeGpuZoneStatistics(model));
  json.Key("frames");
  WriteFrames(json, model);
  json.Key("plots").BeginArray();
  for (const auto& [id, plot] : model.plots) {
    json.BeginObject()
        .Key("name")
        .String(plot.name.empty() ? "plot " + std::to_string(id) : plot.name)
        .Key("values")
        .Uint(plot.points.size())
        .EndObject();
  }
  json.EndArray();
  json.Key("messages").BeginArray();
  for (const LogMessage& message : model.messages) {
    json.BeginObject()
        .Key("time_ns")
        .Int(model.RelativeNs(message.tick))
        .Key("severity")
        .String(protocol::SeverityName(message.severity))
        .Key("thread")
        .Uint(message.thread_id)
        .Key("text")
        .String(message.text)
        .EndObject();
  }
  json.EndArray();
  json.Key("gpu_contexts");
  WriteGpuContexts(json, model);
  json.Key("memory");
  WriteMemory(json, model);
  json.Key("locks");
  WriteLocks(json, model);
  json.Key("samples");
  WriteSamples(json, model, hot_lines);
  json.Key("context_switches");
  WriteContextSwitches(json, model);
  json.Key("dropped_events").Uint(model.diagnostics.client_dropped_events);
  json.Key("ended_cleanly").Bool(model.diagnostics.ended_cleanly);
  json.Key("diagnostics");
  WriteDiagnostics(json, model.diagnostics);
  json.EndObject();
  out << "\n";
}

void WriteRegressionJson(const RegressionReport& report, std::ostream& out) {
  static constexpr const char* kKinds[] = {"zone", "gpu_zone", "frames"};
  static constexpr const char* kVerdicts[] = {"same", "slower", "faster", "only_old", "only_new"};
  JsonWriter json(out);
  json.BeginObject()
      .Key("threshold")
      .Number(report.options.threshold)
      .Key("min_change_ns")
      .Number(report.options.min_change_ns)
      .Key("confidence")
      .Number(report.options.confidence)
      .Key("interval_confidence")
      .Number(report.interval_confidence)
      .Key("old_zones")
      .Uint(report.old_zones)
      .Key("new_zones")
      .Uint(report.new_zones)
      .Key("compared")
      .Uint(report.compared)
      .Key("slower")
      .Uint(report.slower)
      .Key("faster")
      .Uint(report.faster);
  json.Key("rows").BeginArray();
  for (const RegressionRow& row : report.rows) {
    json.BeginObject()
        .Key("verdict")
        .String(kVerdicts[size_t(row.verdict)])
        .Key("kind")
        .String(kKinds[size_t(row.kind)])
        .Key("name")
        .String(row.name)
        .Key("where")
        .String(row.where)
        .Key("old_count")
        .Uint(row.old_count)
        .Key("new_count")
        .Uint(row.new_count);
    const bool compared = row.old_count != 0 && row.new_count != 0;
    for (const auto& [key, c] : {std::pair{"median", &row.median}, {"p90", &row.p90}}) {
      json.Key(key);
      if (!compared) {
        json.Null();
        continue;
      }
      // null where a value is infinite: a side the zones are too few to bound, or a
      // change from 0 ns.
      json.BeginObject()
          .Key("old_ns")
          .Int(c->old_ns)
          .Key("new_ns")
          .Int(c->new_ns)
          .Key("change")
          .Number(c->change)
          .Key("low")
          .Number(c->low)
          .Key("high")
          .Number(c->high)
          .Key("low_ns")
          .Number(c->low_ns)
          .Key("high_ns")
          .Number(c->high_ns)
          .EndObject();
    }
    json.EndObject();
  }
  json.EndArray().EndObject();
  out << '\n';
}

void WriteMemoryTreeJson(const TraceModel& model, const MemoryPool& pool, bool bottom_up, std::ostream& out) {
  Symbolizer symbolizer;
  const AllocationTree tree = BuildAllocationTree(model, symbolizer, pool.id, bottom_up);
  JsonWriter json(out);
  json.BeginObject()
      .Key("pool")
      .String(pool.name)
      .Key("bottom_up")
      .Bool(bottom_up)
      .Key("without_stack")
      .Uint(tree.without_stack)
      .Key("nodes")
      .BeginArray();
  for (const AllocationTree::Node& node : tree.nodes) {
    json.BeginObject()
        .Key("function")
        .String(tree.functions[node.function])
        .Key("parent")
        .Uint(node.parent)
        .Key("count")
        .Uint(node.count)
        .Key("bytes")
        .Uint(node.bytes)
        .Key("alive_count")
        .Uint(node.alive_count)
        .Key("alive_bytes")
        .Uint(node.alive_bytes)
        .EndObject();
  }
  json.EndArray().EndObject();
  out << "\n";
}

}  // namespace gnomon::server
