// The index of a trace file's blocks (trace_file.h): every block header read, damage
// found and skipped, blocks put in sequence order with repeats dropped and gaps noted.
// What the loader and gnomon-merge read a file by, so both see the same blocks.
#pragma once

#include <zstd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gnomon/server/trace_loader.h"
#include "gnomon/tracefile/block_summary.h"

namespace gnomon::server {

// A block header as the index reads it, whatever the format.
struct IndexedBlock {
  uint64_t offset = 0;           // of its header in the file
  uint32_t header_bytes = 0;     // 28 (format 5 on), 20 (format 4) or 16
  uint32_t sequence = 0;         // format 4 on: as written; before: its place among the blocks
  uint32_t stream = 0;           // format 5 on: as written; before: 0
  uint32_t stream_sequence = 0;  // format 5 on: as written; before: the sequence
  uint32_t raw_bytes = 0;
  uint32_t compressed_bytes = 0;
  bool rejected = false;   // its sizes are absurd: it is skipped
  bool after_gap = false;  // something before it in the stream is lost
  uint64_t data_offset() const { return offset + header_bytes; }
  uint64_t end_offset() const { return data_offset() + compressed_bytes; }
};

enum class HeaderKind { kBlock, kEnd, kInvalid, kCut };

// Reads and checks the header at `offset`, laid out as files of `format` lay it.
HeaderKind ReadHeader(const TraceSource& source, uint64_t offset, uint64_t file_bytes, uint16_t format,
                      IndexedBlock& out);

// Sentences for LoadReport::warning, at most kMaxNotes of them: a file damaged all over
// gets the first ones and a count of the rest, not a megabyte of warnings.
class Notes {
 public:
  static constexpr size_t kMaxNotes = 12;
  void Add(std::string sentence) {
    if (count_++ < kMaxNotes) notes_.push_back(std::move(sentence));
  }
  // A sentence that sums up (a count over the whole file): said after the others,
  // however many there were.
  void AddSummary(std::string sentence) { summaries_.push_back(std::move(sentence)); }
  std::string Join(const std::string& path) const {
    std::string text;
    for (const std::string& note : notes_) text += (text.empty() ? path + ": " : "; ") + note;
    if (count_ > kMaxNotes)
      text += "; and " + std::to_string(count_ - kMaxNotes) + " more problem(s) of these kinds";
    for (const std::string& summary : summaries_) text += (text.empty() ? path + ": " : "; ") + summary;
    return text;
  }

 private:
  std::vector<std::string> notes_;
  std::vector<std::string> summaries_;
  size_t count_ = 0;
};

// "at byte N", as notes name a place.
std::string At(uint64_t offset);

// Whether two paths name one file (a tool's output that is its input).
bool SameFile(const std::string& a, const std::string& b);

// Every block header of the file, in the order to load the blocks (formats 4 and 5: by
// sequence, repeats dropped), and what was wrong, counted in `anomalies` and said in
// `notes`. A block whose sizes are absurd is kept, marked rejected.
std::vector<IndexedBlock> IndexBlocks(const TraceSource& source, uint64_t file_bytes,
                                      const tracefile::FileHeader& header, uint32_t max_expansion,
                                      FileAnomalies& anomalies, Notes& notes);

// Turns a block's zstd frame back into its bytes, as the loader reads every block, and as
// gnomon-merge checks every block it copies. Holds zstd's decompression context; one
// per thread.
class FrameDecompressor {
 public:
  // A block's summary (format 8, tracefile/block_summary.h), told by the block's last
  // kSummaryTrailer bytes `trailer` among its `compressed_bytes`: where its frame ends
  // (frame_bytes before the trailer; 0: the block has none), or why those bytes are not
  // a summary's. Then that frame read back into `summary` (false, with why, when it is
  // damaged: over kMaxSummaryBytes or `max_expansion` times its size, not zstd, or not a
  // summary).
  struct SummaryPlace {
    uint32_t frame_bytes = 0;
    std::string error;
  };
  static SummaryPlace LocateSummary(const uint8_t* trailer, uint32_t compressed_bytes);
  bool ReadSummary(const uint8_t* frame, size_t size, uint32_t max_expansion,
                   tracefile::BlockSummary& summary, std::string& error);

  FrameDecompressor() : dctx_(ZSTD_createDCtx()) {}
  ~FrameDecompressor() { ZSTD_freeDCtx(dctx_); }
  FrameDecompressor(const FrameDecompressor&) = delete;
  FrameDecompressor& operator=(const FrameDecompressor&) = delete;

  // Decompresses the frame in src[0, size), and the writer's padding after it if any,
  // into out[0, expected). A buffer already big enough (the usual case: buffers are
  // reused) takes it in one call; a smaller one grows only as far as the frame really
  // produces, so a header claiming 64 MiB costs nothing until zstd delivers them. With
  // `need_checksum` (format 4 on), a frame without a content checksum is refused. ""
  // on success, else what is wrong, as a note names it ("its zstd frame is damaged ...").
  std::string Decompress(const uint8_t* src, size_t size, size_t expected, bool need_checksum,
                         std::vector<uint8_t>& out);

 private:
  ZSTD_DCtx* dctx_;
  std::vector<uint8_t> summary_bytes_;
};

}  // namespace gnomon::server
