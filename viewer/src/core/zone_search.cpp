#include "gnomon/viewer/zone_search.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace gnomon::viewer {
namespace {

// The location of each open ancestor, by depth, as a thread's zones go by in begin order,
// and which of them were kept as occurrences: their children's time is taken off theirs.
class AncestorStack {
 public:
  static constexpr size_t kNone = SIZE_MAX;
  // Enters a zone at `depth` lasting `duration_ns` (< 0: unknown), kept as occurrence
  // `item` (or kNone); returns its parent's location (0 at the top).
  uint32_t Enter(uint32_t depth, uint32_t location, int64_t duration_ns, std::vector<Occurrence>& items) {
    if (by_depth_.size() <= depth) by_depth_.resize(depth + 1);
    by_depth_[depth] = {location, kNone};
    if (depth == 0) return 0;
    const Open& parent = by_depth_[depth - 1];
    if (parent.item != kNone && duration_ns > 0) items[parent.item].self_ns -= duration_ns;
    return parent.location;
  }
  // The zone entered last at `depth` is occurrence `item`.
  void Keep(uint32_t depth, size_t item) { by_depth_[depth].item = item; }

 private:
  struct Open {
    uint32_t location = 0;
    size_t item = kNone;
  };
  std::vector<Open> by_depth_;
};

// Sorts and sums `values` into a spread.
DurationSpread Spread(std::vector<int64_t> values) {
  DurationSpread s;
  std::sort(values.begin(), values.end());
  long double total = 0, squares = 0;
  for (int64_t v : values) {
    total += v;
    squares += (long double)v * v;
  }
  if (!values.empty()) {
    const long double n = values.size();
    s.mean_ns = double(total / n);
    const long double variance = squares / n - (total / n) * (total / n);
    s.stddev_ns = variance > 0 ? double(std::sqrt(variance)) : 0;
  }
  s.total_ns = int64_t(std::min<long double>(total, INT64_MAX));
  s.sorted_ns = std::move(values);
  return s;
}

bool ContainsIgnoringCase(const std::string& text, const std::string& lower_needle) {
  if (lower_needle.empty()) return true;
  auto lower = [](char c) { return char(std::tolower(static_cast<unsigned char>(c))); };
  return std::search(text.begin(), text.end(), lower_needle.begin(), lower_needle.end(),
                     [&](char a, char b) { return lower(a) == b; }) != text.end();
}

}  // namespace

uint64_t DurationSpread::count() const {
  if (weights.empty()) return sorted_ns.size();
  uint64_t n = 0;
  for (const uint64_t w : weights) n += w;
  return n;
}

int64_t DurationSpread::Percentile(double q) const {
  if (sorted_ns.empty()) return 0;
  const uint64_t n = count();
  const uint64_t rank = uint64_t(std::llround(std::clamp(q, 0.0, 1.0) * double(n - 1)));
  if (weights.empty()) return sorted_ns[rank];
  uint64_t below = 0;
  for (size_t i = 0; i < sorted_ns.size(); ++i) {
    below += weights[i];
    if (rank < below) return sorted_ns[i];
  }
  return sorted_ns.back();
}

namespace {

// Orders the items, sums their spreads (unless given) and lays them out lane by lane.
void Finish(ZoneOccurrences& out, bool with_spreads) {
  std::stable_sort(out.items.begin(), out.items.end(),
                   [](const Occurrence& a, const Occurrence& b) { return a.begin_ns < b.begin_ns; });
  if (with_spreads) {
    std::vector<int64_t> durations, self_times;
    durations.reserve(out.items.size());
    self_times.reserve(out.items.size());
    for (const Occurrence& o : out.items) {
      durations.push_back(o.duration_ns);
      self_times.push_back(o.self_ns);
    }
    out.durations = Spread(std::move(durations));
    out.self_times = Spread(std::move(self_times));
  }
  // Lane by lane: a stable order of the lanes as first met, each lane's in begin order.
  std::map<LaneKey, size_t> group;
  for (uint32_t i = 0; i < out.items.size(); ++i) {
    const Occurrence& o = out.items[i];
    auto [it, inserted] = group.try_emplace(o.lane, out.by_lane.lanes.size());
    if (inserted) out.by_lane.lanes.emplace_back(o.lane, std::vector<LaneOccurrence>{});
    out.by_lane.lanes[it->second].second.push_back({.begin_ns = o.begin_ns,
                                                    .duration_ns = o.duration_ns,
                                                    .self_ns = o.self_ns,
                                                    .depth = o.depth,
                                                    .item = i});
    out.by_lane.longest_ns = std::max(out.by_lane.longest_ns, o.duration_ns);
  }
}

// A distribution read from a file as a spread.
DurationSpread Spread(const server::FoundSpread& found, uint64_t count) {
  DurationSpread s;
  for (const auto& [value, zones] : found.values) {
    s.sorted_ns.push_back(value);
    s.weights.push_back(zones);
  }
  if (count > 0) {
    const long double mean = (long double)found.total_ns / count;
    const long double variance = found.squares / count - mean * mean;
    s.mean_ns = double(mean);
    s.stddev_ns = variance > 0 ? double(std::sqrt(variance)) : 0;
  }
  s.total_ns = found.total_ns;
  return s;
}

}  // namespace

