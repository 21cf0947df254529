#include "files/trace_index.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "gnomon/protocol/byte_io.h"

namespace gnomon::server {
namespace {

// The first offset after `from` where a sound header starts (a block whose data fits in
// the file, or an end marker), or file_bytes when there is none: how a load finds its
// way past bytes that are not a block header.
uint64_t FindNextHeader(const TraceSource& source, uint64_t from, uint64_t file_bytes, uint16_t format) {
  std::vector<uint8_t> window(1 << 16);
  for (uint64_t base = from; base + 4 <= file_bytes; base += window.size() - 3) {
    const size_t n = size_t(std::min<uint64_t>(window.size(), file_bytes - base));
    if (!source.ReadAt(window.data(), n, base)) return file_bytes;
    for (size_t i = 0; i + 4 <= n; ++i) {
      if (window[i] != 'G' || (window[i + 1] != 'B' && window[i + 1] != 'E')) continue;
      IndexedBlock block;
      const HeaderKind kind = ReadHeader(source, base + i, file_bytes, format, block);
      if (kind == HeaderKind::kEnd || (kind == HeaderKind::kBlock && block.end_offset() <= file_bytes))
        return base + i;
    }
    if (n < window.size()) break;
  }
  return file_bytes;
}

// The skippable frame a writer may put after a block's frame (tracefile::kWriterMaxExpansion):
// exactly the rest of the block.
bool IsPadding(const uint8_t* p, size_t size) {
  if (size < tracefile::kSkippableFrameHeader) return false;
  const uint32_t magic = protocol::LoadLe<uint32_t>(p);
  return (magic & 0xFFFFFFF0u) == tracefile::kSkippableFrameMagic &&
         protocol::LoadLe<uint32_t>(p + 4) == size - tracefile::kSkippableFrameHeader;
}

}  // namespace

FrameDecompressor::SummaryPlace FrameDecompressor::LocateSummary(const uint8_t* trailer,
                                                                 uint32_t compressed_bytes) {
  constexpr size_t kLeast = tracefile::kSkippableFrameHeader + tracefile::kSummaryTrailer;
  SummaryPlace place;
  if (compressed_bytes < kLeast || protocol::LoadLe<uint32_t>(trailer + 4) != tracefile::kSummaryMagic)
    return place;
  const uint32_t frame = protocol::LoadLe<uint32_t>(trailer);
  if (frame == 0 || frame > compressed_bytes - kLeast) {
    place.error = "its summary's size is damaged";
  } else {
    place.frame_bytes = frame;
  }
  return place;
}

bool FrameDecompressor::ReadSummary(const uint8_t* frame, size_t size, uint32_t max_expansion,
                                    tracefile::BlockSummary& summary, std::string& error) {
  const unsigned long long content = ZSTD_getFrameContentSize(frame, size);
  if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN ||
      content > tracefile::kMaxSummaryBytes || content > uint64_t(size) * max_expansion) {
    error = "its summary's frame is damaged";
    return false;
  }
  summary_bytes_.resize(content);
  const size_t n = ZSTD_decompressDCtx(dctx_, summary_bytes_.data(), summary_bytes_.size(), frame, size);
  if (ZSTD_isError(n) || n != content) {
    error = "its summary does not decompress";
    return false;
  }
  return tracefile::DecodeSummary(summary_bytes_.data(), summary_bytes_.size(), summary, error);
}

