#include "gnomon/server/report.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <sstream>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/counter_values.h"
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

const char* TimerName(uint8_t kind) {
  switch (static_cast<protocol::TimerKind>(kind)) {
    case protocol::TimerKind::kTsc:
      return "invariant TSC";
    case protocol::TimerKind::kMonotonicRaw:
      return "CLOCK_MONOTONIC_RAW";
  }
  return "unknown timer";
}

std::string ThreadLabel(const ThreadTimeline& thread) {
  std::string label = thread.name.empty() ? "thread " + std::to_string(thread.id) : Printable(thread.name);
  return label + " (tid " + std::to_string(thread.os_thread_id) + ")";
}

std::string Location(const SourceLocation& location) {
  return location.is_defined ? Printable(location.ShortLabel()) : "(undefined)";
}

const char* GpuApiName(uint8_t api) {
  switch (static_cast<protocol::GpuApi>(api)) {
    case protocol::GpuApi::kVulkan:
      return "Vulkan";
    case protocol::GpuApi::kOpenGL:
      return "OpenGL";
    case protocol::GpuApi::kCuda:
      return "CUDA";
    case protocol::GpuApi::kUnknown:
      break;
  }
  return "GPU";
}

void PrintGpuContexts(const TraceModel& model, std::ostream& out) {
  out << "GPU        " << model.gpu_contexts.size() << " context(s)\n";
  for (const auto& [id, context] : model.gpu_contexts) {
    uint64_t untimed = 0, extrapolated = 0;
    for (size_t i = 0; i < context.zones.size(); ++i) {
      const GpuZone& zone = context.zones[i];
      if (!zone.is_timed()) {
        ++untimed;
      } else if (context.clock.Map(zone.gpu_begin, zone.epoch).extrapolated ||
                 context.clock.Map(zone.gpu_end, zone.epoch).extrapolated) {
        ++extrapolated;
      }
    }
    const GpuClockModel& clock = context.clock;
    auto bound = [](uint32_t ns) { return ns == UINT32_MAX ? std::string("unknown") : FormatDuration(ns); };
    double wander = 0;
    for (double r : clock.Residuals()) wander += r * r;
    wander = clock.knots().empty() ? 0 : std::sqrt(wander / double(clock.knots().size()));
    out << "  " << Printable(context.label())
        << Format(
               " (%s, context %u): %zu zones (%llu without GPU times), period %llu/%llu ns, %u-bit counter\n"
               "    clock: %zu calibrations (%zu rejected), drift %+.3f ppm, wander %s rms, %s\n"
               "    placement: +/- %s relative (from the calibrations' scatter), %s absolute%s\n",
               GpuApiName(context.api), id, context.zones.size(), static_cast<unsigned long long>(untimed),
               static_cast<unsigned long long>(clock.period().numerator_ns),
               static_cast<unsigned long long>(clock.period().denominator), unsigned{clock.valid_bits()},
               clock.sample_count(), clock.rejected_count(), clock.drift_ppm(),
               FormatDuration(wander).c_str(),
               (context.flags & protocol::kGpuContextCalibrated)            ? "calibrated timestamps"
               : (context.flags & protocol::kGpuContextFallbackCalibration) ? "bracketed-read calibration"
                                                                            : "calibration source not stated",
               bound(clock.current_relative_ns()).c_str(),
               FormatBound(clock.current_early_ns(), clock.current_late_ns()).c_str(),
               clock.current_early_ns() < clock.current_absolute_ns() ||
                       clock.current_late_ns() < clock.current_absolute_ns()
                   ? " (narrowed by brackets)"
                   : "");
    if (const GpuClockModel::OffsetRange range = clock.offset_range(); range.brackets > 0) {
      out << "    brackets: " << range.brackets << " GPU time(s) seen from the CPU"
          << ", " << DescribeBrackets(range) << "\n";
    }
    if (const GpuClockModel::Flags& flags = clock.flags(); flags.total() > 0) {
      out << Format(
          "    %zu calibration(s) flagged: %zu stated 0 ns, %zu absurd, %zu contradicted by the scatter, %zu "
          "set "
          "aside as outliers (bounds follow the data)\n",
          flags.total(), flags.zero_uncertainty, flags.absurd_uncertainty, flags.contradicted,
          flags.set_aside);
    }
    if (const GpuClockModel::Flags& flags = clock.flags(); flags.bad_brackets > 0) {
      out << "    " << flags.bad_brackets
          << " bracket(s) rejected (no side known, ending before they begin, or past the 4,096 waiting "
             "beyond the calibrations)\n";
    }
    if (extrapolated > 0 || context.unmatched_gpu_times > 0) {
      out << "    " << extrapolated
          << " zone(s) outside the calibrated span (extrapolated, wider uncertainty), "
          << context.unmatched_gpu_times << " GPU time(s) for queries no zone used\n";
    }
  }
}

}  // namespace