ZoneOccurrences OccurrencesFromFile(const server::FoundZones& found, const ZoneQuery& query) {
  ZoneOccurrences out;
  out.query = query;
  out.from_file = true;
  out.file_note = found.note;
  out.count = found.count;
  out.items.reserve(found.longest.size());
  for (const server::FoundZone& z : found.longest) {
    out.items.push_back({{LaneKind::kThread, z.thread_id},
                         Occurrence::kNotHeld,
                         z.thread_id,
                         z.parent,
                         z.depth,
                         z.begin_ns,
                         z.duration_ns,
                         z.self_ns});
  }
  // Every occurrence kept: the spreads exact, as held; else the file's distribution.
  const bool whole = out.items.size() == found.count;
  if (!whole) {
    out.durations = Spread(found.durations, found.count);
    out.self_times = Spread(found.self_times, found.count);
  }
  Finish(out, whole);
  return out;
}

ZoneOccurrences FindOccurrences(const server::TraceModel& model, const ZoneQuery& query) {
  ZoneOccurrences out;
  out.query = query;
  // Keeps `o` when it begins in the query's range, its self time to be cut by its
  // children as they come.
  auto keep = [&](Occurrence o, AncestorStack& ancestors) {
    if (o.begin_ns < query.begin_ns || o.begin_ns > query.end_ns) return;
    o.self_ns = o.duration_ns;
    ancestors.Keep(o.depth, out.items.size());
    out.items.push_back(o);
  };
  if (!query.gpu) {
    for (const server::ThreadTimeline& thread : model.threads) {
      AncestorStack ancestors;
      const uint64_t origin = model.first_tick;
      for (size_t i = 0; i < thread.zones.size(); ++i) {
        const server::Zone z = thread.zones[i];
        const int64_t duration = z.is_open() ? -1 : model.DurationNs(z.begin_tick, z.end_tick);
        const uint32_t parent = ancestors.Enter(z.depth, z.source_location, duration, out.items);
        if (z.source_location != query.location || z.is_open()) continue;
        keep({{LaneKind::kThread, thread.id},
              uint32_t(i),
              thread.id,
              parent,
              z.depth,
              model.DurationNs(origin, z.begin_tick),
              duration},
             ancestors);
      }
    }
  } else {
    const int64_t origin_ns = model.clock.TickToNs(model.first_tick);
    for (const auto& [id, context] : model.gpu_contexts) {
      std::map<uint32_t, AncestorStack> ancestors;  // by recording thread
      for (size_t i = 0; i < context.zones.size(); ++i) {
        const server::GpuZone& z = context.zones[i];
        const auto mapped = z.is_timed() ? model.MapGpuZone(context, z) : server::TraceModel::MappedGpuZone{};
        const int64_t duration = z.is_timed() ? mapped.end_ns - mapped.begin_ns : -1;
        AncestorStack& stack = ancestors[z.thread_id];
        const uint32_t parent = stack.Enter(z.depth, z.source_location, duration, out.items);
        if (z.source_location != query.location || !z.is_timed()) continue;
        keep({{LaneKind::kGpu, id},
              uint32_t(i),
              z.thread_id,
              parent,
              z.depth,
              mapped.begin_ns - origin_ns,
              duration},
             stack);
      }
    }
  }
  // Children that overlap (a damaged trace) take no more than the zone.
  for (Occurrence& o : out.items) o.self_ns = std::max<int64_t>(o.self_ns, 0);
  out.count = out.items.size();
  Finish(out, true);
  return out;
}

std::optional<Occurrence> FindNthZone(const server::TraceModel& model, const std::string& name, size_t n) {
  for (const bool gpu : {false, true}) {
    std::vector<Occurrence> found;
    for (uint32_t location = 0; location < model.source_locations.size(); ++location) {
      if (model.source_locations[location].name != name) continue;
      ZoneOccurrences some = FindOccurrences(model, {.location = location, .gpu = gpu});
      found.insert(found.end(), some.items.begin(), some.items.end());
    }
    if (found.empty()) continue;
    std::stable_sort(found.begin(), found.end(),
                     [](const Occurrence& a, const Occurrence& b) { return a.begin_ns < b.begin_ns; });
    if (n == 0 || n > found.size()) return std::nullopt;
    return found[n - 1];
  }
  return std::nullopt;
}

