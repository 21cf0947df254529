#include "gnomon/server/streamed_statistics.h"

#include <cerrno>
#include <cstring>
#include <future>
#include <map>
#include <unordered_map>
#include <utility>

#include "analysis/zone_accumulator.h"
#include "files/block_walk.h"
#include "files/trace_index.h"
#include "gnomon/tracefile/format.h"

namespace gnomon::server {
namespace {

static_assert(kExactMedianZones == analysis::kValuesBeforeHistogram);

// One program's zones as its stream goes by: the thread the stream is on, each thread's
// open zones, and each location's figures. It follows the builder that loaded the model
// (trace_builder.h): the same threads, locations, clamped ends and gaps.
class ZoneWalk {
 public:
  explicit ZoneWalk(const TraceModel& model) : model_(model), by_location_(model.source_locations.size()) {
    for (const auto& [id, index] : model.location_index) {
      if (id >= location_of_id_.size()) location_of_id_.resize(size_t{id} + 1, 0);
      location_of_id_[id] = index;
    }
  }

  void Begin(uint32_t location, uint64_t tick) {
    if (current_ == nullptr) return;  // counted by the load (events without a thread)
    current_->push_back({Location(location), tick, model_.clock.TickToNs(tick), 0});
  }
  void End(uint64_t tick) {
    if (current_ == nullptr || current_->empty()) return;
    const Open open = current_->back();
    current_->pop_back();
    // DurationNs, its begin converted once at the begin; an end before it makes a zone of 0.
    const int64_t duration = tick < open.begin_tick ? 0 : model_.clock.TickToNs(tick) - open.begin_ns;
    analysis::ZoneAccumulator& figures = by_location_[open.location];
    figures.Add(duration);
    figures.AddSelf(duration, open.children);
    if (!current_->empty()) {
      current_->back().children = analysis::AddSaturated(current_->back().children, duration);
    }
  }
  void Message(const uint8_t* m, size_t) {
    switch (protocol::MessageType(m[0])) {
      case protocol::MessageType::kThreadContext: {
        const uint32_t thread = ReadMessage<protocol::ThreadContext>(m).thread_id;
        // A thread the load refused (or one without events) holds no zone.
        current_ = model_.thread_index.contains(thread) ? &stacks_[thread] : nullptr;
        return;
      }
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
  // Part of the stream is lost: the thread is unknown until the next ThreadContext.
  void Gap() { current_ = nullptr; }

  // The rows, sorted; zones never closed count nowhere.
  std::vector<ZoneStatistics> Finish() {
    std::vector<ZoneStatistics> rows;
    for (uint32_t id = 0; id < by_location_.size(); ++id) {
      analysis::ZoneAccumulator& figures = by_location_[id];
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

 private:
  struct Open {
    uint32_t location;
    uint64_t begin_tick;
    int64_t begin_ns;
    int64_t children;  // ns in the zones closed inside it
  };
  uint32_t Location(uint32_t id) const {
    // As the builder numbered it; an id it never saw (0, or past the limit) is "unknown".
    return id < location_of_id_.size() && location_of_id_[id] < by_location_.size() ? location_of_id_[id] : 0;
  }

  const TraceModel& model_;
  std::vector<uint32_t> location_of_id_;  // the program's id -> index in source_locations
  std::vector<analysis::ZoneAccumulator> by_location_;
  std::unordered_map<uint32_t, std::vector<Open>> stacks_;  // by the program's thread id; stable
  std::vector<Open>* current_ = nullptr;
};

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
  std::map<uint32_t, ZoneWalk> walks;  // by stream number
  for (const TraceProcess& process : set.processes) walks.try_emplace(process.stream, process.model);

  // Two buffers: the next block is read and decompressed while this one is walked.
  struct Fetched {
    FrameDecompressor decompressor;
    std::vector<uint8_t> compressed, raw;
    std::string error;
  };
  Fetched fetched[2];
  auto fetch = [&](const IndexedBlock& block, Fetched& into) {
    into.compressed.resize(block.compressed_bytes);  // inside the file: the index checked
    if (!source.ReadAt(into.compressed.data(), into.compressed.size(), block.data_offset())) {
      into.error = std::string("cannot read ") + source.name() + ": " + std::strerror(errno);
      return false;  // the file itself fails: stop
    }
    into.error = into.decompressor.Decompress(into.compressed.data(), into.compressed.size(), block.raw_bytes,
                                              header.format_version >= 4, into.raw);
    return true;
  };
  std::vector<const IndexedBlock*> wanted;
  for (const IndexedBlock& block : blocks) {
    if (!block.rejected && walks.contains(block.stream)) wanted.push_back(&block);
  }
  std::future<bool> next;
  if (!wanted.empty())
    next = std::async(std::launch::async, fetch, std::cref(*wanted[0]), std::ref(fetched[0]));
  for (size_t i = 0; i < wanted.size(); ++i) {
    const bool readable = next.get();
    if (i + 1 < wanted.size()) {
      next = std::async(std::launch::async, fetch, std::cref(*wanted[i + 1]), std::ref(fetched[(i + 1) % 2]));
    }
    if (!readable || (options.cancel != nullptr && options.cancel->load())) {
      if (next.valid()) next.wait();
      return Status::Error(readable ? "cancelled" : fetched[i % 2].error);
    }
    const IndexedBlock& block = *wanted[i];
    Fetched& here = fetched[i % 2];
    ZoneWalk& walk = walks.at(block.stream);
    if (block.after_gap || !here.error.empty()) walk.Gap();
    std::string error;
    if (here.error.empty() &&
        !WalkBlock(here.raw.data(), block.raw_bytes, header.format_version, walk, error)) {
      walk.Gap();
    }
    if (options.bytes_done != nullptr) options.bytes_done->store(block.end_offset());
  }
  std::vector<std::vector<ZoneStatistics>> result;
  for (const TraceProcess& process : set.processes) result.push_back(walks.at(process.stream).Finish());
  return result;
}

}  // namespace gnomon::server
