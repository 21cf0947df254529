// Everything a server knows about one capture, in memory.
//
// Built by TraceBuilder from a live stream or a trace file; read by the report, the
// exporters and the viewer. It holds only what readers see: the builder's own state
// (zones still open, GPU queries awaiting their times) lives in the builder. A model
// that one thread builds while others read it is shared through SharedModel
// (shared_model.h). Timestamps stay raw CPU ticks, exactly as the program sent
// them; `clock` maps them to nanoseconds, so a better clock model never requires
// rewriting the events.
//
// Zones of a thread are stored flat, in begin order, with their nesting depth: the
// children of zone i are the zones after it with depth + 1, up to the next zone whose
// depth is <= its own. That is 12 bytes per zone (zone_array.h); attributes
// set at run time (name, text, colour, value) are rare and kept aside.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gnomon/server/callstacks.h"
#include "gnomon/server/chunked_vector.h"
#include "gnomon/server/cpu_clock_model.h"
#include "gnomon/server/gpu_clock_model.h"
#include "gnomon/server/zone_array.h"
#include "gnomon/server/zone_attributes.h"
#include "gnomon/server/zone_overview.h"

namespace gnomon::server {

struct SourceLocation {
  uint32_t id = 0;  // as the program numbered it
  std::string name;
  std::string function;
  std::string file;
  uint32_t line = 0;
  uint32_t color = 0xFF000000u;
  bool is_defined = false;
  // "file.cpp:42" (the file without its folders); the function when there is no file
  // (e.g. CUDA work, named after the API call that launched it).
  std::string ShortLabel() const;
  friend bool operator==(const SourceLocation&, const SourceLocation&) = default;
};

struct ThreadTimeline {
  uint32_t id = 0;
  uint32_t os_thread_id = 0;
  std::string name;
  bool library = false;  // the library's own thread (LibraryThread): shown apart, hidden by default
  ZoneArray zones;
  ZoneAttributeTable attributes;  // by zone index
  ZoneCallstacks callstacks;      // zone index -> TraceModel::callstacks id
  // Zones counted but not held: the model was loaded without its zones
  // (TraceModel::zones_held false), and `zones` is empty.
  uint64_t zones_not_held = 0;
  uint64_t zone_count() const { return zones.size() + zones_not_held; }
  // Those zones seen from afar, for drawing (TraceModel::overview_resolution); empty
  // unless the load was asked for it (LoadOptions::overview_runs).
  ZoneOverview overview;
  friend bool operator==(const ThreadTimeline&, const ThreadTimeline&) = default;
};

struct FrameSeries {
  std::string name;                                  // "" for the main series
  std::vector<uint64_t> marks;                       // continuous series: each mark ends a frame
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // discontinuous: begin, end
  friend bool operator==(const FrameSeries&, const FrameSeries&) = default;

