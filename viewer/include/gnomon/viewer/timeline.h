// What the timeline shows, as plain data: lanes, and the items to draw in them.
//
// Timeline keeps a LaneIndex per CPU thread and per GPU context, brought up to date
// from a TraceModel by Sync() (only new zones are indexed; GPU lanes are re-mapped when
// their clock model gains knots). Layout() stacks the lanes vertically; BuildItems()
// turns the visible part into rectangles with colours and labels, merging sub-pixel
// zones; HitTest() finds what is under a point. The ImGui code only paints the items,
// so all of this is tested without a window (tests/viewer/).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gnomon/server/trace_model.h"
#include "gnomon/server/zone_window.h"
#include "gnomon/viewer/frame_strip.h"
#include "gnomon/viewer/frame_times.h"
#include "gnomon/viewer/lane_index.h"
#include "gnomon/viewer/timeline_view.h"

namespace gnomon::viewer {

enum class LaneKind : uint8_t { kFrames, kGpu, kThread, kPlot, kCounter, kMemory, kLock, kCpu };

struct LaneKey {
  LaneKind kind;
  uint32_t id;  // thread id, GPU context id, plot id, CounterLaneId(), memory pool id,
                // lock id; for frames the series' name id (0: the main series), or
                // kMessagesLane
  friend auto operator<=>(const LaneKey&, const LaneKey&) = default;
};

// The frames lane of a trace without frames, where its messages show.
constexpr uint32_t kMessagesLane = UINT32_MAX;

// A counter lane's id: the counter's set and its index in the set.
constexpr uint32_t CounterLaneId(uint32_t set_id, uint32_t index) { return set_id * 4096u + index; }
constexpr uint32_t CounterLaneSet(uint32_t lane_id) { return lane_id / 4096u; }
constexpr uint32_t CounterLaneIndex(uint32_t lane_id) { return lane_id % 4096u; }

struct LaneState {
  bool collapsed = false;  // one row only
  bool hidden = false;
};

// Kinds of lanes that are hidden together (the Lanes menu), as bits.
enum LaneGroup : uint32_t {
  kLibraryLanes = 1,  // the library's own threads (ThreadTimeline::library)
  kGpuLanes = 2,      // GPU contexts and their counters
  kPlotLanes = 4,
  kMemoryLanes = 8,
  kLockLanes = 16,
  kCpuLanes = 32,  // a lane per CPU core, from the context switches
};
constexpr uint32_t kAllLaneGroups = 63;
// The groups' names, as the command line and the settings write them, and as menus say.
struct LaneGroupName {
  const char* name;
  uint32_t group;
  const char* label;
};
inline constexpr LaneGroupName kLaneGroupNames[] = {{"library", kLibraryLanes, "Gnomon's own threads"},
                                                    {"gpu", kGpuLanes, "GPU lanes"},
                                                    {"plots", kPlotLanes, "Plots"},
                                                    {"memory", kMemoryLanes, "Memory"},
                                                    {"locks", kLockLanes, "Locks"},
                                                    {"cpus", kCpuLanes, "CPU cores"}};

// What a zone's colour tells: its source location (the location's own colour, or one
// made from it), its thread (or GPU context), or its duration (blue for 1 us or less,
// through green and yellow, to red at the frame target and beyond, on a log scale).
enum class ZoneColoring : uint8_t { kLocation, kThread, kDuration };
// Their names, as the command line and the settings write them, and as menus say.
struct ZoneColoringName {
  const char* name;
  ZoneColoring coloring;
  const char* label;
};
inline constexpr ZoneColoringName kZoneColorings[] = {
    {"location", ZoneColoring::kLocation, "Location"},
    {"thread", ZoneColoring::kThread, "Thread"},
    {"duration", ZoneColoring::kDuration, "Duration (blue 1 us, red at the frame target)"}};

// How SortLanes orders each kind of lane: by name (numbers in names by value), or the
// busiest first (threads and GPU contexts: time in their outermost zones).
enum class LaneSort : uint8_t { kName, kBusiest };

struct Lane {
  LaneKey key;
  float y = 0;        // top of the lane's rows (below its title bar)
  float height = 0;   // rows only
  uint32_t rows = 0;  // depth rows shown
};

struct DrawItem {
  enum class Kind : uint8_t {
    kZone,
    kMerged,
    kGpuZone,
    kFrame,
    kPlot,
    kMessage,
    kCounter,
    kLockHold,
    kLockWait,
    kRunning,      // a thread ran (from its context switches), in the strip above its rows
    kNotRunning,   // a thread waited; hit: the running span before the wait
    kSample,       // a thread's samples in one pixel column, ticks over its running strip
    kOverviewZone  // a zone not held, drawn from its thread's overview (ZoneOverview)
  };
  Kind kind;
  float x0, y0, x1, y1;
  uint32_t color;            // 0xAABBGGRR, as ImGui wants
  uint32_t lane;             // index into lanes()
  uint32_t index;            // zone index, frame number (from 1), message index
  uint32_t count;            // zones merged (1 otherwise)
  const std::string* label;  // zone name, or nullptr
  uint32_t row = 0;          // kOverviewZone, and kMerged of a thread drawn from its overview:
                             // the run's row (`index` is its place there)
};

struct Hit {
  LaneKey lane;
  DrawItem::Kind kind;
  uint32_t index;    // CPU zone index in the thread, GPU zone index in the context, frame
                     // number (1 for the series' first frame: FrameSeries::Frame(0)); for a
                     // counter lane, the GPU zone the value measured; the
                     // lock's hold (held or waited for); the running span; the
                     // sample (its place in SampleTicks::samples); for an overview's
                     // run (kOverviewZone, kMerged), its place in its row
  uint32_t row = 0;  // kOverviewZone, kMerged: the run's row
};

struct TimelineMetrics {
  float row_height = 20;
  float title_height = 18;
  float lane_gap = 6;
  float frame_strip_height = 40;
  float plot_height = 50;
  float min_zone_px = 2;           // narrower zones merge into level-of-detail blocks
  float running_strip_height = 4;  // a thread's running state, at the bottom of its title bar
  float sample_tick_height = 7;    // a sample's tick, over the running strip
};

// The values of a plot's points in view (and one point on each side).
struct PlotRange {
  double min = 0, max = 0;
  size_t points = 0;
};

class Timeline {
 public:
  // Indexes what is new in `model`. Call under the model's lock, before the others.
  // `loaded` is the share of the trace the model holds so far (a file loading: its bytes
  // read), so that each row's room is made once for the whole trace, not grown (and
  // copied) at every step of the load.
  void Sync(const server::TraceModel& model, double loaded = 1.0);
  // Stacks the lanes from y = top, honouring collapsed/hidden states. Counter lanes are
  // shown only when `states` has them and they are not hidden (they are chosen).
  void Layout(const server::TraceModel& model, const std::map<LaneKey, LaneState>& states, float top);
  // The items visible in `view`, x relative to the timeline's left edge, of the lanes
  // that reach into [top, bottom] (lane coordinates: what the scrolled window shows).
  // A trace of 65,536 threads thus costs the lanes on screen, not all of them.
  void BuildItems(const server::TraceModel& model, const TimelineView& view, std::vector<DrawItem>& out,
                  float top = -1e30f, float bottom = 1e30f) const;
  // Whether a lane (its title bar included) reaches into [top, bottom].
  bool IsLaneVisible(const Lane& lane, float top, float bottom) const {
    return lane.y + lane.height >= top && lane.y - metrics_.title_height <= bottom;
  }
  std::optional<Hit> HitTest(const server::TraceModel& model, const TimelineView& view, float x,
                             float y) const;

