// The index of a trace file's blocks: headers read as each format lays them, blocks put in
// sequence order with repeats dropped, damage found, counted and said; and a block's zstd
// frame turned back into its bytes. Files written by the real writer, then damaged.
#include "files/trace_index.h"

#include <doctest/doctest.h>
#include <zstd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../../support/process.h"
#include "../../support/trace_files.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/tracefile/format.h"

using namespace gnomon::server;
using namespace gnomon::tracefile;
using gnomon::test::FileParts;
using gnomon::test::SampleStream;
using gnomon::test::ScratchDir;
using gnomon::test::Split;
using gnomon::test::WriteTrace;

namespace {

struct Index {
  FileHeader header{};
  std::vector<IndexedBlock> blocks;
  FileAnomalies anomalies;
  std::string notes;  // as LoadReport::warning says them, for the file "t.gnomon"
};

// The index of `bytes` as a file, its header read as the loader reads it.
Index IndexOf(const std::string& bytes, uint32_t max_expansion = kDefaultMaxExpansion) {
  Index index;
  REQUIRE(bytes.size() >= sizeof(FileHeader));
  std::memcpy(&index.header, bytes.data(), sizeof(FileHeader));
  const TraceSource source =
      TraceSource::FromBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.gnomon");
  Notes notes;
  index.blocks = IndexBlocks(source, bytes.size(), index.header, max_expansion, index.anomalies, notes);
  index.notes = notes.Join("t.gnomon");
  return index;
}

// A file of the current format of many small blocks, written by the writer, taken apart.
FileParts SampleParts(const ScratchDir& dir) {
  FileParts parts = Split(gnomon::test::ReadFile(WriteTrace(dir, SampleStream(400), 2 * 1024)));
  REQUIRE(parts.blocks.size() > 8);
  REQUIRE(parts.end.size() == sizeof(BlockHeader));
  return parts;
}

// Where block `n` of `parts` begins when they are joined in order.
uint64_t OffsetOf(const FileParts& parts, size_t n) {
  uint64_t at = parts.header.size();
  for (size_t i = 0; i < n; ++i) at += parts.blocks[i].size();
  return at;
}

template <typename Header>
std::string BytesOf(const Header& header) {
  return std::string(reinterpret_cast<const char*>(&header), sizeof(header));
}

bool Says(const Index& index, const std::string& sentence) {
  return index.notes.find(sentence) != std::string::npos;
}

}  // namespace

TEST_CASE(
    "the index of a sound file lists every block in sequence, where its header says, then the end marker") {
  ScratchDir dir;
  const FileParts parts = SampleParts(dir);
  const std::string bytes = parts.Join(parts.blocks, parts.end);
  const Index index = IndexOf(bytes);
  CHECK(index.notes == "");
  CHECK_FALSE(index.anomalies.any());
  CHECK(index.anomalies.has_end_marker);
  REQUIRE(index.blocks.size() == parts.blocks.size());
  for (size_t i = 0; i < index.blocks.size(); ++i) {
    CAPTURE(i);
    const IndexedBlock& block = index.blocks[i];
    BlockHeader written{};
    std::memcpy(&written, parts.blocks[i].data(), sizeof(written));
    CHECK(block.offset == OffsetOf(parts, i));
    CHECK(block.header_bytes == sizeof(BlockHeader));
    CHECK(block.sequence == i);
    CHECK(block.stream == 0);
    CHECK(block.stream_sequence == i);
    CHECK(block.raw_bytes == uint32_t{written.raw_bytes});
    CHECK(block.compressed_bytes == uint32_t{written.compressed_bytes});
    CHECK(block.end_offset() == OffsetOf(parts, i) + parts.blocks[i].size());
    CHECK_FALSE(block.rejected);
    CHECK_FALSE(block.after_gap);
  }
  CHECK(index.blocks.back().end_offset() + sizeof(BlockHeader) == bytes.size());
}

