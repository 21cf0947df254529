// Turns decoded messages into a TraceModel: zone trees, frames, messages, plots, clocks.
//
// A decoder handler (see stream_decoder.h): one OnX per message of the catalogue. Every semantic problem in
// the stream, such as a zone end with no begin, an attribute with no open zone or an event before any
// ThreadContext, is counted in TraceModel::diagnostics and skipped; none is fatal.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gnomon/server/seeded_hash.h"
#include "gnomon/server/trace_model.h"
#include "gnomon/tracefile/block_summary.h"
#include "ingest/stream_decoder.h"
#include "model/lock_builder.h"
#include "model/memory_builder.h"

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
// Most modules (mapped files) accepted from one program.
inline constexpr size_t kMaxModules = 1u << 14;

class TraceBuilder;

// The call stacks a model-building lane has seen interned: each one's frames and its id
// in the model's table (CallstackTable ids never change), so that a stack seen again
// goes with its run already named, and the turn, one lane at a time, interns only the
// new ones. The lane's own, used on the lane's thread only: a stack seen first is kept
// pending, and learns its id when its piece comes back from its turn (ZoneOps::Clear).
//
// Bounded: past kMaxStacks stacks or kMaxFrames frames nothing more is kept, and a
// lookup probes at most kMaxProbes slots (a stream that makes its stacks' hashes collide
// only goes without), so a stack it does not know costs the turn what it did before.
class KnownCallstacks {
 public:
  static constexpr size_t kMaxStacks = size_t{1} << 16;
  static constexpr size_t kMaxFrames = size_t{1} << 19;
  static constexpr size_t kMaxProbes = 16;
  static constexpr uint32_t kNoSlot = ~0u;
  // What a lookup gives: the stack's id (0: not known yet), and the slot that learns it
  // (kNoSlot: known, or not kept).
  struct Seen {
    uint32_t id = 0;
    uint32_t slot = kNoSlot;
  };
  Seen See(const protocol::LeValues& frames);
  // The id the turn gave the stack seen at `slot` (0: none yet, it stays pending).
  void Learn(uint32_t slot, uint32_t id) {
    if (slot < entries_.size() && entries_[slot].id == 0) entries_[slot].id = id;
  }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t hash;
    uint32_t first;  // into frames_, in bytes
    uint32_t count;
    uint32_t id;  // 0 while pending
  };
  bool Same(const Entry& e, const protocol::LeValues& frames) const;
  // A hash's first slot in the table.
  size_t Home(uint64_t hash) const {
    return size_t((hash * 0x9E3779B97F4A7C15ull) >> 32) & (table_.size() - 1);
  }
  void Grow();
  std::vector<Entry> entries_;
  std::vector<uint8_t> frames_;  // every kept stack's frames as received (8 bytes each), back to back
  std::vector<uint32_t> table_;  // open addressing: entry + 1, 0 empty; a power of two long
  uint64_t seed_ = SeededHash{}.seed;
};

// A connection's zone begins and ends, paired ahead of the builder on another thread (a
// lane of a live capture that builds a model, worker.cpp), so that the builder only
// stores them: runs of zones whose ends and depths within the run are known, between the
// connection's other messages, kept as their bytes. Replayed in order on the builder, it
// builds exactly what decoding the connection's bytes would. Frame marks, plot values and
// log messages do not cut a run (they change nothing of a thread's zones, nor depend on
// them), so a thread's zones between them make one run; nor does an attribute (a name,
// text, colour or value) of a zone of the run, nor the call stack of the zone just begun:
// they are kept with the run and set where the run is stored (a stack the lane has not
// seen interned before, KnownCallstacks, is interned in the run's turn). The
// connection's bytes are decoded with it as the handler (stream_decoder.h;
// OnMessageBytes keeps the others).
class ZoneOps {
 public:
  // Plain words, no bit-fields: a bit-field's store reads the slot first, and the slots
  // are fresh memory, written once.
  struct RunZone {
    static constexpr uint32_t kOpen = 1u << 31;  // in depth: still open at the end of its run
    uint64_t begin_tick;
    uint64_t end_tick;
    uint32_t source_location;
    uint32_t depth;  // below the zones open when the run begins, | kOpen
  };
  // An attribute's message, for a zone of its run.
  struct RunAttribute {
    const uint8_t* message;
    uint64_t zone;  // in its run (into ZoneOps' staged zones until the replay)
  };
  // A Callstack message, for the zone just begun in its run; its id in the model's table
  // is known on the lane (KnownCallstacks) or set in the run's turn
  // (TraceBuilder::InternRunCallstacks).
  struct RunCallstack {
    const uint8_t* message;
    uint64_t zone;  // in its run (into ZoneOps' staged zones until the replay)
    uint32_t id;    // 0 until known
    uint32_t slot;  // the KnownCallstacks slot that learns the id, or kNoSlot
  };
  // A run's zones, and what they add to the model's totals, for TraceBuilder.
  struct Run {
    const RunZone* zones = nullptr;
    size_t count = 0;
    const RunAttribute* attributes = nullptr;  // in the order they came
    size_t attribute_count = 0;
    RunCallstack* callstacks = nullptr;  // by zone; ids set in the turn are seen by copies of the Run
    size_t callstack_count = 0;
    uint32_t max_location = 0;  // the largest source location id among them
    uint64_t opened = 0;        // zones left open
    uint64_t clamped = 0;       // ends before their begin
    uint64_t first_tick = kOpenZone;
    uint64_t last_tick = 0;
  };

