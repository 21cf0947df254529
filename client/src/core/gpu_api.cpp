// The GPU half of the C API. Context definitions, names and clock samples are rare and
// go to the definitions (definition_log.h, kept for every server); zones and query times
// are events on the calling thread.
#include <cstring>
#include <type_traits>

#include "gnomon/gnomon.h"
#include "gnomon/gnomon.hpp"
#include "gnomon/protocol/tick_period.h"
#include "profiler.h"

namespace {

using gnomon::client::Profiler;

namespace protocol = gnomon::protocol;

// Definitions are kept for every server that connects; a context's name, its latest;
// its clock samples (calibrations, resyncs, brackets), its newest.
template <typename M>
void AddDefinition(const M& m, const typename M::Tail& tail = {}) {
  std::vector<uint8_t> bytes;
  protocol::AppendMessage(bytes, m, tail);
  gnomon::client::Registry& registry = Profiler::Get().registry();
  if constexpr (std::is_same_v<M, protocol::GpuContextName>) {
    registry.SetGpuContextName(m.context_id, bytes.data(), bytes.size());
  } else if constexpr (std::is_same_v<M, protocol::GpuCalibration> ||
                       std::is_same_v<M, protocol::GpuResync> ||
                       std::is_same_v<M, protocol::GpuTimeBracket>) {
    registry.AddClockSample(uint64_t{m.context_id} + 1, bytes.data(), bytes.size());
  } else {
    registry.AddDefinition(bytes.data(), bytes.size());
  }
}

// Events are written on the calling thread.
template <typename M>
void WriteEvent(const M& m, const typename M::Tail& tail = {}) {
  uint8_t* p = gnomon::detail::Reserve(protocol::WireSize<M>(tail));
  if (p == nullptr) return;
  gnomon::detail::Commit(protocol::WriteMessage(p, m, tail));
}

std::string_view DefinitionString(const char* text, size_t max_bytes = protocol::kMaxStringBytes) {
  return gnomon::client::ClampString(text, text ? std::strlen(text) : 0, max_bytes);
}

uint8_t Domain(gnomon_cpu_time_domain domain) {
  return domain == GNOMON_CPU_TIME_MONOTONIC_RAW || domain == GNOMON_CPU_TIME_MONOTONIC ? uint8_t(domain) : 0;
}

}  // namespace

