#include "block_codec.h"

#include <cstddef>
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
  using protocol::LoadLe;
  using protocol::ZoneBegin;
  using protocol::ZoneEnd;
  constexpr uint8_t kBegin = uint8_t(protocol::MessageType::kZoneBegin);
  constexpr uint8_t kEnd = uint8_t(protocol::MessageType::kZoneEnd);
  // Fields are loaded one by one, not as the packed struct: a struct copied to the stack
  // and read back across its stores stalls the loop on every message. The last tick
  // stays in a register: `out` could alias `previous`.
  uint64_t last = previous;
  uint8_t* o = out;
  size_t pos = 0;
  while (pos < size) {
    const uint8_t* p = data + pos;
    // Zone begins and ends are nearly every message of a big trace: straight through.
    if (p[0] == kBegin && size - pos >= sizeof(ZoneBegin)) {
      const uint64_t tick = LoadLe<uint64_t>(p + offsetof(ZoneBegin, tick));
      *o++ = kBegin;
      o = PutVarint(o, LoadLe<uint32_t>(p + offsetof(ZoneBegin, srcloc_id)));
      o = PutVarint(o, ZigZag(int64_t(tick - last)));
      last = tick;
      pos += sizeof(ZoneBegin);
      continue;
    }
    if (p[0] == kEnd && size - pos >= sizeof(ZoneEnd)) {
      const uint64_t tick = LoadLe<uint64_t>(p + offsetof(ZoneEnd, tick));
      *o++ = kEnd;
      o = PutVarint(o, ZigZag(int64_t(tick - last)));
      last = tick;
      pos += sizeof(ZoneEnd);
      continue;
    }
    const protocol::MessageSpan span = protocol::MeasureMessage(p, size - pos);
    if (span.status != protocol::MessageSpan::kWhole) break;  // the rest as it is, below
    std::memcpy(o, p, span.size);
    if (const uint8_t offset = protocol::kCatalogue[p[0]].tick_offset; offset != 0) {
      const uint64_t tick = LoadLe<uint64_t>(p + offset);
      protocol::StoreLe<uint64_t>(o + offset, ZigZag(int64_t(tick - last)));
      last = tick;
    }
    o += span.size;
    pos += span.size;
  }
  previous = last;
  // Not a whole message from here on (unknown, or cut short): the rest as it is.
  std::memcpy(o, data + pos, size - pos);
  o += size - pos;
  GNOMON_CHECK(size_t(o - out) <= CompactBound(size), "compaction wrote past CompactBound");
  return size_t(o - out);
}

}  // namespace gnomon::server