  // Ready for the next piece, with the room this one used, up to kKeptBytes a vector:
  // past that (a hostile piece, every zone a run of its own) the room is given back.
  static constexpr size_t kKeptBytes = 8u << 20;  // a 4 MiB piece of leaf zones stages 4.4 MiB
  void Clear() {
    if (known_ != nullptr) {
      for (const RunCallstack& stack : callstacks_) known_->Learn(stack.slot, stack.id);
    }
    seeing_stack_ = false;
    Empty(zones_);
    Empty(attributes_);
    Empty(callstacks_);
    Empty(runs_);
    Empty(ops_);
    Empty(open_);
    current_ = nullptr;
    context_known_ = false;
  }
  // The stacks this lane has seen interned, to name the runs' stacks with; their ids are
  // learnt from each piece's turn at the next Clear(), so `known` is the lane's thread's.
  void UseKnownCallstacks(KnownCallstacks* known) { known_ = known; }
  // The zones handled since Clear(), leaves and begins.
  size_t zone_count() const { return zones_.size(); }
  // The room its vectors hold.
  size_t capacity_bytes() const {
    return zones_.capacity() * sizeof(RunZone) + attributes_.capacity() * sizeof(RunAttribute) +
           callstacks_.capacity() * sizeof(RunCallstack) + runs_.capacity() * sizeof(Run) +
           ops_.capacity() * sizeof(Op) + open_.capacity() * sizeof(size_t);
  }
  void OnLeafZone(uint32_t source_location, uint64_t begin_tick, uint64_t end_tick) {
    Run& run = Extend(source_location);
    if (end_tick >= begin_tick) [[likely]] {
      run.first_tick = std::min(run.first_tick, begin_tick);
      run.last_tick = std::max(run.last_tick, end_tick);
    } else {
      See(run, begin_tick, false);
      See(run, end_tick, true);
    }
    zones_.push_back({begin_tick, end_tick, source_location, uint32_t(open_.size())});
  }
  void OnZoneBegin(const protocol::ZoneBegin& m) {
    const uint32_t source_location = m.srcloc_id;
    const uint64_t tick = m.tick;
    See(Extend(source_location), tick, false);
    open_.push_back(zones_.size());
    zones_.push_back({tick, 0, source_location, uint32_t(open_.size() - 1) | RunZone::kOpen});
  }
  // Closes the run's innermost open zone; one begun before the run is the builder's to
  // close.
  void OnZoneEnd(const protocol::ZoneEnd& m) {
    const uint64_t tick = m.tick;
    if (!open_.empty()) {
      RunZone& zone = zones_[open_.back()];
      open_.pop_back();
      zone.end_tick = tick;
      zone.depth &= ~RunZone::kOpen;
      See(runs_.back(), tick, tick < zone.begin_tick);
      return;
    }
    Cut(MakeOp(Op::kEnd, tick, 0));
  }
  // Any other whole message: an attribute of a zone of the run, or the stack of the zone
  // just begun, goes with the run; the others are decoded by the builder in its turn (the
  // bytes must live until the run is stored, or the replay).
  void OnMessageBytes(const uint8_t* p, size_t size) {
    // An attribute of the run's innermost open zone: set where the run is stored.
    static_assert(uint8_t(protocol::MessageType::kZoneValue) - uint8_t(protocol::MessageType::kZoneName) == 3,
                  "ZoneName, ZoneText, ZoneColor, ZoneValue");
    if (!open_.empty() && p[0] >= uint8_t(protocol::MessageType::kZoneName) &&
        p[0] <= uint8_t(protocol::MessageType::kZoneValue)) {
      attributes_.push_back({p, open_.back()});
      return;
    }
    // The call stack of the zone just begun, the run's last and its innermost open one,
    // which has none yet (a second one is the builder's to count).
    if (p[0] == uint8_t(protocol::MessageType::kCallstack) && !open_.empty() &&
        open_.back() + 1 == zones_.size() &&
        (callstacks_.empty() || callstacks_.back().zone != open_.back())) {
      callstacks_.push_back({p, open_.back(), 0, KnownCallstacks::kNoSlot});
      seeing_stack_ = known_ != nullptr;  // looked up in OnCallstack, which follows
      return;
    }
    const bool detached = p[0] == uint8_t(protocol::MessageType::kFrameMark) ||
                          p[0] == uint8_t(protocol::MessageType::kFrameBegin) ||
                          p[0] == uint8_t(protocol::MessageType::kFrameEnd) ||
                          p[0] == uint8_t(protocol::MessageType::kPlotValue) ||
                          p[0] == uint8_t(protocol::MessageType::kLogMessage);
    const Op::Kind kind = detached ? Op::kDetached : Op::kBytes;
    // A thread switch starts an op of its own: every op knows its thread.
    const bool context =
        p[0] == uint8_t(protocol::MessageType::kThreadContext) && size >= sizeof(protocol::ThreadContext);
    if (!context && !ops_.empty() && ops_.back().kind == kind &&
        ops_.back().a + ops_.back().b == uintptr_t(p)) {
      ops_.back().b += size;
      return;
    }
    if (context) {
      context_thread_ = protocol::LoadLe<uint32_t>(p + offsetof(protocol::ThreadContext, thread_id));
      context_known_ = true;
    }
    if (detached) {
      ops_.push_back(MakeOp(kind, uintptr_t(p), size));
    } else {
      Cut(MakeOp(kind, uintptr_t(p), size));
    }
  }

