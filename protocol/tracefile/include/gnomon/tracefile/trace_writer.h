// Writing a trace file (format.h) while a capture runs: TraceWriter, and the zstd levels
// it takes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gnomon/tracefile/format.h"
#include "gnomon/tracefile/output_file.h"
#include "gnomon/tracefile/status.h"

namespace gnomon::tracefile {

// The cores this process may run on (taskset, a container's cpuset), not the host's.
unsigned AllowedCores();

struct TraceWriterOptions {
  size_t block_raw_bytes = 4u << 20;              // a block is cut when it holds this many stream bytes...
  std::chrono::milliseconds max_block_age{1000};  // ...or this age, whichever first
  int compression_level = 3;
  // The level of the blocks a compressing thread takes while the cores are short (it
  // waited runnable for a core at least a quarter as long as it ran, of late), where
  // lower: a capture then takes less of the cores from the programs it records. None:
  // every block at compression_level. Blocks of either level load alike.
  std::optional<int> short_of_cores_level{};
  // Threads that compact and compress blocks, side by side (0: half the cores this
  // process may run on, 1 to 8; at most 64). Blocks reach the file in the order they
  // were cut whatever their number.
  unsigned compress_threads = 0;
  // Run first on each of the writer's compressing threads (a profiled program's own file
  // marks them as the library's, so that their allocations are not the program's).
  void (*on_thread_start)() = nullptr;
  // The file header's flags (format.h: kMergedTrace for a cut of a merged trace).
  uint16_t file_flags = 0;
  // Each block carries its summary (block_summary.h): a reader that counts zones opens
  // the file without decompressing its blocks. Off: none (readers decode every block).
  bool block_summaries = true;
};

// The zstd levels a writer takes: -7 (fastest, largest) to 19 (smallest, slowest).
inline constexpr int kMinCompressionLevel = -7;
inline constexpr int kMaxCompressionLevel = 19;
// `text` as such a level, or nothing (not a whole number, or out of range).
inline std::optional<int> ParseCompressionLevel(const std::string& text) {
  char* end = nullptr;
  const long level = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || level < kMinCompressionLevel || level > kMaxCompressionLevel)
    return std::nullopt;
  return int(level);
}

// The zstd level of the file a viewer writes beside its live model (the one "Save"
// copies), below a capture's 3: the viewer also builds the model, and needs the cores
// (what it saves, and what the files weigh: docs/benchmarks.md).
inline constexpr int kLiveTeeLevel = 1;
// A capture's level while the cores are short (TraceWriterOptions::short_of_cores_level),
// unless told a level: it takes less compressing CPU, leaving more to the programs,
// for files a little larger (the rounds that showed it: docs/benchmarks.md).
inline constexpr int kShortOfCoresLevel = 1;

// Writes a trace file while a capture runs: one stream per program (a capture of one
// program uses only first_stream()). Each stream is appended to from one thread at a
// time, streams from as many threads as there are. Appending only copies the bytes
// into the stream's block (or refers to them where they lie); the writer's own threads
// turn each block into its compact form and compress it, several blocks at once, and
// blocks of all streams go to the file in the order they are handed over (a stream's
// in the order they are cut).
//
// The file is written beside `path` under a temporary name (OutputFile) and appears at
// `path` when Publish() is called: a capture publishes once its program answered, so a
// failed connection never touches what was at `path`. A writer destroyed unpublished
// removes its file (the viewer's live tee is such a writer).
class TraceWriter {
 public:
  static Result<std::unique_ptr<TraceWriter>> Create(const std::string& path,
                                                     const TraceWriterOptions& options = {});
  ~TraceWriter();

  // A buffer of bytes that is never zero-filled: a block's pages are touched only by
  // what is written into them, and a reused one not at all.
  struct Bytes {
    std::unique_ptr<uint8_t[]> data;
    size_t capacity = 0;
    Bytes() = default;
    Bytes(Bytes&& other) noexcept : data(std::move(other.data)), capacity(std::exchange(other.capacity, 0)) {}
    Bytes& operator=(Bytes&& other) noexcept {
      data = std::move(other.data);
      capacity = std::exchange(other.capacity, 0);
      return *this;
    }
    // Room for `size` bytes, keeping the first `keep`.
    void Reserve(size_t size, size_t keep);
  };

