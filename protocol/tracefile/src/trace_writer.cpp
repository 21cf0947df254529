#include "gnomon/tracefile/trace_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <system_error>
#include <utility>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/check.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/tracefile/block_codec.h"
#include "gnomon/tracefile/block_summary.h"

namespace gnomon::tracefile {
unsigned AllowedCores() {
  cpu_set_t allowed;
  return sched_getaffinity(0, sizeof(allowed), &allowed) == 0
             ? unsigned(CPU_COUNT(&allowed))
             : std::max(1u, std::thread::hardware_concurrency());
}

namespace {

// The most stream bytes a block takes: its compact form (at most CompactBound of them)
// stays under kMaxBlockRawBytes.
constexpr size_t kMaxBlockStreamBytes = 48u << 20;
static_assert(CompactBound(kMaxBlockStreamBytes) <= kMaxBlockRawBytes);
// Pieces Stream::Refer() keeps where they lie: at most this big (a block holds whole
// ones), and from this size (smaller ones are copied).
constexpr size_t kMaxReferredBytes = 16u << 20;
constexpr size_t kLeastReferredBytes = 4096;
static_assert(kMaxReferredBytes <= kMaxBlockStreamBytes);

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

int64_t UnixNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Whether the cores are short, as the calling thread sees it: from the kernel's
// schedstat, the time it ran and the time it waited, runnable, for a core. Short once it
// waited at least a quarter as long as it ran of late (an average in which each look,
// at least 2 ms of running after the last, halves what came before), until that falls
// below a tenth. Never short where the kernel keeps no such counts.
class CoreShortage {
 public:
  CoreShortage() : fd_(open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {
    Read(ran_ns_, waited_ns_);
  }
  ~CoreShortage() {
    if (fd_ >= 0) close(fd_);
  }
  CoreShortage(const CoreShortage&) = delete;
  CoreShortage& operator=(const CoreShortage&) = delete;

  bool Look() {
    uint64_t ran_ns = 0, waited_ns = 0;
    if (!Read(ran_ns, waited_ns) || ran_ns < ran_ns_ + 2'000'000 || waited_ns < waited_ns_) return short_;
    share_ = (share_ + double(waited_ns - waited_ns_) / double(ran_ns - ran_ns_)) / 2;
    ran_ns_ = ran_ns;
    waited_ns_ = waited_ns;
    short_ = share_ >= (short_ ? 0.1 : 0.25);
    return short_;
  }

 private:
  bool Read(uint64_t& ran_ns, uint64_t& waited_ns) const {
    char text[96];
    const ssize_t n = fd_ < 0 ? -1 : pread(fd_, text, sizeof(text) - 1, 0);
    if (n <= 0) return false;
    text[n] = '\0';
    unsigned long long ran = 0, waited = 0;
    if (std::sscanf(text, "%llu %llu", &ran, &waited) != 2) return false;
    ran_ns = ran;
    waited_ns = waited;
    return true;
  }

  const int fd_;
  uint64_t ran_ns_ = 0, waited_ns_ = 0;  // at the last look that counted
  double share_ = 0;                     // time waited for a core over time run, averaged
  bool short_ = false;
};

unsigned CompressThreads(unsigned asked) {
  if (asked != 0) return std::min(asked, 64u);
  return std::clamp(AllowedCores() / 2, 1u, 8u);
}

// The length of the whole messages at the start of [data, data + size) that fit in
// `limit` bytes (at least one message, or `limit` bytes of what is not one).
size_t WholeMessagesWithin(const uint8_t* data, size_t size, size_t limit) {
  size_t taken = 0;
  while (taken < size) {
    const protocol::MessageSpan span = protocol::MeasureMessage(data + taken, size - taken);
    if (span.status != protocol::MessageSpan::kWhole || taken + span.size > limit) break;
    taken += span.size;
  }
  return taken == 0 ? std::min(size, limit) : taken;
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
  header.flags = options.file_flags;
  header.created_unix_ns = UnixNowNs();
  std::FILE* file = output.value()->file();
  if (std::fwrite(&header, sizeof(header), 1, file) != 1 || std::fflush(file) != 0) {
    return Status::Error("cannot write to " + output.value()->current_path() + ": " + std::strerror(errno));
  }
  try {
    return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(output.value()), options));
  } catch (const std::system_error& e) {
    return Status::Error(std::string("cannot start the threads that compress the trace: ") + e.what());
  }
}

TraceWriter::TraceWriter(std::unique_ptr<OutputFile> output, const TraceWriterOptions& options)
    : output_(std::move(output)),
      options_(options),
      thread_count_(CompressThreads(options.compress_threads)),
      max_queued_(thread_count_ + 2),
      file_bytes_(sizeof(FileHeader)) {
  streams_.push_back(std::unique_ptr<Stream>(new Stream(*this, 0)));
  first_ = streams_.front().get();
  try {
    for (unsigned i = 0; i < thread_count_; ++i) {
      threads_.emplace_back([this] {
        pthread_setname_np(pthread_self(), "gnomon-compress");
        if (options_.on_thread_start != nullptr) options_.on_thread_start();
        CompressLoop();
      });
    }
  } catch (const std::system_error&) {
    if (threads_.empty()) throw;  // nothing started: Create() says why
    std::lock_guard lock(mutex_);
    thread_count_ = unsigned(threads_.size());  // the system gave fewer: go on with those
  }
}

void TraceWriter::Bytes::Reserve(size_t size, size_t keep) {
  if (size <= capacity) return;
  const size_t grown = std::max(size, capacity * 2);
  std::unique_ptr<uint8_t[]> bigger(new uint8_t[grown]);  // not zero-filled
  if (keep > 0) std::memcpy(bigger.get(), data.get(), keep);
  data = std::move(bigger);
  capacity = grown;
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
  if (!threads_.empty()) Finish();
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
  while (size > 0) {
    // A piece too big for one block (a backlog let go at once) is split between messages.
    const size_t piece =
        size <= kMaxBlockStreamBytes ? size : WholeMessagesWithin(data, size, kMaxBlockStreamBytes);
    {
      std::lock_guard lock(mutex_);
      // Grown as it fills (a quiet stream's block stays small); a busy stream's blocks
      // come in buffers reused whole.
      MakeRoomLocked(piece, piece, size_t{64} << 10);
      std::memcpy(data_.data.get() + size_, data, piece);
      size_ += piece;
      raw_bytes_total_.fetch_add(piece, std::memory_order_relaxed);
      CutIfDueLocked();
    }
    data += piece;
    size -= piece;
    HandOverCut(held_.load() >= kMaxHeldBlocks);
  }
}

void TraceWriter::Stream::Refer(std::span<const uint8_t> before, const uint8_t* data, size_t size,
                                std::shared_ptr<const void> owner) {
  GNOMON_CHECK(size <= kMaxReferredBytes, "a piece referred to past 16 MiB");
  {
    std::lock_guard lock(mutex_);
    // A small piece is copied: keeping track of it would cost more (and a program that
    // sends its bytes a message at a time would fill memory with pieces, not bytes).
    const bool referred = size >= kLeastReferredBytes;
    const size_t copied = before.size() + (referred ? 0 : size);
    MakeRoomLocked(before.size() + size, copied, size_t{64} << 10);
    if (!before.empty()) std::memcpy(data_.data.get() + size_, before.data(), before.size());
    if (!referred && size > 0) std::memcpy(data_.data.get() + size_ + before.size(), data, size);
    size_ += copied;
    if (referred) {
      if (size_ > size_in_pieces_) {
        pieces_.push_back({nullptr, size_ - size_in_pieces_});
        size_in_pieces_ = size_;
      }
      pieces_.push_back({data, size});
      referred_ += size;
      // A lane's batches follow one another in its buffer: one owner for many of them.
      if (owners_.empty() || owners_.back() != owner) owners_.push_back(std::move(owner));
    }
    raw_bytes_total_.fetch_add(before.size() + size, std::memory_order_relaxed);
    CutIfDueLocked();
  }
  if (held_.load() >= kMaxHeldBlocks) HandOverCut(true);  // the caller hands over too seldom
}

void TraceWriter::Stream::MakeRoomLocked(size_t size, size_t copied, size_t least_capacity) {
  if (BlockBytesLocked() + size > kMaxBlockStreamBytes) CutBlockLocked(true);
  if (size_ + copied > data_.capacity) data_.Reserve(std::max(size_ + copied, least_capacity), size_);
  if (BlockBytesLocked() == 0) started_ = std::chrono::steady_clock::now();
}

void TraceWriter::Stream::CutIfDueLocked() {
  if (BlockBytesLocked() >= writer_.options_.block_raw_bytes) {
    CutBlockLocked(true);
  } else if (std::chrono::steady_clock::now() - started_ >= writer_.options_.max_block_age) {
    CutBlockLocked(false);
  }
}

void TraceWriter::Stream::FlushIfOld() {
  {
    std::lock_guard lock(mutex_);
    if (BlockBytesLocked() != 0 &&
        std::chrono::steady_clock::now() - started_ >= writer_.options_.max_block_age) {
      CutBlockLocked(false);
    }
  }
  HandOverCut(false);  // and what a quiet appender left held
}

void TraceWriter::Stream::Close() {
  CutBlock();
  // No hand-over runs now: none gives this stream a buffer after it let go of its own.
  std::scoped_lock lock(hand_mutex_, mutex_);
  data_ = {};
  next_data_ = {};
  wants_spare_ = false;
}

void TraceWriter::Stream::CutBlock() {
  {
    std::lock_guard lock(mutex_);
    CutBlockLocked(false);
  }
  HandOverCut(true);
}

void TraceWriter::Stream::CutBlockLocked(bool reuse) {
  if (BlockBytesLocked() == 0) return;
  Block& block = cut_.emplace_back();
  block.stream = id_;
  block.stream_sequence = blocks_cut_++;
  block.data = std::move(data_);
  block.size = BlockBytesLocked();
  if (!pieces_.empty()) {
    if (size_ > size_in_pieces_) pieces_.push_back({nullptr, size_ - size_in_pieces_});
    const uint8_t* appended = block.data.data.get();
    for (const Piece& piece : pieces_) {
      block.pieces.emplace_back(piece.at != nullptr ? piece.at : appended, piece.size);
      if (piece.at == nullptr) appended += piece.size;
    }
    block.owners = std::move(owners_);
    pieces_.clear();
    owners_.clear();
    size_in_pieces_ = 0;
    referred_ = 0;
  }
  // A buffer a compressing thread is done with, rather than fresh pages for every block:
  // the one the last hand-over brought, and the next hand-over brings another.
  if (reuse) {
    if (next_data_.capacity > 0) data_ = std::move(next_data_);
    wants_spare_ = true;
  } else {
    next_data_ = {};
  }
  size_ = 0;
  held_.store(cut_.size());
}

void TraceWriter::Stream::HandOverCut(bool wait) {
  std::unique_lock hand(hand_mutex_, std::defer_lock);
  // Waiting, the lock comes first, whatever is held now: a hand-over under way has taken
  // blocks it has not queued yet, and those were cut before this call too.
  if (wait) hand.lock();
  // Not waiting, a thread handing over takes these too: it looks again once done.
  while (hand.owns_lock() || (held_.load() > 0 && hand.try_lock())) {
    std::vector<Block> blocks;
    bool wants_spare = false;
    {
      std::lock_guard lock(mutex_);
      blocks.swap(cut_);
      held_.store(0);
      wants_spare = std::exchange(wants_spare_, false);
    }
    Bytes spare;
    {
      std::unique_lock lock(writer_.mutex_);
      for (Block& block : blocks) {
        writer_.room_.wait(lock, [this] { return writer_.queue_.size() < writer_.max_queued_; });
        block.cut = writer_.blocks_cut_++;
        writer_.queue_.push_back(std::move(block));
        writer_.work_.notify_one();
      }
      if (wants_spare && !writer_.spare_.empty()) {
        spare = std::move(writer_.spare_.back());
        writer_.spare_.pop_back();
      }
    }
    if (spare.capacity > 0) {
      std::lock_guard lock(mutex_);
      if (next_data_.capacity == 0) next_data_ = std::move(spare);
    }
    hand.unlock();
  }
}

// After the block's frame, one skippable frame (format.h) when there is something to
// carry: the block's summary (block_summary.h, `summary` its zstd frame) at its end, and
// zeros before that when the block would otherwise decompress more than
// kWriterMaxExpansion times its compressed size, so that no reader takes what this
// writer made for a decompression bomb.
void TraceWriter::AppendSkippableFrame(Block& block, std::span<const uint8_t> summary) {
  if (ZSTD_isError(block.compressed_bytes)) return;
  const size_t least = (block.size + kWriterMaxExpansion - 1) / kWriterMaxExpansion;
  const size_t carried = summary.empty() ? 0 : summary.size() + kSummaryTrailer;
  if (carried == 0 && block.compressed_bytes >= least) return;
  const size_t frame_bytes = std::max(kSkippableFrameHeader + carried,
                                      least > block.compressed_bytes ? least - block.compressed_bytes : 0);
  block.data.Reserve(block.compressed_bytes + frame_bytes, block.compressed_bytes);
  uint8_t* frame = block.data.data.get() + block.compressed_bytes;
  protocol::StoreLe<uint32_t>(frame, carried == 0 ? kSkippableFrameMagic : kSummaryFrameMagic);
  protocol::StoreLe<uint32_t>(frame + 4, uint32_t(frame_bytes - kSkippableFrameHeader));
  const size_t zeros = frame_bytes - kSkippableFrameHeader - carried;
  std::memset(frame + kSkippableFrameHeader, 0, zeros);
  if (carried != 0) {
    uint8_t* at = frame + kSkippableFrameHeader + zeros;
    std::memcpy(at, summary.data(), summary.size());
    protocol::StoreLe<uint32_t>(at + summary.size(), uint32_t(summary.size()));
    protocol::StoreLe<uint32_t>(at + summary.size() + 4, kSummaryMagic);
  }
  block.compressed_bytes += frame_bytes;
}

void TraceWriter::CompressLoop() {
  std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx(ZSTD_createCCtx());
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, options_.compression_level);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  const bool adapts =
      options_.short_of_cores_level && *options_.short_of_cores_level < options_.compression_level;
  std::optional<CoreShortage> shortage;
  if (adapts) shortage.emplace();
  bool cheaper = false;  // the level now is short_of_cores_level
  Bytes compact;         // the block's compact form
  Bytes ticks;           // its tick column, while it is built
  Bytes summary_frame;   // its summary, compressed
  BlockSummary summary;
  while (true) {
    Block block;
    {
      std::unique_lock lock(mutex_);
      // A compressed block waits for those cut before it; with twice as many blocks
      // taken as there are threads, one of those is slow: wait for it rather than hold more.
      work_.wait(lock,
                 [this] { return queue_.empty() ? finishing_ : blocks_in_flight_ < 2 * thread_count_; });
      if (queue_.empty()) return;
      block = std::move(queue_.front());
      queue_.pop_front();
      ++blocks_in_flight_;
      room_.notify_one();  // one block's room
    }
    compact.Reserve(CompactBound(block.size), 0);
    ticks.Reserve(CompactBound(block.size), 0);
    const std::span<const uint8_t> whole(block.data.data.get(), block.size);
    const std::span<const std::span<const uint8_t>> pieces =
        block.pieces.empty() ? std::span<const std::span<const uint8_t>>(&whole, 1) : block.pieces;
    bool summarized = false;  // the summary is made as the block is compacted
    if (options_.block_summaries) {
      block.size = CompactAndSummarize(pieces, compact.data.get(), ticks.data.get(), summary, summarized);
    } else {
      block.size = CompactBlock(pieces, compact.data.get(), ticks.data.get());
    }
    block.pieces.clear();
    block.owners.clear();  // what was referred to is read: its owners may use it again
    if (adapts && shortage->Look() != cheaper) {
      cheaper = !cheaper;
      ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel,
                             cheaper ? *options_.short_of_cores_level : options_.compression_level);
    }
    blocks_compressed_.fetch_add(1, std::memory_order_relaxed);
    if (cheaper) blocks_short_of_cores_.fetch_add(1, std::memory_order_relaxed);
    block.data.Reserve(ZSTD_compressBound(block.size), 0);  // the stream bytes are done with
    block.compressed_bytes = ZSTD_compress2(cctx.get(), block.data.data.get(), block.data.capacity,
                                            compact.data.get(), block.size);
    size_t summary_bytes = 0;
    if (summarized && !ZSTD_isError(block.compressed_bytes)) {
      const std::vector<uint8_t> bytes = EncodeSummary(summary);
      summary_frame.Reserve(ZSTD_compressBound(bytes.size()), 0);
      summary_bytes = ZSTD_compress2(cctx.get(), summary_frame.data.get(), summary_frame.capacity,
                                     bytes.data(), bytes.size());
      // Only a summary readers take (a block of regular non-zone messages may compress
      // past their limits): else none, and the block is decoded.
      if (ZSTD_isError(summary_bytes) || bytes.size() > kMaxSummaryBytes ||
          bytes.size() > summary_bytes * kWriterMaxExpansion)
        summary_bytes = 0;
    }
    AppendSkippableFrame(block, {summary_frame.data.get(), summary_bytes});
    std::unique_lock lock(mutex_);
    done_.emplace(block.cut, std::move(block));
    // Whoever compressed the oldest block writes it and those done after it, outside the
    // lock, so that cutting and taking blocks never wait for the disk; one thread writes
    // at a time, and it also writes what others finish meanwhile. The file keeps the
    // order of cutting, and no thread waits for another.
    if (writing_) continue;
    writing_ = true;
    WriteDoneBlocks(lock);
    writing_ = false;
  }
}

