#include "gnomon/server/regression.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "duration_set.h"

namespace gnomon::server {
namespace {

using Kind = RegressionRow::Kind;
using Verdict = RegressionRow::Verdict;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct Key {
  Kind kind;
  std::string name;
  std::string where;
  friend auto operator<=>(const Key&, const Key&) = default;
};

struct Durations {
  analysis::DurationSet set;
  uint64_t count = 0;
  void Add(int64_t ns) {
    set.Add(std::max<int64_t>(ns, 0));
    ++count;
  }
};
using Collected = std::map<Key, Durations>;

// The file without its folders (paths differ between build machines), or the function.
std::string WhereOf(const SourceLocation& location) {
  if (location.file.empty()) return location.function;
  const size_t slash = location.file.find_last_of("/\\");
  return slash == std::string::npos ? location.file : location.file.substr(slash + 1);
}

// Every closed CPU zone, timed GPU zone and frame of one program, by location.
void Collect(const TraceModel& model, Collected& out, uint64_t& zones) {
  std::vector<Durations*> cpu(model.source_locations.size(), nullptr);
  std::vector<Durations*> gpu(model.source_locations.size(), nullptr);
  auto slot = [&](std::vector<Durations*>& by_location, Kind kind, uint32_t index) -> Durations& {
    if (index >= by_location.size()) index = 0;
    if (by_location[index] == nullptr) {
      const SourceLocation& location = model.Location(index);
      by_location[index] =
          &out[{kind, location.name.empty() ? location.function : location.name, WhereOf(location)}];
    }
    return *by_location[index];
  };
  for (const ThreadTimeline& thread : model.threads) {
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const Zone zone = thread.zones[i];
      if (zone.is_open()) continue;
      slot(cpu, Kind::kCpuZone, zone.source_location).Add(model.DurationNs(zone.begin_tick, zone.end_tick));
      ++zones;
    }
  }
  for (const auto& [id, context] : model.gpu_contexts) {
    for (size_t i = 0; i < context.zones.size(); ++i) {
      const GpuZone& zone = context.zones[i];
      if (!zone.is_timed()) continue;
      const double ns =
          zone.gpu_end >= zone.gpu_begin ? context.clock.TicksToNs(zone.gpu_end - zone.gpu_begin) : 0;
      slot(gpu, Kind::kGpuZone, zone.source_location).Add(int64_t(std::min(std::round(ns), 9.2e18)));
      ++zones;
    }
  }
  for (const auto& [id, series] : model.frames) {
    if (series.frame_count() == 0) continue;
    Durations& frames = out[{Kind::kFrames, model.FrameSeriesName(id), ""}];
    for (size_t k = 0; k < series.frame_count(); ++k) {
      const auto [begin, end] = series.Frame(k);
      frames.Add(model.DurationNs(begin, end));
    }
  }
}

// The largest m with P(B < m) <= tail, B binomial of n draws of probability p (0 < p < 1).
uint64_t LowerTailCount(uint64_t n, double p, double tail) {
  if (n == 0) return 0;
  const double mean = double(n) * p;
  const double sd = std::sqrt(mean * (1 - p));
  // Twelve standard deviations under the mean, P(B < k) is below 1e-30: taken as 0.
  const double start = mean - 12 * sd - 1;
  uint64_t m = start > 0 ? uint64_t(start) : 0;
  const double k = double(m);
  double pmf = std::exp(std::lgamma(double(n) + 1) - std::lgamma(k + 1) - std::lgamma(double(n) - k + 1) +
                        k * std::log(p) + (double(n) - k) * std::log1p(-p));
  double below = 0;  // P(B < m)
  while (m < n && below + pmf <= tail) {
    below += pmf;
    ++m;
    pmf *= double(n - m + 1) / double(m) * p / (1 - p);  // P(B = m) from P(B = m - 1)
  }
  return m;
}

// Its change, new / old - 1, with a zero old value read as no change or an infinite one.
double Ratio(double new_ns, double old_ns) {
  if (old_ns > 0) return new_ns / old_ns - 1;
  return new_ns > 0 ? kInfinity : 0;
}

// One quantile of both traces: its nearest-rank value (the middle of its bucket when
// the durations are a histogram) and the two ends that bracket it.
struct Bracketed {
  double value = 0;
  double low = -1;   // < 0: not bounded
  double high = -1;  // < 0: not bounded
};
Bracketed Bracket(Durations& d, double p, double tail) {
  const uint64_t n = d.count;
  const uint64_t rank = std::clamp<uint64_t>(uint64_t(std::ceil(p * double(n))), 1, n) - 1;
  const auto [least, greatest] = d.set.ValueRange(rank);
  Bracketed b;
  b.value = (double(least) + double(greatest)) / 2;
  const OrderRanks ranks = QuantileRanks(n, p, tail);
  if (ranks.low >= 1) b.low = double(d.set.ValueRange(ranks.low - 1).first);
  if (ranks.high <= n) b.high = double(d.set.ValueRange(ranks.high - 1).second);
  return b;
}

QuantileChange Change(Durations& old_durations, Durations& new_durations, double p, double tail) {
  const Bracketed o = Bracket(old_durations, p, tail);
  const Bracketed n = Bracket(new_durations, p, tail);
  QuantileChange c;
  c.old_ns = std::llround(o.value);
  c.new_ns = std::llround(n.value);
  c.change = Ratio(n.value, o.value);
  if (n.low >= 0 && o.high >= 0) c.low = Ratio(n.low, o.high), c.low_ns = n.low - o.high;
  if (n.high >= 0 && o.low >= 0) c.high = Ratio(n.high, o.low), c.high_ns = n.high - o.low;
  return c;
}

}  // namespace