  // The frames of the stack OnMessageBytes just kept: its id when the lane knows it.
  void OnCallstack(const protocol::Callstack&, const protocol::CallstackTail& t) {
    if (!seeing_stack_) return;
    seeing_stack_ = false;
    const KnownCallstacks::Seen seen = known_->See(t.frames);
    callstacks_.back().id = seen.id;
    callstacks_.back().slot = seen.slot;
  }

  // Replays on `builder`: decode(bytes, size) decodes the other messages with it. A run
  // whose thread nothing after it touches (but detached messages) may go to `hold`
  // instead: when hold(run) returns true, its caller stores the run itself, later, for
  // the current thread as it is at that point.
  template <typename Decode, typename Hold>
  void Replay(TraceBuilder& builder, Decode&& decode, Hold&& hold);
  template <typename Decode>
  void Replay(TraceBuilder& builder, Decode&& decode) {
    Replay(builder, decode, [](const Run&) { return false; });
  }

 private:
  struct Op {
    enum Kind : uint8_t { kRun, kEnd, kBytes, kDetached } kind;
    bool thread_known;  // false before the first ThreadContext of these bytes
    bool holdable;      // kRun: may be stored later (set by Replay)
    uint32_t thread;    // the ThreadContext in force (a ThreadContext's op: its own)
    uint64_t a;         // kRun: into runs_; kEnd: the tick; kBytes, kDetached: the address
    uint64_t b;         // kBytes, kDetached: the size
  };
  template <typename T>
  static void Empty(std::vector<T>& v) {
    if (v.capacity() * sizeof(T) > kKeptBytes) {
      std::vector<T>().swap(v);
    } else {
      v.clear();
    }
  }
  Op MakeOp(Op::Kind kind, uint64_t a, uint64_t b) const {
    return {kind, context_known_, false, context_thread_, a, b};
  }
  // The run a zone goes to, its largest location updated (its ticks are the caller's).
  Run& Extend(uint32_t source_location) {
    if (current_ == nullptr) [[unlikely]]
      StartRun();
    Run& run = *current_;
    run.max_location = std::max(run.max_location, source_location);
    return run;
  }
  static void See(Run& run, uint64_t tick, bool clamped) {
    run.first_tick = std::min(run.first_tick, tick);
    run.last_tick = std::max(run.last_tick, tick);
    run.clamped += clamped;
  }
  [[gnu::noinline]] void StartRun() {
    ops_.push_back(MakeOp(Op::kRun, runs_.size(), 0));
    runs_.push_back({});
    runs_.back().count = zones_.size();  // where it starts, until the replay
    runs_.back().attribute_count = attributes_.size();
    runs_.back().callstack_count = callstacks_.size();
    current_ = &runs_.back();
  }
  // An op the current run cannot go on past: its zones still open are the builder's now.
  void Cut(const Op& op) {
    if (current_ != nullptr) current_->opened = open_.size();
    ops_.push_back(op);
    current_ = nullptr;
    open_.clear();
  }
  std::vector<RunZone> zones_;
  std::vector<RunAttribute> attributes_;
  std::vector<RunCallstack> callstacks_;
  std::vector<Run> runs_;  // by kRun op
  std::vector<Op> ops_;
  std::vector<size_t> open_;  // the current run's open zones, into zones_
  Run* current_ = nullptr;    // the run zones go to, in runs_
  bool context_known_ = false;
  uint32_t context_thread_ = 0;
  KnownCallstacks* known_ = nullptr;
  bool seeing_stack_ = false;                // OnMessageBytes kept a stack: OnCallstack looks it up
  std::unordered_set<uint32_t> used_later_;  // in Replay
};

