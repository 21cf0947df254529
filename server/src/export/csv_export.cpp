#include "gnomon/server/csv_export.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <string_view>
#include <unordered_map>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/process_timeline.h"
#include "gnomon/server/text.h"

namespace gnomon::server {
namespace {

// A program of the table: its times go on the trace's timeline; where the trace holds
// several, every row names it (process, pid).
struct Program {
  const TraceModel& model;
  const ProcessTimeline& timeline;
  bool named = false;
  int64_t Ns(uint64_t tick) const { return timeline.Tick(tick); }
};

// One CSV line, its fields joined by the separator.
class Row {
 public:
  Row(std::ostream& out, const std::string& separator) : out_(out), separator_(separator) {}
  // A row of `program`: where the table holds several, it begins with the two columns
  // that name it.
  Row(std::ostream& out, const std::string& separator, const Program& program) : Row(out, separator) {
    if (program.named) Text(program.timeline.name()).Int(program.timeline.pid());
  }
  ~Row() { out_ << '\n'; }
  Row(const Row&) = delete;
  Row& operator=(const Row&) = delete;

  Row& Text(std::string_view text) {
    Next();
    out_ << CsvField(text);
    return *this;
  }
  template <typename Integer>
  Row& Int(Integer value) {
    Next();
    out_ << value;
    return *this;
  }
  Row& Real(double value, int digits) {
    Next();
    char text[64];
    std::snprintf(text, sizeof(text), "%.*f", digits, value);
    out_ << text;
    return *this;
  }
  Row& Exact(double value) {  // every digit a double holds
    Next();
    char text[64];
    std::snprintf(text, sizeof(text), "%.17g", value);
    out_ << text;
    return *this;
  }

