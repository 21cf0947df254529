#include "gnomon/server/gpu_clock_model.h"

#include <algorithm>
#include <cmath>

#include "gnomon/protocol/check.h"
#include "gnomon/server/cpu_clock_model.h"

namespace gnomon::server {
namespace {

// Largest drift the model accepts between two knots, and the bound it assumes when it
// extrapolates beyond its knots.
constexpr double kMaxRateError = 0.01;
constexpr uint32_t kMaxToleratedBoundNs = 10'000'000;  // a fallback bracket on a loaded machine: a few ms
constexpr double kExtrapolationDriftBound = 10e-6;

uint32_t SaturatedNs(double ns) { return uint32_t(std::round(std::clamp(ns, 0.0, double(UINT32_MAX - 1)))); }

// Where the line through knots a and b (a before b) passes at `ticks`: CPU ns after a's.
double LineFrom(const GpuCalibrationSample& a, const GpuCalibrationSample& b, uint64_t ticks) {
  const double t = double(ticks - a.gpu_ticks) / double(b.gpu_ticks - a.gpu_ticks);
  return t * double(b.cpu_ns - a.cpu_ns);
}

// How far knot k lies (in CPU ns) from the line through knots a and b (a before b).
double DistanceFromLine(const GpuCalibrationSample& a, const GpuCalibrationSample& b,
                        const GpuCalibrationSample& k) {
  return std::fabs(double(k.cpu_ns - a.cpu_ns) - LineFrom(a, b, k.gpu_ticks));
}

double Weight(uint32_t uncertainty_ns) {
  const double u = double(uncertainty_ns) + 1.0;
  return 1.0 / (u * u);
}

}  // namespace

GpuClockModel::GpuClockModel(TickPeriod period, uint8_t valid_bits)
    : period_(period.numerator_ns == 0 || period.denominator == 0 ? TickPeriod{} : period),
      valid_bits_(valid_bits == 0 || valid_bits > 64 ? 64 : valid_bits) {
  epochs_.back().slope_ns_per_tick = period_.ns();
}

double GpuClockModel::TicksToNs(uint64_t ticks) const {
  const unsigned __int128 scaled = (unsigned __int128)ticks * period_.numerator_ns;
  const unsigned __int128 whole = scaled / period_.denominator;
  const double fraction = double(uint64_t(scaled % period_.denominator)) / double(period_.denominator);
  return double(whole) + fraction;
}

uint64_t GpuClockModel::Unwrap(uint64_t raw) {
  if (valid_bits_ >= 64) {
    last_unwrapped_ = raw;
    has_last_ = true;
    return raw;
  }
  const uint64_t range = uint64_t{1} << valid_bits_;
  const uint64_t mask = range - 1;
  raw &= mask;
  if (!has_last_) {
    has_last_ = true;
    last_unwrapped_ = raw;
    return raw;
  }
  uint64_t candidate = (last_unwrapped_ & ~mask) | raw;
  const int64_t diff = int64_t(candidate - last_unwrapped_);
  if (diff > int64_t(range / 2)) {
    if (candidate >= range) candidate -= range;
  } else if (diff < -int64_t(range / 2)) {
    candidate += range;
  }
  last_unwrapped_ = candidate;
  return candidate;
}

void GpuClockModel::AddToSums(Epoch& e, const GpuCalibrationSample& k, double w) {
  const GpuCalibrationSample& base = e.knots.front();
  const long double x = (long double)(int64_t(k.gpu_ticks - base.gpu_ticks));
  const long double y = (long double)(k.cpu_ns - base.cpu_ns);
  e.sum_w += w;
  e.sum_wx += w * x;
  e.sum_wy += w * y;
  e.sum_wxx += w * x * x;
  e.sum_wxy += w * x * y;
}

GpuClockModel::SampleResult GpuClockModel::AddSample(const GpuCalibrationSample& sample) {
  Epoch& e = epochs_.back();
  const double w = Weight(sample.uncertainty_ns);
  if (!e.knots.empty()) {
    GpuCalibrationSample& last = e.knots.back();
    // Compared as they are, not through a difference: a difference of unsigned ticks
    // wraps, and a sample far below the last would pass for one just after it.
    if (sample.gpu_ticks < last.gpu_ticks || sample.cpu_ns < last.cpu_ns) {
      ++rejected_count_;
      return SampleResult::kRejected;
    }
    const uint64_t dg = sample.gpu_ticks - last.gpu_ticks;
    const double dc = double(sample.cpu_ns) - double(last.cpu_ns);
    const double dg_ns = double(dg) * period_.ns();
    // Stated bounds count up to kMaxToleratedBoundNs each: one read claiming seconds
    // must not become a knot far off the others (and then reject every later read).
    const double stated = double(std::min(last.uncertainty_ns, kMaxToleratedBoundNs)) +
                          double(std::min(sample.uncertainty_ns, kMaxToleratedBoundNs));
    const double tolerance = dg_ns * kMaxRateError + stated + 1000.0;
    if (dg_ns < double(kMergeWindowNs) && std::fabs(dc - dg_ns) <= tolerance) {
      // Two reads of (nearly) the same moment: one knot at their weighted centroid,
      // which lies between them and so keeps the knots strictly increasing. Its stated
      // uncertainty is their weighted mean: reading one moment twice does not remove the
      // offset both reads share.
      const double old_w = e.weights.back();
      AddToSums(e, last, -old_w);
      const double share = w / (old_w + w);
      const double tick_step = std::floor(double(dg) * share);
      last.gpu_ticks += tick_step >= double(dg) ? dg : uint64_t(tick_step);
      last.cpu_ns += int64_t(std::floor(dc * share));
      const double merged_w = old_w + w;
      last.uncertainty_ns =
          SaturatedNs((old_w * double(last.uncertainty_ns) + w * double(sample.uncertainty_ns)) / merged_w);
      e.weights.back() = merged_w;
      e.last_read_ticks = sample.gpu_ticks;
      AddToSums(e, last, merged_w);
      ++sample_count_;
      NoteStatedUncertainty(sample.uncertainty_ns);
      Refit(e);
      UpdateBounds(e);
      Smooth(e);
      UpdateOffset(e);
      CheckKnotOrder(e);
      return SampleResult::kMerged;
    }
    // The rate may be off by kMaxRateError plus what the two reads' stated bounds allow:
    // a fallback pair bracketed over milliseconds, 20 ms after the last, is still a knot.
    if (dg == 0 || dc <= 0 || !(dg_ns > 0) || std::fabs(dc - dg_ns) > tolerance) {
      ++rejected_count_;
      return SampleResult::kRejected;
    }
  }
  if (e.knots.empty()) e.first_read_ticks = sample.gpu_ticks;
  e.last_read_ticks = sample.gpu_ticks;
  e.knots.push_back(sample);
  e.weights.push_back(w);
  AddToSums(e, sample, w);
  ++sample_count_;
  NoteStatedUncertainty(sample.uncertainty_ns);
  Refit(e);
  UpdateBounds(e);
  Smooth(e);
  UpdateOffset(e);
  CheckKnotOrder(e);
  return SampleResult::kAdded;
}

void GpuClockModel::NoteStatedUncertainty(uint32_t uncertainty_ns) {
  if (uncertainty_ns == 0) ++flags_.zero_uncertainty;
  if (uncertainty_ns > kAbsurdUncertaintyNs) ++flags_.absurd_uncertainty;
}

void GpuClockModel::UpdateBounds(Epoch& e) {
  const size_t n = e.knots.size();
  e.scatter.resize(n, 0.0f);
  e.contradicted.resize(n, 0);
  e.span_scatter.resize(n >= 2 ? n - 1 : 0, -1.0f);
  e.span_typical.resize(n >= 2 ? n - 1 : 0, 0.0f);
  if (n < 3) return;
  // The knot before the last has just got (or moved) its right neighbour.
  const size_t changed = n - 2;
  {
    const GpuCalibrationSample& a = e.knots[changed - 1];
    const GpuCalibrationSample& k = e.knots[changed];
    const GpuCalibrationSample& b = e.knots[changed + 1];
    const double t = double(k.gpu_ticks - a.gpu_ticks) / double(b.gpu_ticks - a.gpu_ticks);
    const double scatter = DistanceFromLine(a, b, k);
    e.scatter[changed] = float(scatter);
    const double stated =
        double(k.uncertainty_ns) + (1 - t) * double(a.uncertainty_ns) + t * double(b.uncertainty_ns);
    const uint8_t contradicted = scatter > stated ? 1 : 0;
    flags_.contradicted += contradicted;
    flags_.contradicted -= e.contradicted[changed];
    e.contradicted[changed] = contradicted;
    if (changed >= 1) SetAsideIfOutlier(e, changed - 1);
  }
  // The newest knot has one neighbour so far: until the next arrives, its distance from
  // the line through the two before it (a harsher test) stands in, so a bad last read
  // widens the spans around it instead of passing unseen.
  e.scatter[n - 1] = float(DistanceFromLine(e.knots[n - 3], e.knots[n - 2], e.knots[n - 1]));
  // Every span whose window holds the changed or the newest knot: its largest scatter.
  const ptrdiff_t last_span = ptrdiff_t(n) - 2;
  for (ptrdiff_t j = std::max<ptrdiff_t>(0, ptrdiff_t(changed) - 2 - kScatterWindow); j <= last_span; ++j) {
    double local = 0;
    for (ptrdiff_t m = std::max<ptrdiff_t>(1, j - kScatterWindow + 1);
         m <= std::min(ptrdiff_t(n) - 1, j + kScatterWindow); ++m) {
      local = std::max(local, double(e.scatter[size_t(m)]));
    }
    e.span_scatter[size_t(j)] = float(local);
  }
  // The scatter a read typically shows here: the 90th percentile of the recent knots',
  // kept by each of the last spans as the largest it has seen.
  const size_t first_recent = n - 1 > size_t(kTypicalWindow) ? n - 1 - kTypicalWindow : 1;
  std::vector<float> recent(e.scatter.begin() + ptrdiff_t(first_recent),
                            e.scatter.begin() + ptrdiff_t(n - 1));
  const size_t at = (recent.size() - 1) * 9 / 10;
  std::nth_element(recent.begin(), recent.begin() + ptrdiff_t(at), recent.end());
  for (ptrdiff_t j = std::max<ptrdiff_t>(0, last_span - kTypicalWindow / 2); j <= last_span; ++j) {
    e.span_typical[size_t(j)] = std::max(e.span_typical[size_t(j)], recent[at]);
  }
  // How much the rate changes from span to span, for extrapolation.
  auto rate = [&](size_t j) {
    const double ticks_ns = double(e.knots[j + 1].gpu_ticks - e.knots[j].gpu_ticks) * period_.ns();
    return double(e.knots[j + 1].cpu_ns - e.knots[j].cpu_ns) / ticks_ns;
  };
  e.rate_jitter = 0;
  for (size_t j = n - 1 > size_t(kScatterWindow) ? n - 1 - kScatterWindow : 1; j + 1 < n; ++j) {
    e.rate_jitter = std::max(e.rate_jitter, std::fabs(rate(j) - rate(j - 1)));
  }
}

void GpuClockModel::Smooth(Epoch& e) {
  // Where each knot is placed: a weighted quadratic fitted through it and the same
  // number of knots on either side (2 to kSmoothReach, those within kSmoothSpanNs), at
  // the knot. Interpolating through single reads passes their noise into every time
  // between them; the quadratic averages it down (about 0.7x for 5 knots, 0.5x for 9)
  // and follows a drift that changes (at the centre it is exact for a cubic). Beyond a
  // second the clock's own wander is no longer a cubic, and averaging over it would
  // move knots off the curve: knots calibrated less often than twice a second, those
  // without two knots on either side, and fits that would move a knot by half its
  // distance to a neighbour (absurd input) keep their read.
  const size_t n = e.knots.size();
  e.placed_ns.resize(n);
  // The knots whose window changed: the newest ones, and those around an outlier moved.
  const size_t reach = size_t(kSmoothReach);
  const size_t from = n > reach + 3 ? n - reach - 3 : 0;
  for (size_t k = from; k < n; ++k) {
    const GpuCalibrationSample& c = e.knots[k];
    e.placed_ns[k] = c.cpu_ns;
    size_t m = 0;
    while (m < reach && k >= m + 1 && k + m + 1 < n &&
           c.cpu_ns - e.knots[k - m - 1].cpu_ns <= kSmoothSpanNs &&
           e.knots[k + m + 1].cpu_ns - c.cpu_ns <= kSmoothSpanNs) {
      ++m;
    }
    if (m < 2) continue;
    const double scale = double(e.knots[k + m].gpu_ticks - e.knots[k - m].gpu_ticks);
    const double slope = double(e.knots[k + m].cpu_ns - e.knots[k - m].cpu_ns) / scale;
    // Weighted sums for y = a + b x + c x^2, x in units of the window, y the distance
    // from the chord through the window's ends.
    double s[5] = {}, t[3] = {};
    for (size_t j = k - m; j <= k + m; ++j) {
      const double x = double(int64_t(e.knots[j].gpu_ticks - c.gpu_ticks)) / scale;
      const double y = double(e.knots[j].cpu_ns - c.cpu_ns) - x * scale * slope;
      const double w = e.weights[j] / e.weights[k];
      double p = w;  // w x^power
      for (int power = 0; power < 5; ++power, p *= x) {
        s[power] += p;
        if (power < 3) t[power] += p * y;
      }
    }
    // Solve the 3x3 normal equations for a (the fit at x = 0) by Cramer's rule.
    auto det3 = [](double a, double b, double c, double d, double e2, double f, double g, double h,
                   double i) { return a * (e2 * i - f * h) - b * (d * i - f * g) + c * (d * h - e2 * g); };
    const double d = det3(s[0], s[1], s[2], s[1], s[2], s[3], s[2], s[3], s[4]);
    if (!(std::fabs(d) > 1e-12)) continue;
    const double a = det3(t[0], s[1], s[2], t[1], s[2], s[3], t[2], s[3], s[4]) / d;
    const int64_t gap = std::min(c.cpu_ns - e.knots[k - 1].cpu_ns, e.knots[k + 1].cpu_ns - c.cpu_ns);
    if (std::isfinite(a) && std::fabs(a) <= double((gap - 1) / 2))
      e.placed_ns[k] = c.cpu_ns + std::llround(a);
  }
}

void GpuClockModel::SetAsideIfOutlier(Epoch& e, size_t k) {
  // A knot farther from the line through its neighbours than the narrowest bound the
  // model states around it, and farther than either neighbour is from theirs (a bad
  // knot pulls its neighbours half as far), was read while the CPU or the driver was
  // held up: it moves to that line instead of bending the placement of both its spans.
  // Its scatter stays, so the bound around it widens.
  if (k < kOutlierHistory || k + 2 >= e.knots.size()) return;
  const double threshold = kTypicalFactor * double(e.span_typical[k - 1]) + kReadFloorNs;
  if (!(e.scatter[k] > threshold && e.scatter[k] > e.scatter[k - 1] && e.scatter[k] > e.scatter[k + 1]))
    return;
  const GpuCalibrationSample& a = e.knots[k - 1];
  const GpuCalibrationSample& b = e.knots[k + 1];
  GpuCalibrationSample moved = e.knots[k];
  const int64_t on_line = a.cpu_ns + int64_t(std::llround(LineFrom(a, b, moved.gpu_ticks)));
  if (on_line <= a.cpu_ns || on_line >= b.cpu_ns) return;  // no room between them: leave it
  if (on_line == moved.cpu_ns) return;                     // set aside already (a merge judges it again)
  moved.cpu_ns = on_line;
  AddToSums(e, e.knots[k], -e.weights[k]);
  AddToSums(e, moved, e.weights[k]);
  e.knots[k] = moved;
  ++flags_.set_aside;
  // Its neighbours were measured against it: measure them again.
  if (k >= 2) e.scatter[k - 1] = float(DistanceFromLine(e.knots[k - 2], e.knots[k], e.knots[k - 1]));
  e.scatter[k + 1] = float(DistanceFromLine(e.knots[k], e.knots[k + 2], e.knots[k + 1]));
  Refit(e);
}

void GpuClockModel::CheckKnotOrder(const Epoch& e) {
  // Mapping is monotonic only while knots strictly increase in both clocks: a broken
  // order would give zones negative lengths without a word.
  const size_t n = e.knots.size();
  GNOMON_CHECK(n < 2 || (e.knots[n - 1].gpu_ticks > e.knots[n - 2].gpu_ticks &&
                         e.knots[n - 1].cpu_ns > e.knots[n - 2].cpu_ns),
               "GPU clock knots out of order");
}

void GpuClockModel::Resync(const GpuCalibrationSample& anchor) {
  epochs_.emplace_back();
  epochs_.back().slope_ns_per_tick = period_.ns();
  last_unwrapped_ = anchor.gpu_ticks;
  has_last_ = true;
  AddSample(anchor);
}

void GpuClockModel::Refit(Epoch& e) {
  const double nominal = period_.ns();
  e.slope_ns_per_tick = nominal;
  if (e.knots.size() < 2 || e.sum_w <= 0) return;
  const long double mean_x = e.sum_wx / e.sum_w;
  const long double sxx = e.sum_wxx - e.sum_wx * mean_x;
  const long double sxy = e.sum_wxy - e.sum_wx * (e.sum_wy / e.sum_w);
  if (sxx <= 0) return;
  const double slope = double(sxy / sxx);
  if (std::isfinite(slope) && std::fabs(slope / nominal - 1.0) <= kMaxRateError) e.slope_ns_per_tick = slope;
}

GpuClockModel::Mapped GpuClockModel::Map(uint64_t gpu_ticks, uint32_t epoch) const {
  const Epoch& e = epochs_[std::min<size_t>(epoch, epochs_.size() - 1)];
  Mapped mapped = MapThroughKnots(e, gpu_ticks);
  if (!e.knots.empty() && gpu_ticks >= e.first_read_ticks && gpu_ticks <= e.last_read_ticks) {
    mapped.extrapolated = false;
  }
  ApplyBrackets(e, mapped);
  return mapped;
}

GpuClockModel::Mapped GpuClockModel::MapThroughKnots(const Epoch& e, uint64_t gpu_ticks) const {
  if (e.knots.empty()) return {int64_t(TicksToNs(gpu_ticks)), UINT32_MAX, UINT32_MAX, UINT32_MAX, true};
  const auto& knots = e.knots;
  auto after = std::upper_bound(knots.begin(), knots.end(), gpu_ticks,
                                [](uint64_t t, const GpuCalibrationSample& k) { return t < k.gpu_ticks; });
  // A span's relative bound, or the absolute one while the knots cannot tell it.
  auto relative = [&](size_t span, double absolute) {
    const double bound = SpanBound(e, span);
    return bound < 0 ? absolute : bound;
  };
  auto extrapolate = [&](size_t at, size_t span) {
    constexpr double kLimit = double(kMaxTraceNs);  // absurd ticks saturate
    const GpuCalibrationSample& k = knots[at];
    const int64_t dt = int64_t(gpu_ticks - k.gpu_ticks);
    const double offset = double(dt) * EdgeSlope(e, at == 0);
    const double absolute = double(k.uncertainty_ns) + std::fabs(offset) * kExtrapolationDriftBound;
    const double rel =
        relative(span, absolute) + std::fabs(offset) * std::min(e.rate_jitter, kExtrapolationDriftBound);
    const uint32_t bound = SaturatedNs(std::max(absolute, rel));
    return Mapped{int64_t(std::clamp(double(e.placed_ns[at]) + offset, -kLimit, kLimit)), bound, bound,
                  SaturatedNs(rel), true};
  };
  if (after == knots.begin()) return extrapolate(0, 0);
  if (after == knots.end()) return extrapolate(knots.size() - 1, knots.size() >= 2 ? knots.size() - 2 : 0);
  const size_t i1 = size_t(after - knots.begin());
  const GpuCalibrationSample& k0 = knots[i1 - 1];
  const GpuCalibrationSample& k1 = knots[i1];
  const uint64_t span = k1.gpu_ticks - k0.gpu_ticks;
  const uint64_t dt = gpu_ticks - k0.gpu_ticks;
  const __int128 dc = __int128(e.placed_ns[i1] - e.placed_ns[i1 - 1]);
  const int64_t cpu = e.placed_ns[i1 - 1] + int64_t(dc * __int128(dt) / __int128(span));
  const double t = double(dt) / double(span);
  const double stated = double(k0.uncertainty_ns) * (1 - t) + double(k1.uncertainty_ns) * t;
  const double rel = relative(size_t(after - knots.begin()) - 1, stated);
  const uint32_t bound = SaturatedNs(std::max(stated, rel));
  return {cpu, bound, bound, SaturatedNs(rel), false};
}

void GpuClockModel::ApplyBrackets(const Epoch& e, Mapped& mapped) {
  const OffsetRange& offset = e.offset;
  if (offset.brackets == 0 || offset.contradicted) return;
  // The true time minus the placed one is the shared offset plus this time's own error
  // (within the relative bound): at least offset.min_ns - relative, at most
  // offset.max_ns + relative, and within the driver's bound. Where the range excludes
  // 0 the time moves by the correction (the nearest offset the brackets allow).
  const double relative = double(mapped.relative_ns);
  const double correction = offset.correction_ns();
  const double lower = std::max(-double(mapped.early_ns), offset.min_ns - relative) - correction;
  const double upper = std::min(double(mapped.late_ns), offset.max_ns + relative) - correction;
  mapped.cpu_ns += std::llround(correction);
  mapped.early_ns = SaturatedNs(-lower);
  mapped.late_ns = SaturatedNs(upper);
}

namespace {

// A bracket's gaps to the time it is placed at: not_before - placed, not_after - placed.
struct BracketGaps {
  double before_ns = -HUGE_VAL;
  double after_ns = HUGE_VAL;
};

BracketGaps GapsOf(const GpuTimeBracket& b, int64_t placed_ns) {
  BracketGaps gaps;
  if (b.not_before_ns != GpuTimeBracket::kUnknownEarliest)
    gaps.before_ns = double(b.not_before_ns - placed_ns);
  if (b.not_after_ns != GpuTimeBracket::kUnknownLatest) gaps.after_ns = double(b.not_after_ns - placed_ns);
  return gaps;
}

// The offset a bracket allows, given the relative bound where it lies and the
// calibrations' own bound there (`cap`: their stated bound plus the relative one; a
// bracket past it contradicts them, and shows as an empty range), folded into [min, max].
void FoldGaps(double before_ns, double after_ns, double relative_ns, double cap_ns, double& min_ns,
              double& max_ns) {
  min_ns = std::max(min_ns, std::max(-cap_ns, before_ns - relative_ns));
  max_ns = std::min(max_ns, std::min(cap_ns, after_ns + relative_ns));
}

}  // namespace

GpuClockModel::SpanLimits GpuClockModel::LimitsOf(const Epoch& e, size_t span) {
  const double stated = double(std::max(e.knots[span].uncertainty_ns, e.knots[span + 1].uncertainty_ns));
  const double bound = SpanBound(e, span);
  const double relative = bound < 0 ? stated : bound;
  return {relative, std::max(stated, relative) + relative};
}

void GpuClockModel::FoldSpan(const Epoch& e, size_t span, const Epoch::SpanGaps& gaps, double& min_ns,
                             double& max_ns) {
  if (gaps.before_ns == -HUGE_VAL && gaps.after_ns == HUGE_VAL) return;  // no bracket here
  const SpanLimits limits = LimitsOf(e, span);
  FoldGaps(gaps.before_ns, gaps.after_ns, limits.relative_ns, limits.cap_ns, min_ns, max_ns);
}

bool GpuClockModel::FileBracket(Epoch& e, const GpuTimeBracket& b, const Mapped& placed) {
  const size_t n = e.knots.size();
  if (placed.extrapolated || n < 3) return false;
  const auto after =
      std::upper_bound(e.knots.begin(), e.knots.end(), b.gpu_ticks,
                       [](uint64_t t, const GpuCalibrationSample& k) { return t < k.gpu_ticks; });
  const size_t span = size_t(after - e.knots.begin()) - 1;
  // The newest spans: a merge still moves the newest knot and may set aside the third
  // newest, and either moves where the knots within kSmoothReach of them are placed.
  if (span + 4 + size_t(kSmoothReach) >= n) return false;
  if (e.span_gaps.size() < n - 1) e.span_gaps.resize(n - 1);
  const BracketGaps gaps = GapsOf(b, placed.cpu_ns);
  Epoch::SpanGaps& kept = e.span_gaps[span];
  kept.before_ns = std::max(kept.before_ns, gaps.before_ns);
  kept.after_ns = std::min(kept.after_ns, gaps.after_ns);
  if (span < e.settled_spans) {  // a late bracket for a span already settled
    FoldSpan(e, span, {gaps.before_ns, gaps.after_ns}, e.settled_min_ns, e.settled_max_ns);
  }
  return true;
}

GpuClockModel::BracketResult GpuClockModel::AddBracket(const GpuTimeBracket& bracket) {
  Epoch& e = epochs_.back();
  const bool has_before = bracket.not_before_ns != GpuTimeBracket::kUnknownEarliest;
  const bool has_after = bracket.not_after_ns != GpuTimeBracket::kUnknownLatest;
  if (!has_before && !has_after) {
    ++flags_.bad_brackets;
    return BracketResult::kRejected;
  }
  if (bracket.not_before_ns > bracket.not_after_ns) {
    ++flags_.bad_brackets;
    return BracketResult::kRejected;
  }
  const Mapped placed = e.knots.empty() ? Mapped{} : MapThroughKnots(e, bracket.gpu_ticks);
  if (e.knots.empty() || !FileBracket(e, bracket, placed)) {
    if (e.open_brackets.size() >= kMaxOpenBrackets) {
      ++flags_.bad_brackets;
      return BracketResult::kRejected;
    }
    e.open_brackets.push_back(bracket);
  }
  ++e.offset.brackets;
  if (e.offset.brackets == 1) {  // the first: the knots' limits are gathered now
    UpdateOffset(e);
    return BracketResult::kAdded;
  }
  // The range so far, with this bracket's constraint at the current knots: what
  // UpdateOffset would compute, without going over the others again.
  if (!e.knots.empty()) FoldOpen(e, bracket, placed, e.offset.min_ns, e.offset.max_ns);
  SetOffsetRange(e, e.offset.min_ns, e.offset.max_ns);
  return BracketResult::kAdded;
}

void GpuClockModel::FoldOpen(const Epoch& e, const GpuTimeBracket& b, const Mapped& placed, double& min_ns,
                             double& max_ns) {
  const BracketGaps gaps = GapsOf(b, placed.cpu_ns);
  if (!placed.extrapolated && e.knots.size() >= 2) {
    const auto after =
        std::upper_bound(e.knots.begin(), e.knots.end(), b.gpu_ticks,
                         [](uint64_t t, const GpuCalibrationSample& k) { return t < k.gpu_ticks; });
    FoldSpan(e, size_t(after - e.knots.begin()) - 1, {gaps.before_ns, gaps.after_ns}, min_ns, max_ns);
    return;
  }
  const double relative = double(placed.relative_ns);
  FoldGaps(gaps.before_ns, gaps.after_ns, relative, double(placed.absolute_ns()) + relative, min_ns, max_ns);
}

void GpuClockModel::SetOffsetRange(Epoch& e, double min_ns, double max_ns) {
  // The offset every knot shares is within each knot's own word: brackets proving it
  // beyond the tightest of them contradict that knot, as two brackets can each other.
  const bool contradicted = min_ns > max_ns || min_ns > e.cap_min_ns || max_ns < -e.cap_min_ns;
  flags_.contradicted_brackets += size_t(contradicted) - size_t(e.offset.contradicted);
  e.offset.min_ns = min_ns;
  e.offset.max_ns = max_ns;
  e.offset.contradicted = contradicted;
}

void GpuClockModel::UpdateOffset(Epoch& e) {
  if (e.offset.brackets == 0 || e.knots.empty()) return;  // nothing to bound, or to map through yet
  const size_t n = e.knots.size();
  e.span_gaps.resize(n - 1);
  // Spans kSettledSpans before the newest keep their bounds from now on: folded once.
  const size_t settle_below = n >= kSettledSpans + 2 ? n - 2 - kSettledSpans : 0;
  for (; e.settled_spans < settle_below; ++e.settled_spans) {
    FoldSpan(e, e.settled_spans, e.span_gaps[e.settled_spans], e.settled_min_ns, e.settled_max_ns);
    e.settled_cap_min_ns = std::min(e.settled_cap_min_ns, LimitsOf(e, e.settled_spans).cap_ns);
  }
  double min_ns = e.settled_min_ns;
  double max_ns = e.settled_max_ns;
  e.cap_min_ns = e.settled_cap_min_ns;
  for (size_t span = e.settled_spans; span + 1 < n; ++span)
    e.cap_min_ns = std::min(e.cap_min_ns, LimitsOf(e, span).cap_ns);
  if (n == 1) e.cap_min_ns = std::min(e.cap_min_ns, 2.0 * double(e.knots[0].uncertainty_ns));
  for (size_t i = 0; i < e.open_brackets.size();) {
    const GpuTimeBracket& b = e.open_brackets[i];
    const Mapped placed = MapThroughKnots(e, b.gpu_ticks);
    if (FileBracket(e, b, placed)) {
      e.open_brackets[i] = e.open_brackets.back();
      e.open_brackets.pop_back();
      continue;
    }
    FoldOpen(e, b, placed, min_ns, max_ns);
    ++i;
  }
  for (size_t span = e.settled_spans; span < e.span_gaps.size(); ++span) {
    FoldSpan(e, span, e.span_gaps[span], min_ns, max_ns);
  }
  SetOffsetRange(e, min_ns, max_ns);
}

double GpuClockModel::drift_ppm() const {
  return (period_.ns() / epochs_.back().slope_ns_per_tick - 1.0) * 1e6;
}

std::vector<double> GpuClockModel::Residuals() const {
  const Epoch& e = epochs_.back();
  std::vector<double> residuals;
  if (e.knots.empty() || e.sum_w <= 0) return residuals;
  const long double mean_x = e.sum_wx / e.sum_w;
  const long double mean_y = e.sum_wy / e.sum_w;
  const GpuCalibrationSample& base = e.knots.front();
  for (const GpuCalibrationSample& k : e.knots) {
    const long double x = (long double)(int64_t(k.gpu_ticks - base.gpu_ticks));
    const long double y = (long double)(k.cpu_ns - base.cpu_ns);
    residuals.push_back(double(y - (mean_y + (x - mean_x) * e.slope_ns_per_tick)));
  }
  return residuals;
}

uint32_t GpuClockModel::current_relative_ns() const {
  const Epoch& e = epochs_.back();
  if (e.knots.empty()) return UINT32_MAX;
  const double bound = e.knots.size() < 2 ? -1 : SpanBound(e, e.knots.size() - 2);
  return bound < 0 ? e.knots.back().uncertainty_ns : SaturatedNs(bound);
}

double GpuClockModel::EdgeSlope(const Epoch& e, bool front) const {
  // The rate over the last two spans at that end: the clock's rate now, where a line
  // fitted through the whole epoch lags a drift that changes.
  const size_t n = e.knots.size();
  if (n < 2) return e.slope_ns_per_tick;
  const size_t reach = std::min<size_t>(n - 1, 2);
  const size_t a = front ? 0 : n - 1 - reach;
  const size_t b = front ? reach : n - 1;
  const double slope =
      double(e.placed_ns[b] - e.placed_ns[a]) / double(e.knots[b].gpu_ticks - e.knots[a].gpu_ticks);
  const double nominal = period_.ns();
  return std::isfinite(slope) && std::fabs(slope / nominal - 1.0) <= kMaxRateError ? slope
                                                                                   : e.slope_ns_per_tick;
}

double GpuClockModel::SpanBound(const Epoch& e, size_t span) {
  if (span >= e.span_scatter.size() || e.span_scatter[span] < 0) return -1;
  return std::max(kLocalFactor * e.span_scatter[span], kTypicalFactor * e.span_typical[span]) + kReadFloorNs;
}

uint32_t GpuClockModel::current_early_ns() const {
  const Epoch& e = epochs_.back();
  if (e.knots.empty()) return UINT32_MAX;
  return Map(e.knots.back().gpu_ticks, epoch()).early_ns;
}

uint32_t GpuClockModel::current_late_ns() const {
  const Epoch& e = epochs_.back();
  if (e.knots.empty()) return UINT32_MAX;
  return Map(e.knots.back().gpu_ticks, epoch()).late_ns;
}

uint32_t GpuClockModel::current_uncertainty_ns() const {
  const Epoch& e = epochs_.back();
  return e.knots.empty() ? UINT32_MAX : e.knots.back().uncertainty_ns;
}

}  // namespace gnomon::server
