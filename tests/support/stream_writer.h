// Builds Gnomon message streams byte by byte, for tests that feed decoders directly.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/messages.h"

namespace gnomon::test {

class StreamWriter {
 public:
  using Type = protocol::MessageType;

  // Any message of the catalogue, its length fields set from its tail.
  template <typename M>
  StreamWriter& Add(const M& m, const typename M::Tail& tail = {}) {
    protocol::AppendMessage(bytes_, m, tail);
    return *this;
  }

  // Shorthands for the messages tests write most.
  StreamWriter& ThreadContext(uint32_t id) { return Add(protocol::ThreadContext{.thread_id = id}); }
  StreamWriter& ZoneBegin(uint32_t location, uint64_t tick) {
    return Add(protocol::ZoneBegin{.srcloc_id = location, .tick = tick});
  }
  StreamWriter& ZoneEnd(uint64_t tick) { return Add(protocol::ZoneEnd{.tick = tick}); }
  StreamWriter& ZoneName(std::string_view s) { return Add(protocol::ZoneName{}, {.name = s}); }
  StreamWriter& ZoneText(std::string_view s) { return Add(protocol::ZoneText{}, {.text = s}); }
  StreamWriter& ZoneColor(uint32_t rgb) { return Add(protocol::ZoneColor{.rgb = rgb}); }
  StreamWriter& ZoneValue(uint64_t v) { return Add(protocol::ZoneValue{.value = v}); }
  // A FrameMark, FrameBegin or FrameEnd.
  StreamWriter& Frame(Type type, uint32_t name_id, uint64_t tick) {
    if (type == Type::kFrameBegin) return Add(protocol::FrameBegin{.name_id = name_id, .tick = tick});
    if (type == Type::kFrameEnd) return Add(protocol::FrameEnd{.name_id = name_id, .tick = tick});
    return Add(protocol::FrameMark{.name_id = name_id, .tick = tick});
  }
  StreamWriter& Message(uint64_t tick, uint8_t severity, std::string_view s) {
    return Add(protocol::LogMessage{.tick = tick, .severity = severity}, {.text = s});
  }
  StreamWriter& Plot(uint32_t id, uint64_t tick, double value) {
    return Add(protocol::PlotValue{.plot_id = id, .tick = tick, .value = value});
  }
  StreamWriter& Calibration(uint64_t tick, int64_t raw_ns, int64_t mono_ns, uint32_t uncertainty_ns) {
    return Add(protocol::CpuCalibration{
        .tick = tick, .monotonic_raw_ns = raw_ns, .monotonic_ns = mono_ns, .uncertainty_ns = uncertainty_ns});
  }
  StreamWriter& String(uint32_t id, protocol::StringKind kind, std::string_view s) {
    return Add(protocol::StringDef{.id = id, .kind = uint8_t(kind)}, {.text = s});
  }
  StreamWriter& SourceLocation(uint32_t id, std::string_view name, std::string_view function,
                               std::string_view file, uint32_t line, uint32_t color = protocol::kNoColor) {
    return Add(protocol::SourceLocationDef{.id = id, .line = line, .color = color},
               {.name = name, .function = function, .file = file});
  }
  StreamWriter& ThreadInfo(uint32_t id, uint32_t os_id, std::string_view name) {
    return Add(protocol::ThreadInfo{.thread_id = id, .os_thread_id = os_id}, {.name = name});
  }
  // A program whose timer counts nanoseconds (so ticks read as ns in assertions).
  StreamWriter& AppInfo(std::string_view name, uint32_t pid = 42,
                        protocol::TimerKind timer = protocol::TimerKind::kMonotonicRaw,
                        uint64_t ticks_per_second = 1000000000) {
    return Add(protocol::AppInfo{.pid = pid,
                                 .timer_kind = uint8_t(timer),
                                 .ticks_per_second_estimate = ticks_per_second,
                                 .start_unix_ns = 0,
                                 .start_tick = 0},
               {.name = name});
  }
  StreamWriter& Dropped(uint64_t total) { return Add(protocol::DroppedEvents{.total_events = total}); }
  StreamWriter& End(uint64_t tick) { return Add(protocol::EndOfStream{.tick = tick}); }
  StreamWriter& GpuContext(uint32_t id, std::string_view device, uint64_t period_num = 1,
                           uint64_t period_den = 1, uint8_t valid_bits = 64, uint64_t gpu_ticks = 0,
                           uint64_t cpu_time = 0,
                           protocol::CpuTimeDomain domain = protocol::CpuTimeDomain::kMonotonicRaw,
                           uint32_t uncertainty = 0, protocol::GpuApi api = protocol::GpuApi::kVulkan,
                           uint16_t flags = 1) {
    return Add(protocol::GpuContextDef{.context_id = id,
                                       .api = uint8_t(api),
                                       .valid_bits = valid_bits,
                                       .flags = flags,
                                       .period_numerator_ns = period_num,
                                       .period_denominator = period_den,
                                       .gpu_ticks = gpu_ticks,
                                       .cpu_time = cpu_time,
                                       .cpu_domain = uint8_t(domain),
                                       .uncertainty_ns = uncertainty},
               {.name = device});
  }
  StreamWriter& GpuZoneBegin(uint32_t context, uint32_t query, uint32_t location, uint64_t cpu_tick) {
    return Add(protocol::GpuZoneBegin{
        .context_id = context, .query_id = query, .srcloc_id = location, .cpu_tick = cpu_tick});
  }
  StreamWriter& GpuZoneEnd(uint32_t context, uint32_t query, uint64_t cpu_tick) {
    return Add(protocol::GpuZoneEnd{.context_id = context, .query_id = query, .cpu_tick = cpu_tick});
  }
  StreamWriter& GpuTime(uint32_t context, uint32_t query, uint64_t ticks) {
    return Add(protocol::GpuTime{.context_id = context, .query_id = query, .gpu_ticks = ticks});
  }
  StreamWriter& GpuCalibration(uint32_t context, uint64_t ticks, uint64_t cpu_time, int64_t delta,
                               uint32_t uncertainty,
                               protocol::CpuTimeDomain domain = protocol::CpuTimeDomain::kMonotonicRaw) {
    return Add(protocol::GpuCalibration{.context_id = context,
                                        .gpu_ticks = ticks,
                                        .cpu_time = cpu_time,
                                        .cpu_delta_ns = delta,
                                        .uncertainty_ns = uncertainty,
                                        .cpu_domain = uint8_t(domain)});
  }
  StreamWriter& GpuResync(uint32_t context, uint64_t ticks, uint64_t cpu_time, uint32_t uncertainty,
                          protocol::CpuTimeDomain domain = protocol::CpuTimeDomain::kMonotonicRaw) {
    return Add(protocol::GpuResync{.context_id = context,
                                   .gpu_ticks = ticks,
                                   .cpu_time = cpu_time,
                                   .uncertainty_ns = uncertainty,
                                   .cpu_domain = uint8_t(domain)});
  }
  StreamWriter& GpuTimeBracket(uint32_t context, uint64_t ticks, uint64_t not_before, uint64_t not_after,
                               protocol::CpuTimeDomain domain = protocol::CpuTimeDomain::kMonotonicRaw) {
    return Add(protocol::GpuTimeBracket{.context_id = context,
                                        .gpu_ticks = ticks,
                                        .cpu_not_before = not_before,
                                        .cpu_not_after = not_after,
                                        .cpu_domain = uint8_t(domain)});
  }
  StreamWriter& Alloc(uint32_t pool, uint64_t address, uint64_t size, uint64_t tick) {
    return Add(protocol::MemAlloc{.pool_id = pool, .address = address, .size_bytes = size, .tick = tick});
  }
  StreamWriter& Free(uint32_t pool, uint64_t address, uint64_t tick) {
    return Add(protocol::MemFree{.pool_id = pool, .address = address, .tick = tick});
  }
  StreamWriter& LockWait(uint32_t lock, uint64_t tick) {
    return Add(protocol::LockWait{.lock_id = lock, .tick = tick});
  }
  StreamWriter& LockObtain(uint32_t lock, uint64_t tick, uint8_t flags = 0) {
    return Add(protocol::LockObtain{.lock_id = lock, .flags = flags, .tick = tick});
  }
  StreamWriter& LockRelease(uint32_t lock, uint64_t tick) {
    return Add(protocol::LockRelease{.lock_id = lock, .tick = tick});
  }
  // Frames as the host stores them: little-endian on every machine the tests run on.
  StreamWriter& Callstack(const std::vector<uint64_t>& frames) {
    return Add(protocol::Callstack{}, {.frames = Values(frames)});
  }
  StreamWriter& Module(uint64_t load_bias, uint64_t start, uint64_t end, std::string_view path,
                       std::string_view build_id = "") {
    return Add(protocol::ModuleDef{.load_bias = load_bias, .start = start, .end = end},
               {.path = path, .build_id = build_id});
  }
  StreamWriter& Sample(uint32_t os_thread_id, uint64_t tick, const std::vector<uint64_t>& frames) {
    return Add(protocol::Sample{.os_thread_id = os_thread_id, .tick = tick}, {.frames = Values(frames)});
  }
  StreamWriter& Switch(uint32_t os_thread_id, protocol::ContextSwitchKind kind, uint32_t cpu, uint64_t tick) {
    return Add(protocol::ContextSwitch{
        .os_thread_id = os_thread_id, .kind = uint8_t(kind), .cpu = cpu, .tick = tick});
  }
  static protocol::LeValues Values(const std::vector<uint64_t>& frames) {
    return {reinterpret_cast<const uint8_t*>(frames.data()), frames.size()};
  }
  StreamWriter& GpuContextName(uint32_t context, std::string_view name) {
    return Add(protocol::GpuContextName{.context_id = context}, {.name = name});
  }
  StreamWriter& CounterSet(uint32_t context, uint32_t set, uint16_t count, std::string_view name) {
    return Add(protocol::CounterSetDef{.context_id = context, .set_id = set, .counter_count = count},
               {.name = name});
  }
  StreamWriter& Counter(uint32_t set, uint16_t index, protocol::CounterType type,
                        protocol::CounterDataType data_type, std::string_view name,
                        std::string_view description = {}, uint32_t offset = 0, uint32_t size = 8,
                        uint64_t raw_max = 0) {
    return Add(protocol::CounterDef{.set_id = set,
                                    .index = index,
                                    .counter_type = uint8_t(type),
                                    .data_type = uint8_t(data_type),
                                    .offset = offset,
                                    .size = size,
                                    .raw_max = raw_max},
               {.name = name, .description = description});
  }
  StreamWriter& CounterResult(uint32_t context, uint32_t set, protocol::CounterTarget target,
                              uint32_t target_id, const std::vector<uint64_t>& values, uint8_t flags = 0) {
    return Add(protocol::CounterResult{.context_id = context,
                                       .set_id = set,
                                       .target = uint8_t(target),
                                       .flags = flags,
                                       .target_id = target_id},
               {.values = {reinterpret_cast<const uint8_t*>(values.data()), values.size()}});
  }
  // A message's fixed part as it is, its length fields unchecked and nothing after it:
  // a message that lies about what follows.
  template <typename M>
  StreamWriter& RawMessage(const M& m) {
    const auto* p = reinterpret_cast<const uint8_t*>(&m);
    bytes_.insert(bytes_.end(), p, p + sizeof(M));
    return *this;
  }
  // Bytes as they are: damaged or hostile messages.
  StreamWriter& Raw(std::initializer_list<uint8_t> bytes) {
    bytes_.insert(bytes_.end(), bytes);
    return *this;
  }

  // Another writer's messages after these.
  StreamWriter& Append(const StreamWriter& other) {
    bytes_.insert(bytes_.end(), other.bytes_.begin(), other.bytes_.end());
    return *this;
  }

  const std::vector<uint8_t>& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }
  const uint8_t* data() const { return bytes_.data(); }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace gnomon::test
