#include "gnomon/server/trace_file.h"

#include <zstd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <filesystem>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/stream_decoder.h"
#include "gnomon/server/tick_delta.h"
#include "gnomon/server/trace_builder.h"

namespace gnomon::server {
namespace {

constexpr size_t kMaxQueuedBlocks = 4;

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

int64_t UnixNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

uint32_t BlockHeaderCheck(const BlockHeader& header) {
  uint8_t bytes[12];
  std::memcpy(bytes, &header, sizeof(bytes));
  uint32_t hash = 2166136261u;
  for (uint8_t b : bytes) hash = (hash ^ b) * 16777619u;
  return hash;
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::Create(const std::string& path, const TraceWriterOptions& options) {
  auto output = OutputFile::Create(path);
  if (!output.ok()) return output.status();
  FileHeader header{};
  std::memcpy(header.magic, kTraceMagic, sizeof(kTraceMagic));
  header.format_version = kTraceFormatVersion;
  header.header_bytes = sizeof(FileHeader);
  header.protocol_version = protocol::kProtocolVersion;
  header.created_unix_ns = UnixNowNs();
  std::FILE* file = output.value()->file();
  if (std::fwrite(&header, sizeof(header), 1, file) != 1 || std::fflush(file) != 0) {
    return Status::Error("cannot write to " + output.value()->current_path() + ": " + std::strerror(errno));
  }
  return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(output.value()), options));
}

TraceWriter::TraceWriter(std::unique_ptr<OutputFile> output, const TraceWriterOptions& options)
    : output_(std::move(output)), options_(options), file_bytes_(sizeof(FileHeader)) {
  thread_ = std::thread([this] { CompressLoop(); });
}

Status TraceWriter::Publish(Overwrite overwrite) {
  std::lock_guard lock(mutex_);
  return output_->Publish(overwrite);
}

std::string TraceWriter::current_path() const {
  std::lock_guard lock(mutex_);
  return output_->current_path();
}

TraceWriter::~TraceWriter() {
  if (thread_.joinable()) Finish();
}

void TraceWriter::Append(const uint8_t* data, size_t size) {
  if (size == 0) return;
  // A block never exceeds kMaxBlockRawBytes; Append() only ever gets whole messages,
  // and one piece is far smaller than a block.
  if (current_.size + CompactBound(size) > kMaxBlockRawBytes) CutBlock();
  if (current_.size == 0) current_started_ = std::chrono::steady_clock::now();
  const size_t room = current_.size + CompactBound(size);
  if (current_.data.size() < room) current_.data.resize(std::max(room, current_.data.size() * 2));
  current_.size += CompactMessages(data, size, current_.data.data() + current_.size, current_previous_tick_);
  current_stream_bytes_ += size;
  raw_bytes_total_ += size;
  if (current_stream_bytes_ >= options_.block_raw_bytes ||
      std::chrono::steady_clock::now() - current_started_ >= options_.max_block_age) {
    CutBlock();
  }
}

void TraceWriter::FlushIfOld() {
  if (current_.size != 0 && std::chrono::steady_clock::now() - current_started_ >= options_.max_block_age) {
    CutBlock();
  }
}

void TraceWriter::CutBlock() {
  if (current_.size == 0) return;
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [this] { return queue_.size() < kMaxQueuedBlocks; });
  queue_.push_back(std::move(current_));
  // A buffer the compressor is done with, rather than fresh pages for every block.
  if (spare_.empty()) {
    current_ = {};
  } else {
    current_ = std::move(spare_.back());
    spare_.pop_back();
  }
  current_.size = 0;
  current_stream_bytes_ = 0;
  current_previous_tick_ = 0;
  cv_.notify_all();
}

void TraceWriter::CompressLoop() {
  std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx(ZSTD_createCCtx());
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, options_.compression_level);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  std::vector<uint8_t> compressed;  // only ever grows: no zero-filling per block
  while (true) {
    Block raw;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return !queue_.empty() || finishing_; });
      if (queue_.empty()) return;
      raw = std::move(queue_.front());
      queue_.pop_front();
      ++blocks_in_flight_;
      cv_.notify_all();
    }
    if (compressed.size() < ZSTD_compressBound(raw.size)) compressed.resize(ZSTD_compressBound(raw.size));
    const size_t n = ZSTD_compress2(cctx.get(), compressed.data(), compressed.size(), raw.data.data(), raw.size);
    std::lock_guard lock(mutex_);
    WriteBlock(raw.size, compressed.data(), n);
    if (spare_.size() < kMaxQueuedBlocks) spare_.push_back(std::move(raw));
    --blocks_in_flight_;
    cv_.notify_all();
  }
}

