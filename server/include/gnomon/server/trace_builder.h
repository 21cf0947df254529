// Turns decoded messages into a TraceModel: zone trees, frames, messages, plots, clocks.
//
// A decoder handler (see stream_decoder.h). Every semantic problem in the stream, such
// as a zone end with no begin, an attribute with no open zone or an event before any
// ThreadContext, is counted in TraceModel::diagnostics and skipped; none is fatal.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "gnomon/server/stream_decoder.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

// Source-location ids accepted are below this; larger ids count as invalid. (A program
// numbers its locations from 1; zones keep a location's index in 18 bits.)
inline constexpr uint32_t kMaxSourceLocationId = 1u << 18;
// Most distinct threads, frame series and plots accepted from one program.
inline constexpr uint32_t kMaxThreads = 1u << 16;
inline constexpr uint32_t kMaxSeries = 1u << 16;
inline constexpr uint32_t kMaxGpuContexts = 1u << 16;
// GPU times held while their zone has not arrived, per context.
inline constexpr size_t kMaxEarlyGpuTimes = 1u << 20;
// Most counter sets accepted from one program.
inline constexpr uint32_t kMaxCounterSets = 1u << 12;

class TraceBuilder : public NullHandler {
 public:
  explicit TraceBuilder(TraceModel& model) : model_(model) {}

  void OnThreadContext(uint32_t thread_id);
  // Part of the stream is lost (a trace file's block missing or damaged): which thread
  // the stream is on is unknown until the next ThreadContext, so thread-bound events
  // until then count as events without a thread rather than land on the wrong one.
  void OnStreamGap() { OnThreadContext(0); }
  void OnZoneBegin(uint32_t source_location, uint64_t tick) {
    if (CurrentThread() == nullptr) {
      ++model_.diagnostics.events_without_thread;
      return;
    }
    Zone zone;
    zone.begin_tick = tick;
    zone.source_location = LocationIndex(source_location);
    zone.depth = static_cast<uint16_t>(std::min<size_t>(thread_->open_zones.size(), ZoneArray::kMaxDepth));
    thread_->open_zones.push_back({thread_->zones.size(), tick});
    thread_->zones.push_back(zone);
    ++model_.zone_count;
    SeeTick(tick);
  }
  void OnZoneEnd(uint64_t tick) {
    if (CurrentThread() == nullptr) {
      ++model_.diagnostics.events_without_thread;
      return;
    }
    if (thread_->open_zones.empty()) {
      ++model_.diagnostics.zone_ends_without_begin;
      return;
    }
    const ThreadTimeline::OpenZone open = thread_->open_zones.back();
    thread_->open_zones.pop_back();
    if (thread_->zones.CloseOpen(open.index, open.begin_tick, tick)) ++model_.diagnostics.clamped_zone_ends;
    SeeTick(tick);
  }
  // A zone whose end came right after its begin, nothing between (most zones of a big
  // trace): the same as OnZoneBegin then OnZoneEnd, with the zone written once.
  void OnLeafZone(uint32_t source_location, uint64_t begin_tick, uint64_t end_tick) {
    if (CurrentThread() == nullptr) {
      model_.diagnostics.events_without_thread += 2;
      return;
    }
    const uint32_t depth = uint32_t(std::min<size_t>(thread_->open_zones.size(), ZoneArray::kMaxDepth));
    if (thread_->zones.PushClosed(begin_tick, end_tick, LocationIndex(source_location), depth)) {
      ++model_.diagnostics.clamped_zone_ends;
    }
    ++model_.zone_count;
    SeeTick(std::min(begin_tick, end_tick));
    SeeTick(std::max(begin_tick, end_tick));
  }
  void OnZoneName(std::string_view name);
  void OnZoneText(std::string_view text);
  void OnZoneColor(uint32_t rgb);
  void OnZoneValue(uint64_t value);
  void OnFrame(protocol::MessageType type, uint32_t name_id, uint64_t tick);
  void OnLogMessage(uint64_t tick, uint8_t severity, std::string_view text);
  void OnPlotValue(uint32_t plot_id, uint64_t tick, double value);
  void OnCpuCalibration(const protocol::CpuCalibration& pair);
  void OnStringDef(uint32_t id, uint8_t kind, std::string_view text);
  void OnSourceLocationDef(const protocol::SourceLocationDef& def, std::string_view name,
                           std::string_view function, std::string_view file);
  void OnThreadInfo(uint32_t thread_id, uint32_t os_thread_id, std::string_view name);
  void OnAppInfo(const protocol::AppInfo& info, std::string_view name);
  void OnDroppedEvents(uint64_t total);
  void OnEndOfStream(uint64_t tick);
  void OnGpuContextDef(const protocol::GpuContextDef& def, std::string_view name);
  void OnGpuZoneBegin(uint32_t context, uint32_t query, uint32_t source_location, uint64_t cpu_tick);
  void OnGpuZoneEnd(uint32_t context, uint32_t query, uint64_t cpu_tick);
  void OnGpuTime(uint32_t context, uint32_t query, uint64_t gpu_ticks);
  void OnGpuCalibration(const protocol::GpuCalibration& calibration);
  void OnGpuResync(const protocol::GpuResync& resync);
  void OnGpuContextName(uint32_t context, std::string_view name);
  void OnCounterSetDef(const protocol::CounterSetDef& def, std::string_view name);
  void OnCounterDef(const protocol::CounterDef& def, std::string_view name, std::string_view description);
  void OnCounterResult(const protocol::CounterResult& result, const uint8_t* values);

 private:
  GpuContextTimeline* FindGpuContext(uint32_t id);
  // Registers `query` as awaited by zone `zone_index`, or fills it from an early time.
  void AwaitGpuQuery(GpuContextTimeline& context, uint32_t query, uint32_t zone_index, bool is_end);
  int64_t CpuNs(uint64_t time, uint8_t domain) const;
  ThreadTimeline* FindOrAddThread(uint32_t thread_id);
  // The thread that thread-bound events go to, or nullptr (none named, or too many). A
  // thread's timeline is made at its first event, not at a ThreadContext that names it:
  // naming threads costs a stream nothing until it records in them.
  ThreadTimeline* CurrentThread() {
    if (thread_ != nullptr) [[likely]] return thread_;
    return ResolveThread();
  }
  [[gnu::noinline]] ThreadTimeline* ResolveThread();
  ZoneAttributes* InnermostAttributes();
  // The index in model_.source_locations of the program's location `id`; 0
  // ("unknown") for an id past kMaxSourceLocationId, counted. This runs for every zone.
  // A program numbers its locations 1, 2, 3... and its stream defines them in that
  // order before using them, so each index is its id: ids below identity_limit_ are
  // known to be, and only other streams look up a table.
  uint32_t LocationIndex(uint32_t id) {
    if (id < identity_limit_) [[likely]] return id;
    return LookUpLocation(id);
  }
  [[gnu::noinline]] uint32_t LookUpLocation(uint32_t id);
  void SeeTick(uint64_t tick) {
    if (tick < model_.first_tick) model_.first_tick = tick;
    if (tick > model_.last_tick) model_.last_tick = tick;
  }

  TraceModel& model_;
  ThreadTimeline* thread_ = nullptr;  // of thread_id_, once resolved
  uint32_t thread_id_ = 0;            // from the last ThreadContext; 0: none
  bool thread_refused_ = false;       // thread_id_ is past kMaxThreads (counted once)
  uint32_t identity_limit_ = 1;  // ids below it are their own index (0: "unknown")
};

}  // namespace gnomon::server