std::string DescribeBrackets(const GpuClockModel::OffsetRange& range) {
  if (range.contradicted) return "contradicting each other: not used";
  std::string text = "the offset within " + FormatRange(range.min_ns, range.max_ns);
  const double correction = range.correction_ns();
  if (correction != 0) {
    text += ": every time moved " + FormatDuration(std::fabs(correction)) +
            (correction < 0 ? " earlier" : " later");
  }
  return text;
}

// The program's clock against the capture's, from the connection's clock exchanges.

std::string ProcessLabel(const TraceModel& model) {
  std::string label = Printable(model.program.name) + " (pid " + std::to_string(model.program.pid);
  if (!model.program.host.empty()) label += ", host " + Printable(model.program.host);
  if (model.program.rank >= 0) label += ", rank " + std::to_string(model.program.rank);
  return label + ")";
}

bool HasEnvironment(const ProgramInfo& program) {
  return !program.system.empty() || !program.cpu.empty() || program.logical_cpus > 0 ||
         program.memory_bytes > 0 || !program.settings.empty();
}

std::string SystemLabel(const ProgramInfo& program) {
  if (!HasEnvironment(program)) return "";
  std::string label = Printable(program.system);
  auto part = [&label](const std::string& text) { label += (label.empty() ? "" : ", ") + text; };
  if (program.logical_cpus > 0) part(Format("%u logical CPUs", program.logical_cpus));
  if (!program.cpu.empty()) {
    if (program.logical_cpus > 0) {
      label += " (" + Printable(program.cpu) + ")";
    } else {
      part(Printable(program.cpu));
    }
  }
  if (program.memory_bytes > 0) part(FormatBytes(program.memory_bytes));
  return label.empty() ? "unknown" : label;
}

std::string SettingsLabel(const ProgramInfo& program) {
  if (program.settings.empty()) return "none";
  std::string label;
  size_t from = 0;
  while (from <= program.settings.size()) {
    const size_t end = std::min(program.settings.find('\n', from), program.settings.size());
    if (end > from)
      label += (label.empty() ? "" : ", ") + Printable(program.settings.substr(from, end - from));
    from = end + 1;
  }
  return label;
}