  const std::vector<Lane>& lanes() const { return lanes_; }
  // A lane's title, made when it is shown (a trace may have 65,536 lanes, a window
  // shows a few dozen): "worker 3 (1200 zones)", "GPU: compute queue", ...
  std::string Title(const server::TraceModel& model, const Lane& lane) const;
  // What a lane shows, in a few words: the thread's name, "thread 7" without one, the
  // GPU context's, the plot's.
  static std::string Name(const server::TraceModel& model, const LaneKey& key);
  float total_height() const { return total_height_; }
  const TimelineMetrics& metrics() const { return metrics_; }
  // Sizes the rows for text `font_px` high (the default metrics are for 13 px).
  void SetFontSize(float font_px) {
    const float s = font_px / 13.0f;
    metrics_ = TimelineMetrics{};
    metrics_.row_height = font_px + 7 * s;
    metrics_.title_height = font_px + 5 * s;
    metrics_.lane_gap *= s;
    metrics_.frame_strip_height *= s;
    metrics_.plot_height *= s;
    metrics_.running_strip_height *= s;
    metrics_.sample_tick_height *= s;
  }
  // Nanoseconds since the first event, the timeline's time axis.
  int64_t TraceEndNs(const server::TraceModel& model) const;

  // A curve lane's values in view: the lane is scaled to them and its axis shows them.
  // A memory lane's scale starts at 0.
  PlotRange VisiblePlotRange(const server::TraceModel& model, const TimelineView& view,
                             const LaneKey& key) const;
  // Where a curve lane draws `value` (lane coordinates) when scaled to `range`: min at
  // the bottom, max at the top; a flat plot's one value mid-lane (a memory lane's 0 at
  // the bottom).
  static float CurveY(const Lane& lane, const PlotRange& range, double value);
  // The curve's value in force at `ns` (its last point at or before it) and that point's
  // time; nullopt for an empty curve.
  std::optional<std::pair<int64_t, double>> PlotValueAt(const server::TraceModel& model, const LaneKey& key,
                                                        int64_t ns) const;
  // A memory pool's peak (bytes in use at most) and when it was first reached; nullopt
  // for a pool with no allocation.
  std::optional<std::pair<int64_t, uint64_t>> MemoryPeak(uint32_t pool_id) const;
  // A lock hold's span, or its wait's (relative ns; the end of the trace for one still
  // held); begin == INT64_MIN when there is none.
  Span LockSpan(uint32_t lock_id, uint32_t hold, bool wait) const;

