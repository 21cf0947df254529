#include "gnomon/server/statistics.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <map>
#include <memory>
#include <thread>

#include "analysis/zone_accumulator.h"

namespace gnomon::server {
namespace {

// Medians come from each location's DurationSet: a second pass over the zones reads the
// exact values inside the one histogram bucket that holds the middle.
using analysis::AddSaturated;
using analysis::BucketLow;
using analysis::BucketWidth;
using analysis::DurationSet;
using analysis::kBuckets;
using Accumulator = analysis::ZoneAccumulator;

// A zone whose children are still being counted. A duration < 0 marks a zone that
// has none (never closed, or never timed): it counts nowhere and neither do its
// children towards it.
struct Open {
  uint32_t depth;
  uint32_t location;
  int64_t duration;
  int64_t children;
};

void Close(const Open& open, std::vector<Accumulator>& by_location) {
  if (open.duration >= 0) by_location[open.location].AddSelf(open.duration, open.children);
}

// A stretch of one sequence of zones (given in begin order with their depth). Pieces
// of one sequence are walked in parallel; what crosses a piece's start is settled
// afterwards, in order: the zones whose parent lies before the piece (their durations
// summed by depth) and the zones still open at its end.
struct Piece {
  size_t sequence = 0;
  size_t begin = 0, end = 0;
  uint32_t min_depth = UINT32_MAX;
  std::vector<int64_t> orphan_children;  // by depth: durations of zones whose parent precedes the piece
  std::vector<Open> still_open;          // at the end of the piece, outermost first
};

// One zone as statistics see it.
struct ZoneFacts {
  uint32_t depth;
  uint32_t location;
  int64_t duration;  // < 0: none
};

template <typename Sequences>
class StatisticsRun {
 public:
  StatisticsRun(const Sequences& sequences, size_t locations, unsigned threads)
      : sequences_(sequences),
        locations_(std::max<size_t>(locations, 1)),
        threads_(std::clamp(threads != 0 ? threads : std::thread::hardware_concurrency(), 1u, 64u)) {}

  std::vector<ZoneStatistics> Run() {
    CutPieces();
    const size_t workers = WorkerCount();
    std::vector<std::vector<Accumulator>> partial(workers);
    ForEachPieceInParallel(workers, [&](size_t worker, Piece& piece) {
      if (partial[worker].empty()) partial[worker].resize(locations_);
      Walk(piece, partial[worker]);
    });
    std::vector<Accumulator> total = std::move(partial[0]);
    if (total.empty()) total.resize(locations_);
    for (size_t w = 1; w < workers; ++w) {
      if (partial[w].empty()) continue;
      for (size_t id = 0; id < locations_; ++id) total[id].Merge(partial[w][id]);
    }
    SettleAcrossPieces(total);
    return Finish(total, workers);
  }

 private:
  static constexpr size_t kMinPieceZones = size_t{1} << 20;

  void CutPieces() {
    for (size_t s = 0; s < sequences_.count(); ++s) {
      const size_t n = sequences_.size(s);
      const size_t cuts = std::clamp<size_t>(n / kMinPieceZones, 1, threads_);
      for (size_t k = 0; k < cuts; ++k) {
        Piece piece;
        piece.sequence = s;
        piece.begin = n * k / cuts;
        piece.end = n * (k + 1) / cuts;
        pieces_.push_back(std::move(piece));
      }
    }
  }
  size_t WorkerCount() const {
    size_t zones = 0;
    for (const Piece& piece : pieces_) zones += piece.end - piece.begin;
    if (zones < kMinPieceZones) return 1;
    return std::min<size_t>(threads_, pieces_.size());
  }