void TraceWriter::WriteDoneBlocks(std::unique_lock<std::mutex>& lock) {
  std::vector<Block> ready;
  while (true) {
    for (auto next = done_.find(blocks_written_); next != done_.end();
         next = done_.find(blocks_written_ + ready.size())) {
      ready.push_back(std::move(next->second));
      done_.erase(next);
    }
    if (ready.empty()) return;
    const bool failed = !error_.empty();
    lock.unlock();
    uint64_t written_bytes = 0;
    int write_errno = 0;
    size_t compress_error = 0;
    for (const Block& block : ready) {
      if (failed || write_errno != 0 || compress_error != 0) break;  // the file ends at the first error
      if (ZSTD_isError(block.compressed_bytes)) {
        compress_error = block.compressed_bytes;
      } else if (!WriteBlock(block)) {
        write_errno = errno;
      } else {
        written_bytes += sizeof(BlockHeader) + block.compressed_bytes;
      }
    }
    lock.lock();
    if (compress_error != 0)
      error_ = std::string("zstd compression failed: ") + ZSTD_getErrorName(compress_error);
    if (write_errno != 0)
      error_ = "cannot write to " + output_->current_path() + ": " + std::strerror(write_errno);
    file_bytes_ += written_bytes;
    blocks_written_ += ready.size();
    blocks_in_flight_ -= unsigned(ready.size());
    // Kept for the blocks to come (those queued, taken, and each stream's own); a
    // capture of many programs that come and go frees the rest.
    for (Block& block : ready) {
      if (spare_.size() < max_queued_ + 2 * thread_count_) spare_.push_back(std::move(block.data));
    }
    ready.clear();
    if (!queue_.empty()) work_.notify_all();  // those that waited for fewer blocks in flight
    written_.notify_all();
  }
}

