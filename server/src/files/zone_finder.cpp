// Find zone read from the file (FindZonesInFile). Each block is walked apart, from the
// zones the load found open when it began (TraceModel::open_at_blocks), so each zone it
// closes knows its depth and parent there. A zone begun in the block is found whole in
// it; one begun before it needs the time of its children closed in the blocks before
// for its self time: it is settled in file order, against each thread's stack of what
// its open zones' children took.
#include "gnomon/server/zone_finder.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analysis/duration_set.h"
#include "analysis/zone_accumulator.h"
#include "files/block_pass.h"

namespace gnomon::server {
namespace {

// Longer first; of one duration, the earlier first (then by thread, and deeper first).
bool Longer(const FoundZone& a, const FoundZone& b) {
  if (a.duration_ns != b.duration_ns) return a.duration_ns > b.duration_ns;
  if (a.begin_ns != b.begin_ns) return a.begin_ns < b.begin_ns;
  if (a.thread_id != b.thread_id) return a.thread_id < b.thread_id;
  return a.depth > b.depth;
}

// What one worker (or the settling) found: every zone counted, the longest kept. On a
// cache line of its own: the workers' tallies side by side would share lines.
class alignas(64) Tally {
 public:
  explicit Tally(size_t keep) : keep_(keep) {}
  void Add(const FoundZone& zone) {
    ++count_;
    durations_.Add(zone.duration_ns);
    self_times_.Add(zone.self_ns);
    total_ = analysis::AddSaturated(total_, zone.duration_ns);
    squares_ += double(zone.duration_ns) * double(zone.duration_ns);
    self_total_ = analysis::AddSaturated(self_total_, zone.self_ns);
    self_squares_ += double(zone.self_ns) * double(zone.self_ns);
    if (keep_ > 0 && (longest_.size() < keep_ || Longer(zone, longest_.front()))) Keep(zone);
  }
  void Merge(Tally& other) {
    count_ += other.count_;
    durations_.Merge(other.durations_);
    self_times_.Merge(other.self_times_);
    total_ = analysis::AddSaturated(total_, other.total_);
    squares_ += other.squares_;
    self_total_ = analysis::AddSaturated(self_total_, other.self_total_);
    self_squares_ += other.self_squares_;
    for (const FoundZone& zone : other.longest_) Keep(zone);
    other.longest_.clear();
  }
  FoundZones Finish() {
    FoundZones found;
    found.count = count_;
    found.longest = std::move(longest_);
    std::sort(found.longest.begin(), found.longest.end(), [](const FoundZone& a, const FoundZone& b) {
      return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : Longer(a, b);
    });
    found.durations = Spread(durations_, total_, squares_);
    found.self_times = Spread(self_times_, self_total_, self_squares_);
    return found;
  }

 private:
  // Among the longest, while it is.
  void Keep(const FoundZone& zone) {
    if (keep_ == 0) return;
    if (longest_.size() < keep_) {  // a heap whose front is the shortest kept
      longest_.push_back(zone);
      std::push_heap(longest_.begin(), longest_.end(), Longer);
    } else if (Longer(zone, longest_.front())) {
      std::pop_heap(longest_.begin(), longest_.end(), Longer);
      longest_.back() = zone;
      std::push_heap(longest_.begin(), longest_.end(), Longer);
    }
  }
  static FoundSpread Spread(analysis::DurationSet& set, int64_t total, double squares) {
    FoundSpread spread{{}, total, squares};
    if (const uint64_t* histogram = set.histogram()) {
      for (size_t b = 0; b < analysis::kBuckets; ++b) {
        if (histogram[b] != 0)
          spread.values.push_back(
              {int64_t(analysis::BucketLow(b) + analysis::BucketWidth(b) / 2), histogram[b]});
      }
      return spread;
    }
    set.SortValues();
    for (const int64_t v : set.values()) {
      if (spread.values.empty() || spread.values.back().first != v) spread.values.push_back({v, 0});
      ++spread.values.back().second;
    }
    return spread;
  }

