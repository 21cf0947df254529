#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "block_codec.h"
#include "gnomon/protocol/check.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/trace_file.h"

namespace gnomon::server {
namespace {

constexpr size_t kMaxQueuedBlocks = 4;

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

int64_t UnixNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<std::unique_ptr<TraceWriter>> TraceWriter::Create(const std::string& path,
                                                         const TraceWriterOptions& options) {
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
  thread_ = std::thread([this] {
    if (options_.on_thread_start != nullptr) options_.on_thread_start();
    CompressLoop();
  });
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
  GNOMON_CHECK(current_.size <= current_.data.size() && current_.size <= kMaxBlockRawBytes,
               "a block outgrew its buffer or the largest block");
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
    const size_t n =
        ZSTD_compress2(cctx.get(), compressed.data(), compressed.size(), raw.data.data(), raw.size);
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
  const BlockHeader header = MakeBlockHeader(kBlockMagic, blocks_written_, static_cast<uint32_t>(raw_size),
                                             static_cast<uint32_t>(n));
  std::FILE* file = output_->file();
  if (std::fwrite(&header, sizeof(header), 1, file) != 1 || std::fwrite(compressed, 1, n, file) != n ||
      std::fflush(file) != 0) {
    error_ = "cannot write to " + output_->current_path() + ": " + std::strerror(errno);
    return;
  }
  file_bytes_ += sizeof(header) + n;
  ++blocks_written_;
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
    const BlockHeader end = MakeBlockHeader(kEndMagic, blocks_written_, 0, 0);
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
  if (Status copied = CopyFileBytes(output_->current_path(), file_bytes_, *out.value()); !copied.ok())
    return copied;
  const BlockHeader end = MakeBlockHeader(kEndMagic, blocks_written_, 0, 0);
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

}  // namespace gnomon::server