OrderRanks QuantileRanks(uint64_t n, double p, double tail) {
  // The low end x(l) is above the quantile when fewer than l values are at or below
  // it: P(B < l). The high end x(h) is below it when h values or more are: P(B >= h),
  // which is P(B' < n - h + 1) for the values above it, B' of probability 1 - p.
  OrderRanks ranks;
  ranks.low = LowerTailCount(n, p, tail);
  ranks.high = n + 1 - LowerTailCount(n, 1 - p, tail);
  return ranks;
}

RegressionReport CompareForRegressions(const std::vector<const TraceModel*>& old_programs,
                                       const std::vector<const TraceModel*>& new_programs,
                                       const RegressionOptions& options) {
  RegressionReport report;
  report.options = options;
  Collected old_durations, new_durations;
  for (const TraceModel* model : old_programs) Collect(*model, old_durations, report.old_zones);
  for (const TraceModel* model : new_programs) Collect(*model, new_durations, report.new_zones);
  for (const auto& [key, durations] : old_durations) report.compared += new_durations.contains(key);
  // Two quantiles a row, two traces a quantile, two sides an interval.
  const double tail = (1 - options.confidence) / double(8 * std::max<size_t>(report.compared, 1));
  report.interval_confidence = 1 - 2 * tail;

  auto row_of = [](const Key& key) {
    RegressionRow row;
    row.kind = key.kind;
    row.name = key.name;
    row.where = key.where;
    return row;
  };
  std::vector<RegressionRow> one_side;
  for (auto& [key, old_d] : old_durations) {
    RegressionRow row = row_of(key);
    row.old_count = old_d.count;
    const auto found = new_durations.find(key);
    if (found == new_durations.end()) {
      row.verdict = Verdict::kOnlyOld;
      one_side.push_back(std::move(row));
      continue;
    }
    Durations& new_d = found->second;
    row.new_count = new_d.count;
    old_d.set.SortValues();
    new_d.set.SortValues();
    row.median = Change(old_d, new_d, 0.5, tail);
    row.p90 = Change(old_d, new_d, 0.9, tail);
    const double t = options.threshold, floor = options.min_change_ns;
    auto slower = [&](const QuantileChange& c) { return c.low > t && c.low_ns > floor; };
    auto faster = [&](const QuantileChange& c) { return c.high < -t && c.high_ns < -floor; };
    if (slower(row.median) || slower(row.p90)) {
      row.verdict = Verdict::kSlower;
      ++report.slower;
    } else if (faster(row.median) || faster(row.p90)) {
      row.verdict = Verdict::kFaster;
      ++report.faster;
    }
    report.rows.push_back(std::move(row));
  }
  for (const auto& [key, new_d] : new_durations) {
    if (old_durations.contains(key)) continue;
    RegressionRow row = row_of(key);
    row.new_count = new_d.count;
    row.verdict = Verdict::kOnlyNew;
    one_side.push_back(std::move(row));
  }
  auto order = [](const RegressionRow& row) {
    const double change = std::max(row.median.change, row.p90.change);
    const double gain = std::min(row.median.change, row.p90.change);
    return std::tuple(row.verdict == Verdict::kSlower   ? 0
                      : row.verdict == Verdict::kFaster ? 1
                                                        : 2,
                      row.verdict == Verdict::kSlower   ? -change
                      : row.verdict == Verdict::kFaster ? gain
                                                        : 0.0);
  };
  std::stable_sort(report.rows.begin(), report.rows.end(),
                   [&](const RegressionRow& a, const RegressionRow& b) { return order(a) < order(b); });
  report.rows.insert(report.rows.end(), std::make_move_iterator(one_side.begin()),
                     std::make_move_iterator(one_side.end()));
  return report;
}

}  // namespace gnomon::server
