// Loading a trace file in two stages: a reader thread reads, checks and decompresses
// blocks ahead (at most BlockPipeline::kBlocksAhead, so memory stays bounded), while the
// calling thread decodes them into the model.
//
// Before either starts, every block header is read (IndexBlocks; data is skipped, so
// this costs a read per block): damage is found and skipped, blocks are put in sequence
// order (formats 4 and 5), repeats dropped, gaps noted. Each block goes to the builder
// of its stream (format 5: one per program); a stream not asked for is never read. The loader never trusts a
// size it has not seen backed by bytes: a block's data must lie inside the file, it may expand at most
// max_expansion times, and its buffer grows only as fast as zstd really produces.
#include "gnomon/server/trace_loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "files/trace_index.h"
#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/check.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/tracefile/block_codec.h"
#include "ingest/stream_decoder.h"
#include "model/trace_builder.h"

namespace gnomon::server {
namespace {

// A decompressed block on its way from the reader thread to the model, or the end.
struct ReadyBlock {
  std::vector<uint8_t> raw;  // the block's bytes in raw[0, size): the stream, or its compact form
  size_t size = 0;
  // The file's: from 3 the block is in a compact form (block_codec.h), from 6 it may hold
  // its ticks in a column, from 7 its zone values too.
  uint16_t format = 0;
  IndexedBlock where;
  bool is_last = false;  // nothing follows
  std::string failure;   // why this block cannot be loaded ("" when it can)
  // Loaded from its summary instead (raw is then empty), or why its summary was not
  // taken although it has one.
  bool summarized = false;
  tracefile::BlockSummary summary;
  std::string summary_failure;
};

class BlockPipeline {
 public:
  static constexpr size_t kBlocksAhead = 4;

  explicit BlockPipeline(chunk_memory::BlockReserve& reserve) : reserve_(reserve) {}