  // A series is continuous when it has marks (frame k runs from mark k to mark k + 1),
  // else discontinuous (frame k is span k); a program that mixes both under one name
  // has its marks counted. Frames are numbered from 0, in the order they were recorded.
  bool continuous() const { return !marks.empty(); }
  size_t frame_count() const { return continuous() ? marks.size() - 1 : spans.size(); }
  // Frame k's begin and end ticks (end >= begin: marks out of order make a frame of 0).
  std::pair<uint64_t, uint64_t> Frame(size_t k) const {
    if (!continuous()) return spans[k];
    return {marks[k], std::max(marks[k], marks[k + 1])};
  }
};

struct LogMessage {
  uint64_t tick = 0;
  uint32_t thread_id = 0;
  uint8_t severity = 0;
  std::string text;
  friend bool operator==(const LogMessage&, const LogMessage&) = default;
};

struct PlotSeries {
  std::string name;
  std::vector<std::pair<uint64_t, double>> points;
  friend bool operator==(const PlotSeries&, const PlotSeries&) = default;
};

// A GPU zone: recorded by a CPU thread, timed by the GPU. Its GPU timestamps arrive
// later (GpuTime messages); until then gpu_begin/gpu_end are kOpenZone.
struct GpuZone {
  uint64_t gpu_begin = kOpenZone;  // unwrapped GPU ticks
  uint64_t gpu_end = kOpenZone;
  uint64_t cpu_begin_tick = 0;  // when the CPU recorded the zone
  uint64_t cpu_end_tick = kOpenZone;
  uint32_t source_location = 0;
  uint32_t thread_id = 0;  // the recording thread
  uint32_t epoch = 0;      // of the context's clock model when recorded
  uint16_t depth = 0;
  uint16_t flags = 0;
  bool is_timed() const { return gpu_begin != kOpenZone && gpu_end != kOpenZone; }
  friend bool operator==(const GpuZone&, const GpuZone&) = default;
};
static_assert(sizeof(GpuZone) == 48);

// A counter of a counter set (protocol::CounterDef).
struct CounterInfo {
  uint16_t index = 0;  // in its set: results carry its value at this place
  std::string name;
  std::string description;
  uint8_t type = 0;       // protocol::CounterType
  uint8_t data_type = 0;  // protocol::CounterDataType
  uint32_t offset = 0;
  uint32_t size = 0;
  uint64_t raw_max = 0;
  bool is_defined = false;
  friend bool operator==(const CounterInfo&, const CounterInfo&) = default;
};

// A counter set (a query type) of one GPU context. A set declares how many counters it
// has (each result carries that many values) and defines them one by one; only the
// defined ones are kept, so a declaration costs nothing by itself.
struct CounterSet {
  uint32_t id = 0;
  uint32_t context_id = 0;
  std::string name;
  uint16_t counter_count = 0;         // as declared
  std::vector<CounterInfo> counters;  // the defined ones, by index
  // The counter at `index`, or nullptr when none was defined there.
  const CounterInfo* Find(size_t index) const;
  // Its name, or "counter N" for one never defined.
  std::string CounterName(size_t index) const;
  friend bool operator==(const CounterSet&, const CounterSet&) = default;
};

// One instance's result: values[first_value, first_value + value_count) of its context.
struct CounterSample {
  uint32_t set_id = 0;
  uint32_t target_index = 0;  // the zone's index in its context, or the frame number
  uint32_t first_value = 0;
  uint16_t value_count = 0;
  uint8_t target = 0;  // protocol::CounterTarget
  uint8_t flags = 0;   // protocol::CounterResultFlags
  friend bool operator==(const CounterSample&, const CounterSample&) = default;
};

struct GpuContextTimeline {
  uint32_t id = 0;
  uint8_t api = 0;  // protocol::GpuApi
  uint16_t flags = 0;
  std::string device_name;
  std::string name;  // set by GpuContextName; device_name otherwise
  GpuClockModel clock;
  ChunkedVector<GpuZone> zones;
  // GPU times whose query no zone has awaited (yet): for a finished stream, times of
  // queries no zone used.
  uint64_t unmatched_gpu_times = 0;
  // Counter results. A result names its zone by the zone's begin query, and comes
  // before the zone's GPU times (while the query is still pending).
  std::vector<CounterSample> counter_samples;
  std::vector<double> counter_values;  // decoded by the counter's data type, not normalised
  std::unordered_map<uint32_t, uint32_t> counter_sample_of_zone;  // zone index -> sample

