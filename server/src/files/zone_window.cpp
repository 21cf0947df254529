#include "gnomon/server/zone_window.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "files/block_walk.h"
#include "files/trace_index.h"

namespace gnomon::server {

namespace {

// A zone open on a thread: its begin and location index.
struct Open {
  uint64_t begin_tick;
  uint32_t location;
};

// Walks blocks (WalkBlock's walker) into a ZoneWindow: every zone that closes and
// overlaps the window, at its depth on its thread.
class WindowWalk {
 public:
  WindowWalk(const TraceModel& model, ZoneWindow& out, size_t max_zones)
      : model_(model), out_(out), max_zones_(max_zones) {
    for (const auto& [id, index] : model.location_index) {
      if (id >= location_of_id_.size()) location_of_id_.resize(size_t{id} + 1, 0);
      location_of_id_[id] = index;
    }
  }
  // Block `b` (of model.zone_blocks) begins: the zones open then, as the load found them.
  void StartBlock(size_t b, uint32_t thread) {
    stacks_.clear();
    const auto& blocks = model_.zone_blocks;
    const size_t end = b + 1 < blocks.size() ? blocks[b + 1].first_open : model_.open_at_blocks.size();
    for (size_t i = blocks[b].first_open; i < end && i < model_.open_at_blocks.size(); ++i) {
      const OpenAtBlock& open = model_.open_at_blocks[i];
      stacks_[open.thread_id].push_back({open.begin_tick, open.location});
    }
    Switch(thread);
  }
  void Begin(uint32_t location, uint64_t tick) {
    if (current_ != nullptr) current_->push_back({tick, Location(location)});
  }
  void Leaf(uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
    if (current_ != nullptr) Emit(current_->size(), begin_tick, end_tick, Location(location));
  }
  void End(uint64_t tick) {
    if (current_ == nullptr || current_->empty()) return;
    const Open open = current_->back();
    current_->pop_back();
    Emit(current_->size(), open.begin_tick, tick, open.location);
  }
  void Message(const uint8_t* m, size_t) {
    WalkZoneMessage(
        m, [this](uint32_t thread) { Switch(thread); },
        [this](uint32_t location, uint64_t tick) { Begin(location, tick); },
        [this](uint64_t tick) { End(tick); });
  }
  bool too_many() const { return emitted_ > max_zones_; }
  // The zones still open that overlap the window and that the overview does not hold
  // whole; with `settle`, those the overview holds get its end, the others the trace's.
  size_t Unsettled(bool settle) {
    size_t unsettled = 0;
    for (auto& [thread, stack] : stacks_) {
      const auto it = model_.thread_index.find(thread);
      for (size_t depth = 0; depth < stack.size(); ++depth) {
        const Open& open = stack[depth];
        if (open.begin_tick > out_.end_tick) continue;
        const uint32_t row = uint32_t(std::min<size_t>(depth, ZoneArray::kMaxDepth));
        const OverviewRun* whole =
            it == model_.thread_index.end() ? nullptr : Whole(model_.threads[it->second].overview, row, open);
        if (whole == nullptr) ++unsettled;
        if (settle) {
          thread_ = thread;
          Emit(depth, open.begin_tick, whole != nullptr ? whole->end_tick : model_.last_tick, open.location);
        }
      }
    }
    return unsettled;
  }

 private:
  uint32_t Location(uint32_t id) const {
    return id < location_of_id_.size() && location_of_id_[id] < model_.source_locations.size()
               ? location_of_id_[id]
               : 0;
  }
  void Switch(uint32_t thread) {
    thread_ = thread;
    current_ = thread != 0 && model_.thread_index.contains(thread) ? &stacks_[thread] : nullptr;
  }
  void Emit(size_t depth, uint64_t begin_tick, uint64_t end_tick, uint32_t location) {
    end_tick = std::max(end_tick, begin_tick);
    if (end_tick < out_.begin_tick || begin_tick > out_.end_tick) return;
    if (emitted_++ >= max_zones_) return;  // too many: the window fails (too_many)
    const size_t row = std::min<size_t>(depth, ZoneArray::kMaxDepth);
    auto& rows = out_.threads[thread_];
    if (rows.size() <= row) rows.resize(row + 1);
    rows[row].push_back({begin_tick, end_tick, 1, location});
  }
  // The overview's run of exactly this zone, if it holds it whole.
  static const OverviewRun* Whole(const ZoneOverview& overview, uint32_t row, const Open& open) {
    if (row >= overview.rows().size()) return nullptr;
    const std::vector<OverviewRun>& runs = overview.rows()[row];
    auto it = std::lower_bound(runs.begin(), runs.end(), open.begin_tick,
                               [](const OverviewRun& run, uint64_t tick) { return run.begin_tick < tick; });
    for (; it != runs.end() && it->begin_tick == open.begin_tick; ++it) {
      if (it->count == 1 && it->location == open.location) return &*it;
    }
    return nullptr;
  }