void TraceWriter::WriteBlock(size_t raw_size, const uint8_t* compressed, size_t n) {
  if (!error_.empty()) return;
  if (ZSTD_isError(n)) {
    error_ = std::string("zstd compression failed: ") + ZSTD_getErrorName(n);
    return;
  }
  BlockHeader header{kBlockMagic, static_cast<uint32_t>(raw_size), static_cast<uint32_t>(n), 0};
  header.header_check = BlockHeaderCheck(header);
  std::FILE* file = output_->file();
  if (std::fwrite(&header, sizeof(header), 1, file) != 1 || std::fwrite(compressed, 1, n, file) != n ||
      std::fflush(file) != 0) {
    error_ = "cannot write to " + output_->current_path() + ": " + std::strerror(errno);
    return;
  }
  file_bytes_ += sizeof(header) + n;
}

Status TraceWriter::Finish() {
  CutBlock();
  {
    std::lock_guard lock(mutex_);
    finishing_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mutex_);
  if (output_->file() != nullptr && error_.empty()) {
    BlockHeader end{kEndMagic, 0, 0, 0};
    end.header_check = BlockHeaderCheck(end);
    if (std::fwrite(&end, sizeof(end), 1, output_->file()) != 1) {
      error_ = "cannot write to " + output_->current_path() + ": " + std::strerror(errno);
    } else {
      file_bytes_ += sizeof(end);
    }
  }
  if (Status closed = output_->Close(); !closed.ok() && error_.empty()) error_ = closed.message();
  return error_.empty() ? Status::Ok() : Status::Error(error_);
}

Status TraceWriter::SaveCopy(const std::string& path, Overwrite overwrite) {
  if (Status s = CheckOutputPath(path, overwrite); !s.ok()) return s;
  CutBlock();
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [this] { return (queue_.empty() && blocks_in_flight_ == 0) || !error_.empty(); });
  if (!error_.empty()) return Status::Error(error_);
  auto out = OutputFile::Create(path);
  if (!out.ok()) return out.status();
  if (Status copied = CopyFileBytes(output_->current_path(), file_bytes_, *out.value()); !copied.ok()) return copied;
  BlockHeader end{kEndMagic, 0, 0, 0};
  end.header_check = BlockHeaderCheck(end);
  if (std::fwrite(&end, sizeof(end), 1, out.value()->file()) != 1) {
    return Status::Error("cannot write " + path + ": " + std::strerror(errno));
  }
  if (Status closed = out.value()->Close(); !closed.ok()) return closed;
  return out.value()->Publish(overwrite);
}

uint64_t TraceWriter::file_bytes() const {
  std::lock_guard lock(mutex_);
  return file_bytes_;
}

namespace {

// A decompressed block on its way from the reader thread to the model, or the end.
struct ReadyBlock {
  std::vector<uint8_t> raw;  // the block's bytes in raw[0, size): the stream, or its compact form
  size_t size = 0;
  bool compact = false;     // format 3 (tick_delta.h)
  uint64_t offset = 0;      // of the block in the file
  uint64_t end_offset = 0;  // just past it
  bool is_last = false;     // no block follows: the end marker, or a fault
  std::string stop_reason;  // for a fault: why the load stops here
};

class BlockPipeline {
 public:
  static constexpr size_t kBlocksAhead = 4;

  // Reader side: false once the consumer has stopped (the block is dropped).
  // While the queue is full, the reader touches memory that the model will take.
  bool Push(ReadyBlock block) {
    std::unique_lock lock(mutex_);
    while (queue_.size() >= kBlocksAhead && !stopped_) {
      lock.unlock();
      const bool added = chunk_memory::BlockReserve::Get().AddOne();
      lock.lock();
      if (!added) space_.wait(lock, [&] { return queue_.size() < kBlocksAhead || stopped_; });
    }
    if (stopped_) return false;
    queue_.push_back(std::move(block));
    ready_.notify_one();
    return true;
  }
  bool stopped() {
    std::lock_guard lock(mutex_);
    return stopped_;
  }
  std::vector<uint8_t> TakeBuffer() {
    std::lock_guard lock(mutex_);
    if (spare_.empty()) return {};
    std::vector<uint8_t> buffer = std::move(spare_.back());
    spare_.pop_back();
    return buffer;
  }

