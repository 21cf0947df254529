// gnomon-report: summary and zone statistics of a .gnomon trace file.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gnomon/protocol/settings.h"
#include "gnomon/server/chrome_export.h"
#include "gnomon/server/csv_export.h"
#include "gnomon/server/json_report.h"
#include "gnomon/server/perfetto_export.h"
#include "gnomon/server/regression.h"
#include "gnomon/server/report.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/streamed_statistics.h"
#include "gnomon/server/text.h"
#include "gnomon/server/trace_loader.h"

namespace {

constexpr const char* kUsage =
    R"(Usage: gnomon-report [--csv [--gpu] [--unwrap | --messages | --plots] [--filter TEXT [--case]]
                      [--sep S]] [--json OUT] [--chrome OUT] [--perfetto OUT] [--range A:B]
                      [--threads LIST] [--zones TEXT] [--all-messages] [--hot-lines N]
                      [--max-expansion N] [--memory-limit SIZE [--exact-medians]] FILE
       gnomon-report FILE --source FILE:LINE [--source-map OLD=NEW]...
       gnomon-report FILE --memory-tree POOL [--bottom-up] [--json OUT]
       gnomon-report NEW --compare OLD [--threshold PCT] [--min-change NS] [--confidence C]
                     [--json OUT]

Prints a summary of a Gnomon trace (program, duration, threads, zones, frames, plots,
messages, dropped events), a table of zone statistics per source location sorted by
total time, and the memory pools and locks when the trace has them. A trace of several
programs (gnomon-capture -a A -a B) reports each, with its clock against the capture's;
--json lists them all under "processes"; --chrome and --perfetto give each program its
own pid, all on the capture's clock; --csv gives every program's rows, each beginning
with its process and pid, times on that clock. A merged trace (gnomon-merge) is on the
first capture's clock.

  --hot-lines N    after the samples, the N source lines they found most often running
                   (self, and total: calls made from the line included); --json lists
                   them too (20 unless told)
  --source FILE:LINE
                   instead of the report, FILE's lines around LINE (10 each side), each
                   with its samples, read from where the trace says it was built. FILE
                   may be the path's end ("demo.cpp"); a file changed since its binary
                   was built is flagged
    --source-map OLD=NEW  read a file recorded under folder OLD from NEW instead (the
                   trace was built elsewhere); repeat for more folders
  --memory-tree POOL
                   instead of the report, the memory pool's allocations (by name or id)
                   as a call tree of the stacks they were made with (record with
                   GNOMON_CALLSTACK_DEPTH=8): bytes, count, and those still alive at the
                   end, per call path; --json OUT writes it as JSON
    --bottom-up    from the function that allocated out, instead of from main in
  --all-messages   the summary prints every message (by default the first 10, and how
                   many more there are)
  --csv            print a table as CSV instead (times in ns from the first event):
                   by default the CPU zone statistics per source location (count,
                   total, self, mean, median, min, max, standard deviation, and total
                   and self as a percentage of the trace's duration)
    --gpu          GPU zones instead of CPU zones (durations on the GPU's clock)
    --unwrap       every zone, not statistics: CPU (thread, name, source, depth, start,
                   duration, self time) or with --gpu GPU (context, name, source,
                   thread, start on the CPU timeline, duration, submit to start)
    --messages     every message (time, thread, severity, text)
    --plots        every plot value (plot, time, value)
    --filter TEXT  only rows whose zone name, message or plot name holds TEXT
    --case         the filter tells upper from lower case
    --sep S        the separator between fields (default ','; never a quote, a line
                   break, or what numbers are written with)
  --json OUT       write everything the report says as one JSON object to OUT ('-':
                   standard output, instead of the text report)
  --chrome OUT     also write the trace in Chrome trace-event JSON (opens in Perfetto's
                   UI); '-': standard output, instead of the text report
  --perfetto OUT   also write the trace in Perfetto's protobuf format (ui.perfetto.dev,
                   trace_processor): a fraction of the JSON's size, with a flow from
                   each GPU zone to where it was recorded; '-': standard output, instead
                   of the text report
  --chrome and --perfetto write only what these keep:
    --range A:B    only what overlaps A to B ms from the first event, or with units
                   ("4.5s:5s"; ns, us, ms, s, min); "A:" or ":B" leave a side open
    --threads LIST only these threads (names or OS thread ids, comma-separated): their
                   zones, messages, lock holds and waits, and GPU zones
    --zones TEXT   only the CPU and GPU zones whose name holds TEXT (any case)
  --compare OLD    the regression check: NEW against OLD, a trace of the same program
                   before the change. For each zone location (by name and file, GPU
                   zones apart) and each frame series in both, the median and the p90
                   of the durations in each, their change, and its confidence interval
                   (from order statistics: no distribution assumed). A row changed when
                   the interval of its median or p90 lies wholly beyond the threshold.
                   Prints the table (--json OUT: as JSON) and exits 4 when something got
                   slower, 5 when something got faster and nothing slower, 0 otherwise
    --threshold PCT
                   the least change that counts, in percent (default 5)
    --min-change NS
                   nor does a change of fewer nanoseconds count (default 10: a timer's
                   tick, a cache miss)
    --confidence C how sure the check must be, for all its intervals at once (default
                   0.99; from 0.5 to 0.999999)
  --memory-limit SIZE
                   the most memory the report may give the trace's zones (512M, 2G;
                   default an eighth of this machine's memory). A trace whose zones need
                   more is reported all the same: they are counted as the file loads, not
                   held, and their statistics are read from the file in one more pass.
                   Every figure is then exact but the median of a location of more than
                   4096 zones, within 0.4 % (the JSON's median_error_ns says by how much
                   at most): so for the report, --json and --csv's tables. --csv
                   --unwrap, --chrome, --perfetto and --compare (both traces) hold every
                   zone, within the limit given or else half this machine's memory:
                   past it they are refused, not tried (cut a big trace first with
                   gnomon-cut)
    --exact-medians
                   past the limit, every median exact all the same: looked for in the
                   bucket that holds it by more passes over the file (one for medians
                   under about 8 ms while few locations have many zones; more for longer
                   ones, or many such locations)
  --max-expansion N
                   load blocks that decompress to up to N times their size (default 1024;
                   no capture comes near it: past it a block is a decompression bomb or
                   damage, and is skipped with a warning)
  -h, --help       this text

A damaged file loads everything sound in it; what was wrong (blocks cut, lost, repeated,
out of order, corrupted, bytes after the end) is printed as a warning.

Exit codes: 0 ok (a damaged or truncated file still loads, with a warning); 1 bad command line;
2 the file cannot be read or is not a Gnomon trace (or, for an output that holds every
zone, its zones need more than the memory limit); 3 OUT cannot be written; with --compare,
4 a location or frame series got slower beyond the threshold, 5 one got faster and none slower,
6 the two traces have nothing in common to compare.
)";

