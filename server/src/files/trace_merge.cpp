#include "gnomon/server/trace_merge.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "files/trace_index.h"
#include "gnomon/protocol/byte_io.h"

namespace gnomon::server {
namespace {

constexpr uint16_t kFirstMergeableFormat = 5;

// The inputs' blocks, copied to `out` with their new sequence and stream numbers.
class InputCopier {
 public:
  InputCopier(MergeSummary& summary, tracefile::OutputFile& out, std::ostream& log)
      : summary_(summary), out_(out), log_(log) {}

  // Copies the sound blocks of `path`, in the order a reader loads them (the loader's
  // index: by sequence, repeats dropped, damage skipped); its streams are numbered from
  // summary.streams in their order. An error only for what makes the whole merge wrong
  // (not a trace of this format, too many programs, a write failure).
  Status Copy(const std::string& path) {
    Result<TraceSource> opened = TraceSource::OpenFile(path);  // refuses FIFOs, devices, folders
    if (!opened.ok()) return opened.status();
    const TraceSource& source = opened.value();
    tracefile::FileHeader header{};
    if (!source.ReadAt(&header, sizeof(header), 0) ||
        std::memcmp(header.magic, tracefile::kTraceMagic, sizeof(tracefile::kTraceMagic)) != 0) {
      return Status::Error(path + " is not a Gnomon trace (no GNOMONTF header)");
    }
    // Format 5 on: every capture records a common reference clock. A block a capture
    // wrote in format 5 or 6 reads the same in format 7 (it never starts with a later
    // format's mark), so the merged file says 7 whatever its inputs.
    if (header.format_version < kFirstMergeableFormat ||
        header.format_version > tracefile::kTraceFormatVersion) {
      return Status::Error(path + " is trace format " + std::to_string(header.format_version) +
                           "; gnomon-merge takes formats " + std::to_string(kFirstMergeableFormat) + " to " +
                           std::to_string(tracefile::kTraceFormatVersion) +
                           (header.format_version > tracefile::kTraceFormatVersion
                                ? " (written by a newer Gnomon: merge it with that one)"
                                : " (older captures recorded no common reference clock, so their programs "
                                  "cannot be placed against the others)"));
    }
    if (header.header_bytes < sizeof(tracefile::FileHeader) || header.header_bytes > source.size()) {
      return Status::Error(path + " has a damaged header (header size " +
                           std::to_string(header.header_bytes) + ")");
    }
    FileAnomalies anomalies;
    Notes notes;
    std::vector<IndexedBlock> blocks =
        IndexBlocks(source, source.size(), header, tracefile::kDefaultMaxExpansion, anomalies, notes);
    std::erase_if(blocks, [](const IndexedBlock& block) { return block.rejected; });
    // A block whose frame does not decompress to what its header says (a flipped byte:
    // zstd's checksum) is left out, as the loader skips it; a stream left without a
    // sound block takes no program number.
    for (IndexedBlock& block : blocks) {
      if (Status s = ReadBlock(source, block); !s.ok()) return s;
      block.rejected = !Verify(block, anomalies, notes, path);
    }
    std::erase_if(blocks, [](const IndexedBlock& block) { return block.rejected; });
    // Its streams, in order, numbered after the previous inputs' without holes.
    std::map<uint32_t, uint32_t> streams;
    for (const IndexedBlock& block : blocks) streams.emplace(block.stream, 0);
    if (summary_.streams + streams.size() > tracefile::kMaxTraceStreams) {
      return Status::Error("the merged file would hold more than " +
                           std::to_string(tracefile::kMaxTraceStreams) + " programs (" + path + " brings " +
                           std::to_string(streams.size()) + " after " + std::to_string(summary_.streams) +
                           "); merge fewer files at once");
    }
    if (summary_.blocks + blocks.size() >= UINT32_MAX) {
      return Status::Error("the merged file would hold more than 2^32 blocks");
    }
    uint32_t next = uint32_t(summary_.streams);
    for (auto& [stream, renumbered] : streams) renumbered = next++;
    if (summary_.files == 0) {
      tracefile::FileHeader first = header;
      first.format_version = tracefile::kTraceFormatVersion;
      first.header_bytes = sizeof(tracefile::FileHeader);
      first.flags |= tracefile::kMergedTrace;
      if (Status s = Write(&first, sizeof(first)); !s.ok()) return s;
    }
    for (const IndexedBlock& block : blocks) {
      if (Status s = ReadBlock(source, block); !s.ok()) return s;
      if (!CheckSummary().empty()) DropSummary();
      const tracefile::BlockHeader moved =
          tracefile::MakeBlockHeader(tracefile::kBlockMagic, uint32_t(summary_.blocks), block.raw_bytes,
                                     block.compressed_bytes, streams.at(block.stream), block.stream_sequence);
      if (Status s = Write(&moved, sizeof(moved)); !s.ok()) return s;
      if (Status s = Write(data_.data(), data_.size()); !s.ok()) return s;
      ++summary_.blocks;
    }
    if (anomalies.any()) {
      ++summary_.incomplete_files;
      log_ << "gnomon-merge: " << notes.Join(path) << " (its sound blocks were merged)\n";
    }
    log_ << "gnomon-merge: " << path << ": " << streams.size() << " program(s), " << blocks.size()
         << " block(s), as programs " << summary_.streams + 1 << " to " << summary_.streams + streams.size()
         << "\n";
    summary_.streams += streams.size();
    ++summary_.files;
    return Status::Ok();
  }

