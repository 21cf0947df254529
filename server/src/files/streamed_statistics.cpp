#include "gnomon/server/streamed_statistics.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "analysis/zone_accumulator.h"
#include "files/block_walk.h"
#include "files/trace_index.h"
#include "gnomon/tracefile/format.h"

namespace gnomon::server {
namespace {

static_assert(kExactMedianZones == analysis::kValuesBeforeHistogram);

// A zone begun and not yet ended.
struct Open {
  uint32_t location;
  uint64_t begin_tick;
  int64_t begin_ns;
  int64_t children;  // ns in the zones closed inside it
};

// One program's zones (its model loaded without them), and how its locations are numbered.
struct Program {
  explicit Program(const TraceModel& m) : model(m) {
    for (const auto& [id, index] : model.location_index) {
      if (id >= location_of_id.size()) location_of_id.resize(size_t{id} + 1, 0);
      location_of_id[id] = index;
    }
  }
  // As the builder numbered it; an id it never saw (0, or past the limit) is "unknown".
  uint32_t Location(uint32_t id) const {
    return id < location_of_id.size() && location_of_id[id] < model.source_locations.size()
               ? location_of_id[id]
               : 0;
  }
  // The zone `open` ended at `tick`, in ns, as the held zone reads (ZoneArray): an end
  // before its begin makes a zone of 0; -1 for what it reads as no duration (an end at
  // kOpenZone, which it takes for open; a tick past the clock's range).
  int64_t Duration(const Open& open, uint64_t tick) const {
    const uint64_t end = std::max(tick, open.begin_tick);
    if (end == kOpenZone) return -1;
    const int64_t duration = model.clock.TickToNs(end) - open.begin_ns;
    return duration < 0 ? -1 : duration;
  }
  const TraceModel& model;
  std::vector<uint32_t> location_of_id;  // the program's id -> index in source_locations
};

using Figures = std::vector<analysis::ZoneAccumulator>;  // by location index

// The second pass's threads: at most this many, and within this much memory together.
constexpr size_t kMaxWorkers = 16;
constexpr size_t kWorkersBytes = size_t{512} << 20;

[[gnu::always_inline]] inline void Close(const Program& program, const Open& open, uint64_t tick,
                                         Figures& figures, Open* parent, int64_t* loose) {
  const int64_t duration = program.Duration(open, tick);
  if (duration < 0) return;  // counted nowhere, as held; nor its children towards it
  figures[open.location].Add(duration);
  figures[open.location].AddSelf(duration, open.children);
  int64_t& into = parent != nullptr ? parent->children : *loose;
  into = analysis::AddSaturated(into, duration);
}

// What one block says of one thread's zones, walked apart from the blocks before it:
// the zones it ends that began before it (each with the time of the block's zones
// closed beside it before that end), the time of those closed after the last such end,
// and the zones still open at its end. Every zone begun and ended in the block is
// already counted.
struct ThreadPart {
  struct EarlierEnd {
    uint64_t tick;
    int64_t children;  // ns of the block's zones closed inside that zone
  };
  std::vector<Open> stack;  // begun in the block, still open
  std::vector<EarlierEnd> earlier_ends;
  int64_t loose = 0;  // ns of the block's zones closed inside the zone open before it
};

// A block walked apart (WalkBlock's walker): it starts on the thread the load found it
// starting on.
class BlockWalk {
 public:
  BlockWalk(const Program& program, uint32_t thread, Figures& figures)
      : program_(program), figures_(figures) {
    Switch(thread);
  }
  [[gnu::always_inline]] void Begin(uint32_t location, uint64_t tick) {
    if (ThreadPart* part = Current()) part->stack.push_back({program_.Location(location), tick, Ns(tick), 0});
  }
  // Most zones of a big trace: begun and ended with nothing between.
  [[gnu::always_inline]] void Leaf(uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
    ThreadPart* part = Current();
    if (part == nullptr) return;
    Close(program_, {program_.Location(location), begin_tick, Ns(begin_tick), 0}, end_tick, figures_,
          part->stack.empty() ? nullptr : &part->stack.back(), &part->loose);
  }
  [[gnu::always_inline]] void End(uint64_t tick) {
    ThreadPart* part = Current();
    if (part == nullptr) return;
    std::vector<Open>& stack = part->stack;
    if (stack.empty()) {
      part->earlier_ends.push_back({tick, std::exchange(part->loose, 0)});
      return;
    }
    const Open open = stack.back();
    stack.pop_back();
    Close(program_, open, tick, figures_, stack.empty() ? nullptr : &stack.back(), &part->loose);
  }
  void Message(const uint8_t* m, size_t) {
    switch (protocol::MessageType(m[0])) {
      case protocol::MessageType::kThreadContext:
        return Switch(ReadMessage<protocol::ThreadContext>(m).thread_id);
      case protocol::MessageType::kZoneBegin: {  // formats 1 and 2
        const auto begin = ReadMessage<protocol::ZoneBegin>(m);
        return Begin(begin.srcloc_id, begin.tick);
      }
      case protocol::MessageType::kZoneEnd:
        return End(ReadMessage<protocol::ZoneEnd>(m).tick);
      default:
        return;
    }
  }
  std::map<uint32_t, ThreadPart> TakeParts() { return std::move(parts_); }