// Writes to `path`, or standard output for "-"; false (with the reason said) when the
// file cannot be written.
bool WriteOutput(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    return bool(std::cout);
  }
  errno = 0;
  std::ofstream out(path, std::ios::binary);
  if (out) write(out);
  if (!out || !out.flush()) {
    std::fprintf(stderr, "gnomon-report: cannot write %s%s%s\n", path.c_str(), errno != 0 ? ": " : "",
                 errno != 0 ? std::strerror(errno) : "");
    return false;
  }
  std::fprintf(stderr, "gnomon-report: wrote %s\n", path.c_str());
  return true;
}

// The text report of one program.
void PrintReport(const gnomon::server::TraceModel& model,
                 const std::vector<gnomon::server::ZoneStatistics>& stats, size_t messages,
                 size_t hot_lines) {
  // (stats: of the zones held, or read from the file when they are not)
  gnomon::server::PrintSummary(model, std::cout, messages);
  std::cout << "\nZone statistics (" << stats.size() << " source locations, by total time)\n";
  gnomon::server::PrintStatisticsTable(model, stats, std::cout);
  if (!model.gpu_contexts.empty()) {
    const auto gpu_stats = gnomon::server::ComputeGpuZoneStatistics(model);
    std::cout << "\nGPU zone statistics (" << gpu_stats.size()
              << " source locations, by total GPU time, on the GPU's own clock)\n";
    gnomon::server::PrintStatisticsTable(model, gpu_stats, std::cout);
    gnomon::server::PrintCounterStatistics(model, std::cout);
  }
  gnomon::server::PrintMemoryStatistics(model, std::cout);
  gnomon::server::PrintLockStatistics(model, std::cout);
  gnomon::server::PrintSampleStatistics(model, std::cout);
  if (hot_lines > 0) gnomon::server::PrintHotLines(model, std::cout, hot_lines);
  gnomon::server::PrintContextSwitches(model, std::cout);
}

