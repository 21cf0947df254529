#include "gnomon/server/streamed_statistics.h"

#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <utility>

#include "analysis/zone_accumulator.h"
#include "files/block_pass.h"

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

using Figures = std::vector<analysis::ZoneAccumulator>;  // by location index

// What a pass does with each zone closed: gathers its figures (Figures), or counts the
// durations inside the buckets a median lies in (MedianTally).
//
// The figures are gathered a few hundred zones at a time: each zone closed is only noted,
// and the notes are added up run by run of one location, its sums in registers. Added
// one by one, each zone would wait on the sums the zone before it stored (a big trace's
// zones mostly come in long runs of one location).
class FiguresSink {
 public:
  explicit FiguresSink(Figures& figures) : figures_(figures) {}
  FiguresSink(const FiguresSink&) = delete;
  FiguresSink& operator=(const FiguresSink&) = delete;
  [[gnu::always_inline]] void Closed(uint32_t location, int64_t duration, int64_t children) {
    locations_[noted_] = location;
    durations_[noted_] = duration;
    children_[noted_] = children;
    if (++noted_ == kNotes) Flush();
  }
  // Adds up what is noted (WalkAll: after each block, and each settling).
  void Flush() {
    for (size_t i = 0; i < noted_;) {
      const uint32_t location = locations_[i];
      analysis::ZoneAccumulator& figures = figures_[location];
      uint64_t* const histogram = figures.durations.histogram();
      if (histogram == nullptr) {  // its first few thousand zones
        figures.Add(durations_[i]);
        figures.AddSelf(durations_[i], children_[i]);
        ++i;
        continue;
      }
      analysis::ZoneRun run;
      for (; i < noted_ && locations_[i] == location; ++i) {
        run.Add(durations_[i], children_[i]);
        ++histogram[analysis::BucketOf(uint64_t(durations_[i]))];
      }
      figures.Add(run);
    }
    noted_ = 0;
  }

 private:
  static constexpr size_t kNotes = 512;
  Figures& figures_;
  size_t noted_ = 0;
  uint32_t locations_[kNotes];
  int64_t durations_[kNotes];
  int64_t children_[kNotes];
};

