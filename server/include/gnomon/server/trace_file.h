// The .gnomon trace file: the message streams of one or more programs in zstd-compressed
// blocks.
//
// Layout (docs/trace-format.md gives every byte):
//   FileHeader (32 bytes), then blocks: BlockHeader (28 bytes) + one zstd frame,
//   then an end marker (a BlockHeader with magic GEND and no data) once the capture
//   finished; a file without it was cut short, and the loader says so.
// Each block holds whole messages of one program's stream (its `stream` number), is
// compressed on its own with a content checksum, carries its sequence number (one count
// over the file's blocks), and is written while the capture runs: a capture that
// is killed, or a file cut off at any byte, still loads up to its last whole block.
// Loading replays the stream through the same decoder that live connections use, so a
// saved trace and a live one build the same model; damage (a block lost, repeated,
// moved, corrupted, bytes after the end) is found, counted and reported, and everything
// sound around it still loads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
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

#include "gnomon/server/output_file.h"
#include "gnomon/server/shared_model.h"
#include "gnomon/server/status.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

inline constexpr char kTraceMagic[8] = {'G', 'N', 'O', 'M', 'O', 'N', 'T', 'F'};
// 1: blocks hold the stream as received. 2: CPU ticks delta-encoded in each block.
// 3: zone begins and ends as varints besides (block_codec.h). 4: blocks numbered, the end
// marker counts them. 5: each block names its stream (a capture of several programs).
// 6: a block may hold its zones' ticks in a column after its records. 7: and its zone
// values' differences. Readers load all seven.
inline constexpr uint16_t kTraceFormatVersion = 7;
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
// stream of perfectly regular ticks) ends with a zstd skippable frame of padding.
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
// copies), below a capture's 3: the viewer also builds the model, and needs the cores.
// On the 16-core host, 16 threads (benchmarks.md), it compressed with 30 - 40 % less CPU
// (1.5 - 1.7 s against 2.4 - 2.9 for 80 M tight zones; 4.2 - 4.6 s against 6.2 - 6.5
// realistic), for files as small tight and 8 % larger realistic.
inline constexpr int kLiveTeeLevel = 1;
// A capture's level while the cores are short (TraceWriterOptions::short_of_cores_level),
// unless told a level: on the 16-core host, 16 threads, five rounds of level 1 against 3
// compressed with 18 - 43 % less CPU and took 4 - 34 % more zones a second into the
// file, for files as small tight and 4 - 9 % larger realistic (benchmarks.md).
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
  static void PadToExpansionLimit(Block& block);
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

// What a load found wrong with a file, counted. Each kind also has a line in
// LoadReport::warning; nothing here stops the sound blocks around it from loading.
struct FileAnomalies {
  bool truncated = false;              // the file ends inside a block or its header
  bool has_end_marker = false;         // the capture finished writing it
  uint64_t damaged_bytes = 0;          // skipped where no block header could be read
  uint64_t damaged_blocks = 0;         // do not decompress, or hold a malformed message
  uint64_t rejected_blocks = 0;        // absurd sizes, or more expansion than allowed
  uint64_t duplicate_blocks = 0;       // a sequence number seen before (format 4)
  uint64_t reordered_blocks = 0;       // found before a block they follow (loaded in order)
  uint64_t missing_blocks = 0;         // sequence numbers never found (format 4)
  uint64_t misplaced_end_markers = 0;  // an end marker with blocks after it, or a wrong count
  uint64_t trailing_bytes = 0;         // after the end marker, not blocks
  bool any() const {
    return truncated || !has_end_marker || damaged_bytes || damaged_blocks || rejected_blocks ||
           duplicate_blocks || reordered_blocks || missing_blocks || misplaced_end_markers || trailing_bytes;
  }
};

struct LoadReport {
  uint64_t blocks = 0;     // loaded
  uint64_t raw_bytes = 0;  // of the stream the blocks held
  uint64_t messages = 0;
  FileAnomalies anomalies;
  std::string warning;    // "" for a sound file; else one sentence per anomaly, with bytes
  uint32_t programs = 0;  // streams in the file: programs captured (1 for a file of one)
};

struct LoadOptions {
  std::atomic<uint64_t>* bytes_done = nullptr;    // progress, for a progress bar
  uint64_t* bytes_total = nullptr;                // set once the file is opened
  std::atomic<bool>* cancel = nullptr;            // stop between blocks when set
  uint32_t max_expansion = kDefaultMaxExpansion;  // see kDefaultMaxExpansion
  uint32_t program = 0;  // which program LoadTrace loads: 0 the first, by stream number
};

// Where a trace's bytes come from: a regular file, or bytes in memory (a trace received
// over a pipe, embedded in a test, or handed over by a program). Movable; a file source
// owns its descriptor.
class TraceSource {
 public:
  // Opens `path` when it is a regular file. A FIFO is opened without waiting for a
  // writer, then refused (a read would block forever), as are devices and folders.
  static Result<TraceSource> OpenFile(const std::string& path);
  // Bytes that outlive the source; `name` is what messages call it.
  static TraceSource FromBytes(const uint8_t* data, size_t size, std::string name = "the trace in memory");

  TraceSource(TraceSource&& other) noexcept;
  TraceSource& operator=(TraceSource&& other) noexcept;
  TraceSource(const TraceSource&) = delete;
  TraceSource& operator=(const TraceSource&) = delete;
  ~TraceSource();

  // Reads exactly `size` bytes at `offset`; false past the end or on a read error
  // (errno says which). Thread-safe.
  bool ReadAt(void* out, size_t size, uint64_t offset) const;
  uint64_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  TraceSource() = default;
  int fd_ = -1;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  std::string name_;
};

// Reads a trace into `model`. Fails (with nothing loaded) when the source is not a
// Gnomon trace. Damage anywhere after the file header loads everything sound, in
// sequence order, and says what was wrong in LoadReport (warning and anomalies).
Result<LoadReport> LoadTrace(const TraceSource& source, TraceModel& model, const LoadOptions& options = {});
// The same into a model others read while it loads: each block is decoded under
// model.Write, so readers see it grow block by block.
Result<LoadReport> LoadTrace(const TraceSource& source, SharedModel& model, const LoadOptions& options = {});
// The file at `path` (TraceSource::OpenFile) into `model`.
Result<LoadReport> LoadTrace(const std::string& path, TraceModel& model, const LoadOptions& options = {});
// The three above load a file's first program (LoadOptions::program another); a file of
// several (a capture of several programs) says so in LoadReport::warning.

// Every program of a trace: a capture of several programs has a stream for each.
struct TraceProcess {
  uint32_t stream = 0;  // as the file numbers it
  TraceModel model;
};
struct TraceSet {
  std::deque<TraceProcess> processes;  // by stream; stable addresses
};
// Reads every stream of a trace, each into its own model; damage as LoadTrace says.
Result<LoadReport> LoadTraceSet(const TraceSource& source, TraceSet& set, const LoadOptions& options = {});
// The same, the program LoadOptions::program names into `shown` (others read it as it
// loads, as LoadTrace's SharedModel), every other into `others`.
Result<LoadReport> LoadTraceSet(const TraceSource& source, SharedModel& shown, TraceSet& others,
                                const LoadOptions& options = {});
Result<LoadReport> LoadTraceSet(const std::string& path, TraceSet& set, const LoadOptions& options = {});

}  // namespace gnomon::server