  size_t keep_;
  uint64_t count_ = 0;
  analysis::DurationSet durations_, self_times_;
  // Exact totals (a billion zones of a second each fit), squares to a double's precision.
  int64_t total_ = 0, self_total_ = 0;
  double squares_ = 0, self_squares_ = 0;
  std::vector<FoundZone> longest_;
};

// What a block leaves of one thread for the settling.
struct ThreadLeft {
  struct StartZone {  // a zone open when the block began, bottom first
    uint64_t begin_tick;
    int64_t children = 0;  // ns of its children closed in the block
    bool closed = false;
  };
  struct Deferred {  // a zone found that began before the block: its self time waits
    FoundZone zone;
    size_t start;      // its place in `start`
    int64_t children;  // ns of its children closed in the block
  };
  std::vector<StartZone> start;
  std::vector<Deferred> deferred;
  std::vector<std::pair<uint64_t, int64_t>> left_open;  // begun in the block: begin tick, children's ns
};
using BlockLeft = std::map<uint32_t, ThreadLeft>;  // by the program's thread id

// Walks a block (WalkBlock's walker), from the zones open when it began.
class FindWalk {
 public:
  FindWalk(const Program& program, const FindZoneQuery& query, int64_t origin, Tally& tally, size_t block,
           uint32_t thread)
      : program_(program), query_(query), origin_(origin), tally_(tally) {
    const TraceModel& model = program.model;
    const size_t end = block + 1 < model.zone_blocks.size() ? model.zone_blocks[block + 1].first_open
                                                            : model.open_at_blocks.size();
    for (size_t i = model.zone_blocks[block].first_open; i < end && i < model.open_at_blocks.size(); ++i) {
      const OpenAtBlock& open = model.open_at_blocks[i];
      ThreadLeft& left = left_[open.thread_id];
      stacks_[open.thread_id].push_back(
          {open.location, open.begin_tick, Ns(open.begin_tick), 0, int32_t(left.start.size())});
      left.start.push_back({open.begin_tick});
    }
    Switch(thread);
  }
  void Begin(uint32_t location, uint64_t tick) {
    if (stack_ != nullptr) stack_->push_back({program_.Location(location), tick, Ns(tick), 0, -1});
  }
  void Leaf(uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
    if (stack_ == nullptr) return;
    Close({program_.Location(location), begin_tick, Ns(begin_tick), 0, -1}, end_tick);
  }
  void End(uint64_t tick) {
    if (stack_ == nullptr || stack_->empty()) return;  // an end without a begin (counted by the load)
    const Open open = stack_->back();
    stack_->pop_back();
    Close(open, tick);
  }
  void Message(const uint8_t* m, size_t) {
    WalkZoneMessage(
        m, [this](uint32_t thread) { Switch(thread); },
        [this](uint32_t location, uint64_t tick) { Begin(location, tick); },
        [this](uint64_t tick) { End(tick); });
  }
  bool on_thread() const { return stack_ != nullptr; }
  // What the block leaves: each thread's zones still open, and those found that wait.
  BlockLeft Take() {
    for (auto& [thread, stack] : stacks_) {
      ThreadLeft& left = left_[thread];
      for (const Open& open : stack) {
        if (open.start >= 0) {
          left.start[size_t(open.start)].children = open.children;
        } else {
          left.left_open.push_back({open.begin_tick, open.children});
        }
      }
    }
    return std::move(left_);
  }

 private:
  struct Open {
    uint32_t location;
    uint64_t begin_tick;
    int64_t begin_ns;  // trace-relative
    int64_t children;  // ns of its children closed in this block
    int32_t start;     // its place among the zones open when the block began; -1: begun in it
  };
  int64_t Ns(uint64_t tick) const { return program_.model.clock.TickToNs(tick) - origin_; }
  void Switch(uint32_t thread) {
    // None (0), or a thread the load refused or never gave an event, holds no zone.
    stack_ = thread != 0 && program_.model.thread_index.contains(thread) ? &stacks_[thread] : nullptr;
    thread_ = thread;
  }
  void Close(const Open& open, uint64_t tick) {
    const int64_t duration = program_.Duration(open.begin_tick, open.begin_ns + origin_, tick);
    if (open.start >= 0)
      left_[thread_].start[size_t(open.start)].closed = true;  // ended, as the load ends it
    if (duration < 0) return;  // held, it reads as open: found nowhere, nor its parent's child
    if (!stack_->empty() && duration > 0)
      stack_->back().children = analysis::AddSaturated(stack_->back().children, duration);
    if (open.location != query_.location || open.begin_ns < query_.begin_ns || open.begin_ns > query_.end_ns)
      return;
    FoundZone zone{thread_,
                   stack_->empty() ? 0 : stack_->back().location,
                   uint32_t(std::min<size_t>(stack_->size(), ZoneArray::kMaxDepth)),
                   open.begin_ns,
                   duration,
                   std::max<int64_t>(0, duration - open.children)};
    if (open.start >= 0) {
      left_[thread_].deferred.push_back({zone, size_t(open.start), open.children});
    } else {
      tally_.Add(zone);
    }
  }