TEST_CASE("a repeated block is listed once, at its first copy, and the repeat is said") {
  ScratchDir dir;
  const FileParts parts = SampleParts(dir);
  std::vector<std::string> blocks = parts.blocks;
  blocks.insert(blocks.begin() + 5, parts.blocks[3]);  // 0 1 2 3 4 3 5 6 ...
  const Index index = IndexOf(parts.Join(blocks, parts.end));
  CHECK(index.anomalies.duplicate_blocks == 1);
  CHECK(index.anomalies.missing_blocks == 0);
  CHECK(index.anomalies.reordered_blocks == 0);
  REQUIRE(index.blocks.size() == parts.blocks.size());
  for (size_t i = 0; i < index.blocks.size(); ++i) {
    CAPTURE(i);
    CHECK(index.blocks[i].sequence == i);
    CHECK_FALSE(index.blocks[i].after_gap);
  }
  CHECK(index.blocks[3].offset == OffsetOf(parts, 3));
  CHECK(index.blocks[4].offset == OffsetOf(parts, 4));
  CHECK(index.blocks[5].offset == OffsetOf(parts, 5) + parts.blocks[3].size());  // after the repeat
  CHECK(Says(index, "the block " + At(OffsetOf(parts, 5)) + " repeats block 3 (skipped)"));
}

TEST_CASE("blocks out of place in the file are listed in sequence order, each read where it lies") {
  ScratchDir dir;
  const FileParts parts = SampleParts(dir);
  std::vector<std::string> blocks = parts.blocks;
  std::swap(blocks[2], blocks[5]);  // 0 1 5 3 4 2 6 ...
  const Index index = IndexOf(parts.Join(blocks, parts.end));
  REQUIRE(index.blocks.size() == parts.blocks.size());
  for (size_t i = 0; i < index.blocks.size(); ++i) CHECK(index.blocks[i].sequence == i);
  // After blocks 0 and 1 lie blocks 5, 3, 4, then 2.
  CHECK(index.blocks[2].offset ==
        OffsetOf(parts, 2) + parts.blocks[5].size() + parts.blocks[3].size() + parts.blocks[4].size());
  CHECK(index.blocks[5].offset == OffsetOf(parts, 2));
  CHECK(index.blocks[3].offset < index.blocks[2].offset);
  // Block 3 comes before block 2 in the file, and block 5 before blocks 3 and 4.
  CHECK(index.anomalies.reordered_blocks == 2);
  CHECK(index.anomalies.missing_blocks == 0);
  CHECK(index.anomalies.duplicate_blocks == 0);
  CHECK(Says(index, "block 3 " + At(OffsetOf(parts, 3) - parts.blocks[2].size() + parts.blocks[5].size()) +
                        " comes before blocks it follows (loaded in its place)"));
}

TEST_CASE("a damaged block header is skipped to the next block, the loss counted and what follows marked") {
  ScratchDir dir;
  const FileParts parts = SampleParts(dir);
  std::vector<std::string> blocks = parts.blocks;
  blocks[3][5] ^= 0x40;  // its sequence: the header check no longer matches
  const std::string bytes = parts.Join(blocks, parts.end);
  const Index index = IndexOf(bytes);
  const uint64_t damaged = OffsetOf(parts, 3), next = OffsetOf(parts, 4);
  CHECK(index.anomalies.damaged_bytes == next - damaged);
  CHECK(index.anomalies.missing_blocks == 1);
  REQUIRE(index.blocks.size() == parts.blocks.size() - 1);
  CHECK(index.blocks[2].sequence == 2);
  CHECK(index.blocks[3].sequence == 4);
  CHECK(index.blocks[3].offset == next);
  CHECK_FALSE(index.blocks[2].after_gap);
  CHECK(index.blocks[3].after_gap);  // its stream lost a block just before it
  CHECK_FALSE(index.blocks[4].after_gap);
  CHECK(Says(index, "bytes " + std::to_string(damaged) + " to " + std::to_string(next) +
                        " hold no readable block header; skipped to the next block"));
  CHECK(Says(index, "1 block(s) missing before block 4 " + At(next)));

  // What the index read there, header by header.
  const TraceSource source =
      TraceSource::FromBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.gnomon");
  IndexedBlock block;
  CHECK(ReadHeader(source, damaged, bytes.size(), index.header.format_version, block) ==
        HeaderKind::kInvalid);
  REQUIRE(ReadHeader(source, next, bytes.size(), index.header.format_version, block) == HeaderKind::kBlock);
  CHECK(block.sequence == 4);
  CHECK(block.offset == next);
}

