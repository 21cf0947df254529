// gnomon-merge: the traces of several captures as one file (gnomon/server/trace_merge.h).
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "gnomon/server/trace_merge.h"

namespace {

enum ExitCode {
  kExitMerged = 0,
  kExitUsage = 1,
  kExitFailed = 2,
  kExitIncomplete = 3,
};

constexpr const char* kUsage =
    R"(Usage: gnomon-merge FILE... -o OUT [-f] [-q]

Merges the traces of several captures (one per host, say) into one trace, each program
a process of it. Blocks are copied as they are, still compressed, once each has been
checked (decompressed, against zstd's checksum): a block that is damaged is left out,
as gnomon-report would skip it. Each capture recorded its clock against a common reference
(CLOCK_REALTIME with the kernel's stated error; one reference clock for captures on
one host), so readers place every program on one timeline: its clock against its
capture's, and its capture's against the reference, the two bounds added
(docs/internals.md, "Clusters of thousands of processes").

  FILE         a trace written by gnomon-capture (format 5 to 8); any number
  -o OUT       the merged trace; it appears only once complete
  -f           replace OUT if it is an existing trace (never any other file, a link,
               a device or a folder)
  -q           say nothing but errors
  -h, --help   this text

Exit codes:
  0  merged
  1  bad command line
  2  nothing written: an input is not a trace of format 5 to 8 or cannot be read, a file
     is named twice, there would be more than 65,536 programs, or OUT cannot be written
  3  merged, but an input was cut short or damaged (a block cut, lost, or that does not
     decompress): its sound blocks were merged, as gnomon-report would load them, and
     what was wrong is said
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string output;
  auto overwrite = gnomon::tracefile::Overwrite::kNo;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return kExitMerged;
    }
    if (arg == "-o") {
      if (i + 1 >= argc || argv[i + 1][0] == '\0') {
        std::fprintf(stderr, "gnomon-merge: -o needs a file name\n\n%s", kUsage);
        return kExitUsage;
      }
      output = argv[++i];
    } else if (arg == "-f") {
      overwrite = gnomon::tracefile::Overwrite::kYes;
    } else if (arg == "-q") {
      quiet = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      std::fprintf(stderr, "gnomon-merge: unknown option '%s'\n\n%s", arg.c_str(), kUsage);
      return kExitUsage;
    } else {
      inputs.push_back(arg);
    }
  }
  if (output.empty() || inputs.empty()) {
    std::fprintf(stderr, "gnomon-merge: %s\n\n%s",
                 output.empty() ? "name the merged file with -o OUT" : "name the traces to merge", kUsage);
    return kExitUsage;
  }
  std::ostream null_stream(nullptr);
  const auto merged = gnomon::server::MergeTraces(inputs, output, overwrite, quiet ? null_stream : std::cerr);
  if (!merged.ok()) {
    std::fprintf(stderr, "gnomon-merge: %s\n", merged.status().message().c_str());
    return kExitFailed;
  }
  if (!quiet) {
    std::fprintf(stderr,
                 "gnomon-merge: wrote %s: %zu program(s) from %zu file(s), %llu block(s), %llu bytes\n",
                 output.c_str(), merged.value().streams, merged.value().files,
                 static_cast<unsigned long long>(merged.value().blocks),
                 static_cast<unsigned long long>(merged.value().bytes));
  }
  return merged.value().incomplete_files > 0 ? kExitIncomplete : kExitMerged;
}