  template <typename F>
  void ForEachPieceInParallel(size_t workers, F&& f) {
    std::atomic<size_t> next{0};
    auto work = [&](size_t worker) {
      for (size_t i = next++; i < pieces_.size(); i = next++) f(worker, pieces_[i]);
    };
    std::vector<std::thread> threads;
    for (size_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
    work(0);
    for (std::thread& t : threads) t.join();
  }

  uint32_t Location(uint32_t location) const { return location < locations_ ? location : 0; }

  // Counts every zone of the piece, and the self time of those that close inside it.
  void Walk(Piece& piece, std::vector<Accumulator>& by_location) {
    std::vector<Open> stack;
    for (size_t i = piece.begin; i < piece.end; ++i) {
      const ZoneFacts zone = sequences_.At(piece.sequence, i);
      while (!stack.empty() && stack.back().depth >= zone.depth) {
        Close(stack.back(), by_location);
        stack.pop_back();
      }
      const uint32_t location = Location(zone.location);
      if (zone.duration >= 0) {
        by_location[location].Add(zone.duration);
        if (!stack.empty()) {
          if (stack.back().duration >= 0)
            stack.back().children = AddSaturated(stack.back().children, zone.duration);
        } else if (zone.depth > 0) {
          if (piece.orphan_children.size() <= zone.depth) piece.orphan_children.resize(zone.depth + 1);
          piece.orphan_children[zone.depth] = AddSaturated(piece.orphan_children[zone.depth], zone.duration);
        }
      }
      piece.min_depth = std::min(piece.min_depth, zone.depth);
      stack.push_back({zone.depth, location, zone.duration, 0});
    }
    piece.still_open = std::move(stack);
  }

  // Walks the pieces of each sequence in order with the zones open at each piece's
  // start: they take the durations of their children in the piece, close when the
  // piece goes back above their depth, and the piece's own open zones join them.
  void SettleAcrossPieces(std::vector<Accumulator>& by_location) {
    std::vector<Open> open;
    for (size_t p = 0; p < pieces_.size(); ++p) {
      Piece& piece = pieces_[p];
      if (p == 0 || pieces_[p - 1].sequence != piece.sequence) {
        for (; !open.empty(); open.pop_back()) Close(open.back(), by_location);
      }
      for (uint32_t depth = 1; depth < piece.orphan_children.size(); ++depth) {
        // The parent: the innermost open zone above `depth`.
        auto parent =
            std::find_if(open.rbegin(), open.rend(), [&](const Open& o) { return o.depth < depth; });
        if (parent != open.rend() && parent->duration >= 0) {
          parent->children = AddSaturated(parent->children, piece.orphan_children[depth]);
        }
      }
      for (; !open.empty() && open.back().depth >= piece.min_depth; open.pop_back())
        Close(open.back(), by_location);
      open.insert(open.end(), piece.still_open.begin(), piece.still_open.end());
    }
    for (; !open.empty(); open.pop_back()) Close(open.back(), by_location);
  }

  // Where a median's value lies in a histogram bucket wider than one nanosecond.
  struct BucketQuery {
    uint32_t location;
    uint64_t low, high;  // [low, high)
    uint64_t rank;       // among the durations in it
    std::vector<int64_t> values;
  };

  std::vector<ZoneStatistics> Finish(std::vector<Accumulator>& by_location, size_t workers) {
    std::vector<BucketQuery> queries;
    std::vector<std::pair<size_t, size_t>> medians(by_location.size(),
                                                   {SIZE_MAX, SIZE_MAX});  // query per rank
    std::vector<std::pair<int64_t, int64_t>> known(by_location.size());
    for (uint32_t id = 0; id < by_location.size(); ++id) {
      Accumulator& a = by_location[id];
      const uint64_t n = a.stats.count;
      if (n == 0) continue;
      const uint64_t upper_rank = n / 2, lower_rank = n % 2 == 0 ? n / 2 - 1 : n / 2;
      if (!a.durations.has_histogram()) {
        std::vector<int64_t>& v = a.durations.values();
        std::nth_element(v.begin(), v.begin() + ptrdiff_t(upper_rank), v.end());
        const int64_t upper = v[upper_rank];
        const int64_t lower = lower_rank == upper_rank
                                  ? upper
                                  : *std::max_element(v.begin(), v.begin() + ptrdiff_t(upper_rank));
        known[id] = {lower, upper};
        continue;
      }
      auto resolve = [&](uint64_t rank, int64_t& value, size_t& query) {
        const auto [bucket, below] = a.durations.FindRank(rank);
        value = int64_t(BucketLow(bucket));
        if (BucketWidth(bucket) == 1) return;
        if (!queries.empty() && queries.back().location == id && queries.back().low == BucketLow(bucket)) {
          query = queries.size() - 1;
          queries.back().rank = rank - below;  // both middle values in one bucket: keep the upper rank
          return;
        }
        query = queries.size();
        queries.push_back({id, BucketLow(bucket), BucketLow(bucket) + BucketWidth(bucket), rank - below, {}});
      };
      if (lower_rank != upper_rank) resolve(lower_rank, known[id].first, medians[id].first);
      resolve(upper_rank, known[id].second, medians[id].second);
    }
    if (!queries.empty()) ReadBuckets(queries, workers, known, medians);

    std::vector<ZoneStatistics> result;
    for (uint32_t id = 0; id < by_location.size(); ++id) {
      if (by_location[id].stats.count == 0) continue;
      result.push_back(by_location[id].Finish(id, known[id].first, known[id].second));
    }
    analysis::SortByTotal(result);
    return result;
  }

  // The second pass: the durations inside each queried bucket, then the one asked for.
  void ReadBuckets(std::vector<BucketQuery>& queries, size_t workers,
                   std::vector<std::pair<int64_t, int64_t>>& known,
                   const std::vector<std::pair<size_t, size_t>>& medians) {
    std::vector<std::vector<uint32_t>> by_location(locations_);
    for (uint32_t q = 0; q < queries.size(); ++q) by_location[queries[q].location].push_back(q);
    std::vector<std::vector<std::vector<int64_t>>> found(workers,
                                                         std::vector<std::vector<int64_t>>(queries.size()));
    ForEachPieceInParallel(workers, [&](size_t worker, const Piece& piece) {
      for (size_t i = piece.begin; i < piece.end; ++i) {
        const ZoneFacts zone = sequences_.At(piece.sequence, i);
        if (zone.duration < 0) continue;
        for (uint32_t q : by_location[Location(zone.location)]) {
          if (uint64_t(zone.duration) >= queries[q].low && uint64_t(zone.duration) < queries[q].high) {
            found[worker][q].push_back(zone.duration);
          }
        }
      }
    });
    for (size_t q = 0; q < queries.size(); ++q) {
      std::vector<int64_t> values;
      for (size_t w = 0; w < workers; ++w)
        values.insert(values.end(), found[w][q].begin(), found[w][q].end());
      queries[q].values = std::move(values);
    }
    for (uint32_t id = 0; id < known.size(); ++id) {
      auto read = [&](size_t q, uint64_t rank) {
        std::vector<int64_t>& v = queries[q].values;
        if (rank >= v.size()) return int64_t(queries[q].low);  // cannot happen: the histogram counted them
        std::nth_element(v.begin(), v.begin() + ptrdiff_t(rank), v.end());
        return v[rank];
      };
      const auto [lower_query, upper_query] = medians[id];
      if (upper_query != SIZE_MAX) known[id].second = read(upper_query, queries[upper_query].rank);
      if (lower_query != SIZE_MAX) {
        // Both middle values in one bucket: the lower is the largest value below the upper's rank.
        if (lower_query == upper_query) {
          const std::vector<int64_t>& v = queries[lower_query].values;
          const uint64_t rank = queries[lower_query].rank;
          known[id].first =
              rank == 0 ? known[id].second : *std::max_element(v.begin(), v.begin() + ptrdiff_t(rank));
        } else {
          known[id].first = read(lower_query, queries[lower_query].rank);
        }
      }
    }
  }

  const Sequences& sequences_;
  size_t locations_;
  unsigned threads_;
  std::vector<Piece> pieces_;
};

// The CPU zones of every thread that begin in the range, one sequence per thread.
// Zones are stored in begin order, so each thread's are one stretch of its array.
class CpuSequences {
 public:
  CpuSequences(const TraceModel& model, const TickRange& range) : model_(model) {
    for (const ThreadTimeline& thread : model.threads) {
      const size_t first = FirstBeginAtOrAfter(thread.zones, range.begin_tick);
      const size_t last = range.end_tick == UINT64_MAX
                              ? thread.zones.size()
                              : FirstBeginAtOrAfter(thread.zones, range.end_tick + 1);
      stretches_.push_back({first, std::max(first, last)});
    }
  }
  size_t count() const { return model_.threads.size(); }
  size_t size(size_t s) const { return stretches_[s].second - stretches_[s].first; }
  [[gnu::always_inline]] ZoneFacts At(size_t s, size_t i) const {
    const Zone zone = model_.threads[s].zones[stretches_[s].first + i];
    return {zone.depth, zone.source_location,
            zone.is_open() ? -1 : model_.DurationNs(zone.begin_tick, zone.end_tick)};
  }

