// The reversible transforms trace files apply to a block before compressing it.
//
// Format 2 (EncodeTickDeltas): every CPU tick field of the block's messages (zone begins
// and ends, frames, messages, plots, GPU zone records, end of stream) is replaced in
// place by the zigzag-encoded difference from the previous such tick in the block (the
// first from 0). Consecutive
// ticks are close, so most of each 8-byte field becomes zero bytes, which zstd stores
// almost for free; the layout of every message is unchanged. Each block starts from 0,
// so blocks stay independently decodable.
//
// Format 3 (CompactMessages) goes further for the two messages that make up nearly all of a
// big trace: a zone begin becomes its type, the source location as a varint and the
// tick delta as a zigzag varint (3 bytes instead of 13 for back-to-back zones), a zone
// end its type and the delta (2 instead of 9). Every other message keeps its layout,
// with its tick as the 8-byte zigzag delta of format 2. A tight loop's block shrinks
// from 22 to 5 bytes a zone before zstd, which then has far less to compress and
// decompress, and stores less (docs/benchmarks.md).
//
// Format 6 (CompactBlock) keeps those records but moves the zones' tick deltas into a
// column of their own after them: [kColumnsMark][u32 bytes of records][records][ticks].
// The records of a tight loop then repeat exactly (type, location, type) and zstd
// matches them in long runs, while the ticks, the only bytes that vary, sit together
// where it codes them as literals: fewer bytes on disk for back-to-back zones and less
// compressing time a zone, the more so the more the timing varies (docs/benchmarks.md).
// A block of format 6 starts with the mark; one of format 3 to 5 with a message type,
// which the mark never is.
//
// Format 7 (CompactBlock's default) is format 6 with a mark of its own, under which a
// zone value is only its type among the records and its 8 bytes the zigzag varint of
// its difference from the block's previous value (the first from 0), in the column:
// one varint there for each zone record and each value record, in record order. A
// value on every zone is most of what zstd must code in such a block; a counter's then
// takes one byte before zstd instead of nine (the file's size: docs/benchmarks.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/messages.h"