 private:
  int64_t Ns(uint64_t tick) const { return program_.model.clock.TickToNs(tick); }
  void Switch(uint32_t thread) {
    // None (0), or a thread the load refused or never gave an event, holds no zone.
    thread_ = thread != 0 && program_.model.thread_index.contains(thread) ? thread : 0;
    current_ = nullptr;
  }
  // The current thread's part, made at its first zone event; nullptr without a thread.
  ThreadPart* Current() {
    if (current_ == nullptr && thread_ != 0) current_ = &parts_[thread_];
    return current_;
  }
  const Program& program_;
  Figures& figures_;
  std::map<uint32_t, ThreadPart> parts_;  // by the program's thread id; stable
  uint32_t thread_ = 0;
  ThreadPart* current_ = nullptr;
};

// The rows of one program's figures, sorted; zones never closed count nowhere.
std::vector<ZoneStatistics> Rows(Figures& by_location) {
  std::vector<ZoneStatistics> rows;
  for (uint32_t id = 0; id < by_location.size(); ++id) {
    analysis::ZoneAccumulator& figures = by_location[id];
    const uint64_t n = figures.stats.count;
    if (n == 0) continue;
    const uint64_t upper_rank = n / 2, lower_rank = n % 2 == 0 ? n / 2 - 1 : n / 2;
    analysis::DurationSet& durations = figures.durations;
    int64_t error = 0;
    auto value = [&](uint64_t rank) {
      // Exact while the values are kept; else the middle of the rank's bucket.
      if (!durations.has_histogram()) return durations.values()[rank];
      const size_t bucket = durations.FindRank(rank).first;
      const int64_t half = int64_t(analysis::BucketWidth(bucket) / 2);
      error = std::max(error, half);
      return int64_t(analysis::BucketLow(bucket)) + half;
    };
    if (!durations.has_histogram()) durations.SortValues();
    ZoneStatistics row = figures.Finish(id, value(lower_rank), value(upper_rank));
    row.median_error_ns = error;
    rows.push_back(row);
  }
  analysis::SortByTotal(rows);
  return rows;
}

}  // namespace

Result<std::vector<std::vector<ZoneStatistics>>> StreamZoneStatistics(const TraceSource& source,
                                                                      const TraceSet& set,
                                                                      const LoadOptions& options) {
  tracefile::FileHeader header{};
  if (!source.ReadAt(&header, sizeof(header), 0)) return Status::Error("cannot read " + source.name());
  FileAnomalies anomalies;
  Notes notes;  // said by the load, which indexed the same blocks
  const std::vector<IndexedBlock> blocks = IndexBlocks(
      source, source.size(), header, std::max<uint32_t>(1, options.max_expansion), anomalies, notes);
  std::map<uint32_t, size_t> program_of_stream;
  std::deque<Program> programs;
  for (size_t p = 0; p < set.processes.size(); ++p) {
    program_of_stream[set.processes[p].stream] = p;
    programs.emplace_back(set.processes[p].model);
  }
  // The blocks the load decoded, each with the program it belongs to and the thread it
  // began on.
  struct Wanted {
    const IndexedBlock* block;
    size_t program;
    uint32_t thread;
  };
  std::vector<Wanted> wanted;
  for (const IndexedBlock& block : blocks) {
    const auto program = program_of_stream.find(block.stream);
    if (block.rejected || program == program_of_stream.end()) continue;
    const auto& starts = programs[program->second].model.block_start_threads;
    const auto start = starts.find(block.sequence);
    if (start != starts.end()) wanted.push_back({&block, program->second, start->second});
  }

  // Every block walked apart on up to one thread a core, as many as the memory allows
  // (each holds a block, and a histogram for each busy location); what each leaves to
  // settle is settled in file order as soon as the blocks before it are, and a worker
  // runs at most kWindow blocks ahead of that, so what waits stays bounded.
  size_t largest_block = 1, locations = 0;
  for (const Wanted& w : wanted)
    largest_block = std::max<size_t>(largest_block, size_t{w.block->raw_bytes} + w.block->compressed_bytes);
  for (const Program& program : programs) locations += program.model.source_locations.size();
  const size_t per_worker = largest_block + locations * analysis::kBuckets * sizeof(uint64_t);
  const size_t workers = std::clamp<size_t>(
      std::min<size_t>({std::thread::hardware_concurrency(), kMaxWorkers, kWorkersBytes / per_worker}), 1,
      std::max<size_t>(wanted.size(), 1));
  const size_t window = 4 * workers;
  std::vector<std::map<uint32_t, ThreadPart>> parts(window);  // block i in parts[i % window]
  std::vector<char> ready(window, 0);
  // By worker, then program; the last "worker" is the settling, under the lock.
  std::vector<std::vector<std::unique_ptr<Figures>>> figures(workers + 1);
  for (auto& by_program : figures) by_program.resize(programs.size());
  auto figures_of = [&](size_t worker, size_t program) -> Figures& {
    std::unique_ptr<Figures>& f = figures[worker][program];
    if (f == nullptr) f = std::make_unique<Figures>(programs[program].model.source_locations.size());
    return *f;
  };
  std::vector<std::map<uint32_t, std::vector<Open>>> stacks(programs.size());  // by program, then thread
  size_t settled = 0;                                                          // blocks settled
  std::mutex mutex;
  std::condition_variable advanced;
  std::atomic<uint64_t> bytes_done{0};
  bool stop = false;
  std::string failure;
  auto fail = [&](std::string why) {
    const std::lock_guard lock(mutex);
    if (!stop) failure = std::move(why);
    stop = true;
    advanced.notify_all();
  };
  // Under the lock: settles the blocks that are ready, in order.
  auto settle = [&] {
    for (; settled < wanted.size() && ready[settled % window]; ++settled) {
      const size_t p = wanted[settled].program;
      for (auto& [thread, part] : parts[settled % window]) {
        std::vector<Open>& stack = stacks[p][thread];
        for (const ThreadPart::EarlierEnd& end : part.earlier_ends) {
          if (stack.empty()) continue;  // an end without a begin (counted by the load)
          Open open = stack.back();
          stack.pop_back();
          open.children = analysis::AddSaturated(open.children, end.children);
          int64_t nowhere = 0;
          Close(programs[p], open, end.tick, figures_of(workers, p), stack.empty() ? nullptr : &stack.back(),
                &nowhere);
        }
        if (!stack.empty()) stack.back().children = analysis::AddSaturated(stack.back().children, part.loose);
        stack.insert(stack.end(), part.stack.begin(), part.stack.end());
      }
      parts[settled % window].clear();
      ready[settled % window] = 0;
    }
    advanced.notify_all();
  };
  std::atomic<size_t> next{0};
  auto work = [&](size_t worker) {
    try {
      FrameDecompressor decompressor;
      std::vector<uint8_t> compressed, raw;
      for (size_t i = next++; i < wanted.size(); i = next++) {
        {
          std::unique_lock lock(mutex);
          advanced.wait(lock, [&] { return stop || i < settled + window; });
          if (stop) return;
        }
        if (options.cancel != nullptr && options.cancel->load()) return fail("cancelled");
        const IndexedBlock& block = *wanted[i].block;
        compressed.resize(block.compressed_bytes);  // inside the file: the index checked
        if (!source.ReadAt(compressed.data(), compressed.size(), block.data_offset())) {
          return fail("cannot read " + source.name() + " again (" + std::strerror(errno) +
                      "): has it changed since it was loaded?");
        }
        const std::string error = decompressor.Decompress(compressed.data(), compressed.size(),
                                                          block.raw_bytes, header.format_version >= 4, raw);
        if (!error.empty()) {
          return fail("block " + std::to_string(block.sequence) + " of " + source.name() +
                      " no longer decompresses (" + error + "): has the file changed since it was loaded?");
        }
        // Walked as far as the load read it (a malformed record ends both there).
        BlockWalk walk(programs[wanted[i].program], wanted[i].thread, figures_of(worker, wanted[i].program));
        std::string malformed;
        WalkBlock(raw.data(), block.raw_bytes, header.format_version, walk, malformed);
        std::map<uint32_t, ThreadPart> part = walk.TakeParts();
        const uint64_t done = bytes_done += block.compressed_bytes + block.header_bytes;
        if (options.bytes_done != nullptr) options.bytes_done->store(done);
        const std::lock_guard lock(mutex);
        parts[i % window] = std::move(part);
        ready[i % window] = 1;
        settle();
      }
    } catch (const std::exception& e) {  // out of memory: said, never thrown past the thread
      fail(std::string("reading the zones again failed: ") + e.what());
    }
  };
  std::vector<std::thread> threads;
  try {
    for (size_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
  } catch (const std::system_error&) {
    // Fewer threads than asked for: the ones started (and this one) take every block.
  }
  work(0);
  for (std::thread& thread : threads) thread.join();
  if (stop) return Status::Error(failure);

  std::vector<std::vector<ZoneStatistics>> result;
  for (size_t p = 0; p < programs.size(); ++p) {
    Figures& into = figures_of(0, p);
    for (size_t w = 1; w <= workers; ++w) {
      if (figures[w][p] == nullptr) continue;
      for (size_t id = 0; id < into.size(); ++id) into[id].Merge((*figures[w][p])[id]);
      figures[w][p].reset();
    }
    result.push_back(Rows(into));
    figures[0][p].reset();
  }
  return result;
}

}  // namespace gnomon::server