  const std::string& label() const { return name.empty() ? device_name : name; }
  friend bool operator==(const GpuContextTimeline&, const GpuContextTimeline&) = default;
};

// An allocation and, once it came, its free. 48 bytes.
struct MemoryAllocation {
  uint64_t address = 0;
  uint64_t size_bytes = 0;
  uint64_t alloc_tick = 0;
  uint64_t free_tick = kOpenZone;  // kOpenZone: not freed (yet)
  uint32_t alloc_thread = 0;
  uint32_t free_thread = 0;
  uint32_t callstack = 0;  // where it was made (TraceModel::callstacks), 0: not recorded
  bool is_freed() const { return free_tick != kOpenZone; }
  friend bool operator==(const MemoryAllocation&, const MemoryAllocation&) = default;
};

// A memory pool: the program's default one (id 0, "default"), or one it named.
struct MemoryPool {
  uint32_t id = 0;
  std::string name;
  ChunkedVector<MemoryAllocation> allocations;  // in the order they arrived
  uint64_t frees = 0;                           // matched to their allocation
  uint64_t unmatched_frees = 0;                 // no allocation explains them (so far)
  friend bool operator==(const MemoryPool&, const MemoryPool&) = default;
};

// One acquisition of a lock by a thread: when it began to wait (the obtain's own time
// when it did not), obtained it, and released it. 32 bytes.
struct LockHold {
  uint64_t wait_tick = 0;
  uint64_t obtain_tick = 0;
  uint64_t release_tick = kOpenZone;  // kOpenZone: still held (or never released)
  uint32_t thread_id = 0;
  uint8_t flags = 0;  // protocol::LockFlags
  bool is_contended() const { return wait_tick != obtain_tick; }
  bool is_released() const { return release_tick != kOpenZone; }
  friend bool operator==(const LockHold&, const LockHold&) = default;
};

struct Lock {
  uint32_t id = 0;
  std::string name;
  ChunkedVector<LockHold> holds;  // in the order they arrived (by thread, each in order)
  friend bool operator==(const Lock&, const Lock&) = default;
};

// A statistical sample: where a thread of the program was at a tick. 16 bytes.
struct Sample {
  uint64_t tick = 0;
  uint32_t os_thread_id = 0;
  uint32_t callstack = 0;  // the sampled address first
  friend bool operator==(const Sample&, const Sample&) = default;
};

// A thread of the program started (kIn) or stopped (kOut) running on a CPU.
struct ContextSwitch {
  uint64_t tick = 0;
  uint32_t os_thread_id = 0;
  uint32_t cpu = 0;
  uint8_t kind = 0;  // protocol::ContextSwitchKind
  friend bool operator==(const ContextSwitch&, const ContextSwitch&) = default;
};

struct ProgramInfo {
  std::string name;
  uint32_t pid = 0;
  uint8_t timer_kind = 0;
  uint64_t ticks_per_second_estimate = 0;
  int64_t start_unix_ns = 0;
  uint64_t start_tick = 0;
  std::string host;  // HostInfo; "" when the program did not say
  int64_t rank = -1;
  // ProgramEnvironment; empty and 0 when the program did not say.
  std::string system;    // "Linux 6.1.0-18-amd64 x86_64"
  std::string cpu;       // the CPU's model
  std::string settings;  // the GNOMON_ variables it ran with, NAME=VALUE, one a line
  uint32_t logical_cpus = 0;
  uint64_t memory_bytes = 0;
  friend bool operator==(const ProgramInfo&, const ProgramInfo&) = default;
};

// One exchange of clock readings between the capture and the program (a ClockReply
// joined with the capture's ClockSample): the capture's clock at t1 and t4, the
// program's (its trace timeline, CLOCK_MONOTONIC_RAW ns) at t2 and t3. Kept raw, so
// that the mapping can be fitted again (host_clock_model.h).
struct HostClockExchange {
  uint64_t probe_sent_ns = 0;      // t1, capture
  uint64_t receive_ns = 0;         // t2, program
  uint64_t send_ns = 0;            // t3, program
  uint64_t reply_received_ns = 0;  // t4, capture
  friend bool operator==(const HostClockExchange&, const HostClockExchange&) = default;
};

// The capture that recorded a stream, against a reference clock that captures on other
// hosts read too (the CaptureClock messages it wrote): how gnomon-merge's files place
// captures against each other. Each reading is kept as an exchange whose "program" is
// the capture (its clock just before and after, t2 and t3) and whose "capture" is the
// reference, read once at r: t1 = r - (t3 - t2) and t4 = r + (t3 - t2), so that
// HostClockModel brackets the offset (reference = capture + offset) by [r - t3, r - t2].
struct CaptureReference {
  uint64_t capture_id = 0;          // 0: the stream holds no reading
  std::string domain;               // the capture's kernel (boot id): one reference clock per domain
  uint64_t reference_error_ns = 0;  // the largest the reference's keeper stated
  std::vector<HostClockExchange> readings;
  // The file said its streams come from several captures (gnomon-merge): a program
  // without readings cannot be placed against the others, even where it is alone.
  bool merged = false;
  friend bool operator==(const CaptureReference&, const CaptureReference&) = default;
};

// Problems found in the stream: counted, reported, never fatal.
struct Diagnostics {
  uint64_t zone_ends_without_begin = 0;
  uint64_t attributes_without_zone = 0;
  uint64_t events_without_thread = 0;
  uint64_t clamped_zone_ends = 0;
  uint64_t invalid_ids = 0;
  uint64_t frame_ends_without_begin = 0;
  uint64_t client_dropped_events = 0;  // as reported by the program
  bool ended_cleanly = false;          // the program sent EndOfStream
  uint64_t gpu_events_for_unknown_context = 0;
  uint64_t gpu_queries_reused_before_time = 0;  // a query's time never came before its reuse
  uint64_t gpu_rejected_calibrations = 0;       // zero/negative deltas or absurd rates
  uint64_t gpu_zone_ends_without_begin = 0;
  uint64_t counter_results_dropped = 0;       // unknown set or context, no such zone, bad count
  uint64_t memory_absurd_sizes = 0;           // above kMaxAllocationBytes: taken as 0
  uint64_t memory_allocations_over_live = 0;  // an address allocated again before its free
  uint64_t lock_releases_without_hold = 0;
  uint64_t callstacks_cut = 0;               // deeper than kMaxCallstackDepth
  uint64_t callstacks_without_event = 0;     // not after a zone begin or an allocation
  uint64_t clock_samples_without_reply = 0;  // a ClockSample whose ClockReply never came
  uint64_t capture_clocks_rejected = 0;      // CaptureClock readings left out (trace_builder.cpp)
  friend bool operator==(const Diagnostics&, const Diagnostics&) = default;
};

struct TraceModel {
  ProgramInfo program;
  bool has_program_info = false;
  CpuClockModel clock;
  // Source locations: [0] is "<unknown>", then each in order of first appearance (its
  // definition or a zone using it). Zones refer to them by this index, not by the
  // program's id, so whatever ids a stream uses, arrays by location stay dense.
  std::vector<SourceLocation> source_locations;
  std::unordered_map<uint32_t, uint32_t> location_index;  // the program's id -> index
  std::deque<ThreadTimeline> threads;                     // in order of first appearance; stable addresses
  std::unordered_map<uint32_t, uint32_t> thread_index;    // program thread id -> index
  std::map<uint32_t, FrameSeries> frames;                 // by name id; 0 = main series
  std::map<uint32_t, PlotSeries> plots;                   // by plot id
  std::unordered_map<uint32_t, std::string> frame_names;  // StringDef of kind frame
  std::vector<LogMessage> messages;
  std::map<uint32_t, GpuContextTimeline> gpu_contexts;  // by context id
  std::map<uint32_t, CounterSet> counter_sets;          // by set id
  std::map<uint32_t, MemoryPool> memory_pools;          // by pool id (0: default)
  std::map<uint32_t, Lock> locks;                       // by lock id
  CallstackTable callstacks;
  std::vector<Module> modules;                          // in the order defined
  ChunkedVector<Sample> samples;                        // in arrival order (by CPU, each in order)
  ChunkedVector<ContextSwitch> context_switches;        // the same
  std::vector<HostClockExchange> host_clock_exchanges;  // in the order the capture made them
  CaptureReference capture;
  Diagnostics diagnostics;
  uint64_t first_tick = kOpenZone;  // earliest event
  uint64_t last_tick = 0;           // latest event
  uint64_t zone_count = 0;
  uint64_t open_zone_count = 0;  // zones whose end has not arrived (yet)
  // False when the CPU zones were counted as they were loaded, not kept: a trace too big
  // for the memory it was given (LoadOptions::zone_memory_limit). Everything else is
  // held; statistics then read the zones from the file again (StreamZoneStatistics).
  bool zones_held = true;
  // With zones not held: the thread each block the load decoded began on (the program's
  // id; 0: none), by the block's sequence, so that a second pass walks blocks apart.
  std::unordered_map<uint32_t, uint32_t> block_start_threads;
  // Of those, the blocks loaded from their summaries (LoadOptions::use_summaries), by
  // sequence: a second pass that finds one damaged reads its summary again.
  std::unordered_set<uint32_t> summarized_blocks;
  // With zones not held and an overview asked for: the ticks below which the threads'
  // overviews merge zones (ZoneOverview).
  uint64_t overview_resolution = 1;
  // The overviews stopped: more rows than their budget at the coarsest resolution.
  bool overview_truncated = false;
  // With an overview: each block decoded, and the zones open when it began, so that a
  // time window's zones can be read from the file again (empty when the zones open at
  // block starts outgrew the overviews' budget).
  std::vector<ZoneBlock> zone_blocks;
  std::vector<OpenAtBlock> open_at_blocks;