class TraceBuilder {
 public:
  explicit TraceBuilder(TraceModel& model) : model_(model), memory_(model), locks_(model) {}

  void OnThreadContext(const protocol::ThreadContext& m) { SwitchThread(m.thread_id); }
  // Part of the stream is lost (a trace file's block missing or damaged): which thread
  // the stream is on is unknown until the next ThreadContext, so thread-bound events
  // until then count as events without a thread rather than land on the wrong one.
  void OnStreamGap() { SwitchThread(0); }
  // The program's id of the thread that thread-bound events go to now; 0: none (as
  // after a gap).
  uint32_t current_thread_id() const { return thread_id_; }

  // Zone begins and ends come straight from the trace loader's compact blocks too.
  void OnZoneBegin(const protocol::ZoneBegin& m) { BeginZone(m.srcloc_id, m.tick); }
  void OnZoneEnd(const protocol::ZoneEnd& m) { EndZone(m.tick); }
  void BeginZone(uint32_t source_location, uint64_t tick) {
    if (CurrentThread() == nullptr) {
      ++model_.diagnostics.events_without_thread;
      return;
    }
    if (!hold_zones_) [[unlikely]] {
      if (overview_budget_ != 0) {
        SeeBlockTick(tick);
        if (open_->empty()) open_threads_.push_back({open_, thread_->id});  // for BeginBlock
      }
      const uint64_t place = thread_->zones_not_held;
      const uint64_t location = CountZone(source_location);
      open_->push_back({place | (location << kCountedLocationShift & kCountedLocations), tick});
      ++model_.zone_count;
      ++model_.open_zone_count;
      SeeTick(tick);
      return;
    }
    Zone zone;
    zone.begin_tick = tick;
    zone.source_location = LocationIndex(source_location);
    zone.depth = static_cast<uint16_t>(std::min<size_t>(open_->size(), ZoneArray::kMaxDepth));
    open_->push_back({thread_->zones.size(), tick});
    thread_->zones.push_back(zone);
    ++model_.zone_count;
    ++model_.open_zone_count;
    SeeTick(tick);
  }
  // An event seen only for the time range it widens (LoadOptions::extent_only); a
  // thread's, as when it is kept, only once a thread is current.
  void SeeEventTick(bool thread_bound, uint64_t tick) {
    if (!thread_bound || CurrentThread() != nullptr) SeeTick(tick);
  }
  void EndZone(uint64_t tick) {
    if (CurrentThread() == nullptr) {
      ++model_.diagnostics.events_without_thread;
      return;
    }
    if (open_->empty()) {
      ++model_.diagnostics.zone_ends_without_begin;
      return;
    }
    const OpenZone open = open_->back();
    open_->pop_back();
    --model_.open_zone_count;
    if (!hold_zones_) [[unlikely]] {
      if (tick < open.begin_tick) ++model_.diagnostics.clamped_zone_ends;
      if (overview_budget_ != 0) SeeBlockTick(tick);
      AddToOverview(uint32_t(std::min<size_t>(open_->size(), ZoneArray::kMaxDepth)), open.begin_tick, tick,
                    uint32_t((open.index & kCountedLocations) >> kCountedLocationShift));
    } else if (thread_->zones.CloseOpen(open.index, open.begin_tick, tick)) {
      ++model_.diagnostics.clamped_zone_ends;
    }
    SeeTick(tick);
  }
  // From now on, CPU zones are counted (with their locations, ticks and faults), not
  // held: the model is loaded without them (TraceModel::zones_held, set false here).
  // Their attributes and call stacks go with them. With `overview_runs`, each thread
  // keeps its ZoneOverview, in at most that many runs and rows for the model (past it
  // at the coarsest resolution, the overviews stop: TraceModel::overview_truncated).
  // Before the first zone only.
  void CountZonesOnly(size_t overview_runs = 0) {
    hold_zones_ = false;
    model_.zones_held = false;
    overview_budget_ = overview_runs;
  }
  // The zones still open, into the overviews as if they ended at the trace's last tick
  // (as the timeline draws a zone still open): at the end of the load.
  void FinishOverviews();
  // Counted only: a segment of a block's zones from its summary (block_summary.h)
  // instead of its records, at the segment's end, on the thread current then: the same
  // counts, faults, stacks and overview as decoding them, but for the overview's
  // resolution, no finer than the summary's.
  void ApplySummary(const tracefile::SummarySegment& segment, uint64_t resolution);
  // With an overview: the block at `where` begins (it and its open zones recorded in
  // TraceModel::zone_blocks), and ends (the ticks of its zone events recorded).
  void BeginBlock(const ZoneBlock& where);
  void EndBlock() {
    if (!block_recorded_) return;
    model_.zone_blocks.back().first_tick = block_first_tick_;
    model_.zone_blocks.back().last_tick = block_last_tick_;
    block_recorded_ = false;
  }
  // A zone begun and not yet ended, on its thread's stack.
  struct OpenZone {
    // Into the thread's zones. Counted only (CountZonesOnly): its place among them, its
    // location's index from bit kCountedLocationShift (ZoneArray's 18 bits), and
    // kStackGiven.
    uint64_t index;
    uint64_t begin_tick;
  };
  // Counted only: on the index of a zone given its call stack (each zone takes one).
  static constexpr uint64_t kStackGiven = uint64_t{1} << 63;
  static constexpr int kCountedLocationShift = 44;
  static constexpr uint64_t kCountedLocations = ((uint64_t{1} << 18) - 1) << kCountedLocationShift;
  // Zones paired ahead (ZoneOps), for the current thread: the same as their begins and
  // ends one by one, each zone written once.
  void AddZoneRun(const ZoneOps::Run& run);
  // A run to be stored by another thread beside this builder (ZoneOps::Replay's `last`):
  // adds what it changes of the model's totals now, and gives the current thread and its
  // stack of open zones; false when the builder must store it itself (no thread, or a
  // location that needs looking up).
  bool HoldRun(const ZoneOps::Run& run, ThreadTimeline*& thread, std::vector<OpenZone>*& open) {
    if (CurrentThread() == nullptr || run.max_location >= identity_limit_) return false;
    AddRunTotals(run);
    InternRunCallstacks(run);
    thread = thread_;
    open = open_;
    return true;
  }
  // Stores a held run. It touches only its thread, so it may run beside the builder
  // while nothing else uses that thread and no one reads the model.
  static void StoreRun(const ZoneOps::Run& run, ThreadTimeline& thread, std::vector<OpenZone>& open) {
    StoreZones(run, thread, open, [](uint32_t id) { return id; });
  }
  // The builder takes its current thread again at the next event that needs it (after
  // another writer may have stored into it), through `gate` when set: called with each
  // thread it takes, before it touches it.
  void ForgetThread() {
    thread_ = nullptr;
    open_ = nullptr;
  }
  void SetThreadGate(std::function<void(const ThreadTimeline&)> gate) { thread_gate_ = std::move(gate); }
  // A zone whose end came right after its begin, nothing between (most zones of a big
  // trace): the same as OnZoneBegin then OnZoneEnd, with the zone written once.
  void OnLeafZone(uint32_t source_location, uint64_t begin_tick, uint64_t end_tick) {
    if (CurrentThread() == nullptr) {
      model_.diagnostics.events_without_thread += 2;
      return;
    }
    const uint32_t depth = uint32_t(std::min<size_t>(open_->size(), ZoneArray::kMaxDepth));
    if (!hold_zones_) [[unlikely]] {
      if (end_tick < begin_tick) ++model_.diagnostics.clamped_zone_ends;
      if (overview_budget_ != 0) {
        SeeBlockTick(begin_tick);
        SeeBlockTick(end_tick);
      }
      AddToOverview(depth, begin_tick, end_tick, CountZone(source_location));
    } else if (thread_->zones.PushClosed(begin_tick, end_tick, LocationIndex(source_location), depth)) {
      ++model_.diagnostics.clamped_zone_ends;
    }
    ++model_.zone_count;
    SeeTick(std::min(begin_tick, end_tick));
    SeeTick(std::max(begin_tick, end_tick));
  }
  void OnZoneName(const protocol::ZoneName&, const protocol::ZoneNameTail& t);
  void OnZoneText(const protocol::ZoneText&, const protocol::ZoneTextTail& t);
  void OnZoneColor(const protocol::ZoneColor& m);
  void OnZoneValue(const protocol::ZoneValue& m);
  void OnFrameMark(const protocol::FrameMark& m);
  void OnFrameBegin(const protocol::FrameBegin& m);
  void OnFrameEnd(const protocol::FrameEnd& m);
  void OnLogMessage(const protocol::LogMessage& m, const protocol::LogMessageTail& t);
  void OnPlotValue(const protocol::PlotValue& m);
  void OnCpuCalibration(const protocol::CpuCalibration& m);
  void OnStringDef(const protocol::StringDef& m, const protocol::StringDefTail& t);
  void OnSourceLocationDef(const protocol::SourceLocationDef& m, const protocol::SourceLocationDefTail& t);
  void OnThreadInfo(const protocol::ThreadInfo& m, const protocol::ThreadInfoTail& t);
  void OnLibraryThread(const protocol::LibraryThread& m);
  void OnProgramEnvironment(const protocol::ProgramEnvironment& m, const protocol::ProgramEnvironmentTail& t);
  void OnAppInfo(const protocol::AppInfo& m, const protocol::AppInfoTail& t);
  void OnDroppedEvents(const protocol::DroppedEvents& m);
  void OnEndOfStream(const protocol::EndOfStream& m);
  void OnGpuContextDef(const protocol::GpuContextDef& m, const protocol::GpuContextDefTail& t);
  void OnGpuZoneBegin(const protocol::GpuZoneBegin& m);
  void OnGpuZoneEnd(const protocol::GpuZoneEnd& m);
  void OnGpuTime(const protocol::GpuTime& m);
  void OnGpuCalibration(const protocol::GpuCalibration& m);
  void OnGpuResync(const protocol::GpuResync& m);
  void OnGpuTimeBracket(const protocol::GpuTimeBracket& m);
  void OnGpuContextName(const protocol::GpuContextName& m, const protocol::GpuContextNameTail& t);
  void OnCounterSetDef(const protocol::CounterSetDef& m, const protocol::CounterSetDefTail& t);
  void OnCounterDef(const protocol::CounterDef& m, const protocol::CounterDefTail& t);
  void OnCounterResult(const protocol::CounterResult& m, const protocol::CounterResultTail& t);
  void OnMemAlloc(const protocol::MemAlloc& m);
  void OnMemFree(const protocol::MemFree& m);
  void OnLockWait(const protocol::LockWait& m);
  void OnLockObtain(const protocol::LockObtain& m);
  void OnLockRelease(const protocol::LockRelease& m);
  void OnCallstack(const protocol::Callstack& m, const protocol::CallstackTail& t);
  void OnModuleDef(const protocol::ModuleDef& m, const protocol::ModuleDefTail& t);
  void OnSample(const protocol::Sample& m, const protocol::SampleTail& t);
  void OnContextSwitch(const protocol::ContextSwitch& m);
  void OnHostInfo(const protocol::HostInfo& m, const protocol::HostInfoTail& t);
  void OnClockReply(const protocol::ClockReply& m);
  void OnClockSample(const protocol::ClockSample& m);
  void OnCaptureClock(const protocol::CaptureClock& m, const protocol::CaptureClockTail& t);