void PrintSummary(const TraceModel& model, std::ostream& out, size_t messages) {
  const bool has_events = model.first_tick != kOpenZone;
  const int64_t duration = has_events ? model.DurationNs(model.first_tick, model.last_tick) : 0;
  out << "Program    ";
  if (model.has_program_info) {
    out << ProcessLabel(model) << "\n";
  } else {
    out << "(unknown: the stream had no AppInfo)\n";
  }
  if (HasEnvironment(model.program)) {
    out << "System     " << SystemLabel(model.program) << "\n";
    out << "Settings   " << SettingsLabel(model.program) << "\n";
  }
  if (const std::string host_clock = HostClockLabel(model); !host_clock.empty()) {
    out << "Host clock " << host_clock << "\n";
  }
  out << "Timer      " << TimerLabel(model) << "\n";
  out << "Duration   " << FormatDuration(double(duration)) << "\n";
  // The program's threads; the library's own (its sampler, the CUDA collector) in one
  // line after them.
  std::string library;
  size_t library_count = 0;
  for (const ThreadTimeline& thread : model.threads) {
    if (!thread.library) continue;
    library += (library_count++ == 0 ? "" : ", ") + Printable(model.ThreadName(thread.id));
  }
  out << "Threads    " << model.threads.size() - library_count << "\n";
  for (const ThreadTimeline& thread : model.threads) {
    if (!thread.library) out << "  " << ThreadLabel(thread) << ": " << thread.zone_count() << " zones\n";
  }
  if (library_count > 0) out << "  and Gnomon's own: " << library << "\n";
  if (!model.gpu_contexts.empty()) PrintGpuContexts(model, out);
  const uint64_t open = model.open_zone_count;
  out << "Zones      " << model.zone_count << " (" << open << " unfinished, "
      << model.diagnostics.zone_ends_without_begin << " ends without a begin)\n";
  out << "Frames     " << model.frames.size() << " series\n";
  for (const auto& [id, series] : model.frames) {
    out << "  " << Printable(model.FrameSeriesName(id)) << ": " << series.frame_count()
        << (series.frame_count() == 1 ? " frame" : " frames");
    if (series.continuous()) out << " (" << series.marks.size() << " marks)";
    const FrameTimeSummary s = SummarizeFrameTimes(model, series);
    if (s.count > 0) {
      out << ", frame time mean " << FormatDuration(s.mean_ns) << ", min " << FormatDuration(double(s.min_ns))
          << ", max " << FormatDuration(double(s.max_ns)) << "\n    p50 " << FormatDuration(double(s.p50_ns))
          << ", p90 " << FormatDuration(double(s.p90_ns)) << ", p99 " << FormatDuration(double(s.p99_ns))
          << "; frames from min to max in " << FrameTimeSummary::kFrameBins << " equal bins:";
      for (uint64_t bin : s.bins) out << " " << bin;
    }
    out << "\n";
  }
  out << "Plots      " << model.plots.size() << "\n";
  for (const auto& [id, plot] : model.plots) {
    out << "  " << (plot.name.empty() ? "plot " + std::to_string(id) : Printable(plot.name)) << ": "
        << plot.points.size() << " values\n";
  }
  out << "Messages   " << model.messages.size() << "\n";
  for (size_t i = 0; i < model.messages.size() && i < messages; ++i) {
    const LogMessage& message = model.messages[i];
    out << "  " << Format("%12.6f s", double(model.RelativeNs(message.tick)) / 1e9) << "  "
        << protocol::SeverityName(message.severity) << "  [" << Printable(model.ThreadName(message.thread_id))
        << "] " << Printable(message.text) << "\n";
  }
  if (model.messages.size() > messages) {
    out << "  ... and " << model.messages.size() - messages
        << " more (--all-messages prints every one; --csv --messages lists them)\n";
  }
  out << "Dropped    " << DroppedLabel(model) << "\n";
  out << "Stream     " << StreamLabel(model) << "\n";
}

std::string DroppedLabel(const TraceModel& model) {
  const uint64_t dropped = model.diagnostics.client_dropped_events;
  return std::to_string(dropped) + " event(s) dropped by the program" +
         (dropped ? " (its event buffer was full; see GNOMON_BUFFER_POLICY and GNOMON_BUFFER_MB)" : "");
}

std::string TimerLabel(const TraceModel& model) {
  return std::string(TimerName(model.program.timer_kind)) + ", " +
         Format("%.6f GHz", 1.0 / model.clock.ns_per_tick()) + " fitted from " +
         std::to_string(model.clock.pairs().size()) + " calibration pair(s), residual " +
         FormatDuration(model.clock.ResidualRmsNs()) + " rms";
}