namespace gnomon::tracefile {

// Both walk whole messages and stop, leaving the rest untouched, at the first unknown
// type or incomplete message (the decoder then reports it). Files are written in format
// 7 now; format 2 files still load through DecodeTickDeltas, which is tested against
// EncodeTickDeltas.
void EncodeTickDeltas(uint8_t* block, size_t size);
void DecodeTickDeltas(uint8_t* block, size_t size);

// The first byte of a format-6 block, and the bytes of its header (the mark, then the
// length of its records).
inline constexpr uint8_t kColumnsMark = 0xFF;
inline constexpr size_t kColumnsHeader = 5;
static_assert(protocol::FindMessage(kColumnsMark) == nullptr, "the columns mark must not be a message type");
// The first byte of a format-7 block, whose header is format 6's.
inline constexpr uint8_t kValuesMark = 0xFE;
static_assert(protocol::FindMessage(kValuesMark) == nullptr, "the values mark must not be a message type");
// What goes to a block's column: the zones' tick deltas (format 6), and the zone values
// (format 7, what files are written in).
enum class ColumnForm { kTicks, kTicksAndValues };

// Writes the format-3 form of the whole messages in [data, data + size) to `out`, which
// has room for CompactBound(size) bytes, and returns its length; from the first unknown
// type or incomplete message on, the bytes are copied as they are. `previous` is the
// last tick before these messages in their block (0 at the block's start) and is
// updated, so a block can be built piece by piece: pieces compacted in turn equal their
// concatenation compacted at once. Files are written in format 7 now; this writes the
// blocks of older formats for the tests that load them.
constexpr size_t CompactBound(size_t size) { return size + size / 4 + 16; }
size_t CompactMessages(const uint8_t* data, size_t size, uint8_t* out, uint64_t& previous);

// Writes the format-7 form of the block [data, data + size) to `out` (format 6's with
// kTicks, for the tests that load such blocks), the same way, and returns its length;
// `out` and `scratch` each have room for CompactBound(size) bytes.
size_t CompactBlock(const uint8_t* data, size_t size, uint8_t* out, uint8_t* scratch,
                    ColumnForm form = ColumnForm::kTicksAndValues);
// The same for a block whose bytes lie in pieces, in order: equal to CompactBlock of
// their concatenation when each piece ends with a whole message. `out` and `scratch`
// each have room for CompactBound of their total.
size_t CompactBlock(std::span<const std::span<const uint8_t>> pieces, uint8_t* out, uint8_t* scratch,
                    ColumnForm form = ColumnForm::kTicksAndValues);

inline int64_t UnZigZag(uint64_t v) { return int64_t((v >> 1) ^ (0 - (v & 1))); }

// Reads a varint of at most 10 bytes from [p, end); nullptr when cut short or too long.
inline const uint8_t* GetVarint(const uint8_t* p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (unsigned shift = 0; shift < 64 && p < end; shift += 7) {
    const uint8_t byte = *p++;
    v |= uint64_t(byte & 0x7F) << shift;
    if (byte < 0x80) return p;
  }
  return nullptr;
}

struct CompactWalk {
  bool ok = true;
  std::string error;      // when not ok: what is wrong, and at which byte of the block
  size_t stopped_at = 0;  // byte of the block where the walk stopped (size when it did not)
  uint64_t records = 0;   // records handed on
};

namespace codec_detail {

// The walk over records whose tick deltas follow each record (`kColumns` false: the tick
// cursor `d` is unused) or come from the tick column [d, d_end), with the zone values'
// differences (`kValues`, format 7).
template <bool kColumns, bool kValues, typename Begin, typename End, typename Leaf, typename Message>
CompactWalk WalkRecords(uint8_t* block, uint8_t* p, uint8_t* const end, const uint8_t* d,
                        const uint8_t* const d_end, Begin&& on_begin, End&& on_end, Leaf&& on_leaf,
                        Message&& on_message) {
  static_assert(kColumns || !kValues, "zone values come from the column");
  constexpr uint8_t kBegin = uint8_t(protocol::MessageType::kZoneBegin);
  constexpr uint8_t kEnd = uint8_t(protocol::MessageType::kZoneEnd);
  constexpr uint8_t kValue = uint8_t(protocol::MessageType::kZoneValue);
  uint64_t previous = 0;
  uint64_t value = 0;  // the block's previous zone value
  CompactWalk walk;
  auto fail = [&](const std::string& what) {
    walk.ok = false;
    walk.error = what + " at byte " + std::to_string(p - block) + " of the block";
  };
  // The next tick delta: the varint at `q`, after the record's own fields, or the next of
  // the tick column. One byte is the usual case. False when cut short or too long.
  auto read_delta = [&](const uint8_t*& q, uint64_t& v) {
    const uint8_t*& from = kColumns ? d : q;
    const uint8_t* const limit = kColumns ? d_end : end;
    if (from < limit && *from < 0x80) {
      v = *from++;
      return true;
    }
    const uint8_t* const next = GetVarint(from, limit, v);
    if (next == nullptr) return false;
    from = next;
    return true;
  };
  while (p < end) {
    const uint8_t type = *p;
    if (type == kBegin || type == kEnd) {
      uint64_t location = 0, delta = 0;
      const uint8_t* q = p + 1;
      // Every field one byte, checked at once: the usual case.
      bool whole = false;
      if constexpr (kColumns) {
        if (type == kEnd && d < d_end && *d < 0x80) {
          delta = *d++;
          whole = true;
        } else if (type == kBegin && end - q >= 1 && *q < 0x80 && d < d_end && *d < 0x80) {
          location = *q++;
          delta = *d++;
          whole = true;
        }
      } else {
        if (type == kBegin && end - p >= 3 && p[1] < 0x80 && p[2] < 0x80) {
          location = p[1];
          delta = p[2];
          q = p + 3;
          whole = true;
        } else if (type == kEnd && end - p >= 2 && p[1] < 0x80) {
          delta = p[1];
          q = p + 2;
          whole = true;
        }
      }
      if (!whole) {
        if (type == kBegin) q = GetVarint(q, end, location);
        if (q == nullptr || location > UINT32_MAX || !read_delta(q, delta)) {
          fail("a zone record is cut short or too long");
          break;
        }
      }
      previous += uint64_t(UnZigZag(delta));
      if (type == kBegin && q < end && *q == kEnd) {  // a leaf; a cut end fails on the next turn
        const uint8_t* r = q + 1;
        uint64_t end_delta = 0;  // a failed read leaves the tick cursor where it was
        if (read_delta(r, end_delta)) {
          const uint64_t end_tick = previous + uint64_t(UnZigZag(end_delta));
          if (!on_leaf(uint32_t(location), previous, end_tick)) break;
          previous = end_tick;
          p = const_cast<uint8_t*>(r);
          walk.records += 2;
          continue;
        }
      }
      if (!(type == kBegin ? on_begin(uint32_t(location), previous) : on_end(previous))) break;
      p = const_cast<uint8_t*>(q);
      ++walk.records;
      continue;
    }
    if (kValues && type == kValue) {
      const uint8_t* q = p + 1;
      uint64_t delta = 0;
      if (!read_delta(q, delta)) {
        fail("a zone value's difference is cut short or too long");
        break;
      }
      value += uint64_t(UnZigZag(delta));
      uint8_t message[sizeof(protocol::ZoneValue)] = {kValue};
      protocol::StoreLe<uint64_t>(message + offsetof(protocol::ZoneValue, value), value);
      if (!on_message(static_cast<const uint8_t*>(message), sizeof(message))) break;
      p += 1;
      ++walk.records;
      continue;
    }
    const protocol::MessageSpan span = protocol::MeasureMessage(p, size_t(end - p));
    if (span.status != protocol::MessageSpan::kWhole) {
      fail(span.status == protocol::MessageSpan::kUnknownType ? "unknown message type " + std::to_string(type)
                                                              : std::string("a message is cut short"));
      break;
    }
    if (const uint8_t tick_offset = protocol::kCatalogue[type].tick_offset; tick_offset != 0) {
      previous += uint64_t(UnZigZag(protocol::LoadLe<uint64_t>(p + tick_offset)));
      protocol::StoreLe<uint64_t>(p + tick_offset, previous);
    }
    if (!on_message(static_cast<const uint8_t*>(p), span.size)) break;
    p += span.size;
    ++walk.records;
  }
  if (kColumns && walk.ok && p == end && d != d_end) {
    fail(std::to_string(d_end - d) + (kValues ? " byte(s) of ticks and values that no record takes"
                                              : " byte(s) of ticks that no record takes"));
  }
  walk.stopped_at = size_t(p - block);
  return walk;
}

}  // namespace codec_detail

// Walks the records of a compact block in order (the loader decodes blocks with it): zone
// begins to on_begin(location, tick), zone ends to on_end(tick), a begin whose end is the
// very next record (a leaf: every zone of a tight loop, most of a real trace) to
// on_leaf(location, begin tick, end tick), every other message, its tick restored in
// place, to on_message(bytes, size). Each returns false to stop there (at the begin, for a
// leaf; a zone value of format 7 comes from a buffer of the walk's, valid during the
// call). Stops too at a record it cannot read (unknown type, cut short, a varint over 10
// bytes, a location past 32 bits, ticks or values missing or left over), with the
// reason. `format` is the file's: a block of format 7 may be in any of the three forms
// (what gnomon-merge copies from older files), one of format 6 in format 3's or 6's,
// one of 3 to 5 in the first only.
template <typename Begin, typename End, typename Leaf, typename Message>
CompactWalk WalkCompactBlock(uint8_t* block, size_t size, uint16_t format, Begin&& on_begin, End&& on_end,
                             Leaf&& on_leaf, Message&& on_message) {
  const bool ticks = format >= 6 && size > 0 && block[0] == kColumnsMark;
  const bool values = format >= 7 && size > 0 && block[0] == kValuesMark;
  if (!ticks && !values) {
    return codec_detail::WalkRecords<false, false>(block, block, block + size, nullptr, nullptr, on_begin,
                                                   on_end, on_leaf, on_message);
  }
  CompactWalk refused;
  refused.ok = false;
  if (size < kColumnsHeader) {
    refused.error =
        "the block's header is cut short (" + std::to_string(size) + " bytes) at byte 0 of the block";
    return refused;
  }
  const uint32_t records = protocol::LoadLe<uint32_t>(block + 1);
  if (records > size - kColumnsHeader) {
    refused.error = "the block's records claim " + std::to_string(records) + " of its " +
                    std::to_string(size) + " bytes at byte 0 of the block";
    return refused;
  }
  uint8_t* const column = block + kColumnsHeader + records;
  CompactWalk walk =
      values ? codec_detail::WalkRecords<true, true>(block, block + kColumnsHeader, column, column,
                                                     block + size, on_begin, on_end, on_leaf, on_message)
             : codec_detail::WalkRecords<true, false>(block, block + kColumnsHeader, column, column,
                                                      block + size, on_begin, on_end, on_leaf, on_message);
  if (walk.ok && walk.stopped_at == size_t(column - block)) walk.stopped_at = size;  // every record and tick
  return walk;
}

}  // namespace gnomon::tracefile