// A share written in percent ("5", "5%") or as a fraction ("0.99", with `fraction`), in
// [low, high]; none when it is not one.
std::optional<double> ParseShare(std::string_view text, bool fraction, double low, double high) {
  const bool percent = text.ends_with('%');
  if (percent) text.remove_suffix(1);
  const std::string number(text);
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || errno != 0 || !std::isfinite(value)) {
    return std::nullopt;
  }
  if (percent || !fraction) value /= 100;
  if (value < low || value > high) return std::nullopt;
  return value;
}

// Whether every program's zones are held (within --memory-limit).
bool AllZonesHeld(const gnomon::server::TraceSet& set) {
  return std::all_of(set.processes.begin(), set.processes.end(),
                     [](const gnomon::server::TraceProcess& p) { return p.model.zones_held; });
}

// The regression check of NEW against OLD (--compare); the exit code.

int CompareTraces(const gnomon::server::TraceSet& new_set, const std::string& old_path,
                  gnomon::server::LoadOptions load_options, const gnomon::server::RegressionOptions& options,
                  const std::string& json_path) {
  // Both held at once: OLD gets what NEW's zones leave of the limit.
  uint64_t new_bytes = 0;
  for (const auto& process : new_set.processes) new_bytes += process.model.zone_bytes();
  const uint64_t limit = load_options.zone_memory_limit;
  load_options.zone_memory_limit = limit > new_bytes ? limit - new_bytes : 1;
  gnomon::server::TraceSet old_set;
  auto loaded = gnomon::server::LoadTraceSet(old_path, old_set, load_options);
  if (!loaded.ok()) {
    std::fprintf(stderr, "gnomon-report: %s\n", loaded.status().message().c_str());
    return 2;
  }
  if (!loaded->warning.empty()) {
    std::fprintf(stderr, "gnomon-report: warning: %s: %s\n", old_path.c_str(), loaded->warning.c_str());
  }
  if (!AllZonesHeld(old_set)) {
    std::fprintf(
        stderr,
        "gnomon-report: %s: its zones need more than the memory limit leaves beside the new trace's (%s "
        "of %s), and --compare holds every zone of both: cut the part you need first (gnomon-cut %s "
        "--range A:B -o PART), or raise --memory-limit\n",
        old_path.c_str(), gnomon::server::FormatBytes(load_options.zone_memory_limit).c_str(),
        gnomon::server::FormatBytes(limit).c_str(), old_path.c_str());
    return 2;
  }
  auto programs = [](const gnomon::server::TraceSet& set) {
    std::vector<const gnomon::server::TraceModel*> models;
    for (const auto& process : set.processes) models.push_back(&process.model);
    return models;
  };
  const gnomon::server::RegressionReport report =
      gnomon::server::CompareForRegressions(programs(old_set), programs(new_set), options);
  if (json_path.empty()) {
    gnomon::server::PrintRegressions(report, std::cout);
  } else if (!WriteOutput(json_path,
                          [&](std::ostream& out) { gnomon::server::WriteRegressionJson(report, out); })) {
    return 3;
  }
  if (report.compared == 0) {
    std::fprintf(stderr,
                 "gnomon-report: nothing to compare: no zone location or frame series is in both traces "
                 "(are they of the same program?)\n");
    return 6;
  }
  return report.slower > 0 ? 4 : report.faster > 0 ? 5 : 0;
}