std::string HostClockLabel(const TraceModel& model) {
  if (model.host_clock_exchanges.empty()) return "";
  const HostClockModel clock(model.host_clock_exchanges);
  std::ostringstream out;
  if (const HostClockModel::Epoch* epoch = clock.main_epoch()) {
    out << "capture = program " << (epoch->offset_ns() < 0 ? "- " : "+ ")
        << FormatDuration(std::fabs(double(epoch->offset_ns())))
        << (epoch->drift_known() ? Format(", drift %+.3f ppm", epoch->drift_ppm)
                                 : ", both clocks taken to run at one rate (a rate is measured from 10 s of "
                                   "exchanges on)")
        << ", +/- " << FormatDuration(double(epoch->uncertainty_ns())) << " (" << clock.exchanges()
        << " exchange(s)";
  } else {
    out << "no usable exchange (" << clock.exchanges() << " exchange(s)";
  }
  if (clock.epochs().size() > 1) out << ", " << clock.epochs().size() << " epochs: the clock stepped";
  if (clock.rejected() > 0) out << ", " << clock.rejected() << " rejected as impossible";
  if (clock.contradicted() > 0) out << ", " << clock.contradicted() << " contradicted";
  out << ")";
  return out.str();
}

std::string StreamLabel(const TraceModel& model) {
  const Diagnostics& d = model.diagnostics;
  std::ostringstream out;
  out << (d.ended_cleanly ? "ended cleanly" : "ended without a goodbye (program killed, or capture stopped)");
  if (d.attributes_without_zone || d.events_without_thread || d.clamped_zone_ends || d.invalid_ids ||
      d.frame_ends_without_begin) {
    out << "; problems: " << d.attributes_without_zone << " attribute(s) without a zone, "
        << d.events_without_thread << " event(s) without a thread, " << d.clamped_zone_ends
        << " zone end(s) before their begin, " << d.invalid_ids << " invalid id(s), "
        << d.frame_ends_without_begin << " unmatched frame begin/end";
  }
  if (d.gpu_events_for_unknown_context || d.gpu_queries_reused_before_time || d.gpu_rejected_calibrations ||
      d.gpu_zone_ends_without_begin || d.counter_results_dropped) {
    out << "; GPU problems: " << d.gpu_events_for_unknown_context << " event(s) for unknown contexts, "
        << d.gpu_queries_reused_before_time << " query reuse(s) before their time came, "
        << d.gpu_rejected_calibrations << " rejected calibration(s), " << d.gpu_zone_ends_without_begin
        << " GPU zone end(s) without a begin, " << d.counter_results_dropped
        << " counter result(s) without their set or zone";
  }
  if (d.memory_absurd_sizes || d.memory_allocations_over_live || d.lock_releases_without_hold) {
    out << "; memory and lock problems: " << d.memory_absurd_sizes << " absurd allocation size(s), "
        << d.memory_allocations_over_live << " allocation(s) of a live address, "
        << d.lock_releases_without_hold << " lock release(s) without a hold";
  }
  if (d.callstacks_cut || d.callstacks_without_event) {
    out << "; call stack problems: " << d.callstacks_cut << " cut at " << kMaxCallstackDepth << " frames, "
        << d.callstacks_without_event << " without their zone or allocation";
  }
  return out.str();
}