extern "C" {

uint32_t gnomon_gpu_context_create(const gnomon_gpu_context_info* info) {
  if (info == nullptr || info->period_numerator_ns == 0 || info->period_denominator == 0) return 0;
  const uint32_t id = Profiler::Get().registry().NextGpuContextId();
  AddDefinition(
      protocol::GpuContextDef{
          .context_id = id,
          .api = uint8_t(info->api),
          .valid_bits = uint8_t(info->valid_bits == 0 || info->valid_bits > 64 ? 64 : info->valid_bits),
          .flags = info->flags,
          .period_numerator_ns = info->period_numerator_ns,
          .period_denominator = info->period_denominator,
          .gpu_ticks = info->gpu_ticks,
          .cpu_time = info->cpu_time,
          .cpu_domain = Domain(info->cpu_domain),
          .uncertainty_ns = info->uncertainty_ns},
      {.name = DefinitionString(info->device_name)});
  return id;
}

void gnomon_gpu_context_name(uint32_t context, const char* name, size_t length) {
  AddDefinition(protocol::GpuContextName{.context_id = context},
                {.name = gnomon::client::ClampString(name, length, protocol::kMaxStringBytes)});
}

void gnomon_gpu_zone_begin(uint32_t context, uint32_t query_id, gnomon_source_location* location) {
  uint32_t id = std::atomic_ref<uint32_t>(location->id).load(std::memory_order_acquire);
  if (id == 0) id = gnomon::detail::RegisterSourceLocation(location);
  Profiler::Get();  // the timer is chosen at start-up
  WriteEvent(protocol::GpuZoneBegin{
      .context_id = context, .query_id = query_id, .srcloc_id = id, .cpu_tick = gnomon::detail::Now()});
}

void gnomon_gpu_zone_end(uint32_t context, uint32_t query_id) {
  Profiler::Get();
  WriteEvent(
      protocol::GpuZoneEnd{.context_id = context, .query_id = query_id, .cpu_tick = gnomon::detail::Now()});
}

void gnomon_gpu_time(uint32_t context, uint32_t query_id, uint64_t gpu_ticks) {
  WriteEvent(protocol::GpuTime{.context_id = context, .query_id = query_id, .gpu_ticks = gpu_ticks});
}

void gnomon_gpu_calibration(const gnomon_gpu_calibration_data* data) {
  if (data == nullptr) return;
  AddDefinition(protocol::GpuCalibration{.context_id = data->context,
                                         .gpu_ticks = data->gpu_ticks,
                                         .cpu_time = data->cpu_time,
                                         .cpu_delta_ns = data->cpu_delta_ns,
                                         .uncertainty_ns = data->uncertainty_ns,
                                         .cpu_domain = Domain(data->cpu_domain)});
}

void gnomon_gpu_resync(uint32_t context, uint64_t gpu_ticks, uint64_t cpu_time,
                       gnomon_cpu_time_domain cpu_domain, uint32_t uncertainty_ns) {
  AddDefinition(protocol::GpuResync{.context_id = context,
                                    .gpu_ticks = gpu_ticks,
                                    .cpu_time = cpu_time,
                                    .uncertainty_ns = uncertainty_ns,
                                    .cpu_domain = Domain(cpu_domain)});
}

void gnomon_gpu_time_bracket(uint32_t context, uint64_t gpu_ticks, uint64_t cpu_not_before,
                             uint64_t cpu_not_after, gnomon_cpu_time_domain cpu_domain) {
  AddDefinition(protocol::GpuTimeBracket{.context_id = context,
                                         .gpu_ticks = gpu_ticks,
                                         .cpu_not_before = cpu_not_before,
                                         .cpu_not_after = cpu_not_after,
                                         .cpu_domain = Domain(cpu_domain)});
}

uint64_t gnomon_cpu_time_from_host_ns(gnomon_cpu_time_domain domain, int64_t host_ns) {
  return Profiler::Get().registry().HostNsToTicks(domain != GNOMON_CPU_TIME_MONOTONIC, host_ns);
}

void gnomon_gpu_period_from_float(double period_ns, uint64_t* numerator_ns, uint64_t* denominator) {
  const protocol::TickPeriod period = protocol::PeriodFromFloat(period_ns);
  if (numerator_ns) *numerator_ns = period.numerator_ns;
  if (denominator) *denominator = period.denominator;
}

uint32_t gnomon_counter_set_create(uint32_t context, const char* name, const gnomon_counter_info* counters,
                                   uint16_t count) {
  if (counters == nullptr || count == 0 || count > GNOMON_MAX_COUNTER_VALUES) return 0;
  const uint32_t set = Profiler::Get().registry().NextCounterSetId();
  AddDefinition(protocol::CounterSetDef{.context_id = context, .set_id = set, .counter_count = count},
                {.name = DefinitionString(name)});
  for (uint16_t i = 0; i < count; ++i) {
    const gnomon_counter_info& c = counters[i];
    AddDefinition(protocol::CounterDef{.set_id = set,
                                       .index = i,
                                       .counter_type = uint8_t(c.type),
                                       .data_type = uint8_t(c.data_type),
                                       .offset = c.offset,
                                       .size = c.size,
                                       .raw_max = c.raw_max},
                  {.name = DefinitionString(c.name, protocol::kMaxStringBytes / 2),
                   .description = DefinitionString(c.description, protocol::kMaxStringBytes / 2)});
  }
  return set;
}

void gnomon_counter_result(uint32_t context, uint32_t set, uint8_t target, uint32_t target_id, uint8_t flags,
                           const uint64_t* values, uint16_t count) {
  if (values == nullptr || count == 0 || count > GNOMON_MAX_COUNTER_VALUES) return;
  WriteEvent(
      protocol::CounterResult{
          .context_id = context, .set_id = set, .target = target, .flags = flags, .target_id = target_id},
      {.values = {reinterpret_cast<const uint8_t*>(values), count}});
}

}  // extern "C"