 private:
  // A block: its stream, its place among the blocks handed over, and its `size` stream
  // bytes in data[0, size), or in `pieces`; once compressed, its zstd frame in data
  // instead, of the compact form's `size` bytes.
  struct Block {
    uint32_t stream = 0;
    uint32_t stream_sequence = 0;
    uint64_t cut = 0;  // blocks of every stream handed over before it
    Bytes data;
    size_t size = 0;
    size_t compressed_bytes = 0;  // or a zstd error code
    // Its stream bytes in order when some were referred to (Stream::Refer), and what
    // keeps those: let go once the block is compacted.
    std::vector<std::span<const uint8_t>> pieces;
    std::vector<std::shared_ptr<const void>> owners;
  };

 public:
  // One program's messages: its blocks carry its stream number.
  class Stream {
   public:
    // Appends whole messages: a copy into the current block, cut once it holds
    // block_raw_bytes; the compressing threads turn it into its compact form
    // (block_codec.h). Blocks (back-pressure) when compression falls behind.
    void Append(const uint8_t* data, size_t size);
    // Appends `before` (copied, a few bytes), then the whole messages [data, data + size)
    // (at most 16 MiB) where they lie: not copied, they are read from there when their
    // block is compacted, and `owner`, which keeps them there unchanged, is let go then
    // (a piece under 4 KiB is copied, and `owner` let go at once). For appenders whose
    // bytes are already in a buffer of their own (a capture's lanes).
    //
    // A block Refer fills is cut and held, for HandOver(), which the caller calls once
    // outside whatever lock orders its appends (a lane's turn): handing a block over
    // may wait, for room in the queue and for the compressing threads' lock, and a
    // wait inside that lock would hold up every appender behind it. With
    // kMaxHeldBlocks held, Refer hands them over itself, and waits as Append does.
    void Refer(std::span<const uint8_t> before, const uint8_t* data, size_t size,
               std::shared_ptr<const void> owner);
    // Hands the blocks cut and held (by Refer, or by any cut meanwhile) to the
    // compressing threads, in the order cut. From any thread; when another is handing
    // over already, it takes these too and this returns.
    void HandOver() { HandOverCut(false); }
    static constexpr size_t kMaxHeldBlocks = 4;
    // Cuts the current block when it is older than max_block_age, so an idle capture
    // still reaches the disk. Call it periodically from the appending thread.
    void FlushIfOld();
    // The stream is done: its last block is cut now and its buffer freed (appending
    // again starts a new one). From the appending thread.
    void Close();
    // (Another thread may cut the block while one appends: SaveCopy does.)
    uint32_t id() const { return id_; }
    uint64_t raw_bytes() const { return raw_bytes_total_.load(std::memory_order_relaxed); }

   private:
    friend class TraceWriter;
    Stream(TraceWriter& writer, uint32_t id) : writer_(writer), id_(id) {}
    // Cuts the block and hands over every block cut.
    void CutBlock();
    // Under mutex_: the block is cut, held in cut_ until handed over. A busy stream's
    // next block gets a reused buffer (`reuse`); a quiet one keeps none, nor does a
    // closed one: a spare's touched pages would stay with it.
    void CutBlockLocked(bool reuse);
    // Not under mutex_: hands cut_ over. With `wait`, after the thread handing over
    // now, so that every block cut before the call is handed over when it returns.
    void HandOverCut(bool wait);
    // Under mutex_: room for `size` more bytes in the block (cut first when that is past
    // the largest block), `copied` of them in its buffer (grown to at least
    // `least_capacity`).
    void MakeRoomLocked(size_t size, size_t copied, size_t least_capacity);
    // Under mutex_: the block's stream bytes, in its buffer and referred to.
    size_t BlockBytesLocked() const { return size_ + referred_; }
    // Under mutex_, after bytes were added: cuts the block once it is full, or old.
    void CutIfDueLocked();

