#include "gnomon/server/trace_merge.h"

#include <sys/stat.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "gnomon/server/trace_file.h"

namespace gnomon::server {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using InputFile = std::unique_ptr<std::FILE, FileCloser>;

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// One input's blocks, copied to `out` with their new sequence and stream numbers.
class InputCopier {
 public:
  InputCopier(MergeSummary& summary, OutputFile& out, std::ostream& log)
      : summary_(summary), out_(out), log_(log) {}

  // Copies every block of `path`; its streams are numbered from summary.streams. An
  // error only for what makes the whole merge wrong (not a trace, a write failure).
  Status Copy(const std::string& path) {
    InputFile in(std::fopen(path.c_str(), "rb"));
    if (!in) return Status::Error("cannot open " + path + ": " + std::strerror(errno));
    FileHeader header{};
    if (std::fread(&header, sizeof(header), 1, in.get()) != 1 ||
        std::memcmp(header.magic, kTraceMagic, sizeof(kTraceMagic)) != 0) {
      return Status::Error(path + " is not a Gnomon trace (no GNOMONTF header)");
    }
    if (header.format_version != kTraceFormatVersion) {
      return Status::Error(path + " is trace format " + std::to_string(header.format_version) +
                           "; gnomon-merge takes format " + std::to_string(kTraceFormatVersion) +
                           " only (older captures recorded no common reference clock, so their programs "
                           "cannot be placed against the others)");
    }
    if (header.header_bytes < sizeof(FileHeader) ||
        std::fseek(in.get(), header.header_bytes, SEEK_SET) != 0) {
      return Status::Error(path + " has a damaged file header");
    }
    if (summary_.files == 0) {
      FileHeader first = header;
      first.header_bytes = sizeof(FileHeader);
      if (Status s = Write(&first, sizeof(first)); !s.ok()) return s;
    }
    const uint64_t first_stream = summary_.streams;
    uint64_t streams = 0;  // of this input: one past its highest stream number
    uint64_t blocks = 0;
    const char* stopped = nullptr;
    while (true) {
      BlockHeader block{};
      const size_t got = std::fread(&block, 1, sizeof(block), in.get());
      if (got == 0) {
        stopped = "it ends without its end marker (the capture was cut short)";
        break;
      }
      if (got < sizeof(block) || block.header_check != BlockHeaderCheck(block)) {
        stopped = "a block header is damaged or cut off";
        break;
      }
      if (block.magic == kEndMagic) break;
      if (block.magic != kBlockMagic || block.compressed_bytes == 0 ||
          block.compressed_bytes > ZSTD_compressBound(kMaxBlockRawBytes) ||
          block.raw_bytes > kMaxBlockRawBytes) {
        stopped = "a block header is damaged";
        break;
      }
      if (summary_.blocks >= UINT32_MAX)
        return Status::Error("the merged file would hold more than 2^32 blocks");
      if (first_stream + block.stream >= kMaxTraceStreams) {
        return Status::Error("the merged file would hold more than " + std::to_string(kMaxTraceStreams) +
                             " programs (" + path + " brings program " +
                             std::to_string(first_stream + block.stream + 1) +
                             "); merge fewer files at once");
      }
      data_.resize(block.compressed_bytes);
      if (std::fread(data_.data(), 1, data_.size(), in.get()) != data_.size()) {
        stopped = "its last block is cut off";
        break;
      }
      streams = std::max<uint64_t>(streams, uint64_t{block.stream} + 1);
      const BlockHeader moved =
          MakeBlockHeader(kBlockMagic, uint32_t(summary_.blocks), block.raw_bytes, block.compressed_bytes,
                          uint32_t(first_stream + block.stream), block.stream_sequence);
      if (Status s = Write(&moved, sizeof(moved)); !s.ok()) return s;
      if (Status s = Write(data_.data(), data_.size()); !s.ok()) return s;
      ++summary_.blocks;
      ++blocks;
    }
    if (stopped != nullptr) {
      ++summary_.incomplete_files;
      log_ << "gnomon-merge: " << path << ": " << stopped << " after " << blocks
           << " block(s); those were merged, nothing after them\n";
    }
    log_ << "gnomon-merge: " << path << ": " << streams << " program(s), " << blocks
         << " block(s), as programs " << first_stream + 1 << " to " << first_stream + streams << "\n";
    summary_.streams += streams;
    ++summary_.files;
    return Status::Ok();
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
  OutputFile& out_;
  std::ostream& log_;
  std::vector<uint8_t> data_;
};

}  // namespace

Result<MergeSummary> MergeTraces(const std::vector<std::string>& inputs, const std::string& output,
                                 Overwrite overwrite, std::ostream& log) {
  if (inputs.empty()) return Status::Error("nothing to merge: name the trace files");
  for (const std::string& input : inputs) {
    if (SameFile(input, output))
      return Status::Error(output + " is also an input; write the merge elsewhere");
  }
  if (Status s = CheckOutputPath(output, overwrite); !s.ok()) return s;
  auto out = OutputFile::Create(output);
  if (!out.ok()) return out.status();
  MergeSummary summary;
  InputCopier copier(summary, *out.value(), log);
  for (const std::string& input : inputs) {
    if (Status s = copier.Copy(input); !s.ok()) return s;
  }
  const BlockHeader end = MakeBlockHeader(kEndMagic, uint32_t(summary.blocks), 0, 0);
  if (Status s = copier.Write(&end, sizeof(end)); !s.ok()) return s;
  if (Status s = out.value()->Close(); !s.ok()) return s;
  if (Status s = out.value()->Publish(overwrite); !s.ok()) return s;
  return summary;
}

}  // namespace gnomon::server
