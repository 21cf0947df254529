#include "gnomon/server/trace_builder.h"

#include <bit>

#include "gnomon/server/text.h"

namespace gnomon::server {

ThreadTimeline* TraceBuilder::FindOrAddThread(uint32_t thread_id) {
  auto it = model_.thread_index.find(thread_id);
  if (it != model_.thread_index.end()) return &model_.threads[it->second];
  if (model_.threads.size() >= kMaxThreads) return nullptr;
  model_.thread_index.emplace(thread_id, static_cast<uint32_t>(model_.threads.size()));
  ThreadTimeline& thread = model_.threads.emplace_back();
  thread.id = thread_id;
  return &thread;
}

void TraceBuilder::OnThreadContext(uint32_t thread_id) {
  thread_id_ = thread_id;
  thread_ = nullptr;
  thread_refused_ = false;
}

ThreadTimeline* TraceBuilder::ResolveThread() {
  if (thread_id_ == 0 || thread_refused_) return nullptr;
  thread_ = FindOrAddThread(thread_id_);
  if (thread_ == nullptr) {
    thread_refused_ = true;
    ++model_.diagnostics.invalid_ids;
  }
  return thread_;
}

ZoneAttributes* TraceBuilder::InnermostAttributes() {
  if (CurrentThread() == nullptr || thread_->open_zones.empty()) {
    ++model_.diagnostics.attributes_without_zone;
    return nullptr;
  }
  const uint64_t index = thread_->open_zones.back().index;
  thread_->zones.AddFlags(index, kZoneHasAttributes);
  return &thread_->attributes[index];
}

void TraceBuilder::OnZoneName(std::string_view name) {
  if (ZoneAttributes* a = InnermostAttributes()) AssignUtf8(a->name, name);
}

void TraceBuilder::OnZoneText(std::string_view text) {
  if (ZoneAttributes* a = InnermostAttributes()) AssignUtf8(a->text, text);
}

void TraceBuilder::OnZoneColor(uint32_t rgb) {
  if (ZoneAttributes* a = InnermostAttributes()) a->color = rgb;
}

void TraceBuilder::OnZoneValue(uint64_t value) {
  if (ZoneAttributes* a = InnermostAttributes()) {
    a->value = value;
    a->has_value = true;
  }
}

void TraceBuilder::OnFrame(protocol::MessageType type, uint32_t name_id, uint64_t tick) {
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
      if (series.open_begin != kOpenZone) ++model_.diagnostics.frame_ends_without_begin;
      series.open_begin = tick;
      break;
    default:
      if (series.open_begin == kOpenZone) {
        ++model_.diagnostics.frame_ends_without_begin;
        break;
      }
      series.spans.emplace_back(series.open_begin, std::max(tick, series.open_begin));
      series.open_begin = kOpenZone;
      break;
  }
}

void TraceBuilder::OnLogMessage(uint64_t tick, uint8_t severity, std::string_view text) {
  if (CurrentThread() == nullptr) {
    ++model_.diagnostics.events_without_thread;
    return;
  }
  LogMessage& message = model_.messages.emplace_back();
  message.tick = tick;
  message.thread_id = thread_id_;
  message.severity = severity;
  AssignUtf8(message.text, text);
  SeeTick(tick);
}

void TraceBuilder::OnPlotValue(uint32_t plot_id, uint64_t tick, double value) {
  if (model_.plots.size() >= kMaxSeries && !model_.plots.contains(plot_id)) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  model_.plots[plot_id].points.emplace_back(tick, value);
  SeeTick(tick);
}

void TraceBuilder::OnCpuCalibration(const protocol::CpuCalibration& pair) {
  model_.clock.AddPair({pair.tick, pair.monotonic_raw_ns, pair.monotonic_ns, pair.uncertainty_ns});
}

