// Builds Gnomon message streams byte by byte, for tests that feed decoders directly.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/messages.h"

namespace gnomon::test {

class StreamWriter {
 public:
  using Type = protocol::MessageType;

  StreamWriter& ThreadContext(uint32_t id) { return Tag(Type::kThreadContext).U32(id); }
  StreamWriter& ZoneBegin(uint32_t location, uint64_t tick) { return Tag(Type::kZoneBegin).U32(location).U64(tick); }
  StreamWriter& ZoneEnd(uint64_t tick) { return Tag(Type::kZoneEnd).U64(tick); }
  StreamWriter& ZoneName(std::string_view s) { return Tag(Type::kZoneName).U16(uint16_t(s.size())).Bytes(s); }
  StreamWriter& ZoneText(std::string_view s) { return Tag(Type::kZoneText).U16(uint16_t(s.size())).Bytes(s); }
  StreamWriter& ZoneColor(uint32_t rgb) { return Tag(Type::kZoneColor).U32(rgb); }
  StreamWriter& ZoneValue(uint64_t v) { return Tag(Type::kZoneValue).U64(v); }
  StreamWriter& Frame(Type type, uint32_t name_id, uint64_t tick) { return Tag(type).U32(name_id).U64(tick); }
  StreamWriter& Message(uint64_t tick, uint8_t severity, std::string_view s) {
    return Tag(Type::kLogMessage).U64(tick).U8(severity).U16(uint16_t(s.size())).Bytes(s);
  }
  StreamWriter& Plot(uint32_t id, uint64_t tick, double value) {
    Tag(Type::kPlotValue).U32(id).U64(tick);
    uint64_t bits;
    std::memcpy(&bits, &value, 8);
    return U64(bits);
  }
  StreamWriter& Calibration(uint64_t tick, int64_t raw_ns, int64_t mono_ns, uint32_t uncertainty_ns) {
    return Tag(Type::kCpuCalibration).U64(tick).U64(uint64_t(raw_ns)).U64(uint64_t(mono_ns)).U32(uncertainty_ns);
  }
  StreamWriter& String(uint32_t id, protocol::StringKind kind, std::string_view s) {
    return Tag(Type::kStringDef).U32(id).U8(uint8_t(kind)).U16(uint16_t(s.size())).Bytes(s);
  }
  StreamWriter& SourceLocation(uint32_t id, std::string_view name, std::string_view function, std::string_view file,
                               uint32_t line, uint32_t color = protocol::kNoColor) {
    return Tag(Type::kSourceLocationDef)
        .U32(id).U32(line).U32(color)
        .U16(uint16_t(name.size())).U16(uint16_t(function.size())).U16(uint16_t(file.size()))
        .Bytes(name).Bytes(function).Bytes(file);
  }
  StreamWriter& ThreadInfo(uint32_t id, uint32_t os_id, std::string_view name) {
    return Tag(Type::kThreadInfo).U32(id).U32(os_id).U16(uint16_t(name.size())).Bytes(name);
  }
  // A program whose timer counts nanoseconds (so ticks read as ns in assertions).
  StreamWriter& AppInfo(std::string_view name, uint32_t pid = 42,
                        protocol::TimerKind timer = protocol::TimerKind::kMonotonicRaw,
                        uint64_t ticks_per_second = 1000000000) {
    return Tag(Type::kAppInfo).U32(pid).U8(uint8_t(timer)).U64(ticks_per_second).U64(0).U64(0)
        .U16(uint16_t(name.size())).Bytes(name);
  }
  StreamWriter& Dropped(uint64_t total) { return Tag(Type::kDroppedEvents).U64(total); }
  StreamWriter& End(uint64_t tick) { return Tag(Type::kEndOfStream).U64(tick); }
  StreamWriter& GpuContext(uint32_t id, std::string_view device, uint64_t period_num = 1, uint64_t period_den = 1,
                           uint8_t valid_bits = 64, uint64_t gpu_ticks = 0, uint64_t cpu_time = 0,
                           protocol::CpuTimeDomain domain = protocol::CpuTimeDomain::kMonotonicRaw,
                           uint32_t uncertainty = 0, protocol::GpuApi api = protocol::GpuApi::kVulkan, uint16_t flags = 1) {
    return Tag(Type::kGpuContextDef).U32(id).U8(uint8_t(api)).U8(valid_bits).U16(flags).U64(period_num).U64(period_den)
        .U64(gpu_ticks).U64(cpu_time).U8(uint8_t(domain)).U32(uncertainty).U16(uint16_t(device.size())).Bytes(device);
  }
  StreamWriter& GpuZoneBegin(uint32_t context, uint32_t query, uint32_t location, uint64_t cpu_tick) {
    return Tag(Type::kGpuZoneBegin).U32(context).U32(query).U32(location).U64(cpu_tick);
  }
  StreamWriter& GpuZoneEnd(uint32_t context, uint32_t query, uint64_t cpu_tick) {
    return Tag(Type::kGpuZoneEnd).U32(context).U32(query).U64(cpu_tick);
  }
  StreamWriter& GpuTime(uint32_t context, uint32_t query, uint64_t ticks) {
    return Tag(Type::kGpuTime).U32(context).U32(query).U64(ticks);
  }
  StreamWriter& GpuCalibration(uint32_t context, uint64_t ticks, uint64_t cpu_time, int64_t delta, uint32_t uncertainty,
                               protocol::CpuTimeDomain domain = protocol::CpuTimeDomain::kMonotonicRaw) {
    return Tag(Type::kGpuCalibration).U32(context).U64(ticks).U64(cpu_time).U64(uint64_t(delta)).U32(uncertainty)
        .U8(uint8_t(domain));
  }
  StreamWriter& GpuResync(uint32_t context, uint64_t ticks, uint64_t cpu_time, uint32_t uncertainty,
                          protocol::CpuTimeDomain domain = protocol::CpuTimeDomain::kMonotonicRaw) {
    return Tag(Type::kGpuResync).U32(context).U64(ticks).U64(cpu_time).U32(uncertainty).U8(uint8_t(domain));
  }
  StreamWriter& GpuContextName(uint32_t context, std::string_view name) {
    return Tag(Type::kGpuContextName).U32(context).U16(uint16_t(name.size())).Bytes(name);
  }
  StreamWriter& CounterSet(uint32_t context, uint32_t set, uint16_t count, std::string_view name) {
    return Tag(Type::kCounterSetDef).U32(context).U32(set).U16(count).U16(uint16_t(name.size())).Bytes(name);
  }
  StreamWriter& Counter(uint32_t set, uint16_t index, protocol::CounterType type, protocol::CounterDataType data_type,
                        std::string_view name, std::string_view description = {}, uint32_t offset = 0,
                        uint32_t size = 8, uint64_t raw_max = 0) {
    return Tag(Type::kCounterDef).U32(set).U16(index).U8(uint8_t(type)).U8(uint8_t(data_type)).U32(offset).U32(size)
        .U64(raw_max).U16(uint16_t(name.size())).U16(uint16_t(description.size())).Bytes(name).Bytes(description);
  }
  StreamWriter& CounterResult(uint32_t context, uint32_t set, protocol::CounterTarget target, uint32_t target_id,
                              const std::vector<uint64_t>& values, uint8_t flags = 0) {
    Tag(Type::kCounterResult).U32(context).U32(set).U8(uint8_t(target)).U8(flags).U32(target_id)
        .U16(uint16_t(values.size()));
    for (uint64_t v : values) U64(v);
    return *this;
  }
  StreamWriter& Raw(std::initializer_list<uint8_t> bytes) {
    bytes_.insert(bytes_.end(), bytes);
    return *this;
  }

  const std::vector<uint8_t>& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }
  const uint8_t* data() const { return bytes_.data(); }

 private:
  StreamWriter& Tag(Type type) { return U8(static_cast<uint8_t>(type)); }
  StreamWriter& U8(uint8_t v) {
    bytes_.push_back(v);
    return *this;
  }
  StreamWriter& U16(uint16_t v) { return Le(v); }
  StreamWriter& U32(uint32_t v) { return Le(v); }
  StreamWriter& U64(uint64_t v) { return Le(v); }
  template <typename T>
  StreamWriter& Le(T v) {
    for (size_t i = 0; i < sizeof(T); ++i) bytes_.push_back(uint8_t(v >> (8 * i)));
    return *this;
  }
  StreamWriter& Bytes(std::string_view s) {
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  std::vector<uint8_t> bytes_;
};

}  // namespace gnomon::test
