#include "gnomon/server/streamed_statistics.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
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
  // The zone `open` ended at `tick`, in ns; an end before its begin makes a zone of 0.
  int64_t Duration(const Open& open, uint64_t tick) const {
    return tick < open.begin_tick ? 0 : model.clock.TickToNs(tick) - open.begin_ns;
  }
  const TraceModel& model;
  std::vector<uint32_t> location_of_id;  // the program's id -> index in source_locations
};

using Figures = std::vector<analysis::ZoneAccumulator>;  // by location index

[[gnu::always_inline]] inline void Close(const Program& program, const Open& open, uint64_t tick,
                                         Figures& figures, Open* parent, int64_t* loose) {
  const int64_t duration = program.Duration(open, tick);
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
    if (current_ != nullptr) current_->stack.push_back({program_.Location(location), tick, Ns(tick), 0});
  }
  // Most zones of a big trace: begun and ended with nothing between.
  [[gnu::always_inline]] void Leaf(uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
    if (current_ == nullptr) return;
    std::vector<Open>& stack = current_->stack;
    Close(program_, {program_.Location(location), begin_tick, Ns(begin_tick), 0}, end_tick, figures_,
          stack.empty() ? nullptr : &stack.back(), &current_->loose);
  }
  [[gnu::always_inline]] void End(uint64_t tick) {
    if (current_ == nullptr) return;
    std::vector<Open>& stack = current_->stack;
    if (stack.empty()) {
      current_->earlier_ends.push_back({tick, std::exchange(current_->loose, 0)});
      return;
    }
    const Open open = stack.back();
    stack.pop_back();
    Close(program_, open, tick, figures_, stack.empty() ? nullptr : &stack.back(), &current_->loose);
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
    // A thread the load refused (or none) holds no zone.
    current_ = program_.model.thread_index.contains(thread) ? &parts_[thread] : nullptr;
  }
  const Program& program_;
  Figures& figures_;
  std::map<uint32_t, ThreadPart> parts_;  // by the program's thread id; stable
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

  // Every block walked apart, on as many threads as there are cores: each worker's
  // figures, and what each block leaves to settle.
  std::vector<std::map<uint32_t, ThreadPart>> parts(wanted.size());
  const size_t workers =
      std::clamp<size_t>(std::thread::hardware_concurrency(), 1, std::clamp<size_t>(wanted.size(), 1, 16));
  std::vector<std::vector<Figures>> figures(workers);
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> bytes_done{0};
  std::atomic<bool> stop{false};
  std::mutex failure_mutex;
  std::string failure;
  auto work = [&](size_t worker) {
    FrameDecompressor decompressor;
    std::vector<uint8_t> compressed, raw;
    for (auto& program : programs) figures[worker].emplace_back(program.model.source_locations.size());
    for (size_t i = next++; i < wanted.size() && !stop.load(); i = next++) {
      const IndexedBlock& block = *wanted[i].block;
      compressed.resize(block.compressed_bytes);  // inside the file: the index checked
      if ((options.cancel != nullptr && options.cancel->load()) ||
          !source.ReadAt(compressed.data(), compressed.size(), block.data_offset())) {
        const std::lock_guard lock(failure_mutex);
        failure = options.cancel != nullptr && options.cancel->load()
                      ? "cancelled"
                      : "cannot read " + source.name() + ": " + std::strerror(errno);
        stop = true;
        return;
      }
      // A block the load decoded decompresses again; it is walked as far as the load read it.
      if (decompressor
              .Decompress(compressed.data(), compressed.size(), block.raw_bytes, header.format_version >= 4,
                          raw)
              .empty()) {
        const Program& program = programs[wanted[i].program];
        BlockWalk walk(program, wanted[i].thread, figures[worker][wanted[i].program]);
        std::string error;
        WalkBlock(raw.data(), block.raw_bytes, header.format_version, walk, error);
        parts[i] = walk.TakeParts();
      }
      const uint64_t done = bytes_done += block.compressed_bytes + block.header_bytes;
      if (options.bytes_done != nullptr) options.bytes_done->store(done);
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
  work(0);
  for (std::thread& thread : threads) thread.join();
  if (stop.load()) return Status::Error(failure);

  // Settled in file order: each thread's zones open across blocks, on one stack per
  // thread, take what each block says of them.
  std::vector<std::map<uint32_t, std::vector<Open>>> stacks(programs.size());
  for (size_t i = 0; i < wanted.size(); ++i) {
    const Program& program = programs[wanted[i].program];
    Figures& into = figures[0][wanted[i].program];
    for (auto& [thread, part] : parts[i]) {
      std::vector<Open>& stack = stacks[wanted[i].program][thread];
      for (const ThreadPart::EarlierEnd& end : part.earlier_ends) {
        if (stack.empty()) continue;  // an end without a begin (counted by the load)
        Open open = stack.back();
        stack.pop_back();
        open.children = analysis::AddSaturated(open.children, end.children);
        int64_t nowhere = 0;
        Close(program, open, end.tick, into, stack.empty() ? nullptr : &stack.back(), &nowhere);
      }
      if (!stack.empty()) stack.back().children = analysis::AddSaturated(stack.back().children, part.loose);
      stack.insert(stack.end(), part.stack.begin(), part.stack.end());
    }
    parts[i] = {};
  }
  std::vector<std::vector<ZoneStatistics>> result;
  for (size_t p = 0; p < programs.size(); ++p) {
    for (size_t w = 1; w < workers; ++w) {
      for (size_t id = 0; id < figures[0][p].size(); ++id) figures[0][p][id].Merge(figures[w][p][id]);
    }
    result.push_back(Rows(figures[0][p]));
  }
  return result;
}

}  // namespace gnomon::server
