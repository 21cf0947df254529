// The reversible transform trace files apply to a block before compressing it.
//
// Every CPU tick field of the block's messages (zone begins and ends, frames, messages,
// plots, GPU zone records, end of stream) is replaced in place by the zigzag-encoded
// difference from the previous such tick in the block (the first from 0). Consecutive
// ticks are close, so most of each 8-byte field becomes zero bytes, which zstd stores
// almost for free; the layout of every message is unchanged. Each block starts from 0,
// so blocks stay independently decodable.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gnomon::server {

// Both walk whole messages and stop, leaving the rest untouched, at the first unknown
// type or incomplete message (the decoder then reports it).
void EncodeTickDeltas(uint8_t* block, size_t size);
void DecodeTickDeltas(uint8_t* block, size_t size);

}  // namespace gnomon::server
