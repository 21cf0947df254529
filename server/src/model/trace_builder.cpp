#include "model/trace_builder.h"

#include <bit>
#include <cstring>

#include "gnomon/server/text.h"

namespace gnomon::server {

ThreadTimeline* TraceBuilder::FindOrAddThread(uint32_t thread_id, std::vector<OpenZone>** open) {
  auto it = model_.thread_index.find(thread_id);
  uint32_t index = 0;
  if (it != model_.thread_index.end()) {
    index = it->second;
  } else {
    if (model_.threads.size() >= kMaxThreads) return nullptr;
    index = static_cast<uint32_t>(model_.threads.size());
    model_.thread_index.emplace(thread_id, index);
    model_.threads.emplace_back().id = thread_id;
  }
  while (open_zones_.size() <= index) open_zones_.emplace_back();
  if (open != nullptr) *open = &open_zones_[index];
  return &model_.threads[index];
}

void TraceBuilder::SwitchThread(uint32_t thread_id) {
  thread_id_ = thread_id;
  thread_ = nullptr;
  open_ = nullptr;
  thread_refused_ = false;
}

ThreadTimeline* TraceBuilder::ResolveThread() {
  if (thread_id_ == 0 || thread_refused_) return nullptr;
  thread_ = FindOrAddThread(thread_id_, &open_);
  if (thread_ == nullptr) {
    thread_refused_ = true;
    ++model_.diagnostics.invalid_ids;
  } else if (thread_gate_) {
    thread_gate_(*thread_);
  }
  return thread_;
}

void TraceBuilder::AddZoneRun(const ZoneOps::Run& run) {
  if (run.count == 0) return;
  if (CurrentThread() == nullptr) {
    // A begin and an end each, and the stacks.
    model_.diagnostics.events_without_thread += 2 * run.count - run.opened + run.callstack_count;
    model_.diagnostics.attributes_without_zone += run.attribute_count;
    return;
  }
  InternRunCallstacks(run);
  StoreZones(run, *thread_, *open_, [&](uint32_t id) { return LocationIndex(id); });
  AddRunTotals(run);
}

KnownCallstacks::Seen KnownCallstacks::See(const protocol::LeValues& frames) {
  // An empty stack, or one cut, is the turn's (which counts the cut).
  if (frames.count == 0 || frames.count > kMaxCallstackDepth) return {};
  // Two chains of a multiply a frame, mixed at the end: a short critical path.
  uint64_t even = seed_ ^ frames.count, odd = ~seed_;
  size_t i = 0;
  for (; i + 1 < frames.count; i += 2) {
    even = (even ^ frames[i]) * 0x9E3779B97F4A7C15ull;
    odd = (odd ^ frames[i + 1]) * 0xBF58476D1CE4E5B9ull;
  }
  if (i < frames.count) even = (even ^ frames[i]) * 0x9E3779B97F4A7C15ull;
  uint64_t hash = (even ^ (even >> 31)) + (odd ^ (odd >> 29));
  hash = (hash ^ (hash >> 32)) * 0x94D049BB133111EBull;
  if (table_.empty()) Grow();
  const size_t mask = table_.size() - 1;
  size_t at = Home(hash);
  for (size_t probe = 0; probe < kMaxProbes; ++probe, at = (at + 1) & mask) {
    const uint32_t taken = table_[at];
    if (taken == 0) {
      const size_t bytes = 8 * frames.count;
      if (entries_.size() >= kMaxStacks || frames_.size() + bytes > 8 * kMaxFrames) return {};
      const auto slot = uint32_t(entries_.size());
      entries_.push_back({hash, uint32_t(frames_.size()), uint32_t(frames.count), 0});
      frames_.insert(frames_.end(), frames.bytes, frames.bytes + bytes);
      table_[at] = slot + 1;
      if (2 * entries_.size() > table_.size()) Grow();
      return {0, slot};
    }
    const Entry& e = entries_[taken - 1];
    if (e.hash == hash && Same(e, frames)) return {e.id, e.id == 0 ? taken - 1 : kNoSlot};
  }
  return {};
}

bool KnownCallstacks::Same(const Entry& e, const protocol::LeValues& frames) const {
  return e.count == frames.count && std::memcmp(frames_.data() + e.first, frames.bytes, 8 * e.count) == 0;
}

// Twice the slots (64 at first), every entry placed again: at most half are taken.
void KnownCallstacks::Grow() {
  table_.assign(std::max<size_t>(64, 2 * table_.size()), 0);
  const size_t mask = table_.size() - 1;
  for (size_t i = 0; i < entries_.size(); ++i) {
    size_t at = Home(entries_[i].hash);
    while (table_[at] != 0) at = (at + 1) & mask;
    table_[at] = uint32_t(i + 1);
  }
}

// A Callstack message's frames, interned (a decoder handler of that one kind).
struct TraceBuilder::CallstackInterner {
  TraceBuilder& builder;
  uint32_t id = 0;
  void OnCallstack(const protocol::Callstack&, const protocol::CallstackTail& t) {
    id = builder.InternCallstack(t.frames);
  }
};

void TraceBuilder::InternRunCallstacks(const ZoneOps::Run& run) {
  for (size_t i = 0; i < run.callstack_count; ++i) {
    if (run.callstacks[i].id != 0) continue;  // known on the lane
    CallstackInterner interner{*this};
    DispatchMessage(run.callstacks[i].message, interner);
    run.callstacks[i].id = interner.id;
  }
}

void TraceBuilder::AddRunTotals(const ZoneOps::Run& run) {
  model_.zone_count += run.count;
  model_.open_zone_count += run.opened;
  model_.diagnostics.clamped_zone_ends += run.clamped;
  SeeTick(run.first_tick);
  SeeTick(run.last_tick);
}

namespace {

// The word of zone `index`'s attribute of `kind`, made at its first; the zone flagged at
// its first attribute of any kind.
uint64_t& AttributeOf(ThreadTimeline& thread, uint64_t index, ZoneAttributeTable::Kind kind) {
  const bool known = (thread.zones.Flags(index) & kZoneHasAttributes) != 0;
  if (!known) thread.zones.AddFlags(index, kZoneHasAttributes);
  return thread.attributes.Touch(kind, index, known);
}

// Sets a zone's attribute from its message (a decoder handler of the four kinds).
struct AttributeSetter {
  ThreadTimeline& thread;
  uint64_t zone;
  void OnZoneName(const protocol::ZoneName&, const protocol::ZoneNameTail& t) {
    AssignUtf8(thread.attributes.String(AttributeOf(thread, zone, ZoneAttributeTable::kName)), t.name);
  }
  void OnZoneText(const protocol::ZoneText&, const protocol::ZoneTextTail& t) {
    AssignUtf8(thread.attributes.String(AttributeOf(thread, zone, ZoneAttributeTable::kText)), t.text);
  }
  void OnZoneColor(const protocol::ZoneColor& m) {
    AttributeOf(thread, zone, ZoneAttributeTable::kColor) = m.rgb;
  }
  void OnZoneValue(const protocol::ZoneValue& m) {
    AttributeOf(thread, zone, ZoneAttributeTable::kValue) = m.value;
  }
};

}  // namespace

void TraceBuilder::SetRunAttributes(const ZoneOps::Run& run, ThreadTimeline& thread, size_t first) {
  for (size_t i = 0; i < run.attribute_count; ++i) {
    const ZoneOps::RunAttribute& a = run.attributes[i];
    AttributeSetter setter{thread, first + a.zone};
    DispatchMessage(a.message, setter);
  }
}

template <typename Set>
void TraceBuilder::SetInnermostAttribute(Set&& set) {
  if (CurrentThread() == nullptr || open_->empty()) {
    ++model_.diagnostics.attributes_without_zone;
    return;
  }
  if (!hold_zones_) return;  // the zone is not held, nor is what it says
  AttributeSetter setter{*thread_, open_->back().index};
  set(setter);
}

void TraceBuilder::OnZoneName(const protocol::ZoneName& m, const protocol::ZoneNameTail& t) {
  SetInnermostAttribute([&](AttributeSetter& s) { s.OnZoneName(m, t); });
}
void TraceBuilder::OnZoneText(const protocol::ZoneText& m, const protocol::ZoneTextTail& t) {
  SetInnermostAttribute([&](AttributeSetter& s) { s.OnZoneText(m, t); });
}
void TraceBuilder::OnZoneColor(const protocol::ZoneColor& m) {
  SetInnermostAttribute([&](AttributeSetter& s) { s.OnZoneColor(m); });
}
void TraceBuilder::OnZoneValue(const protocol::ZoneValue& m) {
  SetInnermostAttribute([&](AttributeSetter& s) { s.OnZoneValue(m); });
}

void TraceBuilder::OnFrameMark(const protocol::FrameMark& m) { AddFrameEvent(m.kType, m.name_id, m.tick); }
void TraceBuilder::OnFrameBegin(const protocol::FrameBegin& m) { AddFrameEvent(m.kType, m.name_id, m.tick); }
void TraceBuilder::OnFrameEnd(const protocol::FrameEnd& m) { AddFrameEvent(m.kType, m.name_id, m.tick); }

void TraceBuilder::AddFrameEvent(protocol::MessageType type, uint32_t name_id, uint64_t tick) {
  if (model_.frames.size() >= kMaxSeries && !model_.frames.contains(name_id)) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  auto [it, inserted] = model_.frames.try_emplace(name_id);
  FrameSeries& series = it->second;
  if (inserted && name_id != 0) {
    auto name = model_.frame_names.find(name_id);
    if (name != model_.frame_names.end()) series.name = name->second;
  }
  SeeTick(tick);
  switch (type) {
    case protocol::MessageType::kFrameMark:
      series.marks.push_back(tick);
      break;
    case protocol::MessageType::kFrameBegin:
      if (!open_frame_begins_.try_emplace(name_id, tick).second) {
        ++model_.diagnostics.frame_ends_without_begin;
        open_frame_begins_[name_id] = tick;
      }
      break;
    default: {
      auto open = open_frame_begins_.find(name_id);
      if (open == open_frame_begins_.end()) {
        ++model_.diagnostics.frame_ends_without_begin;
        break;
      }
      series.spans.emplace_back(open->second, std::max(tick, open->second));
      open_frame_begins_.erase(open);
      break;
    }
  }
}

void TraceBuilder::OnLogMessage(const protocol::LogMessage& m, const protocol::LogMessageTail& t) {
  if (CurrentThread() == nullptr) {
    ++model_.diagnostics.events_without_thread;
    return;
  }
  LogMessage& message = model_.messages.emplace_back();
  message.tick = m.tick;
  message.thread_id = thread_id_;
  message.severity = m.severity;
  AssignUtf8(message.text, t.text);
  SeeTick(m.tick);
}

void TraceBuilder::OnPlotValue(const protocol::PlotValue& m) {
  const uint32_t plot_id = m.plot_id;
  if (model_.plots.size() >= kMaxSeries && !model_.plots.contains(plot_id)) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  const uint64_t tick = m.tick;  // copies: a packed field must not bind to a reference
  const double value = m.value;
  model_.plots[plot_id].points.emplace_back(tick, value);
  SeeTick(tick);
}

void TraceBuilder::OnCpuCalibration(const protocol::CpuCalibration& pair) {
  model_.clock.AddPair({pair.tick, pair.monotonic_raw_ns, pair.monotonic_ns, pair.uncertainty_ns});
}

void TraceBuilder::OnStringDef(const protocol::StringDef& m, const protocol::StringDefTail& t) {
  const uint32_t id = m.id;
  const uint8_t kind = m.kind;
  const std::string_view text = t.text;
  if (kind == static_cast<uint8_t>(protocol::StringKind::kFrameName)) {
    if (model_.frame_names.size() < kMaxSeries || model_.frame_names.contains(id)) {
      AssignUtf8(model_.frame_names[id], text);
      auto it = model_.frames.find(id);
      if (it != model_.frames.end()) AssignUtf8(it->second.name, text);
    }
  } else if (kind == static_cast<uint8_t>(protocol::StringKind::kPlotName)) {
    if (model_.plots.size() < kMaxSeries || model_.plots.contains(id))
      AssignUtf8(model_.plots[id].name, text);
  } else if (kind == static_cast<uint8_t>(protocol::StringKind::kMemoryPool)) {
    memory_.NamePool(id, text);
  } else if (kind == static_cast<uint8_t>(protocol::StringKind::kLockName)) {
    locks_.NameLock(id, text);
  } else {
    ++model_.diagnostics.invalid_ids;
  }
}

uint32_t TraceBuilder::LookUpLocation(uint32_t id) {
  if (id == 0) return 0;
  if (id >= kMaxSourceLocationId) {
    ++model_.diagnostics.invalid_ids;
    return 0;
  }
  const auto [it, inserted] = model_.location_index.try_emplace(id, uint32_t(model_.source_locations.size()));
  if (inserted) {
    SourceLocation& location = model_.source_locations.emplace_back();
    location.id = id;
    location.name = "<unknown>";  // until its definition arrives
  }
  // Recomputed from the model, so a second builder over the same model agrees.
  while (identity_limit_ < model_.source_locations.size() &&
         model_.source_locations[identity_limit_].id == identity_limit_) {
    ++identity_limit_;
  }
  return it->second;
}

void TraceBuilder::OnSourceLocationDef(const protocol::SourceLocationDef& def,
                                       const protocol::SourceLocationDefTail& t) {
  const uint32_t id = def.id;  // a copy: the message is packed
  if (id == 0 || id >= kMaxSourceLocationId) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  SourceLocation& location = model_.source_locations[LocationIndex(id)];
  AssignUtf8(location.name, t.name);
  AssignUtf8(location.function, t.function);
  AssignUtf8(location.file, t.file);
  location.line = def.line;
  location.color = def.color;
  location.is_defined = true;
}

void TraceBuilder::OnThreadInfo(const protocol::ThreadInfo& m, const protocol::ThreadInfoTail& t) {
  ThreadTimeline* thread = FindOrAddThread(m.thread_id);
  if (thread == nullptr) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  thread->os_thread_id = m.os_thread_id;
  if (!t.name.empty()) AssignUtf8(thread->name, t.name);
}

void TraceBuilder::OnLibraryThread(const protocol::LibraryThread& m) {
  ThreadTimeline* thread = FindOrAddThread(m.thread_id);
  if (thread == nullptr) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  thread->library = true;
}

void TraceBuilder::OnAppInfo(const protocol::AppInfo& info, const protocol::AppInfoTail& t) {
  model_.has_program_info = true;
  AssignUtf8(model_.program.name, t.name);
  model_.program.pid = info.pid;
  model_.program.timer_kind = info.timer_kind;
  model_.program.ticks_per_second_estimate = info.ticks_per_second_estimate;
  model_.program.start_unix_ns = info.start_unix_ns;
  model_.program.start_tick = info.start_tick;
  model_.clock.SetTimer(static_cast<double>(info.ticks_per_second_estimate),
                        info.timer_kind == static_cast<uint8_t>(protocol::TimerKind::kMonotonicRaw));
}

void TraceBuilder::OnHostInfo(const protocol::HostInfo& m, const protocol::HostInfoTail& t) {
  AssignUtf8(model_.program.host, t.host);
  model_.program.rank = m.rank;
}

void TraceBuilder::OnProgramEnvironment(const protocol::ProgramEnvironment& m,
                                        const protocol::ProgramEnvironmentTail& t) {
  AssignUtf8(model_.program.system, t.system);
  AssignUtf8(model_.program.cpu, t.cpu);
  AssignUtf8(model_.program.settings, t.settings);
  model_.program.logical_cpus = m.logical_cpus;
  model_.program.memory_bytes = m.memory_bytes;
}

void TraceBuilder::OnClockReply(const protocol::ClockReply& m) {
  // A program that never gets its sample (a stream cut short) leaves a few behind; one
  // that sends replies unasked cannot grow this past a bound.
  constexpr size_t kMaxWaitingReplies = 1024;
  if (clock_replies_.size() >= kMaxWaitingReplies) clock_replies_.clear();
  const uint32_t sequence = m.sequence;  // a packed field: copied before a reference binds to it
  clock_replies_[sequence] = m;
}

void TraceBuilder::OnClockSample(const protocol::ClockSample& m) {
  const uint32_t sequence = m.sequence;
  const auto it = clock_replies_.find(sequence);
  if (it == clock_replies_.end()) {
    ++model_.diagnostics.clock_samples_without_reply;
    return;
  }
  model_.host_clock_exchanges.push_back({.probe_sent_ns = m.probe_sent_ns,
                                         .receive_ns = it->second.receive_ns,
                                         .send_ns = it->second.send_ns,
                                         .reply_received_ns = m.reply_received_ns});
  clock_replies_.erase(it);
}

void TraceBuilder::OnCaptureClock(const protocol::CaptureClock& m, const protocol::CaptureClockTail& t) {
  const uint64_t capture_id = m.capture_id, before = m.before_ns, after = m.after_ns,
                 reference = m.reference_ns;
  CaptureReference& capture = model_.capture;
  // A stream is one capture's; a reading of another reference, another capture, or with
  // an impossible bracket (over a second: no use) is left out and counted.
  const uint64_t width = after - before;
  if (m.reference != 1 || capture_id == 0 || (capture.capture_id != 0 && capture.capture_id != capture_id) ||
      after < before || width > 1'000'000'000 || reference < width || reference > UINT64_MAX - width) {
    ++model_.diagnostics.capture_clocks_rejected;
    return;
  }
  if (capture.capture_id == 0) {
    capture.capture_id = capture_id;
    AssignUtf8(capture.domain, t.domain);
  }
  capture.reference_error_ns = std::max(capture.reference_error_ns, uint64_t{m.reference_error_ns});
  capture.readings.push_back({.probe_sent_ns = reference - width,
                              .receive_ns = before,
                              .send_ns = after,
                              .reply_received_ns = reference + width});
}

void TraceBuilder::OnDroppedEvents(const protocol::DroppedEvents& m) {
  model_.diagnostics.client_dropped_events =
      std::max(model_.diagnostics.client_dropped_events, uint64_t{m.total_events});
}

void TraceBuilder::OnEndOfStream(const protocol::EndOfStream& m) {
  if (!model_.diagnostics.ended_cleanly) model_.ShrinkToFit();  // once: nothing more is expected
  model_.diagnostics.ended_cleanly = true;
  SeeTick(m.tick);
}

int64_t TraceBuilder::CpuNs(uint64_t time, uint8_t domain) const {
  switch (static_cast<protocol::CpuTimeDomain>(domain)) {
    case protocol::CpuTimeDomain::kMonotonicRaw:
      return ClampTraceNs(int64_t(time));
    case protocol::CpuTimeDomain::kMonotonic:
      return model_.clock.MonotonicToRawNs(int64_t(time));
    case protocol::CpuTimeDomain::kTicks:
      break;
  }
  return model_.clock.TickToNs(time);
}

TraceBuilder::GpuContextState* TraceBuilder::FindGpuContext(uint32_t id) {
  auto it = gpu_.find(id);
  if (it == gpu_.end()) {
    ++model_.diagnostics.gpu_events_for_unknown_context;
    return nullptr;
  }
  return &it->second;
}

void TraceBuilder::OnGpuContextDef(const protocol::GpuContextDef& def, const protocol::GpuContextDefTail& t) {
  const uint32_t id = def.context_id;  // a copy: the message is packed
  if (id == 0 || def.period_numerator_ns == 0 || def.period_denominator == 0 ||
      (model_.gpu_contexts.size() >= kMaxGpuContexts && !model_.gpu_contexts.contains(id))) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  GpuContextTimeline& context = model_.gpu_contexts[id];
  gpu_[id].context = &context;
  context.id = id;
  context.api = def.api;
  context.flags = def.flags;
  AssignUtf8(context.device_name, t.name);
  context.clock = GpuClockModel({def.period_numerator_ns, def.period_denominator}, def.valid_bits);
  const int64_t cpu_ns = CpuNs(def.cpu_time, def.cpu_domain);
  context.clock.AddSample({context.clock.Unwrap(def.gpu_ticks), cpu_ns, def.uncertainty_ns});
}

void TraceBuilder::OnGpuContextName(const protocol::GpuContextName& m,
                                    const protocol::GpuContextNameTail& t) {
  if (GpuContextState* state = FindGpuContext(m.context_id)) AssignUtf8(state->context->name, t.name);
}

void TraceBuilder::AwaitGpuQuery(GpuContextState& state, uint32_t query, uint32_t zone_index, bool is_end) {
  GpuZone& zone = state.context->zones[zone_index];
  auto early = state.early_times.find(query);
  if (early != state.early_times.end()) {
    (is_end ? zone.gpu_end : zone.gpu_begin) = early->second;
    state.early_times.erase(early);
    state.context->unmatched_gpu_times = state.early_times.size();
    return;
  }
  auto [it, inserted] = state.pending.try_emplace(query, GpuContextState::PendingQuery{zone_index, is_end});
  if (!inserted) {
    ++model_.diagnostics.gpu_queries_reused_before_time;
    it->second = {zone_index, is_end};
  }
}

void TraceBuilder::OnGpuZoneBegin(const protocol::GpuZoneBegin& m) {
  const uint64_t cpu_tick = m.cpu_tick;
  GpuContextState* state = FindGpuContext(m.context_id);
  if (state == nullptr) return;
  if (CurrentThread() == nullptr) {
    ++model_.diagnostics.events_without_thread;
    return;
  }
  GpuContextTimeline& context = *state->context;
  std::vector<uint32_t>& open = state->open_zones[thread_id_];
  GpuZone zone;
  zone.cpu_begin_tick = cpu_tick;
  zone.source_location = LocationIndex(m.srcloc_id);
  zone.thread_id = thread_id_;
  zone.epoch = context.clock.epoch();
  zone.depth = static_cast<uint16_t>(open.size());
  const auto index = static_cast<uint32_t>(context.zones.size());
  context.zones.push_back(zone);
  open.push_back(index);
  AwaitGpuQuery(*state, m.query_id, index, false);
  SeeTick(cpu_tick);
}

void TraceBuilder::OnGpuZoneEnd(const protocol::GpuZoneEnd& m) {
  const uint64_t cpu_tick = m.cpu_tick;
  GpuContextState* state = FindGpuContext(m.context_id);
  if (state == nullptr) return;
  auto open = state->open_zones.find(thread_id_);
  if (CurrentThread() == nullptr || open == state->open_zones.end() || open->second.empty()) {
    ++model_.diagnostics.gpu_zone_ends_without_begin;
    return;
  }
  const uint32_t index = open->second.back();
  open->second.pop_back();
  GpuZone& zone = state->context->zones[index];
  zone.cpu_end_tick = std::max(cpu_tick, zone.cpu_begin_tick);
  AwaitGpuQuery(*state, m.query_id, index, true);
  SeeTick(cpu_tick);
}

void TraceBuilder::OnGpuTime(const protocol::GpuTime& m) {
  const uint32_t query = m.query_id;
  GpuContextState* state = FindGpuContext(m.context_id);
  if (state == nullptr) return;
  GpuContextTimeline& context = *state->context;
  const uint64_t ticks = context.clock.Unwrap(m.gpu_ticks);
  auto it = state->pending.find(query);
  if (it == state->pending.end()) {
    if (state->early_times.size() < kMaxEarlyGpuTimes) state->early_times[query] = ticks;
    context.unmatched_gpu_times = state->early_times.size();
    return;
  }
  GpuZone& zone = context.zones[it->second.zone];
  (it->second.is_end ? zone.gpu_end : zone.gpu_begin) = ticks;
  state->pending.erase(it);
}

void TraceBuilder::OnGpuCalibration(const protocol::GpuCalibration& calibration) {
  GpuContextState* state = FindGpuContext(calibration.context_id);
  if (state == nullptr) return;
  GpuClockModel& clock = state->context->clock;
  const int64_t cpu_ns = CpuNs(calibration.cpu_time, calibration.cpu_domain);
  const uint64_t ticks = clock.Unwrap(calibration.gpu_ticks);
  if (calibration.cpu_delta_ns <= 0 || clock.AddSample({ticks, cpu_ns, calibration.uncertainty_ns}) ==
                                           GpuClockModel::SampleResult::kRejected) {
    ++model_.diagnostics.gpu_rejected_calibrations;
  }
}

void TraceBuilder::OnGpuResync(const protocol::GpuResync& resync) {
  GpuContextState* state = FindGpuContext(resync.context_id);
  if (state == nullptr) return;
  state->context->clock.Resync(
      {resync.gpu_ticks, CpuNs(resync.cpu_time, resync.cpu_domain), resync.uncertainty_ns});
}

void TraceBuilder::OnGpuTimeBracket(const protocol::GpuTimeBracket& m) {
  GpuContextState* state = FindGpuContext(m.context_id);
  if (state == nullptr) return;
  GpuClockModel& clock = state->context->clock;
  GpuTimeBracket bracket{.gpu_ticks = clock.Unwrap(m.gpu_ticks)};
  if (m.cpu_not_before != 0) bracket.not_before_ns = CpuNs(m.cpu_not_before, m.cpu_domain);
  if (m.cpu_not_after != 0) bracket.not_after_ns = CpuNs(m.cpu_not_after, m.cpu_domain);
  clock.AddBracket(bracket);
}

void TraceBuilder::OnCounterSetDef(const protocol::CounterSetDef& def, const protocol::CounterSetDefTail& t) {
  const uint32_t id = def.set_id;
  GpuContextState* state = FindGpuContext(def.context_id);
  if (state == nullptr) return;
  if (id == 0 || def.counter_count > protocol::kMaxCounters ||
      (model_.counter_sets.size() >= kMaxCounterSets && !model_.counter_sets.contains(id))) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  CounterSet& set = model_.counter_sets[id];
  set.id = id;
  set.context_id = state->context->id;
  AssignUtf8(set.name, t.name);
  set.counter_count = def.counter_count;
  std::erase_if(set.counters, [&](const CounterInfo& c) { return c.index >= set.counter_count; });
}

void TraceBuilder::OnCounterDef(const protocol::CounterDef& def, const protocol::CounterDefTail& t) {
  const uint32_t set_id = def.set_id;  // copies: the message is packed
  const uint16_t index = def.index;
  auto set = model_.counter_sets.find(set_id);
  if (set == model_.counter_sets.end() || index >= set->second.counter_count) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  std::vector<CounterInfo>& counters = set->second.counters;
  auto at = std::lower_bound(counters.begin(), counters.end(), index,
                             [](const CounterInfo& c, uint16_t i) { return c.index < i; });
  if (at == counters.end() || at->index != index) at = counters.insert(at, CounterInfo{});
  CounterInfo& counter = *at;
  counter.index = index;
  AssignUtf8(counter.name, t.name);
  AssignUtf8(counter.description, t.description);
  counter.type = def.counter_type;
  counter.data_type = def.data_type;
  counter.offset = def.offset;
  counter.size = def.size;
  counter.raw_max = def.raw_max;
  counter.is_defined = true;
}

void TraceBuilder::OnCounterResult(const protocol::CounterResult& result,
                                   const protocol::CounterResultTail& t) {
  const uint32_t set_id = result.set_id;  // copies: the message is packed
  const uint32_t target_id = result.target_id;
  auto set = model_.counter_sets.find(set_id);
  GpuContextState* state = FindGpuContext(result.context_id);
  GpuContextTimeline* context = state != nullptr ? state->context : nullptr;
  if (context == nullptr || set == model_.counter_sets.end() || set->second.context_id != context->id ||
      result.value_count != set->second.counter_count ||
      context->counter_values.size() + result.value_count > UINT32_MAX) {
    ++model_.diagnostics.counter_results_dropped;
    return;
  }
  CounterSample sample;
  sample.set_id = set_id;
  sample.target = result.target;
  sample.flags = result.flags;
  sample.value_count = result.value_count;
  sample.first_value = static_cast<uint32_t>(context->counter_values.size());
  if (result.target == uint8_t(protocol::CounterTarget::kGpuZone)) {
    auto zone = state->pending.find(target_id);
    if (zone == state->pending.end() || zone->second.is_end) {
      ++model_.diagnostics.counter_results_dropped;  // no such zone, or its times came first
      return;
    }
    sample.target_index = zone->second.zone;
    context->counter_sample_of_zone[zone->second.zone] =
        static_cast<uint32_t>(context->counter_samples.size());
  } else if (result.target == uint8_t(protocol::CounterTarget::kFrame)) {
    sample.target_index = target_id;
  } else {
    ++model_.diagnostics.counter_results_dropped;
    return;
  }
  for (uint16_t i = 0; i < result.value_count; ++i) {
    const uint64_t bits = t.values[i];
    const CounterInfo* counter = set->second.Find(i);
    const uint8_t type =
        counter != nullptr ? counter->data_type : uint8_t(protocol::CounterDataType::kUint64);
    const bool is_float = type == uint8_t(protocol::CounterDataType::kFloat) ||
                          type == uint8_t(protocol::CounterDataType::kDouble);
    context->counter_values.push_back(is_float ? std::bit_cast<double>(bits) : double(bits));
  }
  context->counter_samples.push_back(sample);
}

void TraceBuilder::OnMemAlloc(const protocol::MemAlloc& m) {
  if (const uint32_t thread = EventThread(); thread != 0) {
    last_allocation_ = {memory_.Alloc(thread, m), thread, model_.zone_count, model_.open_zone_count};
    SeeTick(m.tick);
  }
}

void TraceBuilder::OnMemFree(const protocol::MemFree& m) {
  if (const uint32_t thread = EventThread(); thread != 0) {
    memory_.Free(thread, m);
    SeeTick(m.tick);
  }
}

void TraceBuilder::OnLockWait(const protocol::LockWait& m) {
  if (const uint32_t thread = EventThread(); thread != 0) {
    locks_.Wait(thread, m.lock_id, m.tick);
    SeeTick(m.tick);
  }
}

void TraceBuilder::OnLockObtain(const protocol::LockObtain& m) {
  if (const uint32_t thread = EventThread(); thread != 0) {
    locks_.Obtain(thread, m.lock_id, m.flags, m.tick);
    SeeTick(m.tick);
  }
}

void TraceBuilder::OnLockRelease(const protocol::LockRelease& m) {
  if (const uint32_t thread = EventThread(); thread != 0) {
    locks_.Release(thread, m.lock_id, m.tick);
    SeeTick(m.tick);
  }
}

uint32_t TraceBuilder::InternCallstack(const protocol::LeValues& values) {
  if (values.count > kMaxCallstackDepth) ++model_.diagnostics.callstacks_cut;
  uint64_t frames[kMaxCallstackDepth];
  const size_t depth = std::min<size_t>(values.count, kMaxCallstackDepth);
  for (size_t i = 0; i < depth; ++i) frames[i] = values[i];
  return model_.callstacks.Intern({frames, depth});
}

void TraceBuilder::OnCallstack(const protocol::Callstack&, const protocol::CallstackTail& t) {
  if (CurrentThread() == nullptr) {
    ++model_.diagnostics.events_without_thread;
    return;
  }
  // An allocation just made on this thread, no zone begun or ended since.
  if (last_allocation_.allocation != nullptr && last_allocation_.thread_id == thread_id_ &&
      last_allocation_.zone_count == model_.zone_count &&
      last_allocation_.open_zone_count == model_.open_zone_count) {
    last_allocation_.allocation->callstack = InternCallstack(t.frames);
    last_allocation_.allocation = nullptr;
    return;
  }
  // Else the zone just begun: the thread's latest zone, still its innermost open one.
  if (!hold_zones_) {  // not held, nor its stack; only what is wrong with it is counted
    if (!open_->empty() && (open_->back().index & ~kCountedLocations) == thread_->zones_not_held - 1) {
      open_->back().index |= kStackGiven;
      if (t.frames.count > kMaxCallstackDepth) ++model_.diagnostics.callstacks_cut;
      return;
    }
    ++model_.diagnostics.callstacks_without_event;
    return;
  }
  const uint64_t latest = thread_->zones.size() - 1;
  if (!open_->empty() && open_->back().index == latest && thread_->callstacks.Accepts(latest)) {
    thread_->callstacks.Add(latest, InternCallstack(t.frames));
    return;
  }
  ++model_.diagnostics.callstacks_without_event;
}

void TraceBuilder::OnModuleDef(const protocol::ModuleDef& m, const protocol::ModuleDefTail& t) {
  if (model_.modules.size() >= kMaxModules) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  Module module;
  module.load_bias = m.load_bias;
  module.start = m.start;
  module.end = m.end;
  AssignUtf8(module.path, t.path);
  AssignUtf8(module.build_id, t.build_id);
  // The client sends a module again when it is mapped again: one entry per start.
  if (module_starts_.insert(module.start).second) model_.modules.push_back(std::move(module));
}

void TraceBuilder::OnSample(const protocol::Sample& m, const protocol::SampleTail& t) {
  model_.samples.push_back(
      {.tick = m.tick, .os_thread_id = m.os_thread_id, .callstack = InternCallstack(t.frames)});
  SeeTick(m.tick);
}

void TraceBuilder::OnContextSwitch(const protocol::ContextSwitch& m) {
  model_.context_switches.push_back(
      {.tick = m.tick, .os_thread_id = m.os_thread_id, .cpu = m.cpu, .kind = m.kind});
  SeeTick(m.tick);
}

}  // namespace gnomon::server