TEST_CASE(
    "a file cut inside a block or its header ends the index there, one cut between blocks lacks its end") {
  ScratchDir dir;
  const FileParts parts = SampleParts(dir);
  const std::string bytes = parts.Join(parts.blocks, parts.end);
  const uint64_t block4 = OffsetOf(parts, 4);

  const Index in_data = IndexOf(bytes.substr(0, block4 + sizeof(BlockHeader) + 3));
  CHECK(in_data.anomalies.truncated);
  CHECK_FALSE(in_data.anomalies.has_end_marker);
  CHECK(in_data.blocks.size() == 4);
  CHECK(Says(in_data, "the file ends inside the block " + At(block4) + " (cut short)"));

  const Index in_header = IndexOf(bytes.substr(0, block4 + 10));
  CHECK(in_header.anomalies.truncated);
  CHECK(in_header.blocks.size() == 4);
  CHECK(Says(in_header, "the file ends inside a block header " + At(block4) + " (cut short)"));

  const Index between = IndexOf(bytes.substr(0, block4));
  CHECK_FALSE(between.anomalies.truncated);
  CHECK_FALSE(between.anomalies.has_end_marker);
  CHECK(between.anomalies.any());
  CHECK(between.blocks.size() == 4);
  CHECK(Says(between, "the file ends without its end marker"));
}

TEST_CASE("bytes after the end marker are counted, and an end marker with blocks after it is said") {
  ScratchDir dir;
  const FileParts parts = SampleParts(dir);
  const uint64_t end_marker = OffsetOf(parts, parts.blocks.size());

  const Index trailing = IndexOf(parts.Join(parts.blocks, parts.end + "junk!"));
  CHECK(trailing.anomalies.has_end_marker);
  CHECK(trailing.anomalies.trailing_bytes == 5);
  CHECK(trailing.blocks.size() == parts.blocks.size());
  CHECK(Says(trailing, "5 byte(s) after the end marker " + At(end_marker + sizeof(BlockHeader)) +
                           " are not blocks; ignored"));

  std::vector<std::string> blocks = parts.blocks;
  blocks.insert(blocks.begin() + 3, parts.end);
  const Index misplaced = IndexOf(parts.Join(blocks, parts.end));
  CHECK(misplaced.anomalies.has_end_marker);
  CHECK(misplaced.anomalies.misplaced_end_markers == 1);
  CHECK(misplaced.anomalies.missing_blocks == 0);
  CHECK(misplaced.blocks.size() == parts.blocks.size());  // every block, the marker between them skipped
  CHECK(Says(misplaced, "an end marker " + At(OffsetOf(parts, 3)) + " has blocks after it (loaded)"));
}

TEST_CASE(
    "blocks expanding past the limit are kept but rejected, and the next of their stream follows a gap") {
  ScratchDir dir;
  const FileParts parts = SampleParts(dir);
  constexpr uint32_t kMaxExpansion = 1;
  std::vector<int> expanding;  // 1 for a block whose data expands at all
  for (const std::string& block : parts.blocks) {
    BlockHeader h{};
    std::memcpy(&h, block.data(), sizeof(h));
    expanding.push_back(uint64_t{h.raw_bytes} > uint64_t{kMaxExpansion} * h.compressed_bytes ? 1 : 0);
  }
  const uint64_t rejected = uint64_t(std::count(expanding.begin(), expanding.end(), 1));
  REQUIRE(rejected > 0);
  const Index index = IndexOf(parts.Join(parts.blocks, parts.end), kMaxExpansion);
  CHECK(index.anomalies.rejected_blocks == rejected);
  REQUIRE(index.blocks.size() == parts.blocks.size());
  for (size_t i = 0; i < index.blocks.size(); ++i) {
    CAPTURE(i);
    const bool after_rejected = i > 0 && expanding[i - 1] == 1;
    CHECK(index.blocks[i].rejected == (expanding[i] == 1));
    CHECK(index.blocks[i].after_gap == after_rejected);
  }
  CHECK(Says(index, "(a capture never expands more than 1 times; damaged or crafted, skipped"));
  // With the default limit none is.
  CHECK(IndexOf(parts.Join(parts.blocks, parts.end)).anomalies.rejected_blocks == 0);
}