void PrintStatisticsTable(const TraceModel& model, const std::vector<ZoneStatistics>& stats,
                          std::ostream& out) {
  constexpr size_t kMaxWidth = 40;
  size_t name_width = 4;
  size_t location_width = 8;
  for (const ZoneStatistics& s : stats) {
    const SourceLocation& location = model.Location(s.source_location);
    name_width = std::max(name_width, std::min(kMaxWidth, CountCharacters(Printable(location.name))));
    location_width = std::max(location_width, std::min(kMaxWidth, CountCharacters(Location(location))));
  }
  out << FitColumn("Zone", name_width) << "  " << FitColumn("Location", location_width)
      << Format(" %10s %11s %11s %11s %11s %11s %11s %11s\n", "Count", "Total", "Self", "Mean", "Median",
                "Min", "Max", "Std dev");
  for (const ZoneStatistics& s : stats) {
    const SourceLocation& location = model.Location(s.source_location);
    out << FitColumn(location.name, name_width) << "  " << FitColumn(Location(location), location_width)
        << Format(" %10" PRIu64 " %11s %11s %11s %11s %11s %11s %11s\n", s.count,
                  FormatDuration(double(s.total_ns)).c_str(), FormatDuration(double(s.self_ns)).c_str(),
                  FormatDuration(s.mean_ns).c_str(), FormatDuration(double(s.median_ns)).c_str(),
                  FormatDuration(double(s.min_ns)).c_str(), FormatDuration(double(s.max_ns)).c_str(),
                  FormatDuration(s.stddev_ns).c_str());
  }
  int64_t median_error = 0;
  for (const ZoneStatistics& s : stats) median_error = std::max(median_error, s.median_error_ns);
  if (median_error > 0) {
    out << "The zones were read from the file, not held (--memory-limit): every figure is exact but the "
           "median of a location of more than "
        << kExactMedianZones << " zones, within 0.4 % (at most " << FormatDuration(double(median_error))
        << ").\n";
  }
}

void PrintCounterStatistics(const TraceModel& model, std::ostream& out) {
  const std::vector<CounterStatistics> stats = ComputeCounterStatistics(model);
  if (stats.empty()) return;
  out << "\nGPU counters (per GPU zone source location; sums and means of " << stats.size() << " series)\n";
  out << FitColumn("Zone", 28) << "  " << FitColumn("Counter", 34)
      << Format(" %8s %16s %14s %14s %14s\n", "Samples", "Sum", "Mean", "Min", "Max");
  uint32_t last_location = UINT32_MAX;
  for (const CounterStatistics& s : stats) {
    const CounterSet& set = model.counter_sets.at(s.set_id);
    const std::string unit = CounterUnit(set, s.counter);
    const std::string zone = s.source_location == last_location ? "" : model.Location(s.source_location).name;
    last_location = s.source_location;
    const std::string name = set.CounterName(s.counter) + (unit.empty() ? "" : " (" + unit + ")");
    out << FitColumn(zone, 28) << "  " << FitColumn(name, 34)
        << Format(" %8" PRIu64 " %16.6g %14.6g %14.6g %14.6g\n", s.count, s.sum, s.mean, s.min, s.max);
  }
}

void PrintMemoryStatistics(const TraceModel& model, std::ostream& out, size_t limit) {
  std::vector<MemoryPoolStatistics> stats = ComputeMemoryStatistics(model);
  if (stats.empty()) return;
  std::stable_sort(stats.begin(), stats.end(),
                   [](const MemoryPoolStatistics& a, const MemoryPoolStatistics& b) {
                     return a.peak_bytes > b.peak_bytes;
                   });
  out << "\nMemory (" << stats.size() << " pool(s), by peak"
      << (stats.size() > limit ? ", the first " + std::to_string(limit) : std::string()) << ")\n";
  out << FitColumn("Pool", 24)
      << Format(" %12s %12s %12s %12s %12s %14s %12s\n", "Allocations", "Frees", "Unmatched", "Allocated",
                "Peak", "Never freed", "Bytes");
  for (size_t i = 0; i < stats.size() && i < limit; ++i) {
    const MemoryPoolStatistics& s = stats[i];
    out << FitColumn(s.name, 24)
        << Format(" %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12s %12s %14" PRIu64 " %12s\n", s.allocations,
                  s.frees, s.unmatched_frees, FormatBytes(s.allocated_bytes).c_str(),
                  FormatBytes(s.peak_bytes).c_str(), s.leaked_allocations,
                  FormatBytes(s.leaked_bytes).c_str());
  }
  out << "(Unmatched: frees of pointers no allocation explains, e.g. memory allocated before profiling "
         "started.)\n";
}

