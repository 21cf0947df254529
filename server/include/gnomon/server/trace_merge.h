// gnomon-merge: the traces of several captures (one per host, docs/internals.md,
// "Clusters of thousands of processes") as one file.
//
// Every sound block of every input is copied as it is, still compressed: only the
// header's sequence (one count over the new file) and stream number (each input's
// streams after the previous inputs') are rewritten. Each block is decompressed once
// first, to check it (zstd's content checksum): one that fails is left out and said, as
// the loader skips it, so a merge never passes damage on in silence.
//
// Nothing is fitted into the file: each stream keeps its program's clock exchanges with
// its capture (ClockSample) and its capture's readings of the common reference
// (CaptureClock), and a reader maps a program's times through both (ProcessTimeline),
// the bounds added.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "gnomon/server/status.h"
#include "gnomon/tracefile/output_file.h"

namespace gnomon::server {

struct MergeSummary {
  size_t files = 0;
  size_t streams = 0;   // programs in the merged file
  uint64_t blocks = 0;  // copied
  uint64_t bytes = 0;   // of the merged file
  // Inputs that ended before their end marker, or had a damaged block or block header:
  // their sound blocks were merged, the others not.
  size_t incomplete_files = 0;
};

// Merges `inputs` (trace formats 5 to 8) into `output` (format 8), which appears only once complete.
// Refuses older formats (their captures recorded no common reference), files that are
// not traces, more than tracefile::kMaxTraceStreams programs in all, and an output that is one of
// the inputs. Says on `log` what it read of each input and why an input was cut short.
Result<MergeSummary> MergeTraces(const std::vector<std::string>& inputs, const std::string& output,
                                 tracefile::Overwrite overwrite, std::ostream& log);

}  // namespace gnomon::server
