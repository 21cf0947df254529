// The GPU half of the C API. Context definitions, names and calibrations are rare and
// go to the global definition log (replayed to every server); zones and query times are
// events on the calling thread.
#include <cstring>

#include "gnomon/gnomon.h"
#include "gnomon/gnomon.hpp"
#include "gnomon/protocol/tick_period.h"
#include "profiler.h"

namespace {

using gnomon::client::Profiler;
using gnomon::protocol::MessageType;
using gnomon::protocol::StoreLe;

template <typename Message>
void AppendGlobal(const Message& message, std::string_view tail = {}) {
  std::vector<uint8_t> bytes;
  gnomon::client::AppendMessage(bytes, &message, sizeof(message), {tail});
  Profiler::Get().AppendGlobal(bytes.data(), bytes.size());
}

template <typename Message>
void WriteEvent(const Message& message) {
  uint8_t* p = gnomon::detail::Reserve(sizeof(Message));
  if (p == nullptr) return;
  std::memcpy(p, &message, sizeof(Message));
  gnomon::detail::Commit(p + sizeof(Message));
}

uint8_t Domain(gnomon_cpu_time_domain domain) {
  return domain == GNOMON_CPU_TIME_MONOTONIC_RAW || domain == GNOMON_CPU_TIME_MONOTONIC ? uint8_t(domain) : 0;
}

}  // namespace