 private:
  // What a GPU context still waits for, and what came before its zone.
  struct GpuContextState {
    GpuContextTimeline* context = nullptr;  // in the model (a std::map: stable)
    struct PendingQuery {
      uint32_t zone = 0;
      bool is_end = false;
    };
    std::unordered_map<uint32_t, PendingQuery> pending;              // query -> zone awaiting its time
    std::unordered_map<uint32_t, uint64_t> early_times;              // times that arrived before their zone
    std::unordered_map<uint32_t, std::vector<uint32_t>> open_zones;  // by thread, innermost last
  };

  void SwitchThread(uint32_t thread_id);
  // A run's attributes, on its zones stored from `first` in the thread.
  [[gnu::noinline]] static void SetRunAttributes(const ZoneOps::Run& run, ThreadTimeline& thread,
                                                 size_t first);
  template <typename Locate>
  static void StoreZones(const ZoneOps::Run& run, ThreadTimeline& thread, std::vector<OpenZone>& open,
                         Locate&& locate);
  void AddRunTotals(const ZoneOps::Run& run);
  // Interns the stacks of a run's zones in the model's table (the run's ids set).
  void InternRunCallstacks(const ZoneOps::Run& run);
  struct CallstackInterner;
  // A frame series' mark, begin or end.
  void AddFrameEvent(protocol::MessageType type, uint32_t name_id, uint64_t tick);
  GpuContextState* FindGpuContext(uint32_t id);
  // Registers `query` as awaited by zone `zone_index`, or fills it from an early time.
  void AwaitGpuQuery(GpuContextState& state, uint32_t query, uint32_t zone_index, bool is_end);
  int64_t CpuNs(uint64_t time, uint8_t domain) const;
  // The thread with the program's id `thread_id` and its stack of open zones, made at
  // first use; nullptr past kMaxThreads.
  ThreadTimeline* FindOrAddThread(uint32_t thread_id, std::vector<OpenZone>** open = nullptr);
  // The thread that thread-bound events go to, or nullptr (none named, or too many). A
  // thread's timeline is made at its first event, not at a ThreadContext that names it:
  // naming threads costs a stream nothing until it records in them.
  ThreadTimeline* CurrentThread() {
    if (thread_ != nullptr) [[likely]]
      return thread_;
    return ResolveThread();
  }
  [[gnu::noinline]] ThreadTimeline* ResolveThread();
  // set(AttributeSetter&) on the innermost open zone's attributes (trace_builder.cpp).
  template <typename Set>
  void SetInnermostAttribute(Set&& set);
  // The index in model_.source_locations of the program's location `id`; 0
  // ("unknown") for an id past kMaxSourceLocationId, counted. This runs for every zone.
  // A program numbers its locations 1, 2, 3... and its stream defines them in that
  // order before using them, so each index is its id: ids below identity_limit_ are
  // known to be, and only other streams look up a table.
  uint32_t LocationIndex(uint32_t id) {
    if (id < identity_limit_) [[likely]]
      return id;
    return LookUpLocation(id);
  }
  [[gnu::noinline]] uint32_t LookUpLocation(uint32_t id);
  // A zone counted, not held (CountZonesOnly): its location is known all the same, so a
  // later reader of the file numbers locations as a held load would.
  // Returns the location's index.
  uint32_t CountZone(uint32_t source_location) {
    ++thread_->zones_not_held;
    return LocationIndex(source_location);
  }
  // A zone counted, closed: into its thread's overview, when there is one to keep.
  void AddToOverview(uint32_t depth, uint64_t begin_tick, uint64_t end_tick, uint32_t location) {
    if (overview_budget_ == 0) return;
    overview_cost_ +=
        thread_->overview.Add(depth, begin_tick, end_tick, location, model_.overview_resolution);
    if (overview_cost_ > overview_budget_) [[unlikely]]
      CoarsenOverviews();
  }
  // Doubles the overviews' resolution until they take at most half their budget.
  [[gnu::noinline]] void CoarsenOverviews();
  // And further, until it is at least `least_resolution` (a summary's).
  void CoarsenOverviews(uint64_t least_resolution);
  // The same for a run of zones (ZoneOverview::AddRun).
  void AddRunToOverview(uint32_t depth, const OverviewRun& run) {
    if (overview_budget_ == 0) return;
    overview_cost_ += thread_->overview.AddRun(depth, run, model_.overview_resolution);
    if (overview_cost_ > overview_budget_) [[unlikely]]
      CoarsenOverviews();
  }
  void SeeTick(uint64_t tick) {
    if (tick < model_.first_tick) model_.first_tick = tick;
    if (tick > model_.last_tick) model_.last_tick = tick;
  }