 private:
  static size_t FirstBeginAtOrAfter(const ZoneArray& zones, uint64_t tick) {
    if (tick == 0) return 0;
    size_t lo = 0, hi = zones.size();
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (zones[mid].begin_tick < tick) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  const TraceModel& model_;
  std::vector<std::pair<size_t, size_t>> stretches_;  // [first, end) by thread
};

// The GPU zones of every context that begin in the range, one sequence per recording
// thread (zones of one context interleave threads; each thread's zones nest on their
// own).
class GpuSequences {
 public:
  GpuSequences(const TraceModel& model, const TickRange& range) {
    const bool whole = range.begin_tick == 0 && range.end_tick == UINT64_MAX;
    const int64_t begin_ns = model.clock.TickToNs(range.begin_tick);
    const int64_t end_ns = model.clock.TickToNs(range.end_tick);
    for (const auto& [id, context] : model.gpu_contexts) {
      std::map<uint32_t, std::vector<ZoneFacts>> by_thread;
      for (size_t i = 0; i < context.zones.size(); ++i) {
        const GpuZone& zone = context.zones[i];
        int64_t duration = -1;
        if (zone.is_timed()) {
          duration = zone.gpu_end >= zone.gpu_begin
                         ? std::llround(context.clock.TicksToNs(zone.gpu_end - zone.gpu_begin))
                         : 0;
        }
        if (!whole) {
          if (!zone.is_timed()) continue;
          const int64_t at = model.MapGpuZone(context, zone).begin_ns;
          if (at < begin_ns || at > end_ns) continue;
        }
        by_thread[zone.thread_id].push_back({zone.depth, zone.source_location, duration});
      }
      for (auto& [thread, zones] : by_thread) sequences_.push_back(std::move(zones));
    }
  }
  size_t count() const { return sequences_.size(); }
  size_t size(size_t s) const { return sequences_[s].size(); }
  ZoneFacts At(size_t s, size_t i) const { return sequences_[s][i]; }