TEST_CASE("a file before format 4 has its blocks numbered by their place, and a repeat is not known as one") {
  FileHeader header{};
  std::memcpy(header.magic, kTraceMagic, sizeof(kTraceMagic));
  header.format_version = 3;
  header.header_bytes = sizeof(FileHeader);
  BlockHeaderV1 block{kBlockMagic, 100, 50, 0};
  block.header_check = BlockHeaderCheck(block);
  BlockHeaderV1 end{kEndMagic, 0, 0, 0};
  end.header_check = BlockHeaderCheck(end);
  const std::string data(50, 'x');
  const std::string bytes =
      BytesOf(header) + BytesOf(block) + data + BytesOf(block) + data + BytesOf(block) + data + BytesOf(end);
  const Index index = IndexOf(bytes);
  CHECK(index.notes == "");
  CHECK_FALSE(index.anomalies.any());
  REQUIRE(index.blocks.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(index.blocks[i].sequence == i);
    CHECK(index.blocks[i].stream_sequence == i);
    CHECK(index.blocks[i].header_bytes == sizeof(BlockHeaderV1));
    CHECK(index.blocks[i].offset == sizeof(FileHeader) + i * (sizeof(BlockHeaderV1) + 50));
    CHECK(index.blocks[i].raw_bytes == 100);
    CHECK(index.blocks[i].compressed_bytes == 50);
  }
}

TEST_CASE("a header is read as its format lays it: a block, an end marker, damage, or cut short") {
  auto read = [](const std::string& bytes, uint64_t file_bytes, uint16_t format, IndexedBlock& out) {
    const TraceSource source =
        TraceSource::FromBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "headers");
    return ReadHeader(source, 0, file_bytes, format, out);
  };
  IndexedBlock out;

  BlockHeaderV1 v1{kBlockMagic, 100, 50, 0};
  v1.header_check = BlockHeaderCheck(v1);
  REQUIRE(read(BytesOf(v1), sizeof(v1), 3, out) == HeaderKind::kBlock);
  CHECK(out.header_bytes == 16);
  CHECK(out.raw_bytes == 100);
  CHECK(out.compressed_bytes == 50);
  CHECK(out.data_offset() == 16);
  CHECK(out.end_offset() == 66);

  BlockHeaderV4 v4{kBlockMagic, 7, 100, 50, 0};
  v4.header_check = BlockHeaderCheck(v4);
  REQUIRE(read(BytesOf(v4), sizeof(v4), 4, out) == HeaderKind::kBlock);
  CHECK(out.header_bytes == 20);
  CHECK(out.sequence == 7);
  CHECK(out.stream == 0);
  CHECK(out.stream_sequence == 7);

  const BlockHeader v5 = MakeBlockHeader(kBlockMagic, 7, 100, 50, 3, 2);
  REQUIRE(read(BytesOf(v5), sizeof(v5), kTraceFormatVersion, out) == HeaderKind::kBlock);
  CHECK(out.header_bytes == 28);
  CHECK(out.sequence == 7);
  CHECK(out.stream == 3);
  CHECK(out.stream_sequence == 2);
  CHECK(out.raw_bytes == 100);
  CHECK(out.compressed_bytes == 50);

  CHECK(read(BytesOf(MakeBlockHeader(kEndMagic, 9, 0, 0)), sizeof(BlockHeader), 5, out) == HeaderKind::kEnd);
  // An end marker that claims data, a magic of no header, a check that does not match, a
  // header read as another format lays it: none is a header.
  CHECK(read(BytesOf(MakeBlockHeader(kEndMagic, 9, 5, 0)), sizeof(BlockHeader), 5, out) ==
        HeaderKind::kInvalid);
  CHECK(read(BytesOf(MakeBlockHeader(0x58585858, 9, 100, 50)), sizeof(BlockHeader), 5, out) ==
        HeaderKind::kInvalid);
  BlockHeader flipped = v5;
  flipped.compressed_bytes = 51;
  CHECK(read(BytesOf(flipped), sizeof(flipped), 5, out) == HeaderKind::kInvalid);
  CHECK(read(BytesOf(v5), sizeof(v5), 4, out) == HeaderKind::kInvalid);
  // A file that ends before the header does.
  CHECK(read(BytesOf(v5), sizeof(v5) - 1, 5, out) == HeaderKind::kCut);
  CHECK(read(BytesOf(v4), sizeof(v4) - 1, 4, out) == HeaderKind::kCut);
}

