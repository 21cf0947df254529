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
  streams_.push_back(std::unique_ptr<Stream>(new Stream(*this, 0)));
  first_ = streams_.front().get();
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

TraceWriter::Stream& TraceWriter::AddStream() {
  std::lock_guard lock(mutex_);
  GNOMON_CHECK(!finishing_, "a stream added to a finished trace");
  streams_.push_back(std::unique_ptr<Stream>(new Stream(*this, uint32_t(streams_.size()))));
  return *streams_.back();
}

size_t TraceWriter::stream_count() const {
  std::lock_guard lock(mutex_);
  return streams_.size();
}

uint64_t TraceWriter::raw_bytes() const {
  std::lock_guard lock(mutex_);
  uint64_t total = 0;
  for (const auto& stream : streams_) total += stream->raw_bytes();
  return total;
}

void TraceWriter::Stream::Append(const uint8_t* data, size_t size) {
  if (size == 0) return;
  // A block never exceeds kMaxBlockRawBytes; Append() only ever gets whole messages,
  // and one piece is far smaller than a block.
  if (size_ + CompactBound(size) > kMaxBlockRawBytes) CutBlock();
  if (size_ == 0) started_ = std::chrono::steady_clock::now();
  const size_t room = size_ + CompactBound(size);
  if (data_.size() < room) data_.resize(std::max(room, data_.size() * 2));
  size_ += CompactMessages(data, size, data_.data() + size_, previous_tick_);
  GNOMON_CHECK(size_ <= data_.size() && size_ <= kMaxBlockRawBytes,
               "a block outgrew its buffer or the largest block");
  stream_bytes_ += size;
  raw_bytes_total_.fetch_add(size, std::memory_order_relaxed);
  if (stream_bytes_ >= writer_.options_.block_raw_bytes ||
      std::chrono::steady_clock::now() - started_ >= writer_.options_.max_block_age) {
    CutBlock();
  }
}

void TraceWriter::Stream::FlushIfOld() {
  if (size_ != 0 && std::chrono::steady_clock::now() - started_ >= writer_.options_.max_block_age) CutBlock();
}

void TraceWriter::Stream::Close() {
  CutBlock();
  data_ = {};
}

void TraceWriter::Stream::CutBlock() {
  if (size_ == 0) return;
  std::unique_lock lock(writer_.mutex_);
  writer_.cv_.wait(lock, [this] { return writer_.queue_.size() < kMaxQueuedBlocks; });
  writer_.queue_.push_back({id_, blocks_cut_++, std::move(data_), size_});
  // A buffer the compressor is done with, rather than fresh pages for every block.
  if (writer_.spare_.empty()) {
    data_ = {};
  } else {
    data_ = std::move(writer_.spare_.back());
    writer_.spare_.pop_back();
  }
  size_ = 0;
  stream_bytes_ = 0;
  previous_tick_ = 0;
  writer_.cv_.notify_all();
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
    WriteBlock(raw, compressed.data(), n);
    if (spare_.size() < kMaxQueuedBlocks) spare_.push_back(std::move(raw.data));
    --blocks_in_flight_;
    cv_.notify_all();
  }
}

void TraceWriter::WriteBlock(const Block& raw, const uint8_t* compressed, size_t n) {
  if (!error_.empty()) return;
  if (ZSTD_isError(n)) {
    error_ = std::string("zstd compression failed: ") + ZSTD_getErrorName(n);
    return;
  }
  const BlockHeader header = MakeBlockHeader(kBlockMagic, blocks_written_, static_cast<uint32_t>(raw.size),
                                             static_cast<uint32_t>(n), raw.stream, raw.stream_sequence);
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
  std::vector<Stream*> streams;
  {
    std::lock_guard lock(mutex_);
    for (const auto& stream : streams_) streams.push_back(stream.get());
  }
  for (Stream* stream : streams) stream->CutBlock();
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
  first_stream().CutBlock();
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