 private:
  std::vector<std::vector<ZoneFacts>> sequences_;
};

}  // namespace

std::vector<ZoneStatistics> ComputeZoneStatistics(const TraceModel& model, unsigned threads,
                                                  const TickRange& range) {
  const CpuSequences sequences(model, range);
  return StatisticsRun(sequences, model.source_locations.size(), threads).Run();
}

std::vector<ZoneStatistics> ComputeGpuZoneStatistics(const TraceModel& model, unsigned threads,
                                                     const TickRange& range) {
  const GpuSequences sequences(model, range);
  return StatisticsRun(sequences, model.source_locations.size(), threads).Run();
}

FrameTimeSummary SummarizeFrameTimes(const TraceModel& model, const FrameSeries& series) {
  std::vector<int64_t> lengths;
  lengths.reserve(series.frame_count());
  for (size_t k = 0; k < series.frame_count(); ++k) {
    const auto [begin, end] = series.Frame(k);
    lengths.push_back(model.DurationNs(begin, end));
  }
  FrameTimeSummary s;
  if (lengths.empty()) return s;
  std::sort(lengths.begin(), lengths.end());
  s.count = lengths.size();
  double sum = 0;
  for (int64_t l : lengths) sum += double(l);
  s.mean_ns = sum / double(lengths.size());
  s.min_ns = lengths.front();
  s.max_ns = lengths.back();
  auto at = [&](double q) {  // nearest rank: the smallest value with at least q of them at or below it
    const size_t rank = size_t(std::ceil(q * double(lengths.size())));
    return lengths[std::clamp<size_t>(rank, 1, lengths.size()) - 1];
  };
  s.p50_ns = at(0.5);
  s.p90_ns = at(0.9);
  s.p99_ns = at(0.99);
  // In doubles: a damaged trace's extremes would overflow a difference of integers.
  const double width = (double(s.max_ns) - double(s.min_ns)) / double(FrameTimeSummary::kFrameBins);
  for (int64_t l : lengths) {
    const size_t bin = width > 0 ? size_t((double(l) - double(s.min_ns)) / width) : 0;
    ++s.bins[std::min(bin, FrameTimeSummary::kFrameBins - 1)];
  }
  return s;
}

std::vector<CrossProcessZone> CompareProcessZones(const std::vector<const TraceModel*>& processes,
                                                  const std::vector<std::vector<ZoneStatistics>>& stats) {
  std::map<std::string, CrossProcessZone> by_name;
  for (size_t p = 0; p < processes.size() && p < stats.size(); ++p) {
    for (const ZoneStatistics& zone : stats[p]) {
      const std::string& name = processes[p]->Location(zone.source_location).name;
      CrossProcessZone& cross = by_name[name];
      // Two locations of one name in one program (two call sites): one entry, weighted.
      if (!cross.processes.empty() && cross.processes.back() == p) {
        const double total =
            cross.mean_ns.back() * double(cross.counts.back()) + zone.mean_ns * double(zone.count);
        cross.counts.back() += zone.count;
        cross.mean_ns.back() = total / double(cross.counts.back());
        continue;
      }
      cross.processes.push_back(p);
      cross.counts.push_back(zone.count);
      cross.mean_ns.push_back(zone.mean_ns);
    }
  }
  std::vector<CrossProcessZone> compared;
  for (auto& [name, cross] : by_name) {
    if (cross.processes.size() < 2) continue;
    cross.name = name;
    const auto [low, high] = std::minmax_element(cross.mean_ns.begin(), cross.mean_ns.end());
    cross.fastest = size_t(low - cross.mean_ns.begin());
    cross.slowest = size_t(high - cross.mean_ns.begin());
    compared.push_back(std::move(cross));
  }
  std::stable_sort(compared.begin(), compared.end(),
                   [](const auto& a, const auto& b) { return a.spread_ns() > b.spread_ns(); });
  return compared;
}

SlowestPerFrame CompareProcessFrames(const std::vector<const TraceModel*>& processes) {
  SlowestPerFrame result;
  result.slowest.assign(processes.size(), 0);
  result.worst_lag_ns.assign(processes.size(), 0);
  std::vector<const std::vector<uint64_t>*> marks;
  uint64_t steps = UINT64_MAX;
  for (const TraceModel* model : processes) {
    const auto main = model->frames.find(0);
    marks.push_back(main == model->frames.end() ? nullptr : &main->second.marks);
    if (marks.back() != nullptr && marks.back()->size() >= 2)
      steps = std::min<uint64_t>(steps, marks.back()->size() - 1);
  }
  size_t with_frames = 0;
  for (const auto* m : marks) with_frames += m != nullptr && m->size() >= 2;
  if (with_frames < 2 || steps == UINT64_MAX) return result;
  for (uint64_t k = 0; k < steps; ++k) {
    size_t slowest = SIZE_MAX;
    int64_t longest = INT64_MIN, second = INT64_MIN;  // a crafted trace's frames may go backwards
    for (size_t p = 0; p < processes.size(); ++p) {
      if (marks[p] == nullptr || marks[p]->size() < 2) continue;
      const int64_t ns = processes[p]->DurationNs((*marks[p])[k], (*marks[p])[k + 1]);
      if (ns > longest) {
        second = longest;
        longest = ns;
        slowest = p;
      } else if (ns > second) {
        second = ns;
      }
    }
    if (slowest == SIZE_MAX) continue;
    ++result.slowest[slowest];
    const int64_t lag =
        second == INT64_MIN ? 0 : int64_t(std::clamp<__int128>(__int128(longest) - second, 0, INT64_MAX));
    result.worst_lag_ns[slowest] = std::max(result.worst_lag_ns[slowest], lag);
  }
  result.frames = steps;
  return result;
}

}  // namespace gnomon::server
