#include "gnomon/tracefile/block_codec.h"

#include <cstddef>
#include <cstring>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/check.h"
#include "gnomon/protocol/messages.h"
#include "summarizer.h"

namespace gnomon::tracefile {
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

namespace {

// The compact forms: format 3's records, their tick deltas inline (`kColumns` false: out
// and deltas are one buffer) or appended to `deltas` in order (format 6's tick column);
// with `kValues` (format 7), each zone value's difference from `previous_value` too.
// `whole` turns false when the bytes stop being whole messages (the rest is copied).
// No block summary: the compaction alone.
struct NoSummary {
  void Begin(uint32_t, uint64_t) {}
  void End(uint64_t) {}
  void Value() {}
  void Message(const uint8_t*, size_t) {}
};

// `summary` is given every event as it is compacted (summarizer.h), its tick as written.
template <bool kColumns, bool kValues, typename Summary = NoSummary>
size_t Compact(const uint8_t* data, size_t size, uint8_t* out, uint8_t*& deltas, uint64_t& previous,
               uint64_t& previous_value, bool& whole, Summary&& summary = NoSummary{}) {
  static_assert(kColumns || !kValues, "zone values go to the column");
  using protocol::LoadLe;
  using protocol::ZoneBegin;
  using protocol::ZoneEnd;
  using protocol::ZoneValue;
  constexpr uint8_t kBegin = uint8_t(protocol::MessageType::kZoneBegin);
  constexpr uint8_t kEnd = uint8_t(protocol::MessageType::kZoneEnd);
  constexpr uint8_t kValue = uint8_t(protocol::MessageType::kZoneValue);
  // Fields are loaded one by one, not as the packed struct: a struct copied to the stack
  // and read back across its stores stalls the loop on every message. The last tick
  // and the cursors stay in registers: `out` could alias them.
  uint64_t last = previous;
  uint64_t last_value = previous_value;
  uint8_t* o = out;
  uint8_t* d = deltas;
  auto put_delta = [&](uint64_t tick) {
    const uint64_t delta = ZigZag(int64_t(tick - last));
    if constexpr (kColumns) {
      d = PutVarint(d, delta);
    } else {
      o = PutVarint(o, delta);
    }
    last = tick;
  };
  size_t pos = 0;
  while (pos < size) {
    const uint8_t* p = data + pos;
    // Zone begins and ends are nearly every message of a big trace: straight through.
    if (p[0] == kBegin && size - pos >= sizeof(ZoneBegin)) {
      *o++ = kBegin;
      const uint32_t location = LoadLe<uint32_t>(p + offsetof(ZoneBegin, srcloc_id));
      const uint64_t tick = LoadLe<uint64_t>(p + offsetof(ZoneBegin, tick));
      o = PutVarint(o, location);
      put_delta(tick);
      summary.Begin(location, tick);
      pos += sizeof(ZoneBegin);
      continue;
    }
    if (p[0] == kEnd && size - pos >= sizeof(ZoneEnd)) {
      *o++ = kEnd;
      const uint64_t tick = LoadLe<uint64_t>(p + offsetof(ZoneEnd, tick));
      put_delta(tick);
      summary.End(tick);
      pos += sizeof(ZoneEnd);
      continue;
    }
    if (kValues && p[0] == kValue && size - pos >= sizeof(ZoneValue)) {
      summary.Value();
      *o++ = kValue;
      const uint64_t value = LoadLe<uint64_t>(p + offsetof(ZoneValue, value));
      d = PutVarint(d, ZigZag(int64_t(value - last_value)));
      last_value = value;
      pos += sizeof(ZoneValue);
      continue;
    }
    const protocol::MessageSpan span = protocol::MeasureMessage(p, size - pos);
    if (span.status != protocol::MessageSpan::kWhole) break;  // the rest as it is, below
    summary.Message(p, span.size);
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
  previous_value = last_value;
  deltas = d;
  whole = pos == size;
  // Not a whole message from here on (unknown, or cut short): the rest as it is (none of
  // an empty block, whose data may be null).
  if (pos < size) std::memcpy(o, data + pos, size - pos);
  o += size - pos;
  return size_t(o - out);
}

}  // namespace

size_t CompactMessages(const uint8_t* data, size_t size, uint8_t* out, uint64_t& previous) {
  uint8_t* unused = out;
  uint64_t no_values = 0;
  bool whole = true;
  const size_t length = Compact<false, false>(data, size, out, unused, previous, no_values, whole);
  GNOMON_CHECK(length <= CompactBound(size), "compaction wrote past CompactBound");
  return length;
}

namespace {

// CompactBlock, each event also given to `summary`; `whole` false when the bytes were not
// whole messages to the end.
template <typename Summary>
size_t CompactPieces(std::span<const std::span<const uint8_t>> pieces, uint8_t* out, uint8_t* scratch,
                     ColumnForm form, Summary&& summary, bool& whole) {
  uint64_t previous = 0, previous_value = 0;  // each block starts from 0: blocks decode on their own
  uint8_t* deltas = scratch;
  const bool values = form == ColumnForm::kTicksAndValues;
  out[0] = values ? kValuesMark : kColumnsMark;
  size_t records = 0;
  size_t size = 0;
  whole = true;
  for (const std::span<const uint8_t> piece : pieces) {
    uint8_t* to = out + kColumnsHeader + records;
    if (whole) {
      records += values ? Compact<true, true>(piece.data(), piece.size(), to, deltas, previous,
                                              previous_value, whole, summary)
                        : Compact<true, false>(piece.data(), piece.size(), to, deltas, previous,
                                               previous_value, whole, summary);
    } else {  // past what was not a whole message, as the rest of one buffer would be
      std::memcpy(to, piece.data(), piece.size());
      records += piece.size();
    }
    size += piece.size();
  }
  protocol::StoreLe<uint32_t>(out + 1, uint32_t(records));
  const size_t tick_bytes = size_t(deltas - scratch);
  const size_t length = kColumnsHeader + records + tick_bytes;
  GNOMON_CHECK(length <= CompactBound(size), "compaction wrote past CompactBound");
  std::memcpy(out + kColumnsHeader + records, scratch, tick_bytes);
  return length;
}

}  // namespace

size_t CompactBlock(std::span<const std::span<const uint8_t>> pieces, uint8_t* out, uint8_t* scratch,
                    ColumnForm form) {
  bool whole = true;
  return CompactPieces(pieces, out, scratch, form, NoSummary{}, whole);
}

size_t CompactAndSummarize(std::span<const std::span<const uint8_t>> pieces, uint8_t* out, uint8_t* scratch,
                           BlockSummary& summary, bool& summarized) {
  summary_detail::Summarizer summarizer(summary);
  const size_t length =
      CompactPieces(pieces, out, scratch, ColumnForm::kTicksAndValues, summarizer, summarized);
  if (summarized) summarizer.Finish();
  return length;
}

size_t CompactBlock(const uint8_t* data, size_t size, uint8_t* out, uint8_t* scratch, ColumnForm form) {
  const std::span<const uint8_t> piece(data, size);
  return CompactBlock({&piece, 1}, out, scratch, form);
}

}  // namespace gnomon::tracefile