  // The block's compressed bytes into data_.
  Status ReadBlock(const TraceSource& source, const IndexedBlock& block) {
    data_.resize(block.compressed_bytes);  // inside the file: the index checked
    if (!source.ReadAt(data_.data(), data_.size(), block.data_offset())) {
      return Status::Error("cannot read " + source.name() + ": " + std::strerror(errno));
    }
    return Status::Ok();
  }

  // Whether data_ decompresses as `block` says, and its summary reads (format 8) when it
  // has one; if not, counted and said as the loader says it.
  bool Verify(const IndexedBlock& block, FileAnomalies& anomalies, Notes& notes, const std::string& path) {
    const std::string failure =
        decompressor_.Decompress(data_.data(), data_.size(), block.raw_bytes, true, scratch_);
    if (failure.empty()) {
      if (const std::string damaged = CheckSummary(); !damaged.empty()) {
        log_ << "gnomon-merge: " << path << ": block " << block.sequence << " " << At(block.offset) << ": "
             << damaged << "; merged without it\n";
      }
      return true;
    }
    ++anomalies.damaged_blocks;
    notes.Add("block " + std::to_string(block.sequence) + " " + At(block.offset) + " does not decompress (" +
              failure + "); left out");
    return false;
  }

  // A damaged summary (CheckSummary) made padding: the block's data is sound, and its
  // readers decode it instead, as they would have.
  void DropSummary() {
    const size_t frame = ZSTD_findFrameCompressedSize(data_.data(), data_.size());
    if (ZSTD_isError(frame) || frame + tracefile::kSkippableFrameHeader > data_.size()) return;
    uint8_t* padding = data_.data() + frame;
    const size_t content = data_.size() - frame - tracefile::kSkippableFrameHeader;
    protocol::StoreLe<uint32_t>(padding, tracefile::kSkippableFrameMagic);
    protocol::StoreLe<uint32_t>(padding + 4, uint32_t(content));
    std::memset(padding + tracefile::kSkippableFrameHeader, 0, content);
  }

  // What is wrong with data_'s summary, or "" (sound, or none). Only a skippable frame
  // after the block's frame (Verify checked there is one, if anything follows it) holds
  // a summary.
  std::string CheckSummary() {
    const size_t frame = ZSTD_findFrameCompressedSize(data_.data(), data_.size());
    if (ZSTD_isError(frame) ||
        frame + tracefile::kSkippableFrameHeader + tracefile::kSummaryTrailer > data_.size())
      return "";
    const uint8_t* trailer = data_.data() + data_.size() - tracefile::kSummaryTrailer;
    FrameDecompressor::SummaryPlace place = FrameDecompressor::LocateSummary(trailer, uint32_t(data_.size()));
    if (place.frame_bytes == 0) return place.error;
    std::string error;
    tracefile::BlockSummary summary;
    decompressor_.ReadSummary(trailer - place.frame_bytes, place.frame_bytes, tracefile::kDefaultMaxExpansion,
                              summary, error);
    return error;
  }

  Status Write(const void* data, size_t size) {
    if (std::fwrite(data, 1, size, out_.file()) != size) {
      return Status::Error("cannot write " + out_.current_path() + ": " + std::strerror(errno));
    }
    summary_.bytes += size;
    return Status::Ok();
  }

 private:
  MergeSummary& summary_;
  tracefile::OutputFile& out_;
  std::ostream& log_;
  std::vector<uint8_t> data_;
  FrameDecompressor decompressor_;
  std::vector<uint8_t> scratch_;  // what a block decompresses to, looked at no further
};

}  // namespace

Result<MergeSummary> MergeTraces(const std::vector<std::string>& inputs, const std::string& output,
                                 tracefile::Overwrite overwrite, std::ostream& log) {
  if (inputs.empty()) return Status::Error("nothing to merge: name the trace files");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (SameFile(inputs[i], output))
      return Status::Error(output + " is also an input; write the merge elsewhere");
    for (size_t j = 0; j < i; ++j) {
      if (SameFile(inputs[i], inputs[j])) {
        return Status::Error(inputs[i] + " is named twice (as " + inputs[j] +
                             "): its programs would be in the merge twice");
      }
    }
  }
  if (Status s = tracefile::CheckOutputPath(output, overwrite); !s.ok()) return s;
  auto out = tracefile::OutputFile::Create(output);
  if (!out.ok()) return out.status();
  MergeSummary summary;
  InputCopier copier(summary, *out.value(), log);
  for (const std::string& input : inputs) {
    if (Status s = copier.Copy(input); !s.ok()) return s;
  }
  const tracefile::BlockHeader end =
      tracefile::MakeBlockHeader(tracefile::kEndMagic, uint32_t(summary.blocks), 0, 0);
  if (Status s = copier.Write(&end, sizeof(end)); !s.ok()) return s;
  if (Status s = out.value()->Close(); !s.ok()) return s;
  if (Status s = out.value()->Publish(overwrite); !s.ok()) return s;
  return summary;
}

}  // namespace gnomon::server