 private:
  void Next() {
    if (!first_) out_ << separator_;
    first_ = false;
  }
  std::ostream& out_;
  const std::string& separator_;
  bool first_ = true;
};

void Header(std::ostream& out, const std::string& separator, bool named,
            std::initializer_list<const char*> names) {
  if (named) out << "process" << separator << "pid" << separator;
  bool first = true;
  for (const char* name : names) {
    if (!first) out << separator;
    out << name;
    first = false;
  }
  out << '\n';
}

bool Matches(std::string_view text, const CsvOptions& options) {
  return options.filter.empty() || ContainsText(text, options.filter, options.case_sensitive);
}

std::string ThreadName(const ThreadTimeline& thread) {
  return thread.name.empty() ? "thread " + std::to_string(thread.id) : thread.name;
}

void WriteZones(const Program& program, const CsvOptions& options, bool header, std::ostream& out) {
  const TraceModel& model = program.model;
  const std::string& sep = options.separator;
  if (header) {
    Header(out, sep, program.named,
           {"thread", "thread_id", "name", "file", "line", "depth", "start_ns", "duration_ns", "self_ns"});
  }
  std::vector<int64_t> child_ns;
  std::vector<std::pair<size_t, uint16_t>> open;  // index and depth of the enclosing zones
  for (const ThreadTimeline& thread : model.threads) {
    const ZoneArray& zones = thread.zones;
    // First the time each zone spent in its children, then the rows in begin order.
    child_ns.assign(zones.size(), 0);
    open.clear();
    for (size_t i = 0; i < zones.size(); ++i) {
      const Zone zone = zones[i];
      while (!open.empty() && open.back().second >= zone.depth) open.pop_back();
      if (!open.empty() && !zone.is_open()) {
        child_ns[open.back().first] += model.DurationNs(zone.begin_tick, zone.end_tick);
      }
      open.emplace_back(i, zone.depth);
    }
    const std::string name = ThreadName(thread);
    for (size_t i = 0; i < zones.size(); ++i) {
      const Zone zone = zones[i];
      if (zone.is_open()) continue;  // no duration to give
      const std::string& zone_name = model.ZoneName(thread, i);
      if (!Matches(zone_name, options)) continue;
      const SourceLocation& location = model.Location(zone.source_location);
      const int64_t duration = model.DurationNs(zone.begin_tick, zone.end_tick);
      Row(out, sep, program)
          .Text(name)
          .Int(thread.os_thread_id)
          .Text(zone_name)
          .Text(location.file)
          .Int(location.line)
          .Int(zone.depth)
          .Int(program.Ns(zone.begin_tick))
          .Int(duration)
          .Int(std::max<int64_t>(0, duration - child_ns[i]));  // damaged nesting: never below 0
    }
  }
}

void WriteGpuZones(const Program& program, const CsvOptions& options, bool header, std::ostream& out) {
  const TraceModel& model = program.model;
  const std::string& sep = options.separator;
  if (header) {
    Header(out, sep, program.named,
           {"context", "name", "file", "line", "thread", "start_ns", "duration_ns", "submit_to_start_ns"});
  }
  std::unordered_map<uint32_t, std::string> thread_names;
  for (const ThreadTimeline& thread : model.threads) thread_names[thread.id] = ThreadName(thread);
  for (const auto& [id, context] : model.gpu_contexts) {
    const std::string label = context.label();
    for (size_t i = 0; i < context.zones.size(); ++i) {
      const GpuZone& zone = context.zones[i];
      if (!zone.is_timed()) continue;  // its times never came
      const SourceLocation& location = model.Location(zone.source_location);
      if (!Matches(location.name, options)) continue;
      const auto mapped = model.MapGpuZone(context, zone);
      const auto thread = thread_names.find(zone.thread_id);
      Row(out, sep, program)
          .Text(label)
          .Text(location.name)
          .Text(location.file)
          .Int(location.line)
          .Text(thread != thread_names.end() ? thread->second : "thread " + std::to_string(zone.thread_id))
          .Int(program.timeline.Ns(mapped.begin_ns))
          .Int(zone.gpu_end >= zone.gpu_begin
                   ? std::llround(context.clock.TicksToNs(zone.gpu_end - zone.gpu_begin))
                   : 0)  // times out of order: no length
          .Int(mapped.begin_ns - model.clock.TickToNs(zone.cpu_begin_tick));
    }
  }
}

void WriteMessages(const Program& program, const CsvOptions& options, bool header, std::ostream& out) {
  const TraceModel& model = program.model;
  const std::string& sep = options.separator;
  if (header) Header(out, sep, program.named, {"time_ns", "thread", "severity", "text"});
  std::unordered_map<uint32_t, std::string> thread_names;
  for (const ThreadTimeline& thread : model.threads) thread_names[thread.id] = ThreadName(thread);
  for (const LogMessage& message : model.messages) {
    if (!Matches(message.text, options)) continue;
    const auto thread = thread_names.find(message.thread_id);
    Row(out, sep, program)
        .Int(program.Ns(message.tick))
        .Text(thread != thread_names.end() ? thread->second : "thread " + std::to_string(message.thread_id))
        .Text(protocol::SeverityName(message.severity))
        .Text(message.text);
  }
}

void WritePlots(const Program& program, const CsvOptions& options, bool header, std::ostream& out) {
  const TraceModel& model = program.model;
  const std::string& sep = options.separator;
  if (header) Header(out, sep, program.named, {"plot", "time_ns", "value"});
  for (const auto& [id, plot] : model.plots) {
    const std::string name = plot.name.empty() ? "plot " + std::to_string(id) : plot.name;
    if (!Matches(name, options)) continue;
    for (const auto& [tick, value] : plot.points)
      Row(out, sep, program).Text(name).Int(program.Ns(tick)).Exact(value);
  }
}

void WriteStatistics(const Program& program, const std::vector<ZoneStatistics>& stats,
                     const CsvOptions& options, bool header, std::ostream& out) {
  const TraceModel& model = program.model;
  const std::string& sep = options.separator;
  if (header) {
    Header(out, sep, program.named,
           {"name", "function", "file", "line", "count", "total_ns", "self_ns", "mean_ns", "median_ns",
            "min_ns", "max_ns", "stddev_ns", "total_perc", "self_perc"});
  }
  const int64_t duration =
      model.first_tick == kOpenZone ? 0 : model.DurationNs(model.first_tick, model.last_tick);
  auto percent = [&](int64_t ns) { return duration > 0 ? 100.0 * double(ns) / double(duration) : 0.0; };
  for (const ZoneStatistics& s : stats) {
    const SourceLocation& location = model.Location(s.source_location);
    if (!Matches(location.name, options)) continue;
    Row(out, sep, program)
        .Text(location.name)
        .Text(location.function)
        .Text(location.file)
        .Int(location.line)
        .Int(s.count)
        .Int(s.total_ns)
        .Int(s.self_ns)
        .Real(s.mean_ns, 1)
        .Int(s.median_ns)
        .Int(s.min_ns)
        .Int(s.max_ns)
        .Real(s.stddev_ns, 1)
        .Real(percent(s.total_ns), 3)
        .Real(percent(s.self_ns), 3);
  }
}

}  // namespace

void WriteStatisticsCsv(const TraceModel& model, const std::vector<ZoneStatistics>& stats, std::ostream& out,
                        const CsvOptions& options) {
  const ProcessTimeline timeline(model);
  WriteStatistics({.model = model, .timeline = timeline}, stats, options, true, out);
}

std::string CheckCsvSeparator(const std::string& separator) {
  if (separator.empty()) return "the separator is empty: choose another (',', ';', '|' or a tab)";
  for (const char c : separator) {
    const auto u = static_cast<unsigned char>(c);
    const char* why = c == '"'                                              ? "a quote, which encloses text"
                      : c == '\n' || c == '\r'                              ? "a line break, which ends a row"
                      : std::isalnum(u) || c == '.' || c == '+' || c == '-' ? "what numbers are written with"
                      : u < 0x20 && c != '\t'                               ? "a control character"
                                                                            : nullptr;
    if (why != nullptr) {
      return "the separator '" + Printable(separator) + "' holds " + why +
             ": a CSV reader could not split the fields back; choose another (',', ';', '|' or a tab)";
    }
  }
  return "";
}

void WriteCsv(const std::vector<const TraceModel*>& processes, const CsvOptions& options, std::ostream& out,
              const std::vector<std::vector<ZoneStatistics>>* zone_statistics) {
  const std::vector<ProcessTimeline> timelines = ProcessTimeline::Of(processes);
  for (size_t i = 0; i < processes.size(); ++i) {
    const Program program{.model = *processes[i], .timeline = timelines[i], .named = processes.size() > 1};
    const bool header = i == 0;
    switch (options.table) {
      case CsvOptions::Table::kZoneStatistics:
        WriteStatistics(
            program,
            zone_statistics != nullptr ? (*zone_statistics)[i] : ComputeZoneStatistics(program.model),
            options, header, out);
        break;
      case CsvOptions::Table::kGpuZoneStatistics:
        WriteStatistics(program, ComputeGpuZoneStatistics(program.model), options, header, out);
        break;
      case CsvOptions::Table::kZones:
        WriteZones(program, options, header, out);
        break;
      case CsvOptions::Table::kGpuZones:
        WriteGpuZones(program, options, header, out);
        break;
      case CsvOptions::Table::kMessages:
        WriteMessages(program, options, header, out);
        break;
      case CsvOptions::Table::kPlots:
        WritePlots(program, options, header, out);
        break;
    }
  }
}

void WriteCsv(const TraceModel& model, const CsvOptions& options, std::ostream& out) {
  WriteCsv(std::vector<const TraceModel*>{&model}, options, out);
}

}  // namespace gnomon::server
