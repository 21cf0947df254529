#include "gnomon/tracefile/format.h"

#include <cstring>

namespace gnomon::tracefile {
namespace {

// FNV-1a, 32 bits.
uint32_t Fnv1a(const void* data, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 16777619u;
  return hash;
}

}  // namespace

uint32_t BlockHeaderCheck(const BlockHeader& header) {
  return Fnv1a(&header, offsetof(BlockHeader, header_check));
}

uint32_t BlockHeaderCheck(const BlockHeaderV4& header) {
  return Fnv1a(&header, offsetof(BlockHeaderV4, header_check));
}

uint32_t BlockHeaderCheck(const BlockHeaderV1& header) {
  return Fnv1a(&header, offsetof(BlockHeaderV1, header_check));
}

BlockHeader MakeBlockHeader(uint32_t magic, uint32_t sequence, uint32_t raw_bytes, uint32_t compressed_bytes,
                            uint32_t stream, uint32_t stream_sequence) {
  BlockHeader header{magic, sequence, stream, stream_sequence, raw_bytes, compressed_bytes, 0};
  header.header_check = BlockHeaderCheck(header);
  return header;
}

}  // namespace gnomon::tracefile