TEST_CASE("a block's frame decompresses to its bytes, what is not its whole frame is refused, saying why") {
  std::string raw(20000, '\0');
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = char('a' + (i * 7 + i / 100) % 26);
  auto compress = [&](bool checksum) {
    std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
    REQUIRE(!ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, checksum ? 1 : 0)));
    std::vector<uint8_t> frame(ZSTD_compressBound(raw.size()));
    const size_t size = ZSTD_compress2(cctx.get(), frame.data(), frame.size(), raw.data(), raw.size());
    REQUIRE(!ZSTD_isError(size));
    frame.resize(size);
    return frame;
  };
  const std::vector<uint8_t> checked = compress(true), unchecked = compress(false);
  auto holds_raw = [&](const std::vector<uint8_t>& out) {
    return out.size() >= raw.size() &&
           std::equal(raw.begin(), raw.end(), out.begin(), [](char a, uint8_t b) { return uint8_t(a) == b; });
  };
  FrameDecompressor decompressor;
  std::vector<uint8_t> out;  // empty: grown as the frame delivers
  CHECK(decompressor.Decompress(checked.data(), checked.size(), raw.size(), true, out) == "");
  CHECK(holds_raw(out));
  std::fill(out.begin(), out.end(), uint8_t{0});  // big enough now: taken in one call
  CHECK(decompressor.Decompress(unchecked.data(), unchecked.size(), raw.size(), false, out) == "");
  CHECK(holds_raw(out));

  // The writer's padding after the frame (a skippable frame, the rest of the block).
  std::vector<uint8_t> padded = checked;
  const uint32_t padding[2] = {kSkippableFrameMagic, 16};
  const auto* padding_bytes = reinterpret_cast<const uint8_t*>(padding);
  padded.insert(padded.end(), padding_bytes, padding_bytes + sizeof(padding));
  padded.resize(padded.size() + 16, 0);
  std::vector<uint8_t> fresh;
  CHECK(decompressor.Decompress(padded.data(), padded.size(), raw.size(), true, fresh) == "");
  CHECK(holds_raw(fresh));

  // Refused.
  CHECK(decompressor.Decompress(unchecked.data(), unchecked.size(), raw.size(), true, out) ==
        "its frame has no content checksum");
  const std::string junk = "not a zstd frame at all";
  CHECK(decompressor.Decompress(reinterpret_cast<const uint8_t*>(junk.data()), junk.size(), raw.size(), false,
                                out) == "no zstd frame");
  CHECK(decompressor.Decompress(checked.data(), checked.size(), raw.size() + 1, true, out) ==
        "its frame holds " + std::to_string(raw.size()) + " bytes, its header says " +
            std::to_string(raw.size() + 1));
  CHECK(decompressor.Decompress(checked.data(), checked.size() - 3, raw.size(), true, out)
            .starts_with("its zstd frame is damaged or cut short ("));
  std::vector<uint8_t> followed = checked;
  followed.insert(followed.end(), {1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(decompressor.Decompress(followed.data(), followed.size(), raw.size(), true, out) ==
        "bytes follow its frame");
  std::vector<uint8_t> damaged = checked;
  damaged.back() ^= 0x5A;  // its content checksum: the bytes it gives are not those checked
  CHECK(decompressor.Decompress(damaged.data(), damaged.size(), raw.size(), true, out) != "");
}

TEST_CASE(
    "notes name places by byte, and a file damaged all over says its first problems and counts the rest") {
  CHECK(At(1234) == "at byte 1234");
  Notes none;
  CHECK(none.Join("f.gnomon") == "");
  Notes summary_only;
  summary_only.AddSummary("a summary");
  CHECK(summary_only.Join("f.gnomon") == "f.gnomon: a summary");
  Notes many;
  for (int i = 0; i < 20; ++i) many.Add("problem " + std::to_string(i));
  many.AddSummary("a summary");
  const std::string text = many.Join("f.gnomon");
  CHECK(text.starts_with("f.gnomon: problem 0; problem 1; problem 2; "));
  CHECK(text.find("; problem 11; and 8 more problem(s) of these kinds; a summary") != std::string::npos);
  CHECK(text.ends_with("; a summary"));
  CHECK(text.find("problem 12") == std::string::npos);
}