  // The current thread's id for a thread-bound event, or 0 (counted) when none.
  uint32_t EventThread() {
    if (CurrentThread() != nullptr) return thread_id_;
    ++model_.diagnostics.events_without_thread;
    return 0;
  }

  // A stack's frames from a message's values (at most kMaxCallstackDepth, more counted).
  uint32_t InternCallstack(const protocol::LeValues& frames);

  TraceModel& model_;
  MemoryBuilder memory_;
  LockBuilder locks_;
  // The allocation a Callstack just after it belongs to: its thread, and the zone counts
  // when it was made (a zone begun or ended since means the stack is not its).
  struct LastAllocation {
    MemoryAllocation* allocation = nullptr;
    uint32_t thread_id = 0;
    uint64_t zone_count = 0;
    uint64_t open_zone_count = 0;
  } last_allocation_;
  std::unordered_set<uint64_t> module_starts_;                // of model_.modules
  std::deque<std::vector<OpenZone>> open_zones_;              // by index in model_.threads
  std::unordered_map<uint32_t, uint64_t> open_frame_begins_;  // by frame series name id
  // ClockReplies waiting for the capture's ClockSample, by probe sequence (at most a
  // few: the sample follows its reply at once).
  std::unordered_map<uint32_t, protocol::ClockReply> clock_replies_;
  std::unordered_map<uint32_t, GpuContextState> gpu_;  // by context id
  ThreadTimeline* thread_ = nullptr;                   // of thread_id_, once resolved
  std::vector<OpenZone>* open_ = nullptr;              // thread_'s open zones
  uint32_t thread_id_ = 0;                             // from the last ThreadContext; 0: none
  bool thread_refused_ = false;                        // thread_id_ is past kMaxThreads (counted once)
  uint32_t identity_limit_ = 1;                        // ids below it are their own index (0: "unknown")
  bool hold_zones_ = true;                             // CountZonesOnly: false
  size_t overview_budget_ = 0;                         // CountZonesOnly: the most runs of overviews
  bool windows_dropped_ = false;                       // too many zones open at block starts to record
  bool block_recorded_ = false;                        // BeginBlock recorded the block being decoded
  // Counted with an overview: the stacks that had a zone pushed on them empty since the
  // last BeginBlock, and those not empty then (a stack may be listed more than once).
  struct OpenStack {
    std::vector<OpenZone>* stack;
    uint32_t thread_id;
  };
  std::vector<OpenStack> open_threads_;
  // Drops the blocks' records: too many zones open at their starts, or the overviews
  // stopped.
  void DropBlockRecords();
  uint64_t block_first_tick_ = UINT64_MAX;  // the zone events' ticks in the block (BeginBlock)
  uint64_t block_last_tick_ = 0;
  void SeeBlockTick(uint64_t tick) {
    block_first_tick_ = std::min(block_first_tick_, tick);
    block_last_tick_ = std::max(block_last_tick_, tick);
  }
  size_t overview_cost_ = 0;  // their runs and rows now (ZoneOverview::cost)
  std::function<void(const ThreadTimeline&)> thread_gate_;
};