  // Consumer side.
  ReadyBlock Pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !queue_.empty(); });
    ReadyBlock block = std::move(queue_.front());
    queue_.pop_front();
    space_.notify_one();
    return block;
  }
  void Recycle(std::vector<uint8_t> buffer) {
    std::lock_guard lock(mutex_);
    if (spare_.size() < kBlocksAhead) spare_.push_back(std::move(buffer));
  }
  void Stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    space_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<ReadyBlock> queue_;
  std::vector<std::vector<uint8_t>> spare_;
  bool stopped_ = false;
};

// Decodes a format-3 block into the builder, the zone records straight from their
// varints; consumed == size unless a record cannot be read (failed, with the reason).
// stream_bytes grows by the size the decoded messages have in the stream.
DecodeResult DecodeCompactBlock(uint8_t* block, size_t size, TraceBuilder& builder, uint64_t& stream_bytes) {
  DecodeResult result;
  uint64_t zone_begins = 0, zone_ends = 0, others = 0;
  const CompactWalk walk = WalkCompactBlock(
      block, size,
      [&](uint32_t location, uint64_t tick) {
        builder.OnZoneBegin(location, tick);
        ++zone_begins;
        return true;
      },
      [&](uint64_t tick) {
        builder.OnZoneEnd(tick);
        ++zone_ends;
        return true;
      },
      [&](uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
        builder.OnLeafZone(location, begin_tick, end_tick);
        ++zone_begins;
        ++zone_ends;
        return true;
      },
      [&](const uint8_t* message, size_t length) {
        others += length;
        return DecodeMessages(message, length, builder).consumed == length;
      });
  stream_bytes += zone_begins * sizeof(protocol::ZoneBegin) + zone_ends * sizeof(protocol::ZoneEnd) + others;
  result.messages = walk.records;
  result.consumed = walk.stopped_at;
  result.failed = !walk.ok || walk.stopped_at != size;
  result.error = walk.ok ? "a message does not decode" : walk.error;
  return result;
}

// The reader thread: every block after the header, checked, decompressed and with its
// tick deltas undone, then one last ReadyBlock (the end marker, or why it stopped).
void ReadBlocks(std::FILE* file, const FileHeader& header, const LoadOptions& options, BlockPipeline& pipeline) {
  std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
  std::vector<uint8_t> compressed;
  uint64_t offset = header.header_bytes;
  auto finish = [&](std::string why) {
    ReadyBlock last;
    last.is_last = true;
    last.offset = offset;
    last.stop_reason = std::move(why);
    pipeline.Push(std::move(last));
  };
  while (!pipeline.stopped()) {
    BlockHeader block{};
    const size_t got = std::fread(&block, 1, sizeof(block), file);
    if (got == 0) {
      return finish("file ends without its end marker (the capture did not finish: killed, or the file was cut)");
    }
    if (got == sizeof(block) && block.magic == kEndMagic && block.header_check == BlockHeaderCheck(block)) {
      return finish("");
    }
    if (got < sizeof(block)) return finish("file ends inside a block header (truncated)");
    if (block.magic != kBlockMagic || block.header_check != BlockHeaderCheck(block) ||
        block.raw_bytes > kMaxBlockRawBytes || block.compressed_bytes > ZSTD_compressBound(kMaxBlockRawBytes)) {
      return finish("damaged block header");
    }
    compressed.resize(block.compressed_bytes);
    if (std::fread(compressed.data(), 1, compressed.size(), file) != compressed.size()) {
      return finish("file ends inside a block (truncated)");
    }
    if (options.cancel != nullptr && options.cancel->load()) return finish("loading cancelled");
    ReadyBlock ready;
    ready.raw = pipeline.TakeBuffer();
    // The buffer only grows (no zero-filling per block). A format-3 block stays compact:
    // the model's thread decodes it directly, which moves 5 bytes a zone between the
    // two threads' caches instead of the stream's 22.
    if (ready.raw.size() < block.raw_bytes) ready.raw.resize(block.raw_bytes);
    const size_t n =
        ZSTD_decompressDCtx(dctx.get(), ready.raw.data(), block.raw_bytes, compressed.data(), compressed.size());
    if (ZSTD_isError(n) || n != block.raw_bytes) {
      return finish(std::string("block does not decompress (") +
                    (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size") + ")");
    }
    ready.size = n;
    ready.compact = header.format_version >= 3;
    if (header.format_version == 2) DecodeTickDeltas(ready.raw.data(), n);
    ready.offset = offset;
    offset += sizeof(block) + compressed.size();
    ready.end_offset = offset;
    if (!pipeline.Push(std::move(ready))) return;
  }
}

}  // namespace