std::string FrameDecompressor::Decompress(const uint8_t* src, size_t size, size_t expected,
                                          bool need_checksum, std::vector<uint8_t>& out) {
  // RFC 8878: a frame starts with its magic number, then a descriptor byte whose bit 2
  // says whether a content checksum ends the frame.
  constexpr uint8_t kFrameMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
  if (size < 5 || std::memcmp(src, kFrameMagic, 4) != 0) return "no zstd frame";
  if (need_checksum && (src[4] & 0x04) == 0) return "its frame has no content checksum";
  // One frame, and nothing after it but the writer's padding: both paths below take
  // exactly that frame.
  const size_t frame = ZSTD_findFrameCompressedSize(src, size);
  if (ZSTD_isError(frame))
    return std::string("its zstd frame is damaged or cut short (") + ZSTD_getErrorName(frame) + ")";
  if (frame != size && !IsPadding(src + frame, size - frame)) return "bytes follow its frame";
  size = frame;
  const unsigned long long content = ZSTD_getFrameContentSize(src, size);
  if (content == ZSTD_CONTENTSIZE_ERROR) return "its zstd frame header is damaged";
  if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != expected) {
    return "its frame holds " + std::to_string(content) + " bytes, its header says " +
           std::to_string(expected);
  }
  if (out.size() >= expected) {
    const size_t n = ZSTD_decompressDCtx(dctx_, out.data(), expected, src, size);
    if (ZSTD_isError(n)) return ZSTD_getErrorName(n);
    return n == expected ? ""
                         : "it decompresses to " + std::to_string(n) + " bytes, its header says " +
                               std::to_string(expected);
  }
  // A frame may declare a window of up to 128 MiB, which zstd would allocate before
  // decoding a byte. A block is one whole frame, so it never needs a window larger
  // than itself (every writer so far made single-segment frames: window = content).
  int window_log = 10;  // zstd's smallest window
  while (window_log < 30 && (size_t(1) << window_log) < expected) ++window_log;
  ZSTD_DCtx_reset(dctx_, ZSTD_reset_session_only);
  ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, window_log);
  ZSTD_inBuffer in{src, size, 0};
  size_t produced = 0;
  while (true) {
    if (out.size() - produced < (64u << 10) && out.size() < expected) {
      out.resize(std::min(expected, std::max<size_t>(out.size() * 2, 256u << 10)));
    }
    ZSTD_outBuffer o{out.data(), std::min(out.size(), expected), produced};
    const size_t in_before = in.pos;
    const size_t left = ZSTD_decompressStream(dctx_, &o, &in);
    if (ZSTD_isError(left)) return ZSTD_getErrorName(left);
    const bool progressed = o.pos != produced || in.pos != in_before;
    produced = o.pos;
    if (left == 0) {
      if (in.pos != size) return "bytes follow its frame";
      return produced == expected ? ""
                                  : "it decompresses to " + std::to_string(produced) +
                                        " bytes, its header says " + std::to_string(expected);
    }
    if (!progressed)
      return produced == expected ? "it holds more than its header says" : "its frame is cut short";
  }
}

// Reads and checks the header at `offset`, laid out as files of `format` lay it.
HeaderKind ReadHeader(const TraceSource& source, uint64_t offset, uint64_t file_bytes, uint16_t format,
                      IndexedBlock& out) {
  const size_t size = format >= 5   ? sizeof(tracefile::BlockHeader)
                      : format == 4 ? sizeof(tracefile::BlockHeaderV4)
                                    : sizeof(tracefile::BlockHeaderV1);
  if (file_bytes - offset < size) return HeaderKind::kCut;
  uint32_t magic = 0;
  if (format >= 5) {
    tracefile::BlockHeader h{};
    if (!source.ReadAt(&h, size, offset)) return HeaderKind::kCut;
    if (h.header_check != tracefile::BlockHeaderCheck(h)) return HeaderKind::kInvalid;
    magic = h.magic;
    out = {offset, uint32_t(size), h.sequence, h.stream, h.stream_sequence, h.raw_bytes, h.compressed_bytes};
  } else if (format == 4) {
    tracefile::BlockHeaderV4 h{};
    if (!source.ReadAt(&h, size, offset)) return HeaderKind::kCut;
    if (h.header_check != tracefile::BlockHeaderCheck(h)) return HeaderKind::kInvalid;
    magic = h.magic;
    out = {offset, uint32_t(size), h.sequence, 0, h.sequence, h.raw_bytes, h.compressed_bytes};
  } else {
    tracefile::BlockHeaderV1 h{};
    if (!source.ReadAt(&h, size, offset)) return HeaderKind::kCut;
    if (h.header_check != tracefile::BlockHeaderCheck(h)) return HeaderKind::kInvalid;
    magic = h.magic;
    out = {offset, uint32_t(size), 0, 0, 0, h.raw_bytes, h.compressed_bytes};
  }
  if (magic == tracefile::kEndMagic)
    return out.raw_bytes == 0 && out.compressed_bytes == 0 ? HeaderKind::kEnd : HeaderKind::kInvalid;
  return magic == tracefile::kBlockMagic ? HeaderKind::kBlock : HeaderKind::kInvalid;
}