    TraceWriter& writer_;
    const uint32_t id_;
    std::mutex mutex_;  // the block being filled: taken once a piece, and by a cut from elsewhere
    // A block being filled: the stream bytes appended in data[0, size); once bytes were
    // referred to, its pieces in order, those in data (`at` null) taken from it in turn.
    Bytes data_;
    size_t size_ = 0;
    struct Piece {
      const uint8_t* at;
      size_t size;
    };
    std::vector<Piece> pieces_;
    size_t size_in_pieces_ = 0;  // of data's bytes
    size_t referred_ = 0;        // bytes referred to
    std::vector<std::shared_ptr<const void>> owners_;
    std::chrono::steady_clock::time_point started_;
    std::atomic<uint64_t> raw_bytes_total_{0};
    uint32_t blocks_cut_ = 0;  // the next block's stream_sequence
    // Blocks cut, not yet handed over (under mutex_; held_ mirrors its size, read
    // without the lock), and a reused buffer for the next block, once one was wanted.
    std::vector<Block> cut_;
    std::atomic<size_t> held_{0};
    Bytes next_data_;
    bool wants_spare_ = false;
    std::mutex hand_mutex_;  // one thread hands over at a time: blocks queue in the order cut
  };
  Stream& first_stream() { return *first_; }
  // A new stream, numbered after the last; safe while other streams are appended to.
  Stream& AddStream();
  size_t stream_count() const;

  // Moves the file onto its path (see OutputFile::Publish); writing goes on.
  Status Publish(Overwrite overwrite);
  // Where the file is now: its temporary name until published.
  std::string current_path() const;

  // first_stream().Append() and FlushIfOld().
  void Append(const uint8_t* data, size_t size) { first_stream().Append(data, size); }
  void FlushIfOld() { first_stream().FlushIfOld(); }
  // Writes the last block of every stream and closes the file; no stream may be
  // appended to any more. The first write error, if any.
  Status Finish();

  // Writes what was captured so far to `path` as a complete trace (the first stream's
  // current block cut, every block cut before it written, an end marker added);
  // capturing goes on. From any thread, while another appends (the viewer saves from
  // its window's thread). The copy is published as Publish() does: only a regular file
  // is replaced, when asked.
  Status SaveCopy(const std::string& path, Overwrite overwrite);

  uint64_t file_bytes() const;
  // Stream bytes appended, over all streams.
  uint64_t raw_bytes() const;
  // Blocks compressed, and of those how many at short_of_cores_level.
  uint64_t blocks_compressed() const { return blocks_compressed_.load(std::memory_order_relaxed); }
  uint64_t blocks_short_of_cores() const { return blocks_short_of_cores_.load(std::memory_order_relaxed); }

 private:
  TraceWriter(std::unique_ptr<OutputFile> output, const TraceWriterOptions& options);
  void CompressLoop();

  // Guarded by mutex_ once the compressing threads run, but its file's writes: those
  // are the writing thread's (writing_).
  std::unique_ptr<OutputFile> output_;
  TraceWriterOptions options_;
  unsigned thread_count_;    // compressing threads (fewer when the system gave no more)
  const size_t max_queued_;  // blocks cut and waiting, at most (then appending waits)
  static void AppendSkippableFrame(Block& block, std::span<const uint8_t> summary);
  // Under mutex_ (`lock`), set writing_ first: writes the blocks done in the order cut,
  // unlocking while it writes, until the next one is not done.
  void WriteDoneBlocks(std::unique_lock<std::mutex>& lock);
  bool WriteBlock(const Block& block);  // false (errno set) when the file refused it

  mutable std::mutex mutex_;
  std::condition_variable work_;     // for the compressing threads: a block queued, or fewer in flight
  std::condition_variable room_;     // for a cut: room in the queue
  std::condition_variable written_;  // for SaveCopy: blocks written
  std::deque<std::unique_ptr<Stream>> streams_;  // guarded by mutex_; never shrinks
  Stream* first_ = nullptr;
  std::deque<Block> queue_;
  std::map<uint64_t, Block> done_;  // compressed, waiting for a block cut before them, by cut
  std::vector<Bytes> spare_;        // written blocks' buffers, for reuse (as many as can be in use)
  bool finishing_ = false;
  bool writing_ = false;           // a thread writes blocks to the file (outside the lock)
  unsigned blocks_in_flight_ = 0;  // taken by a compressing thread, not yet written
  uint64_t blocks_cut_ = 0;        // the next block's Block::cut
  uint64_t blocks_written_ = 0;    // the next Block::cut to write (its sequence: the low 32 bits)
  uint64_t file_bytes_ = 0;
  std::atomic<uint64_t> blocks_compressed_{0};
  std::atomic<uint64_t> blocks_short_of_cores_{0};
  std::string error_;
  std::vector<std::thread> threads_;
};

}  // namespace gnomon::tracefile