  // When a thread (by its OS id) ran, from its context switches: its spans (relative
  // ns, in order), their CPUs, and whether each ended with the thread preempted (it
  // could have run on) rather than blocked; nullptr when the trace has none for it.
  struct Running {
    std::vector<Span> spans;
    std::vector<uint32_t> cpus;
    std::vector<uint8_t> preempted;
  };
  const Running* ThreadRunning(uint32_t os_thread_id) const {
    auto it = running_.find(os_thread_id);
    return it == running_.end() ? nullptr : &it->second;
  }
  // What ran on a CPU core, from the context switches: the program's threads' spans
  // there, in order, and each one's OS thread id; nullptr for a core none ran on.
  struct CpuRuns {
    std::vector<Span> spans;
    std::vector<uint32_t> threads;
  };
  // Whether the trace's switches say which were preemptions (Linux 4.17 and later): if
  // none did, a wait's cause is unknown rather than a block.
  bool preemption_known() const { return preemption_known_; }
  const CpuRuns* CpuRunning(uint32_t cpu) const {
    auto it = cpus_.find(cpu);
    return it == cpus_.end() ? nullptr : &it->second;
  }
  size_t cpu_count() const { return cpus_.size(); }
  // A thread's samples (by its OS id), in time order: when (relative ns) and which
  // (index in model.samples); nullptr for a thread without samples.
  struct SampleTicks {
    std::vector<int64_t> ns;
    std::vector<uint32_t> samples;
  };
  const SampleTicks* ThreadSamples(uint32_t os_thread_id) const {
    auto it = samples_.find(os_thread_id);
    return it == samples_.end() ? nullptr : &it->second;
  }
  // The span of a CPU's lane at `ns` (within `slack`), or nullopt.
  std::optional<uint32_t> CpuRunAt(uint32_t cpu, int64_t ns, int64_t slack) const;

