// Human- and machine-readable summaries of a TraceModel, as gnomon-report prints them.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "gnomon/server/statistics.h"
#include "gnomon/server/text.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

// Program, duration, threads, zones, frames, messages (the first `messages` of them, and
// how many more), drops and stream health.
inline constexpr size_t kSummaryMessages = 10;
void PrintSummary(const TraceModel& model, std::ostream& out, size_t messages = kSummaryMessages);
// "name (pid N, host H, rank R)": the program, as the summary names it (printable).
std::string ProcessLabel(const TraceModel& model);
// Whether the program said what it ran on and with (ProgramEnvironment).
bool HasEnvironment(const ProgramInfo& program);
// The machine the program ran on: "Linux 6.1.0 x86_64, 16 logical CPUs (Intel Xeon ...),
// 62.8 GiB", what of it the program said; "" when it said nothing.
std::string SystemLabel(const ProgramInfo& program);
// The Gnomon settings it ran with, "NAME=VALUE, NAME=VALUE"; "none" when it had none.
std::string SettingsLabel(const ProgramInfo& program);
// The summary's other lines, each without its title: the program's timer and its fit;
// the capture's clock against the program's ("" without exchanges); the events the
// program dropped; how the stream ended and what was wrong in it.
std::string TimerLabel(const TraceModel& model);
std::string HostClockLabel(const TraceModel& model);
std::string DroppedLabel(const TraceModel& model);
std::string StreamLabel(const TraceModel& model);
// The statistics table, one row per source location, in the order given.
void PrintStatisticsTable(const TraceModel& model, const std::vector<ZoneStatistics>& stats,
                          std::ostream& out);

// GPU counters per source location of the zones they measured (see counters.h): one
// row per counter with its sum, mean, min and max, normalised by its type. Prints
// nothing when the trace has no counter results.
void PrintCounterStatistics(const TraceModel& model, std::ostream& out);

// Memory pools (allocations, frees, peak, never freed) and locks (acquisitions,
// contention, waits), the `limit` most telling of each (the largest peak; the longest
// waits); nothing when the trace has none.
void PrintMemoryStatistics(const TraceModel& model, std::ostream& out, size_t limit = 20);
void PrintLockStatistics(const TraceModel& model, std::ostream& out, size_t limit = 20);
// The programs of one trace compared: zones in several of them by the spread of their
// means, with the slowest program; the slowest program step by step through the frames.
// `stats[i]`: ComputeZoneStatistics of processes[i].
void PrintProcessComparison(const std::vector<const TraceModel*>& processes,
                            const std::vector<std::vector<ZoneStatistics>>& stats, std::ostream& out,
                            size_t limit = 20);

// The functions the samples found running most often (self and total counts, with
// their source line and module), and each thread's context switches and running time;
// nothing when the trace has none.
void PrintSampleStatistics(const TraceModel& model, std::ostream& out, size_t limit = 20);
void PrintContextSwitches(const TraceModel& model, std::ostream& out, size_t limit = 20);

// The source lines the samples found most often running, self and total (calls made
// from the line included), with their function (code_report.cpp).
void PrintHotLines(const TraceModel& model, std::ostream& out, size_t limit = 20);
// A source file's lines around one, each with its samples, read from disk where the
// trace says it was built (or where `source_map` says: OLD prefix, NEW prefix, the
// first that matches); flagged when it changed after its module was built. False (and
// said) when no sample is in a file of that name.
struct SourceRequest {
  std::string file;  // a path, or its end ("demo.cpp", "app/demo.cpp")
  uint32_t line = 1;
  uint32_t context = 10;  // lines each side
  std::vector<std::pair<std::string, std::string>> source_map = {};
};
bool PrintSourceLines(const TraceModel& model, std::ostream& out, const SourceRequest& request);
// A memory pool's allocations (by name, or id) as a call tree of the stacks they were
// made with (AllocationTree), depth first, at most `limit` rows; false (and said) when the
// trace has no such pool.
bool PrintMemoryTree(const TraceModel& model, std::ostream& out, const std::string& pool, bool bottom_up,
                     size_t limit = 60);
// The pool of that name (or id), or nullptr.
const MemoryPool* FindPool(const TraceModel& model, const std::string& name);
std::string MapSourcePath(const std::string& path,
                          const std::vector<std::pair<std::string, std::string>>& map);

// What a GPU context's brackets prove, with the calibrations' own bound, for a line
// that names them: "the offset within [-3.1 us, -119 ns]: every time moved 119 ns
// earlier", or that they contradict each other.
std::string DescribeBrackets(const GpuClockModel::OffsetRange& range);

}  // namespace gnomon::server
