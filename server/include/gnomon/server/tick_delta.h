// The reversible transforms trace files apply to a block before compressing it.
//
// Format 2 (EncodeTickDeltas): every CPU tick field of the block's messages (zone begins and ends, frames, messages,
// plots, GPU zone records, end of stream) is replaced in place by the zigzag-encoded
// difference from the previous such tick in the block (the first from 0). Consecutive
// ticks are close, so most of each 8-byte field becomes zero bytes, which zstd stores
// almost for free; the layout of every message is unchanged. Each block starts from 0,
// so blocks stay independently decodable.
//
// Format 3 (CompactBlock) goes further for the two messages that make up nearly all of a
// big trace: a zone begin becomes its type, the source location as a varint and the
// tick delta as a zigzag varint (3 bytes instead of 13 for back-to-back zones), a zone
// end its type and the delta (2 instead of 9). Every other message keeps its layout,
// with its tick as the 8-byte zigzag delta of format 2. A tight loop's block shrinks
// from 22 to 5 bytes a zone before zstd, which then compresses twice and decompresses
// three times faster, and stores less (docs/benchmarks.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gnomon::server {

// Both walk whole messages and stop, leaving the rest untouched, at the first unknown
// type or incomplete message (the decoder then reports it).
void EncodeTickDeltas(uint8_t* block, size_t size);
void DecodeTickDeltas(uint8_t* block, size_t size);

// Writes the format-3 form of the whole messages in [block, block + size) to `out`,
// which has room for CompactBound(size) bytes, and returns its length; from the first
// unknown type or incomplete message on, the bytes are copied as they are.
inline size_t CompactBound(size_t size) { return size + size / 4 + 16; }
size_t CompactBlock(const uint8_t* block, size_t size, uint8_t* out);

struct ExpandResult {
  bool ok = true;
  std::string error;  // when not ok: what is wrong, and at which byte of the block
  size_t size = 0;    // bytes written: whole messages, also when not ok
};
// Writes the messages of the format-3 block [block, block + size) to `out` (room for
// `capacity` bytes), as the stream had them. Stops at a record it cannot read (unknown
// type, cut short, a varint too long) or one that would not fit. A block expands at
// most ExpandBound(size) bytes.
inline size_t ExpandBound(size_t size) { return size * 9 / 2 + 16; }
ExpandResult ExpandCompactBlock(const uint8_t* block, size_t size, uint8_t* out, size_t capacity);

}  // namespace gnomon::server