  // A GPU zone's span on the trace timeline (relative ns), cached per context.
  Span GpuSpan(uint32_t context_id, uint32_t zone_index) const;
  // A run of a thread's overview (its zones not held), or of the zone window
  // (Hit::row with kWindowRow): Hit::row and Hit::index; nullptr when there is none.
  const server::OverviewRun* OverviewRunAt(const server::TraceModel& model, uint32_t thread_id, uint32_t row,
                                           uint32_t index) const;
  static constexpr uint32_t kWindowRow = 1u << 31;
  // Zones read from the file for a window of time (zones not held: Session::ReadZoneWindow),
  // with each thread's rows indexed: made off the UI thread (IndexZoneWindow), drawn
  // instead of the overview where the window covers the view and a pixel is finer than
  // the overview's resolution.
  struct IndexedZoneWindow {
    server::ZoneWindow window;
    std::map<uint32_t, LaneIndex> lanes;  // by thread id
  };
  static std::shared_ptr<const IndexedZoneWindow> IndexZoneWindow(server::ZoneWindow window);
  // nullptr clears it.
  void SetZoneWindow(std::shared_ptr<const IndexedZoneWindow> window) { window_ = std::move(window); }
  // Whether `view` wants a zone window it does not have: finer than the overview, and
  // not inside the window set.
  bool NeedsZoneWindow(const server::TraceModel& model, const TimelineView& view) const;
  // The ticks of `view` (zones not held: what to ask a window for).
  std::pair<uint64_t, uint64_t> ViewTicks(const server::TraceModel& model, const TimelineView& view) const;

  // The groups of lanes (LaneGroup bits) not laid out; by default the library's threads.
  void HideLaneGroups(uint32_t groups) { hidden_groups_ = groups; }
  void SetZoneColoring(ZoneColoring coloring) { coloring_ = coloring; }

  // The user's order of the lanes: those in `order` come in that order, in the places
  // they would take; the others (a thread new in a live trace) where they come by default.
  void SetLaneOrder(std::vector<LaneKey> order);
  const std::vector<LaneKey>& lane_order() const { return order_; }
  // Moves lane `key` right before (or after) lane `target`, as the user drags it: the
  // lanes laid out last, in their new order, become the user's order.
  void MoveLane(const LaneKey& key, const LaneKey& target, bool after);
  // Orders the lanes laid out last, each kind among its own places, as `by` says, and
  // makes that the user's order.
  void SortLanes(const server::TraceModel& model, LaneSort by);
  // A thread's or GPU context's time in its outermost zones (ns); 0 for other lanes.
  int64_t BusyNs(const server::TraceModel& model, const LaneKey& key) const;
  // What the frame strips grade frames against (FrameTarget::Color).
  void SetFrameTarget(FrameTarget target) { frame_target_ = target; }
  const FrameTarget& frame_target() const { return frame_target_; }
  // Frame `number` (from 1) of series `series_id`, relative ns; nullopt when there is none.
  std::optional<Span> FrameSpan(const server::TraceModel& model, uint32_t series_id, uint32_t number) const;

 private:
  struct ThreadLane {
    LaneIndex index;  // of its zones, or (zones not held) of its overview's runs
    // The overview indexed: its runs and resolution then, and when (steady clock ns).
    size_t overview_runs = SIZE_MAX;
    uint64_t overview_resolution = 0;
    int64_t overview_synced = INT64_MIN;
  };
  // Indexes a thread's overview again when it changed: at once when it was merged
  // coarser, else at most every quarter of a second while the trace loads.
  void SyncOverview(const server::TraceModel& model, const server::ThreadTimeline& thread, ThreadLane& lane,
                    double loaded);
  // What a thread whose zones are not held draws from in `view`: the zone window's rows
  // (and its index, `flag` kWindowRow), or its overview's; rows nullptr: nothing.
  struct RunSource {
    const std::vector<std::vector<server::OverviewRun>>* rows = nullptr;
    const LaneIndex* index = nullptr;
    uint32_t flag = 0;
  };
  RunSource SourceFor(const server::TraceModel& model, const server::ThreadTimeline& thread,
                      const ThreadLane& thread_lane, const TimelineView& view) const;
  // Whether the zone window covers `view` and a pixel there is finer than the overview.
  bool WindowShows(const server::TraceModel& model, const TimelineView& view) const;
  // A thread's zones not held: its overview's runs in view.
  void BuildOverviewItems(const server::TraceModel& model, const TimelineView& view, const Lane& lane,
                          uint32_t lane_index, const ThreadLane& thread_lane,
                          const server::ThreadTimeline& thread, std::vector<DrawItem>& out) const;
  struct GpuLane {
    LaneIndex index;
    std::vector<Span> spans;  // by zone index; begin == INT64_MIN when untimed
    size_t knots_seen = 0;
    size_t brackets_seen = 0;  // the clock model's brackets move every time of the epoch
    size_t zones_seen = 0;
    size_t timed_seen = 0;
  };