  const TraceModel& model_;
  ZoneWindow& out_;
  size_t max_zones_;
  size_t emitted_ = 0;
  std::vector<uint32_t> location_of_id_;          // the program's id -> index in source_locations
  std::map<uint32_t, std::vector<Open>> stacks_;  // by the program's thread id
  std::vector<Open>* current_ = nullptr;          // the current thread's
  uint32_t thread_ = 0;
};

}  // namespace

Result<ZoneWindow> ReadZoneWindow(const TraceSource& source, const TraceModel& model, uint64_t begin_tick,
                                  uint64_t end_tick, uint64_t max_bytes, const LoadOptions& options) {
  const std::vector<ZoneBlock>& blocks = model.zone_blocks;
  if (model.zones_held || blocks.empty())
    return Status::Error("no record of " + source.name() + "'s blocks to read a window of its zones from");
  // The first block whose zones (or a block's before it) reach the window; the last
  // that begins in it.
  size_t first = blocks.size() - 1;
  uint64_t reach = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].first_tick <= blocks[b].last_tick) reach = std::max(reach, blocks[b].last_tick);
    if (reach >= begin_tick) {
      first = b;
      break;
    }
  }
  std::vector<uint64_t> starts_after(blocks.size() + 1, UINT64_MAX);  // the earliest zone event from b on
  for (size_t b = blocks.size(); b-- > 0;)
    starts_after[b] = std::min(starts_after[b + 1], blocks[b].first_tick);
  size_t last = first;
  while (last + 1 < blocks.size() && starts_after[last + 1] <= end_tick) ++last;

  uint64_t needed = 0;  // said before anything is read
  for (size_t b = first; b <= last; ++b) needed += blocks[b].raw_bytes;
  if (needed > max_bytes)
    return Status::Error("the window needs more than " + std::to_string(max_bytes) + " bytes of blocks");
  tracefile::FileHeader header{};
  if (!source.ReadAt(&header, sizeof(header), 0)) return Status::Error("cannot read " + source.name());

  ZoneWindow window;
  window.begin_tick = begin_tick;
  window.end_tick = end_tick;
  // A zone held in the window takes 24 bytes, and about 17 more in the viewer's index.
  WindowWalk walk(model, window, size_t(max_bytes / 48));
  const std::string too_many =
      "the window holds more zones than " + std::to_string(max_bytes) + " bytes take";
  FrameDecompressor decompressor;
  std::vector<uint8_t> compressed, raw;
  const uint64_t resolution = model.overview_resolution;
  for (size_t b = first; b < blocks.size(); ++b) {
    // Past the window's blocks, only while a zone open across its end that the overview
    // does not hold whole (so shorter than the resolution) may end in them.
    if (b > last && (walk.Unsettled(false) == 0 || starts_after[b] - end_tick > resolution)) break;
    if (options.cancel != nullptr && options.cancel->load()) return Status::Error("cancelled");
    const ZoneBlock& block = blocks[b];
    window.block_bytes += block.raw_bytes;
    if (window.block_bytes > max_bytes)
      return Status::Error("the window needs more than " + std::to_string(max_bytes) + " bytes of blocks");
    compressed.resize(block.compressed_bytes);
    errno = 0;
    if (!source.ReadAt(compressed.data(), compressed.size(), block.data_offset)) {
      return Status::Error("cannot read " + source.name() + " again (" +
                           (errno != 0 ? std::strerror(errno) : "it is shorter") +
                           "): has it changed since it was loaded?");
    }
    const std::string error = decompressor.Decompress(compressed.data(), compressed.size(), block.raw_bytes,
                                                      header.format_version >= 4, raw);
    if (!error.empty()) {
      return Status::Error("block " + std::to_string(block.sequence) + " of " + source.name() +
                           " no longer decompresses (" + error +
                           "): has the file changed since it was loaded?");
    }
    const auto start = model.block_start_threads.find(block.sequence);
    walk.StartBlock(b, start == model.block_start_threads.end() ? 0 : start->second);
    std::string malformed;  // walked as far as the load read it
    WalkBlock(raw.data(), block.raw_bytes, header.format_version, walk, malformed);
    if (walk.too_many()) return Status::Error(too_many);
  }
  walk.Unsettled(true);
  if (walk.too_many()) return Status::Error(too_many);
  for (auto& [thread, rows] : window.threads) {
    for (std::vector<OverviewRun>& row : rows) {
      std::sort(row.begin(), row.end(),
                [](const OverviewRun& a, const OverviewRun& b) { return a.begin_tick < b.begin_tick; });
    }
  }
  return window;
}

}  // namespace gnomon::server