Result<LoadReport> LoadTrace(const std::string& path, TraceModel& model, const LoadOptions& options) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) return Status::Error("cannot open " + path + ": " + std::strerror(errno));
  if (options.bytes_total != nullptr) {
    std::error_code ec;
    *options.bytes_total = std::filesystem::file_size(path, ec);
  }
  FileHeader header{};
  if (std::fread(&header, 1, sizeof(header), file.get()) != sizeof(header) ||
      std::memcmp(header.magic, kTraceMagic, sizeof(kTraceMagic)) != 0) {
    return Status::Error(path + " is not a Gnomon trace (no GNOMONTF header)");
  }
  if (header.format_version > kTraceFormatVersion) {
    return Status::Error(path + " uses trace format " + std::to_string(header.format_version) +
                         "; this build reads up to " + std::to_string(kTraceFormatVersion) +
                         ": open it with a newer Gnomon");
  }
  if (header.header_bytes < sizeof(FileHeader) ||
      std::fseek(file.get(), header.header_bytes, SEEK_SET) != 0) {
    return Status::Error(path + " has a damaged header (header size " +
                         std::to_string(header.header_bytes) + ")");
  }

  // Two stages: a reader thread reads, checks and decompresses blocks ahead (at most
  // kBlocksAhead, so memory stays bounded), while this thread decodes them into the
  // model. Blocks reach the model in file order; the first fault ends the load there.
  BlockPipeline pipeline;
  std::thread reader([&] { ReadBlocks(file.get(), header, options, pipeline); });
  LoadReport report;
  TraceBuilder builder(model);
  while (true) {
    ReadyBlock ready = pipeline.Pop();
    if (ready.is_last) {
      if (!ready.stop_reason.empty()) {
        report.warning = path + ": " + ready.stop_reason + " at byte " + std::to_string(ready.offset) +
                         "; loaded the " + std::to_string(report.blocks) + " whole block(s) before it";
      }
      break;
    }
    std::unique_lock<std::mutex> model_lock;
    if (options.model_mutex != nullptr) model_lock = std::unique_lock(*options.model_mutex);
    uint64_t stream_bytes = ready.compact ? 0 : ready.size;
    const DecodeResult decoded = ready.compact ? DecodeCompactBlock(ready.raw.data(), ready.size, builder, stream_bytes)
                                               : DecodeMessages(ready.raw.data(), ready.size, builder);
    if (model_lock.owns_lock()) model_lock.unlock();
    report.messages += decoded.messages;
    ++report.blocks;  // a malformed block's whole messages before the fault are kept
    if (decoded.failed || decoded.consumed != ready.size) {
      const std::string what =
          decoded.failed ? decoded.error
                         : DescribeTruncation(ready.raw.data() + decoded.consumed, ready.size - decoded.consumed);
      report.warning = path + ": block holds a malformed message (" + what + ") at byte " +
                       std::to_string(ready.offset) + "; loaded the " + std::to_string(report.blocks - 1) +
                       " whole block(s) before it";
      pipeline.Stop();
      break;
    }
    report.raw_bytes += stream_bytes;
    if (options.bytes_done != nullptr) options.bytes_done->store(ready.end_offset);
    pipeline.Recycle(std::move(ready.raw));
  }
  reader.join();
  chunk_memory::BlockReserve::Get().Clear();
  {
    std::unique_lock<std::mutex> model_lock;
    if (options.model_mutex != nullptr) model_lock = std::unique_lock(*options.model_mutex);
    model.ShrinkToFit();
  }
  return report;
}

}  // namespace gnomon::server
