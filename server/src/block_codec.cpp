#include "block_codec.h"

#include <cstring>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/check.h"
#include "gnomon/protocol/messages.h"

namespace gnomon::server {
namespace {

// Calls rewrite(field) for the TICK field of each whole message, in order.
template <typename Rewrite>
void ForEachTick(uint8_t* block, size_t size, Rewrite rewrite) {
  protocol::WalkMessages(block, size, [&](const uint8_t* p, size_t) {
    if (const uint8_t offset = protocol::kCatalogue[p[0]].tick_offset; offset != 0) {
      rewrite(block + (p - block) + offset);
    }
    return true;
  });
}

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

void EncodeTickDeltas(uint8_t* block, size_t size) {
  uint64_t previous = 0;
  ForEachTick(block, size, [&previous](uint8_t* field) {
    const uint64_t tick = protocol::LoadLe<uint64_t>(field);
    protocol::StoreLe<uint64_t>(field, ZigZag(static_cast<int64_t>(tick - previous)));
    previous = tick;
  });
}

void DecodeTickDeltas(uint8_t* block, size_t size) {
  uint64_t previous = 0;
  ForEachTick(block, size, [&previous](uint8_t* field) {
    previous += uint64_t(UnZigZag(protocol::LoadLe<uint64_t>(field)));
    protocol::StoreLe<uint64_t>(field, previous);
  });
}

size_t CompactMessages(const uint8_t* data, size_t size, uint8_t* out, uint64_t& previous) {
  constexpr uint8_t kBegin = uint8_t(protocol::MessageType::kZoneBegin);
  constexpr uint8_t kEnd = uint8_t(protocol::MessageType::kZoneEnd);
  uint8_t* o = out;
  size_t pos = 0;
  while (pos < size) {
    const uint8_t* p = data + pos;
    // Zone begins and ends are nearly every message of a big trace: straight through.
    if (p[0] == kBegin && size - pos >= sizeof(protocol::ZoneBegin)) {
      const auto m = protocol::LoadLe<protocol::ZoneBegin>(p);
      *o++ = kBegin;
      o = PutVarint(o, m.srcloc_id);
      o = PutVarint(o, ZigZag(int64_t(m.tick - previous)));
      previous = m.tick;
      pos += sizeof(protocol::ZoneBegin);
      continue;
    }
    if (p[0] == kEnd && size - pos >= sizeof(protocol::ZoneEnd)) {
      const auto m = protocol::LoadLe<protocol::ZoneEnd>(p);
      *o++ = kEnd;
      o = PutVarint(o, ZigZag(int64_t(m.tick - previous)));
      previous = m.tick;
      pos += sizeof(protocol::ZoneEnd);
      continue;
    }
    const protocol::MessageSpan span = protocol::MeasureMessage(p, size - pos);
    if (span.status != protocol::MessageSpan::kWhole) break;  // the rest as it is, below
    std::memcpy(o, p, span.size);
    if (const uint8_t offset = protocol::kCatalogue[p[0]].tick_offset; offset != 0) {
      const uint64_t tick = protocol::LoadLe<uint64_t>(p + offset);
      protocol::StoreLe<uint64_t>(o + offset, ZigZag(int64_t(tick - previous)));
      previous = tick;
    }
    o += span.size;
    pos += span.size;
  }
  // Not a whole message from here on (unknown, or cut short): the rest as it is.
  std::memcpy(o, data + pos, size - pos);
  o += size - pos;
  GNOMON_CHECK(size_t(o - out) <= CompactBound(size), "compaction wrote past CompactBound");
  return size_t(o - out);
}

}  // namespace gnomon::server