template <typename Locate>
void TraceBuilder::StoreZones(const ZoneOps::Run& run, ThreadTimeline& thread, std::vector<OpenZone>& open,
                              Locate&& locate) {
  const size_t base_depth = open.size();
  // The run's fields in registers: the zones' stores could alias them.
  const ZoneOps::RunZone* const zones = run.zones;
  const size_t count = run.count;
  for (size_t i = 0; i < count; ++i) {
    const ZoneOps::RunZone& z = zones[i];
    const uint32_t location = locate(z.source_location);
    const uint32_t depth =
        uint32_t(std::min<size_t>(base_depth + (z.depth & ~ZoneOps::RunZone::kOpen), ZoneArray::kMaxDepth));
    if ((z.depth & ZoneOps::RunZone::kOpen) != 0) {
      open.push_back({thread.zones.size(), z.begin_tick});
      thread.zones.push_back(
          Zone{.begin_tick = z.begin_tick, .source_location = location, .depth = uint16_t(depth)});
    } else {
      thread.zones.PushClosed(z.begin_tick, z.end_tick, location, depth);
    }
  }
  if (run.attribute_count != 0) SetRunAttributes(run, thread, thread.zones.size() - count);
  for (size_t i = 0; i < run.callstack_count; ++i) {
    const ZoneOps::RunCallstack& stack = run.callstacks[i];
    thread.callstacks.Add(thread.zones.size() - count + stack.zone, stack.id);
  }
}