  // A memory pool's bytes in use over time, a lock's holds and waits, and threads'
  // running spans, kept up to date from the model (timeline_resources.cpp).
  struct MemoryLane {
    std::vector<std::pair<uint64_t, double>> usage;  // (tick, bytes in use), as a plot's points
    uint64_t seen = 0;                               // allocations + frees when made
    uint64_t peak_bytes = 0;
    int64_t peak_ns = 0;
  };
  struct LockLane {
    LaneIndex index;          // item 2 * hold: the hold; 2 * hold + 1: its wait
    std::vector<Span> spans;  // by item
    uint32_t hold_rows = 0;   // rows of holds, then rows of waits
    size_t holds_seen = 0;
    uint64_t last_tick_seen = 0;
  };
  // `force`: rebuild whatever changed now (a load just completed), without waiting.
  void SyncResources(const server::TraceModel& model, bool force);
  void BuildLockItems(const server::TraceModel& model, const TimelineView& view, const Lane& lane,
                      uint32_t lane_index, std::vector<DrawItem>& out) const;
  void BuildRunningItems(const TimelineView& view, const Lane& lane, uint32_t lane_index,
                         uint32_t os_thread_id, std::vector<DrawItem>& out) const;
  // The running span of a thread's strip at `ns` (within `slack`), or nullopt.
  std::optional<uint32_t> RunningAt(uint32_t os_thread_id, int64_t ns, int64_t slack) const;
  // The running span a wait at `ns` follows (the thread did not run between it and the
  // next), or nullopt.
  std::optional<uint32_t> WaitAt(uint32_t os_thread_id, int64_t ns) const;
  // A thread's sample ticks in view, one item per pixel column that has any.
  void BuildSampleItems(const TimelineView& view, const Lane& lane, uint32_t lane_index,
                        uint32_t os_thread_id, std::vector<DrawItem>& out) const;
  // The sample nearest `ns` within `slack` (its place in SampleTicks), or nullopt.
  std::optional<uint32_t> SampleAt(uint32_t os_thread_id, int64_t ns, int64_t slack) const;
  // A curve lane's points, or nullptr.
  const std::vector<std::pair<uint64_t, double>>* CurvePoints(const server::TraceModel& model,
                                                              const LaneKey& key) const;
  using CurvePointList = std::vector<std::pair<uint64_t, double>>;
  // The first of a curve's points from `from` on whose time is at least `ns` (or past
  // `ns`, with `after`), by bisection.
  size_t CurvePointAt(const server::TraceModel& model, const CurvePointList& points, size_t from, int64_t ns,
                      bool after = false) const;
  // The lowest and highest value of a curve's points [begin, end) (begin < end), from the
  // lowest and highest of each kCurveBlock points, kept per curve as it grows, so that a
  // view of millions of points is scaled and drawn without visiting each.
  std::pair<double, double> CurveMinMax(const LaneKey& key, const CurvePointList& points, size_t begin,
                                        size_t end) const;
  static constexpr size_t kCurveBlock = 256;
  struct CurveBlocks {
    const void* data =
        nullptr;  // the points' storage they were taken from: another, and they are taken again
    std::vector<std::pair<double, double>> blocks;
  };
  mutable std::map<LaneKey, CurveBlocks> curve_blocks_;

