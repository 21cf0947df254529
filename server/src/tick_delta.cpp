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

// Per type tag: the fixed size, where the tick is, and whether a variable part follows
// (looked up once per message: this walk runs over every byte a capture writes).
struct TypeLayout {
  uint8_t fixed = 0;
  uint8_t tick_offset = 0;
  bool has_tail = false;
};

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
    const TypeLayout layout = kLayouts[p[0]];
    if (layout.fixed == 0 || size - pos < layout.fixed) return;
    const size_t total = layout.fixed + (layout.has_tail ? protocol::VariableSize(p[0], p) : 0);
    if (size - pos < total) return;
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
int64_t UnZigZag(uint64_t v) { return int64_t((v >> 1) ^ (0 - (v & 1))); }

uint8_t* PutVarint(uint8_t* out, uint64_t v) {
  while (v >= 0x80) {
    *out++ = uint8_t(v) | 0x80;
    v >>= 7;
  }
  *out++ = uint8_t(v);
  return out;
}

// Reads a varint of at most 10 bytes from [p, end); nullptr when cut short or too long.
const uint8_t* GetVarint(const uint8_t* p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (unsigned shift = 0; shift < 64 && p < end; shift += 7) {
    const uint8_t byte = *p++;
    v |= uint64_t(byte & 0x7F) << shift;
    if (byte < 0x80) return p;
  }
  return nullptr;
}

}  // namespace

size_t CompactBlock(const uint8_t* block, size_t size, uint8_t* out) {
  uint8_t* o = out;
  uint64_t previous = 0;
  size_t pos = 0;
  while (pos < size) {
    const uint8_t* p = block + pos;
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
    const TypeLayout layout = kLayouts[p[0]];
    size_t total = 0;
    if (layout.fixed != 0 && size - pos >= layout.fixed) {
      total = layout.fixed + (layout.has_tail ? protocol::VariableSize(p[0], p) : 0);
    }
    if (total == 0 || size - pos < total) {  // not a whole message: the rest as it is
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

ExpandResult ExpandCompactBlock(const uint8_t* block, size_t size, uint8_t* out, size_t capacity) {
  const uint8_t* p = block;
  const uint8_t* const end = block + size;
  uint64_t previous = 0;
  auto fail = [&](const std::string& what) {
    return ExpandResult{false, what + " at byte " + std::to_string(p - block) + " of the block", 0};
  };
  uint8_t* o = out;
  uint8_t* const o_end = out + capacity;
  ExpandResult result;
  while (p < end) {
    const uint8_t type = *p;
    if (type == kBeginType || type == kEndType) {
      const size_t length = type == kBeginType ? sizeof(protocol::ZoneBegin) : sizeof(protocol::ZoneEnd);
      if (size_t(o_end - o) < length) {
        result = fail("the block expands past its limit");
        break;
      }
      uint64_t location = 0, delta = 0;
      const uint8_t* q = p + 1;
      if (type == kBeginType) q = GetVarint(q, end, location);
      if (q != nullptr) q = GetVarint(q, end, delta);
      if (q == nullptr || location > UINT32_MAX) {
        result = fail("a zone record is cut short or too long");
        break;
      }
      previous += uint64_t(UnZigZag(delta));
      o[0] = type;
      if (type == kBeginType) {
        protocol::StoreLe<uint32_t>(o + offsetof(protocol::ZoneBegin, srcloc_id), uint32_t(location));
        protocol::StoreLe<uint64_t>(o + offsetof(protocol::ZoneBegin, tick), previous);
      } else {
        protocol::StoreLe<uint64_t>(o + offsetof(protocol::ZoneEnd, tick), previous);
      }
      o += length;
      p = q;
      continue;
    }
    const TypeLayout layout = kLayouts[type];
    if (layout.fixed == 0) {
      result = fail("unknown message type " + std::to_string(type));
      break;
    }
    if (size_t(end - p) < layout.fixed) {
      result = fail("a message is cut short");
      break;
    }
    const size_t total = layout.fixed + (layout.has_tail ? protocol::VariableSize(type, p) : 0);
    if (size_t(end - p) < total) {
      result = fail("a message is cut short");
      break;
    }
    if (size_t(o_end - o) < total) {
      result = fail("the block expands past its limit");
      break;
    }
    std::memcpy(o, p, total);
    if (layout.tick_offset != 0) {
      previous += uint64_t(UnZigZag(protocol::LoadLe<uint64_t>(p + layout.tick_offset)));
      protocol::StoreLe<uint64_t>(o + layout.tick_offset, previous);
    }
    o += total;
    p += total;
  }
  result.size = size_t(o - out);
  return result;
}

}  // namespace gnomon::server
