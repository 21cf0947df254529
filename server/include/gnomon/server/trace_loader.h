// Reading a .gnomon trace file (gnomon/tracefile/format.h) into models.
//
// Loading replays each stream through the same decoder that live connections use, so a
// saved trace and a live one build the same model; damage (a block lost, repeated,
// moved, corrupted, bytes after the end) is found, counted and reported, and everything
// sound around it still loads.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <string>

#include "gnomon/server/shared_model.h"
#include "gnomon/server/status.h"
#include "gnomon/server/trace_model.h"
#include "gnomon/tracefile/format.h"

namespace gnomon::server {

// What a load found wrong with a file, counted. Each kind also has a line in
// LoadReport::warning; nothing here stops the sound blocks around it from loading.
struct FileAnomalies {
  bool truncated = false;              // the file ends inside a block or its header
  bool has_end_marker = false;         // the capture finished writing it
  uint64_t damaged_bytes = 0;          // skipped where no block header could be read
  uint64_t damaged_blocks = 0;         // do not decompress, or hold a malformed message
  uint64_t rejected_blocks = 0;        // absurd sizes, or more expansion than allowed
  uint64_t duplicate_blocks = 0;       // a sequence number seen before (format 4)
  uint64_t reordered_blocks = 0;       // found before a block they follow (loaded in order)
  uint64_t missing_blocks = 0;         // sequence numbers never found (format 4)
  uint64_t misplaced_end_markers = 0;  // an end marker with blocks after it, or a wrong count
  uint64_t trailing_bytes = 0;         // after the end marker, not blocks
  bool any() const {
    return truncated || !has_end_marker || damaged_bytes || damaged_blocks || rejected_blocks ||
           duplicate_blocks || reordered_blocks || missing_blocks || misplaced_end_markers || trailing_bytes;
  }
};

struct LoadReport {
  uint64_t blocks = 0;             // loaded
  uint64_t summarized_blocks = 0;  // of those, loaded from their summaries (LoadOptions::use_summaries)
  uint64_t raw_bytes = 0;          // of the stream the blocks held
  uint64_t messages = 0;
  FileAnomalies anomalies;
  std::string warning;        // "" for a sound file; else one sentence per anomaly, with bytes
  uint32_t programs = 0;      // streams in the file: programs captured (1 for a file of one)
  uint32_t shown_stream = 0;  // LoadTraceSet into a shown model: the stream it holds, as the file numbers it
};

struct LoadOptions {
  std::atomic<uint64_t>* bytes_done = nullptr;               // progress, for a progress bar
  uint64_t* bytes_total = nullptr;                           // set once the file is opened
  std::atomic<bool>* cancel = nullptr;                       // stop between blocks when set
  uint32_t max_expansion = tracefile::kDefaultMaxExpansion;  // see tracefile::kDefaultMaxExpansion
  uint32_t program = 0;  // which program LoadTrace loads: 0 the first, by stream number
  // Only what places the trace's times is kept: its definitions, clocks, calibrations and
  // threads; its events (in compact blocks: format 3 on) only widen its time range. What
  // reads a trace twice (gnomon-cut) learns what a time range means so, in the memory of
  // its definitions.
  bool extent_only = false;
  // The most memory the CPU zones may take. They are held while the blocks of the
  // programs loaded promise to fit (kZoneBytesPerStreamByte per byte of their compact
  // stream: an estimate from above); past it they are counted, not held
  // (TraceModel::zones_held), and what needs them reads them from the file again
  // (StreamZoneStatistics). UINT64_MAX: always held.
  uint64_t zone_memory_limit = UINT64_MAX;
  // With zones not held: each thread keeps a ZoneOverview to draw them by, in at most
  // this many runs and rows (24 bytes each) for the file, shared among its programs;
  // 0: none.
  size_t overview_runs = 0;
  // With zones not held and an overview: a block that carries its summary (format 8,
  // tracefile/block_summary.h) is loaded from it, not decompressed (damage in the block
  // itself is then found when its zones are read). Off: every block is decoded (what the
  // tests compare the summaries with).
  bool use_summaries = true;
};
// The default memory limit of the report and the viewer (--memory-limit): an eighth of
// the memory this process may use, the machine's or, in a container, its control
// group's.
uint64_t DefaultMemoryLimit();

// What a held zone costs in memory per byte of the block that carries it: a zone takes
// 12 bytes (zone_array.h) and at least 5 of a compact block (a begin's type and location,
// an end's type, two tick deltas; docs/trace-format.md), and the rest of the model
// (messages, allocations, locks) stays below that ratio.
inline constexpr uint64_t kZoneBytesPerStreamByte = 3;

// Where a trace's bytes come from: a regular file, or bytes in memory (a trace received
// over a pipe, embedded in a test, or handed over by a program). Movable; a file source
// owns its descriptor.
class TraceSource {
 public:
  // Opens `path` when it is a regular file. A FIFO is opened without waiting for a
  // writer, then refused (a read would block forever), as are devices and folders.
  static Result<TraceSource> OpenFile(const std::string& path);
  // Bytes that outlive the source; `name` is what messages call it.
  static TraceSource FromBytes(const uint8_t* data, size_t size, std::string name = "the trace in memory");

  TraceSource(TraceSource&& other) noexcept;
  TraceSource& operator=(TraceSource&& other) noexcept;
  TraceSource(const TraceSource&) = delete;
  TraceSource& operator=(const TraceSource&) = delete;
  ~TraceSource();

  // Reads exactly `size` bytes at `offset`; false past the end or on a read error
  // (errno says which). Thread-safe.
  bool ReadAt(void* out, size_t size, uint64_t offset) const;
  uint64_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  TraceSource() = default;
  int fd_ = -1;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  std::string name_;
};

// Reads a trace into `model`. Fails (with nothing loaded) when the source is not a
// Gnomon trace. Damage anywhere after the file header loads everything sound, in
// sequence order, and says what was wrong in LoadReport (warning and anomalies).
Result<LoadReport> LoadTrace(const TraceSource& source, TraceModel& model, const LoadOptions& options = {});
// The same into a model others read while it loads: each block is decoded under
// model.Write, so readers see it grow block by block.
Result<LoadReport> LoadTrace(const TraceSource& source, SharedModel& model, const LoadOptions& options = {});
// The file at `path` (TraceSource::OpenFile) into `model`.
Result<LoadReport> LoadTrace(const std::string& path, TraceModel& model, const LoadOptions& options = {});
// The three above load a file's first program (LoadOptions::program another); a file of
// several (a capture of several programs) says so in LoadReport::warning.

// Every program of a trace: a capture of several programs has a stream for each.
struct TraceProcess {
  uint32_t stream = 0;  // as the file numbers it
  TraceModel model;
};
struct TraceSet {
  std::deque<TraceProcess> processes;  // by stream; stable addresses
};
// Reads every stream of a trace, each into its own model; damage as LoadTrace says.
Result<LoadReport> LoadTraceSet(const TraceSource& source, TraceSet& set, const LoadOptions& options = {});
// The same, the program LoadOptions::program names into `shown` (others read it as it
// loads, as LoadTrace's SharedModel), every other into `others`.
Result<LoadReport> LoadTraceSet(const TraceSource& source, SharedModel& shown, TraceSet& others,
                                const LoadOptions& options = {});
Result<LoadReport> LoadTraceSet(const std::string& path, TraceSet& set, const LoadOptions& options = {});

}  // namespace gnomon::server