std::vector<LocationMatch> SearchLocations(const server::TraceModel& model, const std::string& text,
                                           size_t limit) {
  std::string needle = text;
  for (char& c : needle) c = char(std::tolower(static_cast<unsigned char>(c)));
  std::vector<LocationMatch> matches(model.source_locations.size());
  // A sample of the zones is enough to rank by: about kRankSample CPU zones and as many
  // GPU zones, each thread's and context's in proportion to its size, so a keystroke
  // costs the same for ten thousand zones as for a hundred million.
  constexpr size_t kRankSample = 65536;
  size_t cpu_total = 0, gpu_total = 0;
  for (const server::ThreadTimeline& thread : model.threads) cpu_total += thread.zones.size();
  for (const auto& [id, context] : model.gpu_contexts) gpu_total += context.zones.size();
  const size_t cpu_step = std::max<size_t>(1, cpu_total / kRankSample);
  const size_t gpu_step = std::max<size_t>(1, gpu_total / kRankSample);
  for (const server::ThreadTimeline& thread : model.threads) {
    for (size_t i = 0; i < thread.zones.size(); i += cpu_step) {
      const uint32_t location = thread.zones[i].source_location;
      if (location < matches.size()) matches[location].cpu_zones += cpu_step;
    }
  }
  // Zones not held: a sample of their overview's runs of one location counts them (runs
  // that merge several locations go uncounted).
  size_t runs = 0;
  for (const server::ThreadTimeline& thread : model.threads)
    for (const auto& row : thread.overview.rows()) runs += row.size();
  const size_t run_step = std::max<size_t>(1, runs / kRankSample);
  for (const server::ThreadTimeline& thread : model.threads) {
    for (const auto& row : thread.overview.rows()) {
      for (size_t i = 0; i < row.size(); i += run_step) {
        const server::OverviewRun& run = row[i];
        if (run.location != server::kMixedLocations && run.location < matches.size())
          matches[run.location].cpu_zones += uint64_t(run.count) * run_step;
      }
    }
  }
  for (const auto& [id, context] : model.gpu_contexts) {
    for (size_t i = 0; i < context.zones.size(); i += gpu_step) {
      const uint32_t location = context.zones[i].source_location;
      if (location < matches.size()) matches[location].gpu_zones += gpu_step;
    }
  }
  std::vector<LocationMatch> found;
  for (uint32_t i = 1; i < model.source_locations.size(); ++i) {
    const server::SourceLocation& l = model.source_locations[i];
    if (ContainsIgnoringCase(l.name, needle) || ContainsIgnoringCase(l.function, needle) ||
        ContainsIgnoringCase(l.file, needle)) {
      matches[i].location = i;
      found.push_back(matches[i]);
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const LocationMatch& a, const LocationMatch& b) {
    return a.cpu_zones + a.gpu_zones > b.cpu_zones + b.gpu_zones;
  });
  if (found.size() > limit) found.resize(limit);
  return found;
}

double DurationHistogram::EdgeNs(size_t bin) const {
  const size_t bins = std::max<size_t>(counts.size(), 1);
  const double f = double(bin) / double(bins);
  if (scale == HistogramScale::kLinear) return double(min_ns) + f * double(max_ns - min_ns);
  const double lo = std::log(double(std::max<int64_t>(min_ns, 1)));
  const double hi = std::log(double(std::max<int64_t>(max_ns, 1)));
  return std::exp(lo + f * (hi - lo));
}

double DurationHistogram::Fraction(double ns) const {
  if (max_ns <= min_ns) return 0;
  if (scale == HistogramScale::kLinear) return (ns - double(min_ns)) / double(max_ns - min_ns);
  const double lo = std::log(double(std::max<int64_t>(min_ns, 1)));
  const double hi = std::log(double(std::max<int64_t>(max_ns, 1)));
  return hi > lo ? (std::log(std::max(ns, 1.0)) - lo) / (hi - lo) : 0;
}

size_t DurationHistogram::BinOf(int64_t ns) const {
  const size_t bins = counts.size();
  if (bins <= 1 || max_ns <= min_ns) return 0;
  return std::min(bins - 1, size_t(std::max(0.0, Fraction(double(ns)) * double(bins))));
}

void DurationHistogram::Count(const std::vector<int64_t>& sorted_ns, const std::vector<uint64_t>& weights) {
  // Bins are contiguous runs of the sorted durations: a binary search per bin, not a
  // logarithm per duration, so a million durations cost microseconds.
  auto from = sorted_ns.begin();
  for (size_t bin = 0; bin < counts.size() && from != sorted_ns.end(); ++bin) {
    const auto to = std::partition_point(from, sorted_ns.end(), [&](int64_t ns) { return BinOf(ns) <= bin; });
    if (weights.empty()) {
      counts[bin] += uint64_t(to - from);
    } else {
      for (auto at = from; at != to; ++at) counts[bin] += weights[size_t(at - sorted_ns.begin())];
    }
    tallest = std::max(tallest, counts[bin]);
    from = to;
  }
}

