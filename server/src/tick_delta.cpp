#include "gnomon/server/tick_delta.h"

#include <array>
#include <cstring>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/messages.h"

namespace gnomon::server {
namespace {

// Offset of the CPU tick in a message of `type`, or 0 when it has none.
constexpr size_t TickOffset(uint8_t type) {
  using protocol::MessageType;
  switch (static_cast<MessageType>(type)) {
    case MessageType::kZoneBegin: return offsetof(protocol::ZoneBegin, tick);
    case MessageType::kZoneEnd: return offsetof(protocol::ZoneEnd, tick);
    case MessageType::kFrameMark:
    case MessageType::kFrameBegin:
    case MessageType::kFrameEnd: return offsetof(protocol::FrameEvent, tick);
    case MessageType::kLogMessage: return offsetof(protocol::LogMessage, tick);
    case MessageType::kPlotValue: return offsetof(protocol::PlotValue, tick);
    case MessageType::kGpuZoneBegin: return offsetof(protocol::GpuZoneBegin, cpu_tick);
    case MessageType::kGpuZoneEnd: return offsetof(protocol::GpuZoneEnd, cpu_tick);
    case MessageType::kEndOfStream: return offsetof(protocol::EndOfStream, tick);
    default: return 0;
  }
}

std::array<TypeLayout, 256> MakeLayouts() {
  std::array<TypeLayout, 256> layouts{};
  for (size_t type = 0; type < layouts.size(); ++type) {
    const size_t fixed = protocol::FixedSize(uint8_t(type));
    if (fixed == 0) continue;
    layouts[type].fixed = uint8_t(fixed);
    layouts[type].tick_offset = uint8_t(TickOffset(uint8_t(type)));
    // A type has a tail when its variable size can be other than 0: probe with all-ones
    // length fields (every length field is at most 16 bits wide).
    std::array<uint8_t, 64> probe{};
    probe.fill(0xFF);
    probe[0] = uint8_t(type);
    layouts[type].has_tail = protocol::VariableSize(uint8_t(type), probe.data()) != 0;
  }
  return layouts;
}

const std::array<TypeLayout, 256> kLayouts = MakeLayouts();

}  // namespace

const TypeLayout& LayoutOf(uint8_t type) { return kLayouts[type]; }

namespace {

template <typename Rewrite>
void ForEachTick(uint8_t* block, size_t size, Rewrite rewrite) {
  constexpr uint8_t kBegin = uint8_t(protocol::MessageType::kZoneBegin);
  constexpr uint8_t kEnd = uint8_t(protocol::MessageType::kZoneEnd);
  size_t pos = 0;
  while (pos < size) {
    uint8_t* p = block + pos;
    // Zone begins and ends are nearly every message of a big trace: straight through.
    if (p[0] == kBegin && size - pos >= sizeof(protocol::ZoneBegin)) {
      rewrite(p + offsetof(protocol::ZoneBegin, tick));
      pos += sizeof(protocol::ZoneBegin);
      continue;
    }
    if (p[0] == kEnd && size - pos >= sizeof(protocol::ZoneEnd)) {
      rewrite(p + offsetof(protocol::ZoneEnd, tick));
      pos += sizeof(protocol::ZoneEnd);
      continue;
    }
    const size_t total = WholeMessageSize(p, size - pos);
    if (total == 0) return;
    const TypeLayout& layout = kLayouts[p[0]];
    if (layout.tick_offset != 0) rewrite(p + layout.tick_offset);
    pos += total;
  }
}

}  // namespace

void EncodeTickDeltas(uint8_t* block, size_t size) {
  uint64_t previous = 0;
  ForEachTick(block, size, [&previous](uint8_t* field) {
    const uint64_t tick = protocol::LoadLe<uint64_t>(field);
    const int64_t delta = static_cast<int64_t>(tick - previous);
    protocol::StoreLe<uint64_t>(field, (uint64_t(delta) << 1) ^ uint64_t(delta >> 63));
    previous = tick;
  });
}

void DecodeTickDeltas(uint8_t* block, size_t size) {
  uint64_t previous = 0;
  ForEachTick(block, size, [&previous](uint8_t* field) {
    const uint64_t zigzag = protocol::LoadLe<uint64_t>(field);
    const uint64_t delta = (zigzag >> 1) ^ (0 - (zigzag & 1));
    previous += delta;
    protocol::StoreLe<uint64_t>(field, previous);
  });
}

namespace {

constexpr uint8_t kBeginType = uint8_t(protocol::MessageType::kZoneBegin);
constexpr uint8_t kEndType = uint8_t(protocol::MessageType::kZoneEnd);

uint64_t ZigZag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }

uint8_t* PutVarint(uint8_t* out, uint64_t v) {
  while (v >= 0x80) {
    *out++ = uint8_t(v) | 0x80;
    v >>= 7;
  }
  *out++ = uint8_t(v);
  return out;
}

}  // namespace

size_t CompactMessages(const uint8_t* data, size_t size, uint8_t* out, uint64_t& previous) {
  uint8_t* o = out;
  size_t pos = 0;
  while (pos < size) {
    const uint8_t* p = data + pos;
    if (p[0] == kBeginType && size - pos >= sizeof(protocol::ZoneBegin)) {
      const uint64_t tick = protocol::LoadLe<uint64_t>(p + offsetof(protocol::ZoneBegin, tick));
      *o++ = kBeginType;
      o = PutVarint(o, protocol::LoadLe<uint32_t>(p + offsetof(protocol::ZoneBegin, srcloc_id)));
      o = PutVarint(o, ZigZag(int64_t(tick - previous)));
      previous = tick;
      pos += sizeof(protocol::ZoneBegin);
      continue;
    }
    if (p[0] == kEndType && size - pos >= sizeof(protocol::ZoneEnd)) {
      const uint64_t tick = protocol::LoadLe<uint64_t>(p + offsetof(protocol::ZoneEnd, tick));
      *o++ = kEndType;
      o = PutVarint(o, ZigZag(int64_t(tick - previous)));
      previous = tick;
      pos += sizeof(protocol::ZoneEnd);
      continue;
    }
    const TypeLayout& layout = kLayouts[p[0]];
    const size_t total = WholeMessageSize(p, size - pos);
    if (total == 0) {  // not a whole message: the rest as it is
      std::memcpy(o, p, size - pos);
      o += size - pos;
      break;
    }
    std::memcpy(o, p, total);
    if (layout.tick_offset != 0) {
      const uint64_t tick = protocol::LoadLe<uint64_t>(p + layout.tick_offset);
      protocol::StoreLe<uint64_t>(o + layout.tick_offset, ZigZag(int64_t(tick - previous)));
      previous = tick;
    }
    o += total;
    pos += total;
  }
  return size_t(o - out);
}

}  // namespace gnomon::server