std::string At(uint64_t offset) { return "at byte " + std::to_string(offset); }

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// Every block header of the file, in the order to load the blocks, and what was wrong.
std::vector<IndexedBlock> IndexBlocks(const TraceSource& source, uint64_t file_bytes,
                                      const tracefile::FileHeader& header, uint32_t max_expansion,
                                      FileAnomalies& anomalies, Notes& notes) {
  const bool numbered = header.format_version >= 4;
  std::vector<IndexedBlock> blocks;       // in file order
  std::vector<IndexedBlock> end_markers;  // sequence: the block count (format 4)
  uint64_t offset = header.header_bytes;
  uint32_t position = 0;
  while (offset < file_bytes) {
    IndexedBlock block;
    const HeaderKind kind = ReadHeader(source, offset, file_bytes, header.format_version, block);
    if (kind == HeaderKind::kEnd) {
      end_markers.push_back(block);
      offset = block.data_offset();
      continue;
    }
    if (kind == HeaderKind::kBlock && block.end_offset() > file_bytes) {
      anomalies.truncated = true;
      notes.Add("the file ends inside the block " + At(offset) + " (cut short)");
      break;
    }
    if (kind == HeaderKind::kBlock) {
      if (!numbered) block.sequence = block.stream_sequence = position;
      ++position;
      if (block.raw_bytes > tracefile::kMaxBlockRawBytes || block.compressed_bytes == 0 ||
          uint64_t(block.raw_bytes) > uint64_t(max_expansion) * block.compressed_bytes) {
        block.rejected = true;
        ++anomalies.rejected_blocks;
        notes.Add(
            "the block " + At(offset) + " claims " + std::to_string(block.raw_bytes) + " bytes from " +
            std::to_string(block.compressed_bytes) + " (a capture never expands more than " +
            std::to_string(max_expansion) +
            " times; damaged or crafted, skipped; --max-expansion raises the limit for a file you trust)");
      }
      blocks.push_back(block);
      offset = block.end_offset();
      continue;
    }
    const bool after_end = !end_markers.empty() && end_markers.back().data_offset() == offset;
    if (kind == HeaderKind::kCut && !after_end) {
      anomalies.truncated = true;
      notes.Add("the file ends inside a block header " + At(offset) + " (cut short)");
      break;
    }
    // Bytes that are not a header: damage, or whatever follows the end marker.
    const uint64_t next = kind == HeaderKind::kCut
                              ? file_bytes
                              : FindNextHeader(source, offset + 1, file_bytes, header.format_version);
    if (next == file_bytes && after_end) {
      anomalies.trailing_bytes = file_bytes - offset;
      notes.Add(std::to_string(file_bytes - offset) + " byte(s) after the end marker " + At(offset) +
                " are not blocks; ignored");
      break;
    }
    anomalies.damaged_bytes += next - offset;
    notes.Add("bytes " + std::to_string(offset) + " to " + std::to_string(next) +
              " hold no readable block header; skipped" + (next < file_bytes ? " to the next block" : ""));
    offset = next;
  }
  anomalies.has_end_marker = !end_markers.empty();
  for (const IndexedBlock& marker : end_markers) {
    const bool blocks_follow = !blocks.empty() && blocks.back().offset > marker.offset;
    if (blocks_follow) {
      ++anomalies.misplaced_end_markers;
      notes.Add("an end marker " + At(marker.offset) + " has blocks after it (loaded)");
    }
  }

  if (numbered) {
    // Sequence order; of a repeated number, the first copy in the file.
    std::stable_sort(blocks.begin(), blocks.end(),
                     [](const IndexedBlock& a, const IndexedBlock& b) { return a.sequence < b.sequence; });
    std::vector<IndexedBlock> ordered;
    ordered.reserve(blocks.size());
    for (const IndexedBlock& block : blocks) {
      if (!ordered.empty() && ordered.back().sequence == block.sequence) {
        ++anomalies.duplicate_blocks;
        notes.Add("the block " + At(block.offset) + " repeats block " + std::to_string(block.sequence) +
                  " (skipped)");
        continue;
      }
      const uint32_t expected = ordered.empty() ? 0 : ordered.back().sequence + 1;
      if (block.sequence != expected) {
        anomalies.missing_blocks += block.sequence - expected;
        notes.Add(std::to_string(block.sequence - expected) + " block(s) missing before block " +
                  std::to_string(block.sequence) + " " + At(block.offset));
      }
      if (!ordered.empty() && block.offset < ordered.back().offset) {
        ++anomalies.reordered_blocks;
        notes.Add("block " + std::to_string(block.sequence) + " " + At(block.offset) +
                  " comes before blocks it follows (loaded in its place)");
      }
      ordered.push_back(block);
    }
    blocks = std::move(ordered);
    if (!end_markers.empty()) {
      const uint32_t counted = end_markers.back().sequence;
      const uint32_t found = blocks.empty() ? 0 : blocks.back().sequence + 1;
      if (counted > found) {
        anomalies.missing_blocks += counted - found;
        notes.Add("the end marker counts " + std::to_string(counted) + " block(s); the last " +
                  std::to_string(counted - found) + " are missing");
      } else if (counted < found) {
        ++anomalies.misplaced_end_markers;
        notes.Add("the end marker counts " + std::to_string(counted) + " block(s), but " +
                  std::to_string(found) + " were written");
      }
    }
  }
  // A block after a lost, skipped or rejected one of its stream starts without knowing
  // which thread the stream was on.
  struct StreamPlace {
    uint32_t next = 0;  // the stream_sequence that follows without a gap
    bool rejected = false;
  };
  std::map<uint32_t, StreamPlace> places;
  for (IndexedBlock& block : blocks) {
    StreamPlace& place = places[block.stream];
    block.after_gap = block.stream_sequence != place.next || place.rejected;
    place = {block.stream_sequence + 1, block.rejected};
  }
  if (!anomalies.has_end_marker && !anomalies.truncated) {
    notes.Add(
        "the file ends without its end marker (the capture did not finish: killed, or the file was cut)");
  }
  return blocks;
}

}  // namespace gnomon::server