// The value after option argv[i]: none when there is none or the next word is itself
// an option ("--csv"), so that a forgotten value never swallows it.
const char* OptionValue(int argc, char** argv, int i) {
  if (i + 1 >= argc) return nullptr;
  const std::string_view next = argv[i + 1];
  return next.empty() || next.starts_with("--") ? nullptr : argv[i + 1];
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  std::string chrome_path;
  std::string json_path;
  std::string perfetto_path;
  bool csv = false;
  bool gpu = false, unwrap = false, messages = false, plots = false, csv_modifier = false;
  gnomon::server::CsvOptions csv_options;
  gnomon::server::ExportFilter export_filter;
  bool export_modifier = false;
  size_t summary_messages = gnomon::server::kSummaryMessages;
  gnomon::server::LoadOptions load_options;
  std::string compare_path;
  gnomon::server::RegressionOptions regression;
  bool regression_modifier = false;
  size_t hot_lines = 0;  // 0: no table of hot lines in the text report
  std::optional<uint64_t> memory_limit;
  bool exact_medians = false;
  std::string memory_tree;
  bool bottom_up = false;
  gnomon::server::SourceRequest source;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--csv") {
      csv = true;
    } else if (arg == "--all-messages") {
      summary_messages = SIZE_MAX;
    } else if (arg == "--gpu" || arg == "--unwrap" || arg == "--messages" || arg == "--plots" ||
               arg == "--case") {
      (arg == "--gpu"        ? gpu
       : arg == "--unwrap"   ? unwrap
       : arg == "--messages" ? messages
       : arg == "--plots"    ? plots
                             : csv_options.case_sensitive) = true;
      csv_modifier = true;
    } else if (arg == "--range" || arg == "--threads" || arg == "--zones") {
      if (OptionValue(argc, argv, i) == nullptr) {
        std::fprintf(stderr, "gnomon-report: %s needs a value\n\n%s", arg.c_str(), kUsage);
        return 1;
      }
      const std::string value = argv[++i];
      if (arg == "--range") {
        if (const std::string error = export_filter.ParseRange(value); !error.empty()) {
          std::fprintf(stderr, "gnomon-report: --range: %s\n", error.c_str());
          return 1;
        }
      } else if (arg == "--threads") {
        export_filter.ParseThreads(value);
      } else {
        export_filter.zones = value;
      }
      export_modifier = true;
    } else if (arg == "--filter" || arg == "--sep") {
      if (OptionValue(argc, argv, i) == nullptr) {
        std::fprintf(stderr, "gnomon-report: %s needs a value\n\n%s", arg.c_str(), kUsage);
        return 1;
      }
      (arg == "--filter" ? csv_options.filter : csv_options.separator) = argv[++i];
      if (const std::string bad = gnomon::server::CheckCsvSeparator(csv_options.separator);
          arg == "--sep" && !bad.empty()) {
        std::fprintf(stderr, "gnomon-report: --sep: %s\n", bad.c_str());
        return 1;
      }
      csv_modifier = true;
    } else if (arg == "--chrome" || arg == "--json" || arg == "--perfetto") {
      if (OptionValue(argc, argv, i) == nullptr) {
        std::fprintf(stderr, "gnomon-report: %s needs an output file (or '-')\n\n%s", arg.c_str(), kUsage);
        return 1;
      }
      (arg == "--chrome" ? chrome_path : arg == "--json" ? json_path : perfetto_path) = argv[++i];
    } else if (arg == "--min-change") {
      const auto n = i + 1 < argc ? gnomon::protocol::ParseUnsigned(argv[++i], 0, 1'000'000'000)
                                  : gnomon::protocol::Parsed<uint64_t>{std::nullopt, "a value is needed"};
      if (!n) {
        std::fprintf(stderr, "gnomon-report: --min-change: %s\n", n.error.c_str());
        return 1;
      }
      regression.min_change_ns = double(*n);
      regression_modifier = true;
    } else if (arg == "--compare" || arg == "--threshold" || arg == "--confidence") {
      if (OptionValue(argc, argv, i) == nullptr) {
        std::fprintf(stderr, "gnomon-report: %s needs a value\n\n%s", arg.c_str(), kUsage);
        return 1;
      }
      const std::string value = argv[++i];
      if (arg == "--compare") {
        compare_path = value;
        continue;
      }
      const bool threshold = arg == "--threshold";
      const auto share = threshold ? ParseShare(value, false, 0, 10) : ParseShare(value, true, 0.5, 0.999999);
      if (!share) {
        std::fprintf(stderr, "gnomon-report: %s: '%s' is not %s\n", arg.c_str(), value.c_str(),
                     threshold ? "a percentage from 0 to 1000 (e.g. 5 or 5%)"
                               : "a confidence from 0.5 to 0.999999 (e.g. 0.99 or 99%)");
        return 1;
      }
      (threshold ? regression.threshold : regression.confidence) = *share;
      regression_modifier = true;
    } else if (arg == "--hot-lines") {
      const auto n = i + 1 < argc ? gnomon::protocol::ParseUnsigned(argv[++i], 1, 1'000'000)
                                  : gnomon::protocol::Parsed<uint64_t>{std::nullopt, "a value is needed"};
      if (!n) {
        std::fprintf(stderr, "gnomon-report: --hot-lines: %s\n", n.error.c_str());
        return 1;
      }
      hot_lines = size_t(*n);
    } else if (arg == "--memory-limit") {
      const auto size = OptionValue(argc, argv, i) != nullptr
                            ? gnomon::protocol::ParseByteSize(argv[++i])
                            : gnomon::protocol::Parsed<uint64_t>{std::nullopt, "a size is needed (e.g. 2G)"};
      if (!size) {
        std::fprintf(stderr, "gnomon-report: --memory-limit: %s\n", size.error.c_str());
        return 1;
      }
      memory_limit = *size;
    } else if (arg == "--exact-medians") {
      exact_medians = true;
    } else if (arg == "--bottom-up") {
      bottom_up = true;
    } else if (arg == "--memory-tree") {
      if (OptionValue(argc, argv, i) == nullptr) {
        std::fprintf(stderr, "gnomon-report: --memory-tree needs a pool's name\n\n%s", kUsage);
        return 1;
      }
      memory_tree = argv[++i];
    } else if (arg == "--source" || arg == "--source-map") {
      if (OptionValue(argc, argv, i) == nullptr) {
        std::fprintf(stderr, "gnomon-report: %s needs a value\n\n%s", arg.c_str(), kUsage);
        return 1;
      }
      const std::string value = argv[++i];
      const size_t colon = value.rfind(':'), equals = value.find('=');
      if (arg == "--source-map") {
        if (equals == std::string::npos || equals == 0) {
          std::fprintf(stderr,
                       "gnomon-report: --source-map: '%s' is not OLD=NEW (a folder where the trace was "
                       "built, and where it is now)\n",
                       value.c_str());
          return 1;
        }
        source.source_map.emplace_back(value.substr(0, equals), value.substr(equals + 1));
        continue;
      }
      const auto line = colon == std::string::npos
                            ? gnomon::protocol::Parsed<uint64_t>{std::nullopt, "no line"}
                            : gnomon::protocol::ParseUnsigned(value.substr(colon + 1), 1, UINT32_MAX);
      if (colon == 0 || !line) {
        std::fprintf(stderr, "gnomon-report: --source: '%s' is not FILE:LINE (e.g. demo.cpp:120)\n",
                     value.c_str());
        return 1;
      }
      source.file = value.substr(0, colon);
      source.line = uint32_t(*line);
    } else if (arg == "--max-expansion") {
      const auto n = i + 1 < argc ? gnomon::protocol::ParseUnsigned(argv[++i], 1, UINT32_MAX)
                                  : gnomon::protocol::Parsed<uint64_t>{std::nullopt, "a value is needed"};
      if (!n) {
        std::fprintf(stderr, "gnomon-report: --max-expansion: %s\n", n.error.c_str());
        return 1;
      }
      load_options.max_expansion = uint32_t(*n);
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "gnomon-report: unknown option '%s'\n\n%s", arg.c_str(), kUsage);
      return 1;
    } else if (path.empty()) {
      path = arg;
    } else {
      std::fprintf(stderr, "gnomon-report: one trace file at a time ('%s' and '%s')\n", path.c_str(),
                   arg.c_str());
      return 1;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "gnomon-report: name a trace file\n\n%s", kUsage);
    return 1;
  }
  if (bottom_up && memory_tree.empty()) {
    std::fprintf(stderr, "gnomon-report: --bottom-up goes with --memory-tree POOL\n");
    return 1;
  }
  if (!memory_tree.empty() && (csv || !compare_path.empty() || !source.file.empty() || !chrome_path.empty() ||
                               !perfetto_path.empty() || hot_lines != 0)) {
    std::fprintf(
        stderr,
        "gnomon-report: --memory-tree prints a pool's tree alone (or --json): leave out the other tables\n");
    return 1;
  }
  if (!source.source_map.empty() && source.file.empty()) {
    std::fprintf(stderr, "gnomon-report: --source-map goes with --source FILE:LINE\n");
    return 1;
  }
  if (!source.file.empty() && (csv || !compare_path.empty() || !json_path.empty() || !chrome_path.empty() ||
                               !perfetto_path.empty() || hot_lines != 0)) {
    std::fprintf(stderr, "gnomon-report: --source prints a file's lines alone: leave out the other tables\n");
    return 1;
  }
  if (regression_modifier && compare_path.empty()) {
    std::fprintf(stderr, "gnomon-report: --threshold, --min-change and --confidence go with --compare OLD\n");
    return 1;
  }
  if (!compare_path.empty() && (csv || !chrome_path.empty() || !perfetto_path.empty())) {
    std::fprintf(stderr,
                 "gnomon-report: --compare gives its own table (or --json): leave out --csv, --chrome "
                 "and --perfetto\n");
    return 1;
  }
  if (export_modifier && chrome_path.empty() && perfetto_path.empty()) {
    std::fprintf(stderr, "gnomon-report: --range, --threads and --zones go with --chrome or --perfetto\n");
    return 1;
  }
  if (csv_modifier && !csv) {
    std::fprintf(stderr,
                 "gnomon-report: --gpu, --unwrap, --messages, --plots, --filter, --case and --sep "
                 "go with --csv\n");
    return 1;
  }
  if (int(unwrap) + int(messages) + int(plots) > 1 || (gpu && (messages || plots))) {
    std::fprintf(stderr,
                 "gnomon-report: one CSV table at a time: --unwrap (with or without --gpu), "
                 "--messages or --plots\n");
    return 1;
  }
  using Table = gnomon::server::CsvOptions::Table;
  csv_options.table = messages ? Table::kMessages
                      : plots  ? Table::kPlots
                      : unwrap ? (gpu ? Table::kGpuZones : Table::kZones)
                               : (gpu ? Table::kGpuZoneStatistics : Table::kZoneStatistics);
  // The report, its JSON and every CSV table but --unwrap's read the zones' statistics
  // from the file when the zones do not fit; the other outputs need every zone held.
  const bool streams = csv_options.table != Table::kZones && compare_path.empty() && memory_tree.empty() &&
                       source.file.empty() && chrome_path.empty() && perfetto_path.empty();
  if (exact_medians && (!streams || (csv && csv_options.table != Table::kZoneStatistics))) {
    std::fprintf(stderr,
                 "gnomon-report: --exact-medians goes with the report, --json and --csv's table of zone "
                 "statistics\n");
    return 1;
  }
  // The outputs that hold every zone are refused past their limit, not tried until memory
  // runs out: the one given, else half the machine's (four times the report's default).
  const bool holds_every_zone = csv_options.table == Table::kZones || !compare_path.empty() ||
                                !chrome_path.empty() || !perfetto_path.empty();
  load_options.zone_memory_limit = memory_limit.value_or(
      holds_every_zone ? 4 * gnomon::server::DefaultMemoryLimit() : gnomon::server::DefaultMemoryLimit());
  auto opened = gnomon::server::TraceSource::OpenFile(path);
  if (!opened.ok()) {
    std::fprintf(stderr, "gnomon-report: %s\n", opened.status().message().c_str());
    return 2;
  }
  const gnomon::server::TraceSource& trace = opened.value();
  gnomon::server::TraceSet set;
  auto loaded = gnomon::server::LoadTraceSet(trace, set, load_options);
  if (!loaded.ok()) {
    std::fprintf(stderr, "gnomon-report: %s\n", loaded.status().message().c_str());
    return 2;
  }
  if (!loaded->warning.empty()) std::fprintf(stderr, "gnomon-report: warning: %s\n", loaded->warning.c_str());
  if (holds_every_zone && !AllZonesHeld(set)) {
    std::fprintf(
        stderr,
        "gnomon-report: %s: its zones need more than the memory limit (%s), and %s holds every zone: "
        "cut the part you need first (gnomon-cut %s --range A:B -o PART), or raise --memory-limit\n",
        path.c_str(), gnomon::server::FormatBytes(load_options.zone_memory_limit).c_str(),
        !chrome_path.empty()     ? "--chrome"
        : !perfetto_path.empty() ? "--perfetto"
        : !compare_path.empty()  ? "--compare"
                                 : "--csv --unwrap",
        path.c_str());
    return 2;
  }
  if (!compare_path.empty()) return CompareTraces(set, compare_path, load_options, regression, json_path);
  if (!memory_tree.empty()) {  // the pool's tree alone
    const gnomon::server::MemoryPool* pool =
        gnomon::server::FindPool(set.processes.front().model, memory_tree);
    if (pool == nullptr || json_path.empty()) {
      const bool found =
          gnomon::server::PrintMemoryTree(set.processes.front().model, std::cout, memory_tree, bottom_up);
      return found ? 0 : 1;
    }
    return WriteOutput(json_path,
                       [&](std::ostream& out) {
                         gnomon::server::WriteMemoryTreeJson(set.processes.front().model, *pool, bottom_up,
                                                             out);
                       })
               ? 0
               : 3;
  }
  if (!source.file.empty()) {  // the file's lines alone
    for (const auto& process : set.processes) {
      if (gnomon::server::PrintSourceLines(process.model, std::cout, source)) return 0;
    }
    return 1;
  }
  // A capture of several programs: each is reported, and every table and export holds
  // them all.
  const gnomon::server::TraceModel& model = set.processes.front().model;
  std::vector<const gnomon::server::TraceModel*> processes;
  for (const auto& process : set.processes) processes.push_back(&process.model);
  const char* to_stdout = nullptr;  // the option that writes to standard output
  for (const auto& [option, output] :
       {std::pair{"--json", &json_path}, {"--chrome", &chrome_path}, {"--perfetto", &perfetto_path}}) {
    if (*output != "-") continue;
    if (to_stdout != nullptr) {
      std::fprintf(stderr, "gnomon-report: %s and %s cannot both write to standard output\n", to_stdout,
                   option);
      return 1;
    }
    to_stdout = option;
  }
  const bool text = to_stdout == nullptr;
  if (csv && !text) {
    std::fprintf(stderr,
                 "gnomon-report: --csv prints to standard output, and so does %s -: write that to a file\n",
                 to_stdout);
    return 1;
  }
  // The CPU zone statistics of every program, for the report and the JSON.
  std::vector<std::vector<gnomon::server::ZoneStatistics>> stats;
  if ((text && (!csv || csv_options.table == Table::kZoneStatistics)) || !json_path.empty()) {
    if (!model.zones_held) {
      std::fprintf(stderr,
                   "gnomon-report: %s: its zones need more than the memory limit (%s; --memory-limit): "
                   "counted, not held; their statistics come from reading the file again, %s\n",
                   path.c_str(), gnomon::server::FormatBytes(load_options.zone_memory_limit).c_str(),
                   exact_medians ? "every median exact (--exact-medians)"
                                 : "a median of more than 4096 zones within 0.4 % (--exact-medians: exact)");
      std::string note;
      auto streamed =
          gnomon::server::StreamZoneStatistics(trace, set, load_options,
                                               exact_medians ? gnomon::server::StreamedMedians::kExact
                                                             : gnomon::server::StreamedMedians::kWithinBucket,
                                               &note);
      if (!streamed.ok()) {
        std::fprintf(stderr, "gnomon-report: %s\n", streamed.status().message().c_str());
        return 2;
      }
      if (!note.empty()) std::fprintf(stderr, "gnomon-report: warning: %s\n", note.c_str());
      stats = std::move(streamed.value());
    } else {
      for (const auto* process : processes) stats.push_back(gnomon::server::ComputeZoneStatistics(*process));
    }
  }
  if (!text) {
    // The file goes to standard output alone.
  } else if (csv) {
    gnomon::server::WriteCsv(processes, csv_options, std::cout, stats.empty() ? nullptr : &stats);
  } else {
    for (size_t i = 0; i < processes.size(); ++i) {
      if (processes.size() > 1) {
        std::cout << (i > 0 ? "\n" : "") << "=== Program " << i + 1 << " of " << processes.size() << " ===\n";
      }
      PrintReport(*processes[i], stats[i], summary_messages, hot_lines);
    }
    if (processes.size() > 1) {
      std::cout << "\n=== The " << processes.size() << " programs compared ===\n";
      gnomon::server::PrintProcessComparison(processes, stats, std::cout);
    }
  }
  if (!json_path.empty() && !WriteOutput(json_path, [&](std::ostream& out) {
        gnomon::server::WriteJsonReport(model, out, processes, hot_lines > 0 ? hot_lines : 20,
                                        stats.empty() ? nullptr : &stats);
      })) {
    return 3;
  }
  if (!chrome_path.empty() && !WriteOutput(chrome_path, [&](std::ostream& out) {
        gnomon::server::WriteChromeTrace(processes, out, export_filter);
      })) {
    return 3;
  }
  if (!perfetto_path.empty() && !WriteOutput(perfetto_path, [&](std::ostream& out) {
        gnomon::server::WritePerfettoTrace(processes, out, export_filter);
      })) {
    return 3;
  }
  return 0;
}