  const Program& program_;
  const FindZoneQuery& query_;
  const int64_t origin_;
  Tally& tally_;
  std::map<uint32_t, std::vector<Open>> stacks_;  // by the program's thread id
  std::vector<Open>* stack_ = nullptr;            // the current thread's
  uint32_t thread_ = 0;
  BlockLeft left_;
};

Result<FoundZones> Find(const TraceSource& source, const StreamedProgram& program, const FindZoneQuery& query,
                        const LoadOptions& options) {
  const TraceModel& model = *program.model;
  if (model.zone_blocks.empty() && model.zone_count > 0)
    return Status::Error(
        "the load kept no record of " + source.name() +
        "'s blocks to read its zones by (the zones open as each block began did not fit its "
        "overview's share of --memory-limit): raise --memory-limit, or cut the part to look at "
        "(gnomon-cut FILE --range A:B -o PART)");
  Pass pass(source, options);
  if (Status s = OpenPass(pass, {program}); !s.ok()) return s;
  std::unordered_map<uint32_t, size_t> record_of;  // a block's sequence -> its ZoneBlock
  for (size_t b = 0; b < model.zone_blocks.size(); ++b) record_of[model.zone_blocks[b].sequence] = b;
  for (const Wanted& wanted : pass.wanted) {
    if (!record_of.contains(wanted.block->sequence))
      return Status::Error("the load kept no record of block " + std::to_string(wanted.block->sequence) +
                           " of " + source.name());
  }
  const int64_t origin = model.clock.TickToNs(model.first_tick);
  const size_t keep = size_t(std::min<uint64_t>(query.keep, model.zone_count));
  const size_t workers = Workers(pass, 2 * analysis::kBuckets * sizeof(uint64_t) + keep * sizeof(FoundZone));
  std::vector<Tally> tallies;  // a worker's each; the last, the settling's
  for (size_t w = 0; w <= workers; ++w) tallies.emplace_back(keep);
  // By thread: each zone open, its begin tick and what its children took.
  std::map<uint32_t, std::vector<std::pair<uint64_t, int64_t>>> stacks;
  Notes damaged;
  const Status walk = WalkInOrder<BlockLeft>(
      pass, workers,
      [&](size_t worker, const Wanted& wanted, auto&& feed) {
        FindWalk walker(pass.programs.front(), query, origin, tallies[worker],
                        record_of.at(wanted.block->sequence), wanted.thread);
        feed(walker);
        return walker.Take();
      },
      [&](size_t, BlockLeft& left) {
        for (auto& [thread, left_of_thread] : left) {
          ThreadLeft& part = left_of_thread;  // (a lambda below takes it; not a binding)
          std::vector<std::pair<uint64_t, int64_t>>& stack = stacks[thread];
          // What the blocks before took of each zone open when this one began (none where
          // the stacks part: a gap the load mended).
          auto before = [&](size_t i) {
            return i < stack.size() && stack[i].first == part.start[i].begin_tick ? stack[i].second : 0;
          };
          for (ThreadLeft::Deferred& deferred : part.deferred) {
            const int64_t children = analysis::AddSaturated(before(deferred.start), deferred.children);
            deferred.zone.self_ns = std::max<int64_t>(0, deferred.zone.duration_ns - children);
            tallies[workers].Add(deferred.zone);
          }
          std::vector<std::pair<uint64_t, int64_t>> open;
          for (size_t i = 0; i < part.start.size(); ++i) {
            if (!part.start[i].closed)
              open.push_back(
                  {part.start[i].begin_tick, analysis::AddSaturated(before(i), part.start[i].children)});
          }
          open.insert(open.end(), part.left_open.begin(), part.left_open.end());
          stack = std::move(open);
        }
      },
      &damaged);
  if (!walk.ok()) return walk;
  for (size_t w = 1; w <= workers; ++w) tallies[0].Merge(tallies[w]);
  FoundZones found = tallies[0].Finish();
  found.note = damaged.Join(source.name());
  return found;
}

}  // namespace

Result<FoundZones> FindZonesInFile(const TraceSource& source, const StreamedProgram& program,
                                   const FindZoneQuery& query, const LoadOptions& options) {
  try {
    return Find(source, program, query, options);
  } catch (const std::exception& e) {  // out of memory
    return Status::Error("reading the zones of " + source.name() + " again failed: " + e.what());
  }
}

}  // namespace gnomon::server