template <typename Sink>
[[gnu::always_inline]] inline void Close(const Program& program, const Open& open, uint64_t tick, Sink& sink,
                                         Open* parent, int64_t* loose) {
  const int64_t duration = program.Duration(open.begin_tick, open.begin_ns, tick);
  if (duration < 0) return;  // counted nowhere, as held; nor its children towards it
  sink.Closed(open.location, duration, open.children);
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
template <typename Sink>
class BlockWalk {
 public:
  BlockWalk(const Program& program, uint32_t thread, Sink& sink) : program_(program), sink_(sink) {
    Switch(thread);
  }
  [[gnu::always_inline]] void Begin(uint32_t location, uint64_t tick) {
    if (ThreadPart* part = Current()) part->stack.push_back({program_.Location(location), tick, Ns(tick), 0});
  }
  // Most zones of a big trace: begun and ended with nothing between.
  [[gnu::always_inline]] void Leaf(uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
    ThreadPart* part = Current();
    if (part == nullptr) return;
    Close(program_, {program_.Location(location), begin_tick, Ns(begin_tick), 0}, end_tick, sink_,
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
    Close(program_, open, tick, sink_, stack.empty() ? nullptr : &stack.back(), &part->loose);
  }
  void Message(const uint8_t* m, size_t) {
    WalkZoneMessage(
        m, [this](uint32_t thread) { Switch(thread); },
        [this](uint32_t location, uint64_t tick) { Begin(location, tick); },
        [this](uint64_t tick) { End(tick); });
  }
  std::map<uint32_t, ThreadPart> TakeParts() { return std::move(parts_); }
  bool on_thread() const { return thread_ != 0; }

 private:
  [[gnu::always_inline]] int64_t Ns(uint64_t tick) const { return program_.model.clock.TickToNs(tick); }
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
  Sink& sink_;
  std::map<uint32_t, ThreadPart> parts_;  // by the program's thread id; stable
  uint32_t thread_ = 0;
  ThreadPart* current_ = nullptr;
};

using Parts = std::map<uint32_t, ThreadPart>;  // by the program's thread id

// Walks every wanted block (WalkInOrder), each zone closed going to sink_of(worker,
// program) (worker == workers: the settling). A block's zones that cross it are settled
// against the stacks of the blocks before it.
template <typename SinkOf>
Status WalkAll(const Pass& pass, size_t workers, SinkOf&& sink_of, Notes* damaged = nullptr) {
  std::vector<std::map<uint32_t, std::vector<Open>>> stacks(pass.programs.size());  // by program, then thread
  return WalkInOrder<Parts>(
      pass, workers,
      [&](size_t worker, const Wanted& wanted, auto&& feed) {
        auto sink = sink_of(worker, wanted.program);
        BlockWalk walk(pass.programs[wanted.program], wanted.thread, sink);
        feed(walk);
        sink.Flush();
        return walk.TakeParts();
      },
      [&](size_t index, Parts& parts) {
        const size_t p = pass.wanted[index].program;
        auto sink = sink_of(workers, p);
        for (auto& [thread, part] : parts) {
          std::vector<Open>& stack = stacks[p][thread];
          for (const ThreadPart::EarlierEnd& end : part.earlier_ends) {
            if (stack.empty()) continue;  // an end without a begin (counted by the load)
            Open open = stack.back();
            stack.pop_back();
            open.children = analysis::AddSaturated(open.children, end.children);
            int64_t nowhere = 0;
            Close(pass.programs[p], open, end.tick, sink, stack.empty() ? nullptr : &stack.back(), &nowhere);
          }
          if (!stack.empty())
            stack.back().children = analysis::AddSaturated(stack.back().children, part.loose);
          stack.insert(stack.end(), part.stack.begin(), part.stack.end());
        }
        sink.Flush();
      },
      damaged);
}

// Where a location's middle values are looked for: its durations in [low, low + width)
// hold them, at `ranks` among those (one, or two: the two middle values of an even count
// in one range; they part when a pass puts them in different slots).
struct MedianQuery {
  size_t program;
  uint32_t location;
  uint64_t low, width;
  uint64_t ranks[2];
  int64_t* values[2];  // where the answers go
  int count = 1;       // ranks looked for
  uint64_t step = 1;   // this pass: the durations counted in slots this wide
  size_t first = 0;    // this pass: its first slot in the counts
};

// The durations inside the queried ranges, counted in slots: each worker (and the
// settling) its own counts, summed after the pass.
struct MedianTally {
  const std::vector<MedianQuery>& queries;
  const std::vector<std::pair<uint32_t, uint32_t>>& of_location;  // first query, count; by location
  uint64_t* counts;
  void Closed(uint32_t location, int64_t duration, int64_t) const {
    if (location >= of_location.size()) return;
    const auto [first, count] = of_location[location];
    for (uint32_t q = first; q < first + count; ++q) {
      const MedianQuery& query = queries[q];
      const uint64_t d = uint64_t(duration);
      if (d >= query.low && d - query.low < query.width) ++counts[query.first + (d - query.low) / query.step];
    }
  }
  void Flush() const {}  // counted as closed
};

// Makes every query exact, a pass over the file each time it narrows them: each pass
// splits a query's range into as many slots as kTallySlots allow between the queries,
// and keeps the slot that holds each rank.
Status ResolveMedians(const Pass& pass, std::vector<MedianQuery> queries) {
  constexpr size_t kTallySlots = size_t{1} << 19;  // 4 MiB of counts a worker
  const size_t workers = Workers(pass, kTallySlots * sizeof(uint64_t));
  while (!queries.empty()) {
    // By program, then location: each location's queries side by side.
    std::sort(queries.begin(), queries.end(), [](const MedianQuery& a, const MedianQuery& b) {
      return a.program != b.program ? a.program < b.program : a.location < b.location;
    });
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> of_location(pass.programs.size());
    const uint64_t slots = std::bit_floor(std::clamp<uint64_t>(kTallySlots / queries.size(), 2, 65536));
    size_t total = 0;
    for (uint32_t q = 0; q < queries.size(); ++q) {
      MedianQuery& query = queries[q];
      auto& by_location = of_location[query.program];
      by_location.resize(pass.programs[query.program].model.source_locations.size(), {0, 0});
      auto& [first, count] = by_location[query.location];
      if (count == 0) first = q;
      ++count;
      query.step = std::max<uint64_t>(1, query.width / slots);  // widths are powers of two
      query.first = total;
      total += query.width / query.step;
    }
    std::vector<std::vector<uint64_t>> counts(workers + 1);
    if (Status s = WalkAll(pass, workers,
                           [&](size_t worker, size_t program) {
                             std::vector<uint64_t>& mine = counts[worker];
                             if (mine.empty()) mine.resize(total);
                             return MedianTally{queries, of_location[program], mine.data()};
                           });
        !s.ok()) {
      return s;
    }
    std::vector<uint64_t> sum(total);
    for (const std::vector<uint64_t>& mine : counts) {
      for (size_t i = 0; i < mine.size(); ++i) sum[i] += mine[i];
    }
    std::vector<MedianQuery> narrower;
    for (const MedianQuery& query : queries) {
      const uint64_t n = query.width / query.step;
      uint64_t in_range = 0;
      for (uint64_t slot = 0; slot < n; ++slot) in_range += sum[query.first + slot];
      if (query.ranks[query.count - 1] >= in_range) {
        return Status::Error(pass.source.name() + " does not hold the zones it held when it was loaded: " +
                             "has it changed since?");
      }
      // Each rank's slot; ranks in one slot stay one query.
      for (int r = 0; r < query.count; ++r) {
        uint64_t below = 0, slot = 0;
        for (; below + sum[query.first + slot] <= query.ranks[r]; ++slot) below += sum[query.first + slot];
        const uint64_t low = query.low + slot * query.step, rank = query.ranks[r] - below;
        if (query.step == 1) {
          *query.values[r] = int64_t(low);
        } else if (r == 1 && narrower.back().low == low && narrower.back().location == query.location &&
                   narrower.back().program == query.program) {
          narrower.back().ranks[1] = rank;
          narrower.back().values[1] = query.values[1];
          narrower.back().count = 2;
        } else {
          narrower.push_back(
              {query.program, query.location, low, query.step, {rank, 0}, {query.values[r], nullptr}});
        }
      }
    }
    queries = std::move(narrower);
  }
  return Status::Ok();
}

Result<std::vector<std::vector<ZoneStatistics>>> Stream(const TraceSource& source,
                                                        const std::vector<StreamedProgram>& programs,
                                                        const LoadOptions& options, StreamedMedians medians,
                                                        std::string* note) {
  Pass pass(source, options);
  Notes damaged;
  if (Status s = OpenPass(pass, programs); !s.ok()) return s;

  // Each worker's figures (a histogram for each busy location), by program, made when
  // first used; the last "worker" is the settling.
  size_t locations = 0;
  for (const Program& program : pass.programs) locations += program.model.source_locations.size();
  const size_t workers = Workers(pass, locations * analysis::kBuckets * sizeof(uint64_t));
  std::vector<std::vector<std::unique_ptr<Figures>>> figures(workers + 1);
  for (auto& by_program : figures) by_program.resize(pass.programs.size());
  auto figures_of = [&](size_t worker, size_t program) -> Figures& {
    std::unique_ptr<Figures>& f = figures[worker][program];
    if (f == nullptr) f = std::make_unique<Figures>(pass.programs[program].model.source_locations.size());
    return *f;
  };
  if (Status s = WalkAll(
          pass, workers,
          [&](size_t worker, size_t program) { return FiguresSink(figures_of(worker, program)); }, &damaged);
      !s.ok()) {
    return s;
  }
  if (note != nullptr) *note = damaged.Join(source.name());

  // Each location's two middle values: exact while its durations are kept; else the
  // middle of the bucket that holds each, or (kExact) looked for there by more passes.
  std::vector<Figures*> totals;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> middles(pass.programs.size());
  std::vector<std::vector<int64_t>> errors(pass.programs.size());
  std::vector<MedianQuery> queries;
  for (size_t p = 0; p < pass.programs.size(); ++p) {
    Figures& into = figures_of(0, p);
    for (size_t w = 1; w <= workers; ++w) {
      if (figures[w][p] == nullptr) continue;
      for (size_t id = 0; id < into.size(); ++id) into[id].Merge((*figures[w][p])[id]);
      figures[w][p].reset();
    }
    totals.push_back(&into);
    middles[p].resize(into.size());
    errors[p].resize(into.size());
    for (uint32_t id = 0; id < into.size(); ++id) {
      const uint64_t n = into[id].stats.count;
      if (n == 0) continue;
      analysis::DurationSet& durations = into[id].durations;
      if (!durations.has_histogram()) durations.SortValues();
      auto middle = [&](uint64_t rank, int64_t& value) {
        if (!durations.has_histogram()) {
          value = durations.values()[rank];
          return;
        }
        const auto [bucket, below] = durations.FindRank(rank);
        const uint64_t low = analysis::BucketLow(bucket), width = analysis::BucketWidth(bucket);
        value = int64_t(low + width / 2);
        if (width == 1) return;
        if (medians == StreamedMedians::kWithinBucket) {
          errors[p][id] = std::max(errors[p][id], int64_t(width / 2));
        } else if (!queries.empty() && queries.back().program == p && queries.back().location == id &&
                   queries.back().low == low) {  // the two middle values in one bucket: one query
          queries.back().ranks[1] = rank - below;
          queries.back().values[1] = &value;
          queries.back().count = 2;
        } else {
          queries.push_back({p, id, low, width, {rank - below, 0}, {&value, nullptr}});
        }
      };
      middle(n % 2 == 0 ? n / 2 - 1 : n / 2, middles[p][id].first);
      middle(n / 2, middles[p][id].second);
    }
  }
  if (Status s = ResolveMedians(pass, std::move(queries)); !s.ok()) return s;
  std::vector<std::vector<ZoneStatistics>> result;
  for (size_t p = 0; p < pass.programs.size(); ++p) {
    std::vector<ZoneStatistics> rows;
    for (uint32_t id = 0; id < totals[p]->size(); ++id) {
      if ((*totals[p])[id].stats.count == 0) continue;
      rows.push_back((*totals[p])[id].Finish(id, middles[p][id].first, middles[p][id].second));
      rows.back().median_error_ns = errors[p][id];
    }
    analysis::SortByTotal(rows);
    result.push_back(std::move(rows));
  }
  return result;
}

}  // namespace

Result<std::vector<std::vector<ZoneStatistics>>> StreamZoneStatistics(const TraceSource& source,
                                                                      const TraceSet& set,
                                                                      const LoadOptions& options,
                                                                      StreamedMedians medians,
                                                                      std::string* note) {
  std::vector<StreamedProgram> programs;
  for (const TraceProcess& process : set.processes) programs.push_back({process.stream, &process.model});
  return StreamZoneStatistics(source, programs, options, medians, note);
}

Result<std::vector<std::vector<ZoneStatistics>>> StreamZoneStatistics(
    const TraceSource& source, const std::vector<StreamedProgram>& programs, const LoadOptions& options,
    StreamedMedians medians, std::string* note) {
  if (note != nullptr) note->clear();
  try {
    return Stream(source, programs, options, medians, note);
  } catch (const std::exception& e) {  // out of memory
    return Status::Error("reading the zones of " + source.name() + " again failed: " + e.what());
  }
}

}  // namespace gnomon::server