  // The colour of a zone of `lane`, by the coloring chosen.
  uint32_t ColorOf(const server::SourceLocation& location, uint32_t location_id, const LaneKey& lane,
                   const Span& span) const;
  // Puts `pending` in the user's order (SetLaneOrder).
  struct Pending {
    LaneKey key;
    uint32_t rows;
    float row_height;
  };
  void ApplyOrder(std::vector<Pending>& pending);
  // Makes `shown` (the lanes laid out, in their new order) the user's order; a lane of
  // the old order that is hidden keeps its place after the lane before it there.
  void CommitOrder(std::vector<LaneKey> shown);

  void BuildCounterItems(const server::TraceModel& model, const TimelineView& view, const Lane& lane,
                         uint32_t lane_index, std::vector<DrawItem>& out) const;
  // A frame series' bars: one per frame, or per pixel column the longest frame in it.
  void BuildFrameItems(const server::TraceModel& model, const TimelineView& view, const Lane& lane,
                       uint32_t lane_index, std::vector<DrawItem>& out) const;

  // The lane of model.threads[i], by the same index.
  const ThreadLane* FindThreadLane(const server::TraceModel& model, uint32_t thread_id) const;

  std::vector<ThreadLane> threads_;                  // by index in model.threads
  std::shared_ptr<const IndexedZoneWindow> window_;  // SetZoneWindow
  std::map<uint32_t, GpuLane> gpus_;                 // by context id
  std::map<uint32_t, MemoryLane> memory_;            // by pool id
  std::map<uint32_t, LockLane> locks_;               // by lock id
  std::map<uint32_t, Running> running_;              // by OS thread id
  std::map<uint32_t, CpuRuns> cpus_;                 // by CPU
  std::map<uint32_t, SampleTicks> samples_;          // by OS thread id
  size_t samples_seen_ = 0;
  int64_t samples_origin_ = 0;  // the origin and the clock's pairs the ticks were placed with
  size_t samples_clock_pairs_ = 0;
  bool preemption_known_ = false;  // some switch said it was a preemption: the kernel tells
  void BuildCpuItems(const server::TraceModel& model, const TimelineView& view, const Lane& lane,
                     uint32_t lane_index, std::vector<DrawItem>& out) const;
  std::map<uint32_t, FrameStrip> frame_strips_;  // by frame series
  FrameTarget frame_target_;
  uint32_t hidden_groups_ = kLibraryLanes;
  ZoneColoring coloring_ = ZoneColoring::kLocation;
  std::vector<LaneKey> order_;                 // the user's order (SetLaneOrder)
  std::map<LaneKey, uint32_t> order_rank_;     // each of order_'s place in it
  std::vector<Pending> pending_;               // Layout's lanes before stacking
  std::vector<LaneKey> ordered_for_;           // the keys order_ was last applied to,
  std::vector<uint32_t> ordered_permutation_;  // and the permutation it gave
  std::vector<Pending> ordered_scratch_;
  std::optional<LaneKey> messages_lane_;  // the frames lane that shows the messages
  size_t switches_seen_ = 0;
  uint64_t running_last_tick_ = 0;        // a thread still running runs to the trace's end
  int64_t resources_synced_ = INT64_MIN;  // steady clock ns of their last rebuild (INT64_MIN: none)
  double last_loaded_ = 1.0;              // the share of the trace loaded at the last Sync
  std::vector<Lane> lanes_;
  float total_height_ = 0;
  int64_t origin_ns_ = 0;  // CLOCK_MONOTONIC_RAW ns of the trace's first event
  TimelineMetrics metrics_;
};

// A stable, readable colour for a source location (0xAABBGGRR), or its own colour.
uint32_t ZoneColor(const server::SourceLocation& location, uint32_t id);
// The colour of a lane's zones by ZoneColoring::kThread (a thread's, a GPU context's).
uint32_t ThreadColor(const LaneKey& lane);
// A zone's colour by its duration against `target_ns` (ZoneColoring::kDuration).
uint32_t DurationColor(int64_t duration_ns, int64_t target_ns);

}  // namespace gnomon::viewer