void PrintLockStatistics(const TraceModel& model, std::ostream& out, size_t limit) {
  const std::vector<LockStatistics> stats = ComputeLockStatistics(model);
  if (stats.empty()) return;
  out << "\nLocks (" << stats.size() << ", by total wait"
      << (stats.size() > limit ? ", the first " + std::to_string(limit) : std::string()) << ")\n";
  out << FitColumn("Lock", 24)
      << Format(" %12s %10s %8s %8s %11s %11s %11s %11s\n", "Acquired", "Contended", "Shared", "Threads",
                "Wait total", "Wait max", "Hold total", "Hold max");
  for (size_t i = 0; i < stats.size() && i < limit; ++i) {
    const LockStatistics& s = stats[i];
    out << FitColumn(s.name, 24)
        << Format(" %12" PRIu64 " %10" PRIu64 " %8" PRIu64 " %8u %11s %11s %11s %11s\n", s.acquisitions,
                  s.contended, s.shared, s.threads, FormatDuration(double(s.wait_total_ns)).c_str(),
                  FormatDuration(double(s.wait_max_ns)).c_str(),
                  FormatDuration(double(s.hold_total_ns)).c_str(),
                  FormatDuration(double(s.hold_max_ns)).c_str());
  }
}

namespace {

// A merged trace's programs against its timeline (the first capture's clock), the
// others' through their captures' readings of the common reference.
void PrintMergedClocks(const std::vector<const TraceModel*>& processes, std::ostream& out) {
  const std::vector<ProcessTimeline> timelines = ProcessTimeline::Of(processes);
  const bool merged = std::any_of(timelines.begin(), timelines.end(), [](const ProcessTimeline& t) {
    return t.through_reference() || !t.aligned();
  });
  if (!merged) return;
  out << "\nOne timeline: the first capture's clock; other captures' programs placed through their readings "
         "of "
         "CLOCK_REALTIME\n";
  for (size_t p = 0; p < processes.size(); ++p) {
    out << "  " << ProcessLabel(*processes[p]) << ": ";
    const std::optional<HostClockSummary> summary = timelines[p].Summary();
    if (!timelines[p].aligned() || !summary) {
      out << "not placed (its capture read no reference clock, or it made no clock exchanges): on its own "
             "clock\n";
      continue;
    }
    out << "timeline = program " << (summary->offset_ns < 0 ? "- " : "+ ")
        << FormatDuration(std::fabs(double(summary->offset_ns))) << ", +/- "
        << FormatDuration(double(summary->uncertainty_ns))
        << (timelines[p].through_reference() ? " (through the reference)" : " (the timeline's capture)")
        << "\n";
  }
}

}  // namespace

void PrintProcessComparison(const std::vector<const TraceModel*>& processes,
                            const std::vector<std::vector<ZoneStatistics>>& stats, std::ostream& out,
                            size_t limit) {
  PrintMergedClocks(processes, out);
  const std::vector<CrossProcessZone> zones = CompareProcessZones(processes, stats);
  const SlowestPerFrame frames = CompareProcessFrames(processes);
  if (zones.empty() && frames.frames == 0) return;
  if (!zones.empty()) {
    out << "\nAcross programs (" << zones.size() << " zone(s) in several programs, by spread of their means"
        << (zones.size() > limit ? ", the first " + std::to_string(limit) : std::string()) << ")\n";
    out << FitColumn("Zone", 24)
        << Format(" %8s %13s %13s %11s  %s\n", "Programs", "Fastest mean", "Slowest mean", "Spread",
                  "Slowest program");
    for (size_t i = 0; i < zones.size() && i < limit; ++i) {
      const CrossProcessZone& z = zones[i];
      out << FitColumn(Printable(z.name), 24)
          << Format(" %8zu %13s %13s %11s  %s\n", z.processes.size(),
                    FormatDuration(z.mean_ns[z.fastest]).c_str(),
                    FormatDuration(z.mean_ns[z.slowest]).c_str(), FormatDuration(z.spread_ns()).c_str(),
                    ProcessLabel(*processes[z.processes[z.slowest]]).c_str());
    }
  }
  if (frames.frames > 0) {
    out << "\nFrames step by step (" << frames.frames << " steps compared): the slowest program\n";
    for (size_t p = 0; p < processes.size(); ++p) {
      if (frames.slowest[p] == 0) continue;
      out << "  " << ProcessLabel(*processes[p]) << ": slowest in " << frames.slowest[p] << " step(s), up to "
          << FormatDuration(double(frames.worst_lag_ns[p])) << " behind the next\n";
    }
  }
}

