// gnomon-cut: the part of a trace a teammate needs, as a trace (gnomon/server/trace_cut.h).
#include <cstdio>
#include <iostream>
#include <string>

#include "gnomon/server/text.h"
#include "gnomon/server/trace_cut.h"

namespace {

enum ExitCode {
  kExitCut = 0,
  kExitUsage = 1,
  kExitFailed = 2,
  kExitIncomplete = 3,
};

constexpr const char* kUsage =
    R"(Usage: gnomon-cut FILE --range A:B [--threads LIST] -o OUT [-f] [-q]

Writes the part of a trace that overlaps a time range (and, if asked, only some
threads) as a trace of its own, with the clocks that place it: it opens in
gnomon-viewer and gnomon-report like any capture, a fraction of the size. Reads the
trace twice and holds its zones only while they are open, so a trace bigger than
memory can be cut.

  FILE            a trace written by gnomon-capture or gnomon-merge
  --range A:B     the range, as gnomon-report and the viewer give times: from the
                  trace's first event, in milliseconds or with units ("270s:330s",
                  "4.5min:5.5min"; ns, us, ms, s, min); "A:" or ":B" leave a side open
  --threads LIST  only these threads (names or OS thread ids, comma-separated): their
                  zones, messages, locks, memory, GPU zones, samples and switches
  -o OUT          the cut; it appears only once complete
  -f              replace OUT if it is an existing trace (never any other file)
  -q              say nothing but errors
  -h, --help      this text

What is kept: every zone (CPU or GPU) that overlaps the range, whole, with its name,
text, values and call stack, and everything nested in it that overlaps too; the
frames, messages, plot values, samples, context switches, lock waits and holds, and
allocations in the range, with the releases and frees of what it kept, and the frame
mark and plot value before it; every definition and clock calibration. Allocations made before the range are left out. The
cut's times start from its own first event (a zone begun before the range may be it).

Exit codes:
  0  cut
  1  bad command line
  2  nothing written: FILE is not a trace or cannot be read, no thread has a name of
     LIST, the range holds no event, or OUT cannot be written
  3  cut, but FILE was cut short or damaged: the cut holds its sound blocks' events,
     and what was wrong is said
)";

}  // namespace

int main(int argc, char** argv) {
  std::string input, output;
  gnomon::server::ExportFilter keep;
  bool have_range = false, quiet = false;
  auto overwrite = gnomon::tracefile::Overwrite::kNo;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return kExitCut;
    }
    if (arg == "-o" || arg == "--range" || arg == "--threads") {
      if (i + 1 >= argc || argv[i + 1][0] == '\0') {
        std::fprintf(stderr, "gnomon-cut: %s needs a value\n\n%s", arg.c_str(), kUsage);
        return kExitUsage;
      }
      const std::string value = argv[++i];
      if (arg == "-o") {
        output = value;
      } else if (arg == "--threads") {
        keep.ParseThreads(value);
        if (keep.threads.empty()) {
          std::fprintf(stderr, "gnomon-cut: --threads names no thread ('%s')\n", value.c_str());
          return kExitUsage;
        }
      } else if (const std::string error = keep.ParseRange(value); !error.empty()) {
        std::fprintf(stderr, "gnomon-cut: --range: %s\n", error.c_str());
        return kExitUsage;
      } else {
        have_range = true;
      }
    } else if (arg == "-f") {
      overwrite = gnomon::tracefile::Overwrite::kYes;
    } else if (arg == "-q") {
      quiet = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      std::fprintf(stderr, "gnomon-cut: unknown option '%s'\n\n%s", arg.c_str(), kUsage);
      return kExitUsage;
    } else if (!input.empty()) {
      std::fprintf(stderr, "gnomon-cut: one trace at a time ('%s' and '%s')\n", input.c_str(), arg.c_str());
      return kExitUsage;
    } else {
      input = arg;
    }
  }
  if (input.empty() || output.empty() || !have_range) {
    std::fprintf(stderr, "gnomon-cut: %s\n\n%s",
                 input.empty()    ? "name the trace to cut"
                 : output.empty() ? "name the cut with -o OUT"
                                  : "give the range to keep with --range A:B",
                 kUsage);
    return kExitUsage;
  }
  std::ostream null_stream(nullptr);
  const auto cut = gnomon::server::CutTrace(input, output, keep, overwrite, quiet ? null_stream : std::cerr);
  if (!cut.ok()) {
    std::fprintf(stderr, "gnomon-cut: %s\n", cut.status().message().c_str());
    return kExitFailed;
  }
  const gnomon::server::CutSummary& summary = cut.value();
  if (!summary.warning.empty()) std::fprintf(stderr, "gnomon-cut: %s\n", summary.warning.c_str());
  if (!quiet) {
    std::fprintf(stderr, "gnomon-cut: wrote %s: %u program(s), %llu zone(s) and %llu other event(s), %s\n",
                 output.c_str(), summary.programs, static_cast<unsigned long long>(summary.zones_kept),
                 static_cast<unsigned long long>(summary.events_kept),
                 gnomon::server::FormatBytes(summary.bytes).c_str());
  }
  return summary.warning.empty() ? kExitCut : kExitIncomplete;
}