extern "C" {

uint32_t gnomon_gpu_context_create(const gnomon_gpu_context_info* info) {
  if (info == nullptr || info->period_numerator_ns == 0 || info->period_denominator == 0) return 0;
  Profiler& profiler = Profiler::Get();
  gnomon::protocol::GpuContextDef def{};
  def.type = uint8_t(MessageType::kGpuContextDef);
  def.context_id = profiler.NextGpuContextId();
  def.api = uint8_t(info->api);
  def.valid_bits = info->valid_bits == 0 || info->valid_bits > 64 ? 64 : info->valid_bits;
  def.flags = info->flags;
  def.period_numerator_ns = info->period_numerator_ns;
  def.period_denominator = info->period_denominator;
  def.gpu_ticks = info->gpu_ticks;
  def.cpu_time = info->cpu_time;
  def.cpu_domain = Domain(info->cpu_domain);
  def.uncertainty_ns = info->uncertainty_ns;
  const std::string_view name = gnomon::client::ClampString(
      info->device_name, info->device_name ? std::strlen(info->device_name) : 0, gnomon::protocol::kMaxStringBytes);
  def.name_length = uint16_t(name.size());
  AppendGlobal(def, name);
  return def.context_id;
}

void gnomon_gpu_context_name(uint32_t context, const char* name, size_t length) {
  const std::string_view text = gnomon::client::ClampString(name, length, gnomon::protocol::kMaxStringBytes);
  gnomon::protocol::GpuContextName message{uint8_t(MessageType::kGpuContextName), context, uint16_t(text.size())};
  AppendGlobal(message, text);
}

void gnomon_gpu_zone_begin(uint32_t context, uint32_t query_id, gnomon_source_location* location) {
  uint32_t id = std::atomic_ref<uint32_t>(location->id).load(std::memory_order_acquire);
  if (id == 0) id = gnomon::detail::RegisterSourceLocation(location);
  Profiler::Get();  // the timer is chosen at start-up
  WriteEvent(gnomon::protocol::GpuZoneBegin{uint8_t(MessageType::kGpuZoneBegin), context, query_id, id,
                                            gnomon::detail::Now()});
}

void gnomon_gpu_zone_end(uint32_t context, uint32_t query_id) {
  Profiler::Get();
  WriteEvent(gnomon::protocol::GpuZoneEnd{uint8_t(MessageType::kGpuZoneEnd), context, query_id, gnomon::detail::Now()});
}

void gnomon_gpu_time(uint32_t context, uint32_t query_id, uint64_t gpu_ticks) {
  WriteEvent(gnomon::protocol::GpuTime{uint8_t(MessageType::kGpuTime), context, query_id, gpu_ticks});
}

void gnomon_gpu_calibration(const gnomon_gpu_calibration_data* data) {
  if (data == nullptr) return;
  AppendGlobal(gnomon::protocol::GpuCalibration{uint8_t(MessageType::kGpuCalibration), data->context, data->gpu_ticks,
                                                data->cpu_time, data->cpu_delta_ns, data->uncertainty_ns,
                                                Domain(data->cpu_domain)});
}

void gnomon_gpu_resync(uint32_t context, uint64_t gpu_ticks, uint64_t cpu_time, gnomon_cpu_time_domain cpu_domain,
                       uint32_t uncertainty_ns) {
  AppendGlobal(gnomon::protocol::GpuResync{uint8_t(MessageType::kGpuResync), context, gpu_ticks, cpu_time,
                                           uncertainty_ns, Domain(cpu_domain)});
}

uint64_t gnomon_cpu_time_from_host_ns(gnomon_cpu_time_domain domain, int64_t host_ns) {
  return Profiler::Get().HostNsToTicks(domain != GNOMON_CPU_TIME_MONOTONIC, host_ns);
}

void gnomon_gpu_period_from_float(double period_ns, uint64_t* numerator_ns, uint64_t* denominator) {
  const gnomon::protocol::TickPeriod period = gnomon::protocol::PeriodFromFloat(period_ns);
  if (numerator_ns) *numerator_ns = period.numerator_ns;
  if (denominator) *denominator = period.denominator;
}

uint32_t gnomon_counter_set_create(uint32_t context, const char* name, const gnomon_counter_info* counters,
                                   uint16_t count) {
  if (counters == nullptr || count == 0 || count > GNOMON_MAX_COUNTER_VALUES) return 0;
  const uint32_t set = Profiler::Get().NextCounterSetId();
  const std::string_view set_name =
      gnomon::client::ClampString(name, name ? std::strlen(name) : 0, gnomon::protocol::kMaxStringBytes);
  AppendGlobal(gnomon::protocol::CounterSetDef{uint8_t(MessageType::kCounterSetDef), context, set, count,
                                               uint16_t(set_name.size())},
               set_name);
  for (uint16_t i = 0; i < count; ++i) {
    const gnomon_counter_info& c = counters[i];
    const std::string_view counter_name = gnomon::client::ClampString(
        c.name, c.name ? std::strlen(c.name) : 0, gnomon::protocol::kMaxStringBytes / 2);
    const std::string_view description = gnomon::client::ClampString(
        c.description, c.description ? std::strlen(c.description) : 0, gnomon::protocol::kMaxStringBytes / 2);
    gnomon::protocol::CounterDef def{uint8_t(MessageType::kCounterDef),
                                     set,
                                     i,
                                     uint8_t(c.type),
                                     uint8_t(c.data_type),
                                     c.offset,
                                     c.size,
                                     c.raw_max,
                                     uint16_t(counter_name.size()),
                                     uint16_t(description.size())};
    std::vector<uint8_t> bytes;
    gnomon::client::AppendMessage(bytes, &def, sizeof(def), {counter_name, description});
    Profiler::Get().AppendGlobal(bytes.data(), bytes.size());
  }
  return set;
}

void gnomon_counter_result(uint32_t context, uint32_t set, uint8_t target, uint32_t target_id, uint8_t flags,
                           const uint64_t* values, uint16_t count) {
  if (values == nullptr || count == 0 || count > GNOMON_MAX_COUNTER_VALUES) return;
  const size_t bytes = sizeof(gnomon::protocol::CounterResult) + 8 * size_t{count};
  uint8_t* p = gnomon::detail::Reserve(bytes);
  if (p == nullptr) return;
  const gnomon::protocol::CounterResult header{uint8_t(MessageType::kCounterResult), context, set, target, flags,
                                               target_id, count};
  std::memcpy(p, &header, sizeof(header));
  for (uint16_t i = 0; i < count; ++i) StoreLe<uint64_t>(p + sizeof(header) + 8 * size_t{i}, values[i]);
  gnomon::detail::Commit(p + bytes);
}

}  // extern "C"