void PrintSampleStatistics(const TraceModel& model, std::ostream& out, size_t limit) {
  if (model.samples.size() == 0) return;
  Symbolizer symbolizer;
  const SampleSummary summary = SummarizeSamples(model, symbolizer, {});
  out << "\nSamples (" << summary.sample_count << ", the " << std::min(limit, summary.functions.size())
      << " functions most often running, of " << summary.functions.size() << ")\n";
  out << FitColumn("Function", 48)
      << Format(" %8s %7s %8s %7s  %s\n", "Self", "Self%", "Total", "Total%", "Where");
  const double all = double(std::max<uint64_t>(summary.sample_count, 1));
  for (size_t i = 0; i < summary.functions.size() && i < limit; ++i) {
    const FunctionSamples& f = summary.functions[i];
    if (f.self_count == 0) break;
    std::string where = f.module;
    if (!f.file.empty())
      where = f.file.substr(f.file.rfind('/') + 1) + ":" + std::to_string(f.line) + " (" + f.module + ")";
    out << FitColumn(ShortenSymbol(f.function, 48), 48)
        << Format(" %8" PRIu64 " %6.1f%% %8" PRIu64 " %6.1f%%  %s\n", f.self_count,
                  100.0 * double(f.self_count) / all, f.total_count, 100.0 * double(f.total_count) / all,
                  where.c_str());
  }
}

void PrintContextSwitches(const TraceModel& model, std::ostream& out, size_t limit) {
  if (model.context_switches.size() == 0) return;
  const auto running = ComputeThreadRunning(model);
  struct Row {
    std::string name;
    uint64_t switches_out = 0;
    uint64_t preempted = 0;
    double running_ns = 0;
  };
  std::vector<Row> rows;
  for (const auto& [tid, thread] : running) {
    // A thread that recorded nothing and is not the library's has no name in the trace.
    Row row{.name = "tid " + std::to_string(tid) + " (recorded nothing)",
            .switches_out = thread.switches_out,
            .preempted = thread.preempted};
    for (const ThreadTimeline& t : model.threads) {
      if (t.os_thread_id == tid) row.name = ThreadLabel(t) + (t.library ? ", Gnomon's" : "");
    }
    for (const RunSpan& span : thread.spans)
      row.running_ns += double(model.DurationNs(span.begin_tick, span.end_tick));
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.switches_out > b.switches_out; });
  out << "\nContext switches (" << CountSwitchesOut(model) << " times a thread was switched out, "
      << rows.size() << " thread(s)"
      << (rows.size() > limit ? ", the first " + std::to_string(limit) : std::string()) << ")\n";
  constexpr size_t kNameWidth = 44;  // "gnomon sender lane 7 (tid 4194304), Gnomon's"
  // Preempted: switched out while it could have run on (another thread took the CPU);
  // the other switches are waits (a sleep, a lock, I/O).
  out << FitColumn("Thread", kNameWidth)
      << Format(" %12s %10s %12s %9s\n", "Switches", "Preempted", "Running", "Running%");
  const double duration = double(std::max<int64_t>(model.DurationNs(model.first_tick, model.last_tick), 1));
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    out << FitColumn(rows[i].name, kNameWidth)
        << Format(" %12" PRIu64 " %10" PRIu64 " %12s %8.1f%%\n", rows[i].switches_out, rows[i].preempted,
                  FormatDuration(rows[i].running_ns).c_str(), 100.0 * rows[i].running_ns / duration);
  }
}