  // Reader side: false once the consumer has stopped (the block is dropped).
  // While the queue is full, the reader touches memory that the model will take.
  bool Push(ReadyBlock block) {
    std::unique_lock lock(mutex_);
    while (queue_.size() >= kBlocksAhead && !stopped_) {
      lock.unlock();
      const bool added = reserve_.AddOne();
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
  chunk_memory::BlockReserve& reserve_;  // filled while the queue is full
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<ReadyBlock> queue_;
  std::vector<std::vector<uint8_t>> spare_;
  bool stopped_ = false;
};

// Decodes a compact block (formats 3 and later; `format`, the file's) into the builder,
// the zone records straight from their varints; consumed == size unless a record cannot
// be read (failed, with the reason). stream_bytes grows by the size the decoded messages
// have in the stream.
// With `extent_only` (LoadOptions), events only widen the time range.
DecodeResult DecodeCompactBlock(uint8_t* block, size_t size, uint16_t format, TraceBuilder& builder,
                                uint64_t& stream_bytes, bool extent_only) {
  DecodeResult result;
  uint64_t zone_begins = 0, zone_ends = 0, others = 0;
  auto others_to_builder = [&](const uint8_t* message, size_t length) {
    others += length;
    return DecodeMessages(message, length, builder).consumed == length;
  };
  const tracefile::CompactWalk walk =
      extent_only ? tracefile::WalkCompactBlock(
                        block, size, format,
                        [&](uint32_t, uint64_t tick) {
                          builder.SeeEventTick(true, tick);
                          ++zone_begins;
                          return true;
                        },
                        [&](uint64_t tick) {
                          builder.SeeEventTick(true, tick);
                          ++zone_ends;
                          return true;
                        },
                        [&](uint32_t, uint64_t begin_tick, uint64_t end_tick) {
                          builder.SeeEventTick(true, begin_tick);
                          builder.SeeEventTick(true, end_tick);
                          ++zone_begins;
                          ++zone_ends;
                          return true;
                        },
                        [&](const uint8_t* message, size_t length) {
                          const protocol::MessageInfo& info = protocol::kCatalogue[message[0]];
                          if (!info.is_thread_bound && info.tick_offset == 0)
                            return others_to_builder(message, length);
                          others += length;
                          if (info.tick_offset != 0)
                            builder.SeeEventTick(info.is_thread_bound,
                                                 protocol::LoadLe<uint64_t>(message + info.tick_offset));
                          return true;
                        })
                  : tracefile::WalkCompactBlock(
                        block, size, format,
                        [&](uint32_t location, uint64_t tick) {
                          builder.BeginZone(location, tick);
                          ++zone_begins;
                          return true;
                        },
                        [&](uint64_t tick) {
                          builder.EndZone(tick);
                          ++zone_ends;
                          return true;
                        },
                        [&](uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
                          builder.OnLeafZone(location, begin_tick, end_tick);
                          ++zone_begins;
                          ++zone_ends;
                          return true;
                        },
                        others_to_builder);
  stream_bytes += zone_begins * sizeof(protocol::ZoneBegin) + zone_ends * sizeof(protocol::ZoneEnd) + others;
  result.messages = walk.records;
  result.consumed = walk.stopped_at;
  result.failed = !walk.ok || walk.stopped_at != size;
  result.error = walk.ok ? "a message does not decode" : walk.error;
  return result;
}

// A block from its summary (zones counted, not held): its other messages decoded as a
// compact block's, each segment's zones applied where it ends (before the next
// ThreadContext, or at the end). Counts as DecodeCompactBlock does; a summary whose
// segments and ThreadContexts disagree is a malformed block (what came before the
// disagreement is kept).
DecodeResult ApplyBlockSummary(tracefile::BlockSummary& summary, TraceBuilder& builder,
                               uint64_t& stream_bytes) {
  DecodeResult result;
  size_t segment = 0;
  uint64_t zone_bytes = 0, others = 0, events = 0;
  auto apply = [&](const tracefile::SummarySegment& s) {
    builder.ApplySummary(s, summary.resolution);
    zone_bytes += s.begins * sizeof(protocol::ZoneBegin) + s.ends * sizeof(protocol::ZoneEnd);
    events += s.begins + s.ends;
  };
  auto zone = [](auto&&...) { return false; };  // a summary's other messages hold none
  const tracefile::CompactWalk walk =
      tracefile::WalkCompactBlock(summary.others.data(), summary.others.size(), 7, zone, zone, zone,
                                  [&](const uint8_t* message, size_t length) {
                                    if (message[0] == uint8_t(protocol::MessageType::kThreadContext)) {
                                      if (segment + 1 >= summary.segments.size()) return false;
                                      apply(summary.segments[segment++]);
                                    }
                                    others += length;
                                    return DecodeMessages(message, length, builder).consumed == length;
                                  });
  if (walk.ok && walk.stopped_at == summary.others.size()) apply(summary.segments[segment]);
  stream_bytes += zone_bytes + others;
  result.messages = walk.records + events;
  result.consumed = walk.stopped_at;
  result.failed =
      !walk.ok || walk.stopped_at != summary.others.size() || segment + 1 != summary.segments.size();
  result.error = !walk.ok ? walk.error : "its summary's segments and threads disagree";
  return result;
}

// The summary a block carries (format 8: at the end of its skippable frame), into
// ready.summary: true when it has one that reads; a summary that does not read says why
// in ready.summary_failure (the block is then decompressed).
bool ReadSummary(const TraceSource& source, const IndexedBlock& block, uint32_t max_expansion,
                 FrameDecompressor& decompressor, std::vector<uint8_t>& bytes, ReadyBlock& ready) {
  uint8_t trailer[tracefile::kSummaryTrailer];
  if (block.compressed_bytes < sizeof(trailer) ||
      !source.ReadAt(trailer, sizeof(trailer), block.end_offset() - sizeof(trailer)))
    return false;
  FrameDecompressor::SummaryPlace place = FrameDecompressor::LocateSummary(trailer, block.compressed_bytes);
  if (place.frame_bytes == 0) {
    ready.summary_failure = std::move(place.error);
    return false;
  }
  bytes.resize(place.frame_bytes);
  if (!source.ReadAt(bytes.data(), bytes.size(), block.end_offset() - sizeof(trailer) - bytes.size())) {
    ready.summary_failure = std::string("its summary cannot be read (") + std::strerror(errno) + ")";
    return false;
  }
  return decompressor.ReadSummary(bytes.data(), bytes.size(), max_expansion, ready.summary,
                                  ready.summary_failure);
}

// The reader thread: each indexed block in load order, decompressed and with its tick
// deltas undone (format 2), or with `summaries` read from its summary when it has one,
// then one last ReadyBlock.
void ReadBlocks(const TraceSource& source, const tracefile::FileHeader& header,
                const std::vector<IndexedBlock>& blocks, const LoadOptions& options, bool summaries,
                BlockPipeline& pipeline) {
  FrameDecompressor decompressor;
  std::vector<uint8_t> compressed;
  for (const IndexedBlock& block : blocks) {
    if (pipeline.stopped()) return;
    if (options.cancel != nullptr && options.cancel->load()) {
      ReadyBlock cancelled;
      cancelled.is_last = true;
      cancelled.failure = "loading cancelled";
      pipeline.Push(std::move(cancelled));
      return;
    }
    if (block.rejected) continue;  // counted by the index
    ReadyBlock ready;
    ready.where = block;
    if (summaries && ReadSummary(source, block, std::max<uint32_t>(1, options.max_expansion), decompressor,
                                 compressed, ready)) {
      ready.summarized = true;
      ready.format = header.format_version;
      if (!pipeline.Push(std::move(ready))) return;
      continue;
    }
    // The buffer only grows (no zero-filling per block). A compact block stays compact:
    // the model's thread decodes it directly, which moves 5 bytes a zone between the
    // two threads' caches instead of the stream's 22.
    ready.raw = pipeline.TakeBuffer();
    compressed.resize(block.compressed_bytes);  // inside the file: the index checked
    if (!source.ReadAt(compressed.data(), compressed.size(), block.data_offset())) {
      ready.failure = std::string("cannot be read (") + std::strerror(errno) + ")";
    } else {
      ready.failure = decompressor.Decompress(compressed.data(), compressed.size(), block.raw_bytes,
                                              header.format_version >= 4, ready.raw);
    }
    if (ready.failure.empty()) {
      ready.size = block.raw_bytes;
      ready.format = header.format_version;
      if (header.format_version == 2) tracefile::DecodeTickDeltas(ready.raw.data(), ready.size);
    }
    if (!pipeline.Push(std::move(ready))) return;
  }
  ReadyBlock last;
  last.is_last = true;
  pipeline.Push(std::move(last));
}

// Where a stream's blocks go: the model they build, and the shared model that holds it,
// when others read it as it loads; or, `made_here`, a model of the loader's own, made at
// the stream's first block and handed to AdoptModel after its last, unless it holds
// nothing. Neither: the stream is skipped, its blocks never read.
struct StreamTarget {
  TraceModel* model = nullptr;
  SharedModel* shared = nullptr;
  bool made_here = false;
};
// Given the streams the file holds (ascending), where each goes (same order).
using ChooseTargets = std::function<std::vector<StreamTarget>(const std::vector<uint32_t>& streams, Notes&)>;
// Takes the model a stream built (StreamTarget::made_here), once its last block is in.
using AdoptModel = std::function<void(uint32_t stream, TraceModel&& model)>;

// Whether a model holds anything of a program: not a stream of definitions that define
// nothing, or of events that no thread owns.
bool HoldsAProgram(const TraceModel& model) {
  return model.has_program_info || !model.threads.empty() || model.source_locations.size() > 1 ||
         !model.messages.empty() || !model.frames.empty() || !model.plots.empty() ||
         !model.gpu_contexts.empty() || !model.memory_pools.empty() || !model.locks.empty() ||
         !model.samples.empty() || !model.context_switches.empty() || !model.modules.empty() ||
         !model.host_clock_exchanges.empty() || !model.capture.readings.empty() ||
         model.diagnostics != Diagnostics{};  // faults it counted are said in its report
}

// Loads `source`'s streams into the models `choose` gives; with a shared model, each
// block is decoded under its Write. A stream's builder lives from its first block to its
// last; with `leave_out_empty`, a model made here only as long as that when it holds
// nothing (it is counted, and said): a file of many streams costs what those streams
// hold, not a model and a builder each.
Result<LoadReport> Load(const TraceSource& source, const LoadOptions& options, const ChooseTargets& choose,
                        const AdoptModel& adopt = nullptr, bool leave_out_empty = false) {
  const std::string& name = source.name();
  const uint64_t file_bytes = source.size();
  if (options.bytes_total != nullptr) *options.bytes_total = file_bytes;
  tracefile::FileHeader header{};
  if (!source.ReadAt(&header, sizeof(header), 0) ||
      std::memcmp(header.magic, tracefile::kTraceMagic, sizeof(tracefile::kTraceMagic)) != 0) {
    return Status::Error(name + " is not a Gnomon trace (no GNOMONTF header)");
  }
  if (header.format_version > tracefile::kTraceFormatVersion) {
    return Status::Error(name + " uses trace format " + std::to_string(header.format_version) +
                         "; this build reads up to " + std::to_string(tracefile::kTraceFormatVersion) +
                         ": open it with a newer Gnomon");
  }
  if (header.format_version == 0 || header.header_bytes < sizeof(tracefile::FileHeader) ||
      header.header_bytes > file_bytes) {
    return Status::Error(name + " has a damaged header (format " + std::to_string(header.format_version) +
                         ", header size " + std::to_string(header.header_bytes) + ")");
  }

  LoadReport report;
  Notes notes;
  std::vector<IndexedBlock> blocks = IndexBlocks(
      source, file_bytes, header, std::max<uint32_t>(1, options.max_expansion), report.anomalies, notes);
  // Blocks of absurd sizes (counted by the index) are never read: a stream of none else is none.
  std::erase_if(blocks, [](const IndexedBlock& block) { return block.rejected; });
  // Each stream's builder, from its first block to its last.
  struct StreamState {
    StreamTarget target;
    std::unique_ptr<TraceModel> made;  // StreamTarget::made_here: the model, until adopted
    std::unique_ptr<TraceBuilder> builder;
    uint64_t blocks_left = 0;  // to load
    bool failed = false;       // its previous block failed: the next starts after a gap
  };
  std::map<uint32_t, StreamState> streams;
  for (const IndexedBlock& block : blocks) streams.try_emplace(block.stream);
  if (streams.empty()) streams.try_emplace(0);  // a file without blocks is an empty stream 0
  std::vector<uint32_t> ids;
  for (const auto& [id, state] : streams) ids.push_back(id);
  if (ids.size() >
      tracefile::kMaxTraceStreams) {  // each costs a model: a crafted file of tiny blocks is bounded
    notes.Add("it holds " + std::to_string(ids.size()) + " streams; the first " +
              std::to_string(tracefile::kMaxTraceStreams) + " are loaded");
    ids.resize(tracefile::kMaxTraceStreams);
  }
  report.programs = uint32_t(ids.size());
  const std::vector<StreamTarget> targets = choose(ids, notes);
  GNOMON_CHECK(targets.size() == ids.size(), "a target for every stream");
  for (size_t i = 0; i < ids.size(); ++i) streams[ids[i]].target = targets[i];
  std::erase_if(blocks, [&](const IndexedBlock& block) {
    const StreamTarget& target = streams[block.stream].target;
    return target.model == nullptr && !target.made_here;
  });
  uint64_t blocks_raw_bytes = 0;
  for (const IndexedBlock& block : blocks) {
    ++streams[block.stream].blocks_left;
    blocks_raw_bytes += block.raw_bytes;
  }
  const bool hold_zones = options.zone_memory_limit == UINT64_MAX ||
                          blocks_raw_bytes <= options.zone_memory_limit / kZoneBytesPerStreamByte;
  // Only for an overview (the viewer's): a summary speaks for its block unread, and a
  // report reads every block again for its statistics, exact to the blocks it can read.
  const bool summaries = !hold_zones && options.overview_runs > 0 && options.use_summaries &&
                         !options.extent_only && header.format_version >= 8;
  // Runs f() alone with the stream's model: under its shared model's lock when there is one.
  auto write = [](const StreamTarget& target, auto&& f) {
    if (target.shared != nullptr) {
      target.shared->Write([&](TraceModel&) { f(); });
    } else {
      f();
    }
  };
  const bool merged = (header.flags & tracefile::kMergedTrace) != 0;
  if (merged) {
    for (auto& [id, state] : streams) {
      StreamTarget& target = state.target;
      if (target.model != nullptr) write(target, [&target] { target.model->capture.merged = true; });
    }
  }
  auto begin_stream = [&](StreamState& stream) {
    if (stream.target.made_here) {
      stream.made = std::make_unique<TraceModel>();
      stream.made->capture.merged = merged;
      stream.target.model = stream.made.get();
    }
    stream.builder = std::make_unique<TraceBuilder>(*stream.target.model);
    if (!hold_zones) {
      // The overviews' budget is the file's: each program takes its share.
      const size_t runs = options.overview_runs / std::max<size_t>(1, ids.size());
      write(stream.target, [&stream, runs] { stream.builder->CountZonesOnly(runs); });
    }
  };
  uint64_t left_out = 0;  // streams that held no program
  auto end_stream = [&](uint32_t id, StreamState& stream) {
    if (!hold_zones && stream.builder != nullptr)
      write(stream.target, [&stream] { stream.builder->FinishOverviews(); });
    stream.builder.reset();
    if (stream.made == nullptr) return;
    stream.made->ShrinkToFit();
    if (!leave_out_empty || HoldsAProgram(*stream.made)) {
      adopt(id, std::move(*stream.made));
    } else {
      ++left_out;
    }
    stream.made.reset();
    stream.target.model = nullptr;
  };

  chunk_memory::BlockReserve reserve;  // the reader fills it, this thread's new blocks come from it
  const chunk_memory::UseBlockReserve use_reserve(reserve);
  BlockPipeline pipeline(reserve);
  std::thread reader([&] { ReadBlocks(source, header, blocks, options, summaries, pipeline); });
  while (true) {
    ReadyBlock ready = pipeline.Pop();
    if (ready.is_last) {
      if (!ready.failure.empty()) notes.Add(ready.failure);
      break;
    }
    const IndexedBlock& where = ready.where;
    StreamState& stream = streams[where.stream];
    if (stream.builder == nullptr) begin_stream(stream);
    const bool last_of_stream = --stream.blocks_left == 0;
    if (!ready.failure.empty()) {
      ++report.anomalies.damaged_blocks;
      notes.Add("block " + std::to_string(where.sequence) + " " + At(where.offset) +
                " does not decompress (" + ready.failure + "); skipped");
      stream.failed = true;
      if (last_of_stream) end_stream(where.stream, stream);
      continue;
    }
    if (!ready.summary_failure.empty()) {
      notes.Add("block " + std::to_string(where.sequence) + " " + At(where.offset) + ": " +
                ready.summary_failure + "; decoded the block instead");
    }
    const bool compact = ready.format >= 3;
    uint64_t stream_bytes = compact ? 0 : ready.size;
    DecodeResult decoded;
    write(stream.target, [&] {
      if (where.after_gap || stream.failed) stream.builder->OnStreamGap();
      if (!hold_zones) {
        stream.target.model->block_start_threads[where.sequence] = stream.builder->current_thread_id();
        if (ready.summarized) stream.target.model->summarized_blocks.insert(where.sequence);
        stream.builder->BeginBlock({.sequence = where.sequence,
                                    .data_offset = where.data_offset(),
                                    .compressed_bytes = where.compressed_bytes,
                                    .raw_bytes = where.raw_bytes});
      }
      decoded = ready.summarized ? ApplyBlockSummary(ready.summary, *stream.builder, stream_bytes)
                : compact ? DecodeCompactBlock(ready.raw.data(), ready.size, ready.format, *stream.builder,
                                               stream_bytes, options.extent_only)
                          : DecodeMessages(ready.raw.data(), ready.size, *stream.builder);
      if (!hold_zones) stream.builder->EndBlock();
    });
    stream.failed = false;
    const size_t decoded_size = ready.summarized ? ready.summary.others.size() : ready.size;
    GNOMON_CHECK(decoded.consumed <= decoded_size, "a block decoded past its end");
    report.messages += decoded.messages;
    report.raw_bytes += stream_bytes;
    ++report.blocks;  // a malformed block's whole messages before the fault are kept
    if (ready.summarized) ++report.summarized_blocks;
    if (decoded.failed || decoded.consumed != decoded_size) {
      const std::string what =
          decoded.failed || ready.summarized
              ? decoded.error
              : DescribeTruncation(ready.raw.data() + decoded.consumed, ready.size - decoded.consumed);
      ++report.anomalies.damaged_blocks;
      notes.Add("block " + std::to_string(where.sequence) + " " + At(where.offset) +
                " holds a malformed message (" + what + "); kept the messages before it");
      stream.failed = true;
    }
    if (options.bytes_done != nullptr) options.bytes_done->store(where.end_offset());
    if (!ready.summarized) pipeline.Recycle(std::move(ready.raw));
    if (last_of_stream) end_stream(where.stream, stream);
  }
  pipeline.Stop();
  reader.join();
  for (auto& [id, stream] : streams) {
    if (stream.made != nullptr) end_stream(id, stream);  // a cancelled load: what came is kept
    const StreamTarget& target = stream.target;
    if (target.model != nullptr) write(target, [&target] { target.model->ShrinkToFit(); });
  }
  if (left_out > 0) {
    notes.AddSummary(std::to_string(left_out) + " of its streams held no program's events (left out)");
    report.programs -= uint32_t(std::min<uint64_t>(left_out, report.programs));
  }
  report.warning = notes.Join(name);
  return report;
}

// One stream into `model` (the program-th, by stream number), the others skipped with a
// note.
ChooseTargets ProgramInto(TraceModel& model, SharedModel* shared, uint32_t program,
                          bool others_skipped = true) {
  return [&model, shared, program, others_skipped](const std::vector<uint32_t>& streams, Notes& notes) {
    std::vector<StreamTarget> targets(streams.size());
    const std::string count = std::to_string(streams.size());
    if (program >= streams.size()) {
      notes.Add("it holds " + count + " program(s); there is no program " +
                std::to_string(uint64_t{program} + 1) + ", so nothing was loaded");
    } else {
      targets[program] = {&model, shared};
      if (streams.size() > 1 && others_skipped) {
        notes.Add("it holds " + count + " programs; " +
                  (program == 0 ? std::string("only the first") : "program " + std::to_string(program + 1)) +
                  " is loaded here (gnomon-report shows them all)");
      }
    }
    return targets;
  };
}

}  // namespace

uint64_t DefaultMemoryLimit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  uint64_t memory = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t{16} << 30;
  for (const char* limit : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    uint64_t bytes = 0;
    if (std::ifstream(limit) >> bytes && bytes > 0) memory = std::min(memory, bytes);  // "max": no limit
  }
  return memory / 8;
}

// Opens `path` for reading when it is a regular file. A FIFO is opened without waiting
// for a writer (then refused), so nothing here can block.
Result<TraceSource> TraceSource::OpenFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Status::Error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int error = errno;
    close(fd);
    if (S_ISDIR(st.st_mode)) return Status::Error(path + " is a folder, not a trace file");
    if (S_ISFIFO(st.st_mode))
      return Status::Error(path + " is a FIFO, not a trace file; save the stream to a file first");
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode)) {
      return Status::Error(path + " is a device or socket, not a trace file");
    }
    return Status::Error("cannot read " + path + ": " + std::strerror(error));
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  TraceSource source;
  source.fd_ = fd;
  source.size_ = uint64_t(st.st_size);
  source.name_ = path;
  return source;
}