bool TraceWriter::WriteBlock(const Block& block) {
  const BlockHeader header =
      MakeBlockHeader(kBlockMagic, uint32_t(block.cut), static_cast<uint32_t>(block.size),
                      static_cast<uint32_t>(block.compressed_bytes), block.stream, block.stream_sequence);
  std::FILE* file = output_->file();
  // (A failed write is remembered by the file: what the buffer lost is never counted.)
  return std::fwrite(&header, sizeof(header), 1, file) == 1 &&
         std::fwrite(block.data.data.get(), 1, block.compressed_bytes, file) == block.compressed_bytes &&
         std::fflush(file) == 0 && !std::ferror(file);
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
    work_.notify_all();
  }
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  std::lock_guard lock(mutex_);
  if (output_->file() != nullptr && error_.empty()) {
    const BlockHeader end = MakeBlockHeader(kEndMagic, uint32_t(blocks_written_), 0, 0);
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
  // Every block cut so far written (not the whole pipeline idle: a busy capture never is);
  // file_bytes_ counts whole blocks only (a block being written lies past it).
  const uint64_t cut = blocks_cut_;
  written_.wait(lock, [&] { return blocks_written_ >= cut || !error_.empty(); });
  if (!error_.empty()) return Status::Error(error_);
  // Those blocks are in the file for good: they are copied while writing goes on.
  const std::string from = output_->current_path();
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(from.c_str(), "rb"), std::fclose);
  if (in == nullptr) return Status::Error("cannot read " + from + ": " + std::strerror(errno));
  const uint64_t bytes = file_bytes_;
  const BlockHeader end = MakeBlockHeader(kEndMagic, uint32_t(blocks_written_), 0, 0);
  lock.unlock();
  auto out = OutputFile::Create(path);
  if (!out.ok()) return out.status();
  if (Status copied = CopyFileBytes(in.get(), from, bytes, *out.value()); !copied.ok()) return copied;
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

}  // namespace gnomon::tracefile