namespace {

const char* KindWord(RegressionRow::Kind kind) {
  switch (kind) {
    case RegressionRow::Kind::kCpuZone:
      return "zone";
    case RegressionRow::Kind::kGpuZone:
      return "GPU zone";
    case RegressionRow::Kind::kFrames:
      return "frames";
  }
  return "?";
}

const char* VerdictWord(RegressionRow::Verdict verdict) {
  switch (verdict) {
    case RegressionRow::Verdict::kSlower:
      return "SLOWER";
    case RegressionRow::Verdict::kFaster:
      return "FASTER";
    case RegressionRow::Verdict::kSame:
      return "same";
    case RegressionRow::Verdict::kOnlyOld:
      return "gone";
    case RegressionRow::Verdict::kOnlyNew:
      return "new";
  }
  return "?";
}

// "+10.2 %", "-inf" for a side not bounded.
std::string Percent(double change) {
  if (!std::isfinite(change)) return change > 0 ? "+inf" : "-inf";
  const double percent = std::fabs(change) < 0.0005 ? 0.0 : 100 * change;  // never "-0.0 %"
  return Format(std::fabs(change) < 10 ? "%+.1f %%" : "%+.0f %%", percent);
}

// "   100 us -> 110 us      +10.0 % [  +7.9 %,  +12.1 %]": 52 characters, or more for
// changes past +/-10,000 %.
std::string ChangeText(const QuantileChange& c) {
  return Format("%9s -> %-9s %8s [%8s, %8s]", FormatDuration(double(c.old_ns)).c_str(),
                FormatDuration(double(c.new_ns)).c_str(), Percent(c.change).c_str(), Percent(c.low).c_str(),
                Percent(c.high).c_str());
}

}  // namespace

void PrintRegressions(const RegressionReport& report, std::ostream& out) {
  const double threshold = 100 * report.options.threshold;
  out << Format("%zu compared: the zone locations and frame series in both traces (%" PRIu64
                " zones old, %" PRIu64 " new).\n",
                report.compared, report.old_zones, report.new_zones);
  out << Format(
      "A row changed when the interval of its median or its p90 lies wholly beyond +/-%g %% and +/-%g ns; "
      "all "
      "%zu intervals hold at once with %g %% confidence (no distribution assumed).\n",
      threshold, report.options.min_change_ns, 2 * report.compared, 100 * report.options.confidence);
  if (report.rows.empty()) return;
  constexpr size_t kMaxWidth = 40;
  size_t name_width = 4, where_width = 5;
  for (const RegressionRow& row : report.rows) {
    name_width = std::max(name_width, std::min(kMaxWidth, CountCharacters(Printable(row.name))));
    where_width = std::max(where_width, std::min(kMaxWidth, CountCharacters(Printable(row.where))));
  }
  out << "\n"
      << Format("%-7s %-8s ", "Change", "Kind") << FitColumn("Name", name_width) << "  "
      << FitColumn("Where", where_width)
      << Format(" %21s  %-52s  %s\n", "Count old -> new", "Median old -> new, change [interval]",
                "p90 old -> new, change [interval]");
  for (const RegressionRow& row : report.rows) {
    out << Format("%-7s %-8s ", VerdictWord(row.verdict), KindWord(row.kind))
        << FitColumn(row.name, name_width) << "  " << FitColumn(row.where, where_width);
    if (row.verdict == RegressionRow::Verdict::kOnlyOld || row.verdict == RegressionRow::Verdict::kOnlyNew) {
      out << Format(" %10" PRIu64 " -> %-7" PRIu64 "\n", row.old_count, row.new_count);
      continue;
    }
    out << Format(" %10" PRIu64 " -> %-7" PRIu64 "  %-52s  %s\n", row.old_count, row.new_count,
                  ChangeText(row.median).c_str(), ChangeText(row.p90).c_str());
  }
  out << Format("\n%zu slower and %zu faster beyond %g %%, of %zu compared.\n", report.slower, report.faster,
                threshold, report.compared);
}

}  // namespace gnomon::server
