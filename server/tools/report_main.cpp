// gnomon-report: summary and zone statistics of a .gnomon trace file.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "gnomon/protocol/settings.h"
#include "gnomon/server/chrome_export.h"
#include "gnomon/server/report.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/trace_file.h"

namespace {

constexpr const char* kUsage = R"(Usage: gnomon-report [--csv] [--chrome OUT.json] [--max-expansion N] FILE

Prints a summary of a Gnomon trace (program, duration, threads, zones, frames, plots,
messages, dropped events) and a table of zone statistics per source location, sorted
by total time.

  --csv            print only the CPU zone statistics table, as CSV (durations in ns)
  --chrome OUT     also write the trace in Chrome trace-event JSON (opens in Perfetto's UI)
  --max-expansion N
                   load blocks that decompress to up to N times their size (default 1024;
                   no capture comes near it: past it a block is a decompression bomb or
                   damage, and is skipped with a warning)
  -h, --help       this text

A damaged file loads everything sound in it; what was wrong (blocks cut, lost, repeated,
out of order, corrupted, bytes after the end) is printed as a warning.

Exit codes: 0 ok (a damaged or truncated file still loads, with a warning); 1 bad command line;
2 the file cannot be read or is not a Gnomon trace; 3 OUT cannot be written.
)";

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  std::string chrome_path;
  bool csv = false;
  gnomon::server::LoadOptions load_options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--csv") {
      csv = true;
    } else if (arg == "--chrome") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gnomon-report: --chrome needs an output file\n\n%s", kUsage);
        return 1;
      }
      chrome_path = argv[++i];
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
  gnomon::server::TraceModel model;
  auto loaded = gnomon::server::LoadTrace(path, model, load_options);
  if (!loaded.ok()) {
    std::fprintf(stderr, "gnomon-report: %s\n", loaded.status().message().c_str());
    return 2;
  }
  if (!loaded->warning.empty()) std::fprintf(stderr, "gnomon-report: warning: %s\n", loaded->warning.c_str());
  const auto stats = gnomon::server::ComputeZoneStatistics(model);
  if (csv) {
    gnomon::server::WriteStatisticsCsv(model, stats, std::cout);
  } else {
    gnomon::server::PrintSummary(model, std::cout);
    std::cout << "\nZone statistics (" << stats.size() << " source locations, by total time)\n";
    gnomon::server::PrintStatisticsTable(model, stats, std::cout);
    if (!model.gpu_contexts.empty()) {
      const auto gpu_stats = gnomon::server::ComputeGpuZoneStatistics(model);
      std::cout << "\nGPU zone statistics (" << gpu_stats.size()
                << " source locations, by total GPU time, on the GPU's own clock)\n";
      gnomon::server::PrintStatisticsTable(model, gpu_stats, std::cout);
      gnomon::server::PrintCounterStatistics(model, std::cout);
    }
  }
  if (!chrome_path.empty()) {
    std::ofstream out(chrome_path, std::ios::binary);
    if (out) gnomon::server::WriteChromeTrace(model, out);
    if (!out || !out.flush()) {
      std::fprintf(stderr, "gnomon-report: cannot write %s\n", chrome_path.c_str());
      return 3;
    }
    std::fprintf(stderr, "gnomon-report: wrote %s\n", chrome_path.c_str());
  }
  return 0;
}