  // Name shown for a zone: its runtime name, else its source location's name.
  const std::string& ZoneName(const ThreadTimeline& thread, size_t zone_index) const;
  // A thread's name as shown (the viewer's lane title): its name, or "thread N".
  std::string ThreadName(uint32_t thread_id) const;
  // A frame series' name as shown: "main" for series 0, its name, or "frame series N".
  std::string FrameSeriesName(uint32_t id) const;
  // The location at an index of source_locations (as zones hold it).
  const SourceLocation& Location(uint32_t index) const {
    return index < source_locations.size() ? source_locations[index] : source_locations[0];
  }
  // Nanoseconds since the first event.
  int64_t RelativeNs(uint64_t tick) const { return clock.TickToNs(tick) - clock.TickToNs(first_tick); }
  int64_t DurationNs(uint64_t begin_tick, uint64_t end_tick) const {
    return clock.TickToNs(end_tick) - clock.TickToNs(begin_tick);
  }
  // A GPU zone's begin and end on the trace timeline (CLOCK_MONOTONIC_RAW ns), with the
  // bounds of the mapping (GpuClockModel::Mapped; the wider of its two ends' on each
  // side); the end is never before the begin.
  struct MappedGpuZone {
    int64_t begin_ns = 0;
    int64_t end_ns = 0;
    uint32_t early_ns = 0;  // absolute bound: how much earlier the zone may truly be
    uint32_t late_ns = 0;   // ... and how much later
    uint32_t relative_ns = 0;
    uint32_t absolute_ns() const { return std::max(early_ns, late_ns); }
  };
  MappedGpuZone MapGpuZone(const GpuContextTimeline& context, const GpuZone& zone) const;
  // Approximate bytes held by the zone arrays.
  size_t zone_bytes() const;
  // Gives back the unused ends of the zone arrays' last blocks and chunks: at the end
  // of a stream or a load (ZoneArray and ChunkedVector::ShrinkToFit).
  void ShrinkToFit();

  TraceModel();
  friend bool operator==(const TraceModel&, const TraceModel&) = default;
};

// Compares two models event by event; the first difference, or "" when equal.
std::string DescribeFirstDifference(const TraceModel& a, const TraceModel& b);

}  // namespace gnomon::server