TraceSource TraceSource::FromBytes(const uint8_t* data, size_t size, std::string name) {
  TraceSource source;
  source.data_ = data;
  source.size_ = size;
  source.name_ = std::move(name);
  return source;
}

TraceSource::TraceSource(TraceSource&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      data_(other.data_),
      size_(other.size_),
      name_(std::move(other.name_)) {}

TraceSource& TraceSource::operator=(TraceSource&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    data_ = other.data_;
    size_ = other.size_;
    name_ = std::move(other.name_);
  }
  return *this;
}

TraceSource::~TraceSource() {
  if (fd_ >= 0) close(fd_);
}

bool TraceSource::ReadAt(void* out, size_t size, uint64_t offset) const {
  if (offset > size_ || size > size_ - offset) return false;
  if (data_ != nullptr || fd_ < 0) {
    if (size > 0) std::memcpy(out, data_ + offset, size);
    return true;
  }
  auto* bytes = static_cast<uint8_t*>(out);
  while (size > 0) {
    const ssize_t n = pread(fd_, bytes, size, off_t(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes += n;
    size -= size_t(n);
    offset += uint64_t(n);
  }
  return true;
}

Result<LoadReport> LoadTrace(const TraceSource& source, TraceModel& model, const LoadOptions& options) {
  return Load(source, options, ProgramInto(model, nullptr, options.program));
}

Result<LoadReport> LoadTrace(const TraceSource& source, SharedModel& model, const LoadOptions& options) {
  return Load(source, options, ProgramInto(model.unshared(), &model, options.program));
}

// Every stream a program of `set`, made as its blocks come (Load), in stream order.
// By itself (`alone`), every program of the file: a stream that held nothing is none,
// and a file of none still has one, empty. Beside a shown one (the viewer), each stream
// keeps its place, as programs are numbered by it.
Result<LoadReport> LoadInto(const TraceSource& source, const LoadOptions& options,
                            const ChooseTargets& choose, TraceSet& set, bool alone) {
  auto adopt = [&set](uint32_t stream, TraceModel&& model) {
    TraceProcess& process = set.processes.emplace_back();
    process.stream = stream;
    process.model = std::move(model);
  };
  Result<LoadReport> loaded = Load(source, options, choose, adopt, alone);
  // Adopted as each stream ended: put back in the file's order.
  std::sort(set.processes.begin(), set.processes.end(),
            [](const TraceProcess& a, const TraceProcess& b) { return a.stream < b.stream; });
  if (loaded.ok() && alone && set.processes.empty()) set.processes.emplace_back();
  return loaded;
}

Result<LoadReport> LoadTraceSet(const TraceSource& source, TraceSet& set, const LoadOptions& options) {
  auto every = [](const std::vector<uint32_t>& streams, Notes&) {
    return std::vector<StreamTarget>(streams.size(), StreamTarget{.made_here = true});
  };
  return LoadInto(source, options, every, set, true);
}

Result<LoadReport> LoadTraceSet(const TraceSource& source, SharedModel& shown, TraceSet& others,
                                const LoadOptions& options) {
  uint32_t shown_stream = 0;
  auto choose = [&](const std::vector<uint32_t>& streams, Notes& notes) {
    if (options.program < streams.size()) shown_stream = streams[options.program];
    std::vector<StreamTarget> targets =
        ProgramInto(shown.unshared(), &shown, options.program, false)(streams, notes);
    for (StreamTarget& target : targets) {
      if (target.model == nullptr) target.made_here = true;
    }
    return targets;
  };
  Result<LoadReport> loaded = LoadInto(source, options, choose, others, false);
  if (loaded.ok()) loaded->shown_stream = shown_stream;
  return loaded;
}

Result<LoadReport> LoadTraceSet(const std::string& path, TraceSet& set, const LoadOptions& options) {
  Result<TraceSource> source = TraceSource::OpenFile(path);
  if (!source.ok()) return source.status();
  return LoadTraceSet(source.value(), set, options);
}

Result<LoadReport> LoadTrace(const std::string& path, TraceModel& model, const LoadOptions& options) {
  Result<TraceSource> source = TraceSource::OpenFile(path);
  if (!source.ok()) return source.status();
  return LoadTrace(source.value(), model, options);
}

}  // namespace gnomon::server