DurationHistogram MakeHistogram(const DurationSpread& values, size_t bins, HistogramScale scale) {
  DurationHistogram h;
  h.scale = scale;
  h.counts.assign(std::max<size_t>(bins, 1), 0);
  if (values.sorted_ns.empty()) return h;
  h.min_ns = values.sorted_ns.front();
  h.max_ns = values.sorted_ns.back();
  h.Count(values.sorted_ns, values.weights);
  return h;
}

std::vector<uint32_t> SelectOccurrences(const ZoneOccurrences& occurrences, const OccurrenceFilter& filter,
                                        OccurrenceOrder order) {
  std::vector<uint32_t> rows;
  for (uint32_t i = 0; i < occurrences.items.size(); ++i) {
    if (filter.Keeps(occurrences.items[i])) rows.push_back(i);
  }
  const auto& items = occurrences.items;
  if (order == OccurrenceOrder::kDuration) {
    std::stable_sort(rows.begin(), rows.end(),
                     [&](uint32_t a, uint32_t b) { return items[a].duration_ns > items[b].duration_ns; });
  } else if (order == OccurrenceOrder::kThread) {
    std::stable_sort(rows.begin(), rows.end(),
                     [&](uint32_t a, uint32_t b) { return items[a].thread_id < items[b].thread_id; });
  }
  return rows;
}

std::vector<OccurrenceGroup> GroupOccurrences(const ZoneOccurrences& occurrences,
                                              const OccurrenceFilter& filter, OccurrenceGrouping grouping) {
  std::map<uint32_t, OccurrenceGroup> groups;
  for (const Occurrence& o : occurrences.items) {
    if (!filter.Keeps(o)) continue;
    const uint32_t key = grouping == OccurrenceGrouping::kThread ? o.thread_id : o.parent;
    OccurrenceGroup& g = groups[key];
    g.key = key;
    ++g.count;
    g.total_ns += o.duration_ns;
  }
  std::vector<OccurrenceGroup> out;
  for (auto& [key, g] : groups) {
    g.mean_ns = double(g.total_ns) / double(g.count);
    out.push_back(g);
  }
  std::stable_sort(out.begin(), out.end(), [](const OccurrenceGroup& a, const OccurrenceGroup& b) {
    return a.total_ns > b.total_ns;
  });
  return out;
}

void OutlineOccurrences(const Timeline& timeline, const TimelineView& view,
                        const ZoneOccurrences& occurrences, const OccurrenceFilter& strong,
                        std::vector<Outline>& out) {
  const OccurrencesByLane& by_lane = occurrences.by_lane;
  out.clear();
  const int64_t t0 = view.begin_ns(), t1 = view.end_ns();
  std::map<LaneKey, const Lane*> lanes;
  for (const Lane& lane : timeline.lanes()) lanes[lane.key] = &lane;
  const float row_height = timeline.metrics().row_height;
  std::vector<size_t> open;  // by row: the rectangle that may grow, or SIZE_MAX
  for (const auto& [key, indexes] : by_lane.lanes) {
    auto found = lanes.find(key);
    if (found == lanes.end()) continue;  // hidden, or not a lane of this timeline
    const Lane& lane = *found->second;
    open.assign(std::max<uint32_t>(lane.rows, 1), SIZE_MAX);
    // From the first that may reach into the view (none is longer than the longest) to
    // the first that begins after it.
    auto it = std::lower_bound(indexes.begin(), indexes.end(), t0 - by_lane.longest_ns,
                               [](const LaneOccurrence& o, int64_t t) { return o.begin_ns < t; });
    for (; it != indexes.end(); ++it) {
      const LaneOccurrence& o = *it;
      if (o.begin_ns > t1) break;
      if (o.begin_ns + o.duration_ns < t0) continue;
      const uint32_t row = std::min<uint32_t>(o.depth, uint32_t(open.size() - 1));  // collapsed: one row
      const float x0 = float(view.NsToX(o.begin_ns));
      const bool is_strong = strong.Keeps(o);
      if (open[row] != SIZE_MAX && x0 <= out[open[row]].x1 + 1) {
        Outline& grown = out[open[row]];
        grown.x1 = std::max(grown.x1, float(view.NsToX(o.begin_ns + o.duration_ns)));
        ++grown.count;
        grown.strong |= is_strong;
        continue;
      }
      open[row] = out.size();
      const float y0 = lane.y + float(row) * row_height;
      const float x1 = std::max(float(view.NsToX(o.begin_ns + o.duration_ns)), x0 + 1);
      out.push_back({x0, y0, x1, y0 + row_height - 1, 1, is_strong});
    }
  }
}

}  // namespace gnomon::viewer
