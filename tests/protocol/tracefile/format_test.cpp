// The trace file's block header checks: FNV-1a of each header's bytes before its check, in
// every format's layout, and block headers made with their check filled in.
#include "gnomon/tracefile/format.h"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>

using namespace gnomon::tracefile;

namespace {

// Every byte of `header` before `check_offset`, flipped one at a time: the check no longer
// matches (FNV-1a maps each byte through steps that lose nothing, so any change shows).
template <typename Header>
void CheckEveryByteCounts(const Header& header, size_t check_offset) {
  const uint32_t check = BlockHeaderCheck(header);
  for (size_t i = 0; i < check_offset; ++i) {
    CAPTURE(i);
    Header damaged = header;
    reinterpret_cast<uint8_t*>(&damaged)[i] ^= 0x01;
    CHECK(BlockHeaderCheck(damaged) != check);
  }
  // The check itself is not among the bytes checked.
  Header other = header;
  reinterpret_cast<uint8_t*>(&other)[check_offset] ^= 0xFF;
  CHECK(BlockHeaderCheck(other) == check);
}

}  // namespace

TEST_CASE("a block header's check is FNV-1a of the bytes before it, in every format's layout") {
  // The expected values: FNV-1a (32 bits) of the fields, little-endian, worked out apart
  // from the code ("GBLK", then the numbers).
  BlockHeaderV1 v1{kBlockMagic, 100, 50, 0};
  CHECK(BlockHeaderCheck(v1) == 0xf63ef807u);
  CheckEveryByteCounts(v1, offsetof(BlockHeaderV1, header_check));

  BlockHeaderV4 v4{kBlockMagic, 7, 100, 50, 0};
  CHECK(BlockHeaderCheck(v4) == 0x19277220u);
  CheckEveryByteCounts(v4, offsetof(BlockHeaderV4, header_check));

  BlockHeader v5{kBlockMagic, 7, 3, 2, 4096, 1000, 0};
  CHECK(BlockHeaderCheck(v5) == 0x71660d3au);
  CheckEveryByteCounts(v5, offsetof(BlockHeader, header_check));
}

TEST_CASE("a block header or end marker is made with every field and its check filled in") {
  const BlockHeader block = MakeBlockHeader(kBlockMagic, 7, 4096, 1000, 3, 2);
  CHECK(uint32_t{block.magic} == kBlockMagic);
  CHECK(uint32_t{block.sequence} == 7u);
  CHECK(uint32_t{block.stream} == 3u);
  CHECK(uint32_t{block.stream_sequence} == 2u);
  CHECK(uint32_t{block.raw_bytes} == 4096u);
  CHECK(uint32_t{block.compressed_bytes} == 1000u);
  CHECK(uint32_t{block.header_check} == 0x71660d3au);
  CHECK(uint32_t{block.header_check} == BlockHeaderCheck(block));

  // An end marker: no data, stream 0, the blocks written before it as its sequence.
  const BlockHeader end = MakeBlockHeader(kEndMagic, 12, 0, 0);
  CHECK(uint32_t{end.magic} == kEndMagic);
  CHECK(uint32_t{end.sequence} == 12u);
  CHECK(uint32_t{end.stream} == 0u);
  CHECK(uint32_t{end.stream_sequence} == 0u);
  CHECK(uint32_t{end.raw_bytes} == 0u);
  CHECK(uint32_t{end.compressed_bytes} == 0u);
  CHECK(uint32_t{end.header_check} == 0x9cc9c19fu);
}
