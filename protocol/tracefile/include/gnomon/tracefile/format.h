// The .gnomon trace file's format: the file header, the block headers of every format,
// and the limits readers and writers keep. docs/trace-format.md gives every byte.
//
// Layout:
//   FileHeader (32 bytes), then blocks: BlockHeader (28 bytes) + one zstd frame,
//   then an end marker (a BlockHeader with magic GEND and no data) once the capture
//   finished; a file without it was cut short, and a reader says so.
// Each block holds whole messages of one program's stream (its `stream` number) in a
// compact form (block_codec.h), is compressed on its own with a content checksum,
// carries its sequence number (one count over the file's blocks), and is written while
// the capture runs: a capture that is killed, or a file cut off at any byte, still loads
// up to its last whole block.
//
// Glossary:
//   block   one zstd frame of one stream's messages, with its header;
//   stream  one program's messages in a file (a capture of several has one each);
//   end marker  a block header with no data that says the writer finished.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gnomon::tracefile {

inline constexpr char kTraceMagic[8] = {'G', 'N', 'O', 'M', 'O', 'N', 'T', 'F'};
// 1: blocks hold the stream as received. 2: CPU ticks delta-encoded in each block.
// 3: zone begins and ends as varints besides (block_codec.h). 4: blocks numbered, the end
// marker counts them. 5: each block names its stream (a capture of several programs).
// 6: a block may hold its zones' ticks in a column after its records. 7: and its zone
// values' differences. 8: a block may carry its summary (block_summary.h) in the
// skippable frame after its frame. Readers load all eight.
inline constexpr uint16_t kTraceFormatVersion = 8;
// FileHeader::flags: the streams come from several captures (gnomon-merge), each placed
// through its capture's CaptureClock readings.
inline constexpr uint16_t kMergedTrace = 1;
inline constexpr uint32_t kBlockMagic = 0x4B4C4247;  // "GBLK"
inline constexpr uint32_t kEndMagic = 0x444E4547;    // "GEND": the capture finished
inline constexpr uint32_t kMaxBlockRawBytes = 64u << 20;
// Programs (streams) one file may hold; a reader loads the first this many.
inline constexpr size_t kMaxTraceStreams = 65536;
// A block may decompress to at most this many times its compressed size unless the
// reader is told otherwise (LoadOptions::max_expansion). Captures stay far below it
// (a tight loop of empty zones: about 10 to 70; a log message repeated word for word:
// about 460); a block past it is a decompression bomb or damage, and is skipped.
inline constexpr uint32_t kDefaultMaxExpansion = 1024;
// The writer keeps every block within half of that: a block that compresses further (a
// stream of perfectly regular ticks) ends with a zstd skippable frame of padding (the
// one that carries its summary, format 8, or one of its own).
inline constexpr uint32_t kWriterMaxExpansion = kDefaultMaxExpansion / 2;
// RFC 8878: a skippable frame is a magic number 0x184D2A50 to 0x184D2A5F, the size of its
// content (32 bits, little-endian), then that content, which decoders skip.
inline constexpr uint32_t kSkippableFrameMagic = 0x184D2A50;
inline constexpr size_t kSkippableFrameHeader = 8;

#pragma pack(push, 1)
struct FileHeader {
  char magic[8];
  uint16_t format_version;
  uint16_t header_bytes;      // sizeof(FileHeader); readers skip what they do not know
  uint16_t protocol_version;  // of the stream inside
  uint16_t flags;             // kMergedTrace, or 0
  int64_t created_unix_ns;
  uint64_t reserved;  // 0
};
// Format 5. The end marker is a BlockHeader with kEndMagic, no data, stream 0, and the
// number of blocks written before it as its sequence.
struct BlockHeader {
  uint32_t magic;            // kBlockMagic
  uint32_t sequence;         // 0, 1, 2, ... in the order the blocks were written, over all streams
  uint32_t stream;           // whose messages: 0, 1, 2, ... in the order the programs came
  uint32_t stream_sequence;  // 0, 1, 2, ... among its stream's blocks: a lost block's stream is known
  uint32_t raw_bytes;        // decompressed: the compact form (block_codec.h)
  uint32_t compressed_bytes;
  uint32_t header_check;  // FNV-1a of the 24 bytes before it
};
// Format 4: no stream (every block is stream 0).
struct BlockHeaderV4 {
  uint32_t magic;
  uint32_t sequence;
  uint32_t raw_bytes;
  uint32_t compressed_bytes;
  uint32_t header_check;  // FNV-1a of the 16 bytes before it
};
// Formats 1 to 3: no sequence.
struct BlockHeaderV1 {
  uint32_t magic;
  uint32_t raw_bytes;
  uint32_t compressed_bytes;
  uint32_t header_check;  // FNV-1a of the 12 bytes before it
};
#pragma pack(pop)
static_assert(sizeof(FileHeader) == 32);
static_assert(sizeof(BlockHeader) == 28);
static_assert(sizeof(BlockHeaderV4) == 20);
static_assert(sizeof(BlockHeaderV1) == 16);

// FNV-1a of the header's bytes before header_check.
uint32_t BlockHeaderCheck(const BlockHeader& header);
uint32_t BlockHeaderCheck(const BlockHeaderV4& header);
uint32_t BlockHeaderCheck(const BlockHeaderV1& header);
// A block header (or end marker) with its check filled in.
BlockHeader MakeBlockHeader(uint32_t magic, uint32_t sequence, uint32_t raw_bytes, uint32_t compressed_bytes,
                            uint32_t stream = 0, uint32_t stream_sequence = 0);

}  // namespace gnomon::tracefile