template <typename Decode, typename Hold>
void ZoneOps::Replay(TraceBuilder& builder, Decode&& decode, Hold&& hold) {
  if (current_ != nullptr) current_->opened = open_.size();
  // Each run's zones, attributes and stacks: from its start in each vector (its counts
  // until here) to the next run's; an attribute's or a stack's zone is then the run's.
  for (size_t i = 0; i < runs_.size(); ++i) {
    const bool last = i + 1 == runs_.size();
    const size_t first = runs_[i].count;
    runs_[i].zones = zones_.data() + first;
    runs_[i].count = (last ? zones_.size() : runs_[i + 1].count) - first;
    auto slice = [&](auto& all, auto*& items, size_t& count, size_t next) {
      const size_t start = count;
      items = all.data() + start;
      count = next - start;
      for (size_t k = start; k < next; ++k) all[k].zone -= first;
    };
    slice(attributes_, runs_[i].attributes, runs_[i].attribute_count,
          last ? attributes_.size() : runs_[i + 1].attribute_count);
    slice(callstacks_, runs_[i].callstacks, runs_[i].callstack_count,
          last ? callstacks_.size() : runs_[i + 1].callstack_count);
  }
  // The runs that may be stored later: the last op that is not a detached message, and
  // any run on a thread that no op after it names (from the end back: the threads named
  // after each op).
  used_later_.clear();
  bool any_later = false;
  for (size_t i = ops_.size(); i-- > 0;) {
    Op& op = ops_[i];
    if (op.kind == Op::kDetached) continue;
    if (op.kind == Op::kRun)
      op.holdable = !any_later || (op.thread_known && !used_later_.contains(op.thread));
    any_later = true;
    if (op.thread_known) used_later_.insert(op.thread);
  }
  for (const Op& op : ops_) {
    switch (op.kind) {
      case Op::kRun:
        if (op.holdable && hold(runs_[op.a])) break;
        builder.AddZoneRun(runs_[op.a]);
        break;
      case Op::kEnd:
        builder.EndZone(op.a);
        break;
      case Op::kBytes:
      case Op::kDetached:
        decode(reinterpret_cast<const uint8_t*>(op.a), size_t(op.b));
        break;
    }
  }
}

}  // namespace gnomon::server
