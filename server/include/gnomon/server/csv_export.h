// A trace as CSV tables, for spreadsheets and scripts (gnomon-report --csv):
//  - zone statistics per source location, CPU or GPU: count, total, self, mean, median,
//    min, max, standard deviation (ns), and total and self as a percentage of the
//    trace's duration;
//  - every closed zone (one still open at the end has no duration), CPU (thread, name,
//    source, depth, start, duration, self time) or timed GPU zone
//    (context, name, source, recording thread, start on the CPU timeline, duration on
//    the GPU's clock, the time from the CPU's submit to the GPU's start);
//  - every message (time, thread, severity, text) and every plot value.
// Times are ns from the trace's first event. Text is always quoted ("" inside); the
// separator is any string a reader can tell from the fields (CheckCsvSeparator). A
// filter keeps the rows whose zone name, message text or
// plot name holds it (ignoring case unless told).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "gnomon/server/statistics.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

struct CsvOptions {
  enum class Table { kZoneStatistics, kGpuZoneStatistics, kZones, kGpuZones, kMessages, kPlots };
  Table table = Table::kZoneStatistics;
  std::string separator = ",";
  std::string filter;  // empty: every row
  bool case_sensitive = false;
};

// "" when `separator` can part CSV fields; otherwise why not. It must not be empty,
// nor hold a quote or a line break (a reader takes those for a field's or a line's end),
// nor anything a number is written with (digits, letters, '.', '+', '-'): rows that
// a reader cannot split back into their fields are refused, never written.
std::string CheckCsvSeparator(const std::string& separator);

// The table the options name, with its header line. Zones come thread by thread (GPU:
// context by context), each in begin order.
void WriteCsv(const TraceModel& model, const CsvOptions& options, std::ostream& out);
// The same for every program of a trace, one after the other under one header. With
// several, each row begins with the program (`process`: its name, pid, host and rank)
// and its `pid` on the trace's timeline (ProcessTimeline), and times are on that
// timeline: ns from the earliest event of any program, each program's clock mapped
// onto the capture's. `zone_statistics`: each program's CPU zone statistics when known
// already (read from the file for a model whose zones are not held); nullptr: computed.
void WriteCsv(const std::vector<const TraceModel*>& processes, const CsvOptions& options, std::ostream& out,
              const std::vector<std::vector<ZoneStatistics>>* zone_statistics = nullptr);

// Statistics rows already computed (by ComputeZoneStatistics or ComputeGpuZoneStatistics),
// in the order given, filtered as the options say.
void WriteStatisticsCsv(const TraceModel& model, const std::vector<ZoneStatistics>& stats, std::ostream& out,
                        const CsvOptions& options = {});

}  // namespace gnomon::server
