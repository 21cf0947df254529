// gnomon-cut: the part of a trace a teammate needs (a time range, some threads) as a
// trace of its own, with its clocks, in the memory of the trace's definitions and of
// the zones open at each moment: its events are streamed.
//
// Two passes over the file. The first loads it without its events (LoadOptions::
// extent_only) to learn what the range means: each program's clock, its threads, and
// the timeline every reader shows (ProcessTimeline: ns from the earliest event of any
// program). The second walks every block again and writes, program by program, what
// the range and the threads keep:
//  - every definition, calibration and clock reading (they are small, and every time
//    kept needs them to be placed as in the whole trace);
//  - the CPU zones that overlap the range, whole: a zone begun before it is kept with
//    its name, text, values and call stack when it ends inside or after it; each
//    thread holds only its open zones meanwhile;
//  - the GPU zones that overlap it by when the CPU recorded them, and their GPU times;
//  - the frames, messages, plot values, samples, context switches, lock waits and
//    holds, and allocations in the range, with the releases and frees of the holds and
//    allocations it kept (allocations made before the range are left out);
//  - the program's end of stream, at its last event kept.
// Times in the cut are the program's own: a reader of the cut places them as it placed
// them in the whole trace, from the cut's first event.
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>

#include "gnomon/server/export_filter.h"
#include "gnomon/server/status.h"
#include "gnomon/tracefile/output_file.h"

namespace gnomon::server {

struct CutSummary {
  uint32_t programs = 0;     // in the cut
  uint64_t zones_read = 0;   // CPU zones of the kept threads in the whole trace
  uint64_t zones_kept = 0;   // of them, in the cut
  uint64_t events_kept = 0;  // every other timed event in the cut
  uint64_t bytes = 0;        // of the cut's file
  // What was wrong with the input (cut short, damaged blocks), as the loader says it:
  // the cut holds its sound blocks' events.
  std::string warning;
};

// Writes the part of `input` that `keep` selects (its range and threads; its zone-name
// filter is not used) to `output`, which appears only once complete. Refuses a file that
// is not a trace, an output that is the input, thread names the trace does not have
// (saying which it has), and a range that holds no event. With `cancel` set (from another
// thread), it stops between blocks and writes nothing.
Result<CutSummary> CutTrace(const std::string& input, const std::string& output, const ExportFilter& keep,
                            tracefile::Overwrite overwrite, std::ostream& log,
                            std::atomic<bool>* cancel = nullptr);

}  // namespace gnomon::server