void TraceBuilder::OnStringDef(uint32_t id, uint8_t kind, std::string_view text) {
  if (kind == static_cast<uint8_t>(protocol::StringKind::kFrameName)) {
    if (model_.frame_names.size() < kMaxSeries || model_.frame_names.contains(id)) {
      AssignUtf8(model_.frame_names[id], text);
      auto it = model_.frames.find(id);
      if (it != model_.frames.end()) AssignUtf8(it->second.name, text);
    }
  } else if (kind == static_cast<uint8_t>(protocol::StringKind::kPlotName)) {
    if (model_.plots.size() < kMaxSeries || model_.plots.contains(id)) AssignUtf8(model_.plots[id].name, text);
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

void TraceBuilder::OnSourceLocationDef(const protocol::SourceLocationDef& def, std::string_view name,
                                       std::string_view function, std::string_view file) {
  const uint32_t id = def.id;  // a copy: the message is packed
  if (id == 0 || id >= kMaxSourceLocationId) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  SourceLocation& location = model_.source_locations[LocationIndex(id)];
  AssignUtf8(location.name, name);
  AssignUtf8(location.function, function);
  AssignUtf8(location.file, file);
  location.line = def.line;
  location.color = def.color;
  location.is_defined = true;
}

void TraceBuilder::OnThreadInfo(uint32_t thread_id, uint32_t os_thread_id, std::string_view name) {
  ThreadTimeline* thread = FindOrAddThread(thread_id);
  if (thread == nullptr) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  thread->os_thread_id = os_thread_id;
  if (!name.empty()) AssignUtf8(thread->name, name);
}

void TraceBuilder::OnAppInfo(const protocol::AppInfo& info, std::string_view name) {
  model_.has_program_info = true;
  AssignUtf8(model_.program.name, name);
  model_.program.pid = info.pid;
  model_.program.timer_kind = info.timer_kind;
  model_.program.ticks_per_second_estimate = info.ticks_per_second_estimate;
  model_.program.start_unix_ns = info.start_unix_ns;
  model_.program.start_tick = info.start_tick;
  model_.clock.SetTimer(static_cast<double>(info.ticks_per_second_estimate),
                        info.timer_kind == static_cast<uint8_t>(protocol::TimerKind::kMonotonicRaw));
}

void TraceBuilder::OnDroppedEvents(uint64_t total) {
  model_.diagnostics.client_dropped_events = std::max(model_.diagnostics.client_dropped_events, total);
}

void TraceBuilder::OnEndOfStream(uint64_t tick) {
  if (!model_.diagnostics.ended_cleanly) model_.ShrinkToFit();  // once: nothing more is expected
  model_.diagnostics.ended_cleanly = true;
  SeeTick(tick);
}

int64_t TraceBuilder::CpuNs(uint64_t time, uint8_t domain) const {
  switch (static_cast<protocol::CpuTimeDomain>(domain)) {
    case protocol::CpuTimeDomain::kMonotonicRaw: return ClampTraceNs(int64_t(time));
    case protocol::CpuTimeDomain::kMonotonic: return model_.clock.MonotonicToRawNs(int64_t(time));
    case protocol::CpuTimeDomain::kTicks: break;
  }
  return model_.clock.TickToNs(time);
}

GpuContextTimeline* TraceBuilder::FindGpuContext(uint32_t id) {
  auto it = model_.gpu_contexts.find(id);
  if (it == model_.gpu_contexts.end()) {
    ++model_.diagnostics.gpu_events_for_unknown_context;
    return nullptr;
  }
  return &it->second;
}

void TraceBuilder::OnGpuContextDef(const protocol::GpuContextDef& def, std::string_view name) {
  const uint32_t id = def.context_id;  // a copy: the message is packed
  if (id == 0 || def.period_numerator_ns == 0 || def.period_denominator == 0 ||
      (model_.gpu_contexts.size() >= kMaxGpuContexts && !model_.gpu_contexts.contains(id))) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  GpuContextTimeline& context = model_.gpu_contexts[id];
  context.id = id;
  context.api = def.api;
  context.flags = def.flags;
  AssignUtf8(context.device_name, name);
  context.clock = GpuClockModel({def.period_numerator_ns, def.period_denominator}, def.valid_bits);
  const int64_t cpu_ns = CpuNs(def.cpu_time, def.cpu_domain);
  context.clock.AddSample({context.clock.Unwrap(def.gpu_ticks), cpu_ns, def.uncertainty_ns});
  context.last_calibration_cpu_ns = cpu_ns;
}

void TraceBuilder::OnGpuContextName(uint32_t id, std::string_view name) {
  if (GpuContextTimeline* context = FindGpuContext(id)) AssignUtf8(context->name, name);
}

void TraceBuilder::AwaitGpuQuery(GpuContextTimeline& context, uint32_t query, uint32_t zone_index, bool is_end) {
  GpuZone& zone = context.zones[zone_index];
  auto early = context.early_times.find(query);
  if (early != context.early_times.end()) {
    (is_end ? zone.gpu_end : zone.gpu_begin) = early->second;
    context.early_times.erase(early);
    return;
  }
  auto [it, inserted] = context.pending.try_emplace(query, GpuContextTimeline::PendingQuery{zone_index, is_end});
  if (!inserted) {
    ++model_.diagnostics.gpu_queries_reused_before_time;
    it->second = {zone_index, is_end};
  }
}

void TraceBuilder::OnGpuZoneBegin(uint32_t id, uint32_t query, uint32_t source_location, uint64_t cpu_tick) {
  GpuContextTimeline* context = FindGpuContext(id);
  if (context == nullptr) return;
  if (CurrentThread() == nullptr) {
    ++model_.diagnostics.events_without_thread;
    return;
  }
  std::vector<uint32_t>& open = context->open_zones[thread_id_];
  GpuZone zone;
  zone.cpu_begin_tick = cpu_tick;
  zone.source_location = LocationIndex(source_location);
  zone.thread_id = thread_id_;
  zone.epoch = context->clock.epoch();
  zone.depth = static_cast<uint16_t>(open.size());
  const auto index = static_cast<uint32_t>(context->zones.size());
  context->zones.push_back(zone);
  open.push_back(index);
  AwaitGpuQuery(*context, query, index, false);
  SeeTick(cpu_tick);
}

void TraceBuilder::OnGpuZoneEnd(uint32_t id, uint32_t query, uint64_t cpu_tick) {
  GpuContextTimeline* context = FindGpuContext(id);
  if (context == nullptr) return;
  auto open = context->open_zones.find(thread_id_);
  if (CurrentThread() == nullptr || open == context->open_zones.end() || open->second.empty()) {
    ++model_.diagnostics.gpu_zone_ends_without_begin;
    return;
  }
  const uint32_t index = open->second.back();
  open->second.pop_back();
  context->zones[index].cpu_end_tick = std::max(cpu_tick, context->zones[index].cpu_begin_tick);
  AwaitGpuQuery(*context, query, index, true);
  SeeTick(cpu_tick);
}

void TraceBuilder::OnGpuTime(uint32_t id, uint32_t query, uint64_t gpu_ticks) {
  GpuContextTimeline* context = FindGpuContext(id);
  if (context == nullptr) return;
  const uint64_t ticks = context->clock.Unwrap(gpu_ticks);
  auto it = context->pending.find(query);
  if (it == context->pending.end()) {
    if (context->early_times.size() < kMaxEarlyGpuTimes) context->early_times[query] = ticks;
    return;
  }
  GpuZone& zone = context->zones[it->second.zone];
  (it->second.is_end ? zone.gpu_end : zone.gpu_begin) = ticks;
  context->pending.erase(it);
}

void TraceBuilder::OnGpuCalibration(const protocol::GpuCalibration& calibration) {
  GpuContextTimeline* context = FindGpuContext(calibration.context_id);
  if (context == nullptr) return;
  const int64_t cpu_ns = CpuNs(calibration.cpu_time, calibration.cpu_domain);
  const uint64_t ticks = context->clock.Unwrap(calibration.gpu_ticks);
  if (calibration.cpu_delta_ns <= 0 ||
      context->clock.AddSample({ticks, cpu_ns, calibration.uncertainty_ns}) ==
          GpuClockModel::SampleResult::kRejected) {
    ++model_.diagnostics.gpu_rejected_calibrations;
    return;
  }
  context->last_calibration_cpu_ns = cpu_ns;
}

void TraceBuilder::OnGpuResync(const protocol::GpuResync& resync) {
  GpuContextTimeline* context = FindGpuContext(resync.context_id);
  if (context == nullptr) return;
  const int64_t cpu_ns = CpuNs(resync.cpu_time, resync.cpu_domain);
  context->clock.Resync({resync.gpu_ticks, cpu_ns, resync.uncertainty_ns});
  context->last_calibration_cpu_ns = cpu_ns;
}

void TraceBuilder::OnCounterSetDef(const protocol::CounterSetDef& def, std::string_view name) {
  const uint32_t id = def.set_id;
  GpuContextTimeline* context = FindGpuContext(def.context_id);
  if (context == nullptr) return;
  if (id == 0 || def.counter_count > protocol::kMaxCounters ||
      (model_.counter_sets.size() >= kMaxCounterSets && !model_.counter_sets.contains(id))) {
    ++model_.diagnostics.invalid_ids;
    return;
  }
  CounterSet& set = model_.counter_sets[id];
  set.id = id;
  set.context_id = context->id;
  AssignUtf8(set.name, name);
  set.counter_count = def.counter_count;
  std::erase_if(set.counters, [&](const CounterInfo& c) { return c.index >= set.counter_count; });
}

void TraceBuilder::OnCounterDef(const protocol::CounterDef& def, std::string_view name,
                                std::string_view description) {
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
  AssignUtf8(counter.name, name);
  AssignUtf8(counter.description, description);
  counter.type = def.counter_type;
  counter.data_type = def.data_type;
  counter.offset = def.offset;
  counter.size = def.size;
  counter.raw_max = def.raw_max;
  counter.is_defined = true;
}

void TraceBuilder::OnCounterResult(const protocol::CounterResult& result, const uint8_t* values) {
  const uint32_t set_id = result.set_id;  // copies: the message is packed
  const uint32_t target_id = result.target_id;
  auto set = model_.counter_sets.find(set_id);
  GpuContextTimeline* context = FindGpuContext(result.context_id);
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
    auto zone = context->pending.find(target_id);
    if (zone == context->pending.end() || zone->second.is_end) {
      ++model_.diagnostics.counter_results_dropped;  // no such zone, or its times came first
      return;
    }
    sample.target_index = zone->second.zone;
    context->counter_sample_of_zone[zone->second.zone] = static_cast<uint32_t>(context->counter_samples.size());
  } else if (result.target == uint8_t(protocol::CounterTarget::kFrame)) {
    sample.target_index = target_id;
  } else {
    ++model_.diagnostics.counter_results_dropped;
    return;
  }
  for (uint16_t i = 0; i < result.value_count; ++i) {
    const uint64_t bits = protocol::LoadLe<uint64_t>(values + 8 * size_t{i});
    const CounterInfo* counter = set->second.Find(i);
    const uint8_t type = counter != nullptr ? counter->data_type : uint8_t(protocol::CounterDataType::kUint64);
    const bool is_float = type == uint8_t(protocol::CounterDataType::kFloat) ||
                          type == uint8_t(protocol::CounterDataType::kDouble);
    context->counter_values.push_back(is_float ? std::bit_cast<double>(bits) : double(bits));
  }
  context->counter_samples.push_back(sample);
}

}  // namespace gnomon::server
