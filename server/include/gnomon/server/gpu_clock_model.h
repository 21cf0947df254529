// Maps one GPU context's timestamps onto the trace timeline (CLOCK_MONOTONIC_RAW ns).
//
// The problem: a GPU counts ticks of its own clock (1 ns on NVIDIA, 52.083 ns on some
// Intel parts), often in fewer than 64 valid bits, and that clock drifts from the CPU's
// by parts per million and wanders by microseconds around any straight line. A single
// offset is off by 0.3 ms after two minutes; a line is off by microseconds.
//
// The model: calibration samples — (GPU ticks, CPU ns) pairs read at the same instant,
// each with an uncertainty — are knots. A timestamp between two knots is interpolated
// linearly between them, so the wander is followed at the calibration cadence and a
// timestamp is never only extrapolated from the older knot; timestamps are kept raw and
// mapped when read, so a later knot refines every earlier timestamp it brackets.
// Outside the knots the model extrapolates along the weighted least-squares line of all
// knots (weight 1/uncertainty^2), which also gives the drift. Samples closer than
// kMergeWindowNs are merged into one knot, weighted the same way; its stated
// uncertainty is their weighted mean (two reads share one offset).
//
// Two error bounds come with every mapped time (docs/gpu-timestamps.md explains both):
//  - relative: how far the time can be off against other GPU times of the context and
//    against the CPU clock's own read jitter. Estimated from the knots themselves: each
//    knot's scatter is its distance from the line through its two neighbours (which
//    holds the knot noise, the clock's wander over two spans and a read's jitter; the
//    newest knot, until it has two, is measured against the two before it); a
//    span's bound is kLocalFactor times the largest scatter among the kScatterWindow
//    knots on either side, at least kTypicalFactor times the 90th percentile of the
//    recent scatter, plus kReadFloorNs. Outside the knots it grows with the distance by
//    the largest change of rate between recent spans. With fewer than three knots
//    there is no scatter to go by, and the relative bound is the absolute one.
//  - absolute: the offset against the CPU timeline no calibration removes: the stated
//    uncertainty of the knots around it (the driver's bound), never less than the
//    relative bound; narrowed, on either side, where brackets prove it. A bracket is a
//    GPU time the CPU saw from outside: written no earlier than a CPU time (the submit)
//    and no later than another (a fence wait's return). Every knot shares one offset
//    against the true CPU time, so each bracket bounds that offset for the whole epoch:
//    offset >= not_before - mapped - relative and offset <= not_after - mapped +
//    relative, at the bracket's time. The bound is then asymmetric: early (how much
//    earlier the true time may be than the placed one) and late. Where the brackets
//    prove every placement off (the range excludes 0: on an NVIDIA H200 the CPU sees a
//    GPU write hundreds of ns before the calibrations place it), every time of the epoch
//    moves by the nearer end of the range, the smallest move they prove necessary; a
//    constant move, so the mapping stays monotonic and the relative bound holds.
// Stated uncertainties of zero, absurd ones and ones the scatter contradicts are counted
// (flags()); none can shrink a bound below what the scatter supports.
//
// Guarantees: the mapping is monotonic (knots strictly increase in both clocks; a sample
// that would break that is rejected and counted), so no zone gets a negative length.
// All arithmetic is on differences from a knot, in integers where it is exact, so
// precision does not decay with trace length. A resync starts a new epoch with knots of
// its own, for a GPU clock that jumped.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gnomon/protocol/tick_period.h"

namespace gnomon::server {

using protocol::PeriodFromFloat;
using protocol::TickPeriod;

// A GPU time seen from the CPU: the GPU wrote gpu_ticks (unwrapped) no earlier than
// not_before_ns and no later than not_after_ns (trace ns); a side not known is
// kUnknownEarliest / kUnknownLatest.
struct GpuTimeBracket {
  static constexpr int64_t kUnknownEarliest = INT64_MIN;
  static constexpr int64_t kUnknownLatest = INT64_MAX;
  uint64_t gpu_ticks = 0;
  int64_t not_before_ns = kUnknownEarliest;
  int64_t not_after_ns = kUnknownLatest;
  friend bool operator==(const GpuTimeBracket&, const GpuTimeBracket&) = default;
};

struct GpuCalibrationSample {
  uint64_t gpu_ticks = 0;  // unwrapped
  int64_t cpu_ns = 0;
  uint32_t uncertainty_ns = 0;
  friend bool operator==(const GpuCalibrationSample&, const GpuCalibrationSample&) = default;
};

class GpuClockModel {
 public:
  static constexpr int64_t kMergeWindowNs = 10'000'000;

  GpuClockModel() = default;
  GpuClockModel(TickPeriod period, uint8_t valid_bits);

  // Extends a raw counter value of `valid_bits` bits to 64 bits, choosing the value
  // nearest the previous one seen (so counters that wrap between calibrations unwrap).
  uint64_t Unwrap(uint64_t raw);

  enum class SampleResult { kAdded, kMerged, kRejected };
  // Adds a calibration sample (gpu_ticks already unwrapped) to the current epoch.
  // Rejected: not strictly after the previous knot in both clocks, or implying a clock
  // rate more than 1 % away from the period.
  SampleResult AddSample(const GpuCalibrationSample& sample);
  // Starts a new epoch anchored at `anchor`; later timestamps map through it.
  void Resync(const GpuCalibrationSample& anchor);

  enum class BracketResult { kAdded, kRejected };
  // Adds a bracket of the current epoch. Rejected (and counted in flags()): neither side
  // known, not_before after not_after, or more than kMaxOpenBrackets waiting for their
  // spans to settle. Brackets that contradict each other (no offset satisfies them all,
  // given the relative bounds) are flagged and the epoch's absolute bound is not
  // narrowed at all: the driver's bound stands.
  BracketResult AddBracket(const GpuTimeBracket& bracket);
  static constexpr size_t kMaxOpenBrackets = 4096;  // placed where a later knot still moves them

  // The relative bound: a span's is the larger of kLocalFactor x the largest knot scatter
  // among kScatterWindow knots on either side, and kTypicalFactor x the 90th percentile
  // of the scatter of the kTypicalWindow knots around it; plus kReadFloorNs.
  static constexpr int kScatterWindow = 16;
  static constexpr int kTypicalWindow = 256;
  static constexpr double kLocalFactor = 3.0;
  static constexpr double kTypicalFactor = 4.0;
  static constexpr double kReadFloorNs = 20.0;
  // Knots before one can be judged an outlier: enough scatter to know what is typical.
  static constexpr size_t kOutlierHistory = 4;
  // Knots on either side of a knot that the fit placing it takes at most, and how far
  // from it they may lie (see Smooth).
  static constexpr int kSmoothReach = 4;
  static constexpr int64_t kSmoothSpanNs = 1'250'000'000;
  // A stated uncertainty above this is absurd (no calibration call takes 100 ms).
  static constexpr uint32_t kAbsurdUncertaintyNs = 100'000'000;

  // A GPU time on the trace timeline. The true time lies within [cpu_ns - early_ns,
  // cpu_ns + late_ns] (the absolute bound: the knots' stated bound, at least
  // relative_ns, grown when extrapolated, narrowed on either side by brackets, which
  // may also move cpu_ns), and within relative_ns of where the other times of the
  // context place it.
  struct Mapped {
    int64_t cpu_ns = 0;
    uint32_t early_ns = 0;
    uint32_t late_ns = 0;
    uint32_t relative_ns = 0;  // from the knots' scatter (see above); grown when extrapolated
    bool extrapolated = false;
    uint32_t absolute_ns() const { return std::max(early_ns, late_ns); }
  };
  // Maps unwrapped GPU ticks of `epoch` (see epoch()) to trace time. Requires at least
  // one knot in that epoch; else returns the ticks scaled by the period. A time between
  // the first and newest samples read is not extrapolated, even where merged knots lie
  // inside that span (its bounds still grow past the knot).
  Mapped Map(uint64_t gpu_ticks, uint32_t epoch) const;
  Mapped Map(uint64_t gpu_ticks) const { return Map(gpu_ticks, epoch()); }

  uint32_t epoch() const { return static_cast<uint32_t>(epochs_.size() - 1); }
  const TickPeriod& period() const { return period_; }
  uint8_t valid_bits() const { return valid_bits_; }
  // GPU-tick duration in ns, exactly, from the period.
  double TicksToNs(uint64_t ticks) const;

  // Drift of the GPU clock against the CPU clock, in parts per million (positive: the
  // GPU clock runs fast), from the current epoch's fitted line.
  double drift_ppm() const;
  size_t sample_count() const { return sample_count_; }
  size_t rejected_count() const { return rejected_count_; }
  const std::vector<GpuCalibrationSample>& knots() const { return epochs_.back().knots; }
  // Each knot's distance from the fitted line, in ns (the wander), current epoch.
  std::vector<double> Residuals() const;
  // Uncertainty of the latest knot, in ns.
  uint32_t current_uncertainty_ns() const;
  // The current epoch's bounds at its latest span, in ns (UINT32_MAX: no knot): the
  // relative one, and the absolute one (the stated uncertainty, at least the relative).
  uint32_t current_relative_ns() const;
  uint32_t current_absolute_ns() const { return std::max(current_uncertainty_ns(), current_relative_ns()); }
  // The same at the latest knot with the brackets' narrowing: how much earlier and later
  // than placed a GPU time there may truly be.
  uint32_t current_early_ns() const;
  uint32_t current_late_ns() const;

  // What the current epoch's brackets prove about the offset every knot shares (true CPU
  // time minus placed time), in ns: at least min_ns and at most max_ns (infinite: no
  // bracket on that side).
  struct OffsetRange {
    double min_ns = -HUGE_VAL;
    double max_ns = HUGE_VAL;
    size_t brackets = 0;
    bool contradicted = false;  // no offset satisfies every bracket: not used
    // What every time of the epoch is moved by: 0 while the range holds 0, else its
    // nearer end (the smallest move the brackets prove necessary).
    double correction_ns() const {
      if (brackets == 0 || contradicted) return 0;
      return max_ns < 0 ? max_ns : min_ns > 0 ? min_ns : 0;
    }
    friend bool operator==(const OffsetRange&, const OffsetRange&) = default;
  };
  OffsetRange offset_range() const { return epochs_.back().offset; }

  // Calibration samples whose stated uncertainty could not be taken at its word.
  struct Flags {
    size_t zero_uncertainty = 0;    // stated 0 ns: no read is exact
    size_t absurd_uncertainty = 0;  // above kAbsurdUncertaintyNs
    size_t contradicted = 0;        // its scatter exceeds its own and its neighbours' stated bounds
    size_t set_aside = 0;           // an outlier moved to the line through its neighbours
    size_t total() const { return zero_uncertainty + absurd_uncertainty + contradicted + set_aside; }
    // Brackets that could not be taken: rejected by AddBracket, and epochs whose
    // brackets contradict each other.
    size_t bad_brackets = 0;
    size_t contradicted_brackets = 0;
    friend bool operator==(const Flags&, const Flags&) = default;
  };
  const Flags& flags() const { return flags_; }

  friend bool operator==(const GpuClockModel&, const GpuClockModel&) = default;

 private:
  struct Epoch {
    std::vector<GpuCalibrationSample> knots;
    std::vector<double> weights;     // of each knot, summed when samples merge
    std::vector<int64_t> placed_ns;  // where each knot is placed: its read smoothed (Smooth)
    // The GPU ticks of the first and newest samples read, merged or not: the calibrated
    // span, which merging (knots at centroids) would otherwise shrink at both ends.
    uint64_t first_read_ticks = 0, last_read_ticks = 0;
    // Weighted sums for the line, relative to the first knot.
    long double sum_w = 0, sum_wx = 0, sum_wy = 0, sum_wxx = 0, sum_wxy = 0;
    double slope_ns_per_tick = 1.0;
    // Per knot: its distance from the line through its neighbours (0 for the first; for
    // the newest, from the line through the two before it, until it has both), and
    // whether it was counted as contradicted. Per span (knots j, j+1): the largest
    // scatter in its window (negative: none yet), and the largest 90th percentile of
    // the last kTypicalWindow knots' scatter seen while the span was among the last
    // kTypicalWindow / 2 (so it looks at knots on both sides).
    std::vector<float> scatter;
    std::vector<uint8_t> contradicted;
    std::vector<float> span_scatter;
    std::vector<float> span_typical;
    // Largest change of rate between the last kScatterWindow spans (dimensionless).
    double rate_jitter = 0;
    // Brackets, by how final their constraint is. Open: placed in the newest span or
    // outside the knots, where a later knot still moves them. Per span, once its
    // placement is final (a knot two after it exists): the largest not_before and the
    // smallest not_after gap to the placed time; its relative bound still changes until
    // kSettledSpans spans follow it, and then the span is folded into the settled range.
    struct SpanGaps {
      double before_ns = -HUGE_VAL;
      double after_ns = HUGE_VAL;
      friend bool operator==(const SpanGaps&, const SpanGaps&) = default;
    };
    std::vector<GpuTimeBracket> open_brackets;
    std::vector<SpanGaps> span_gaps;
    size_t settled_spans = 0;
    double settled_cap_min_ns = HUGE_VAL;  // the tightest cap (SpanLimits) of the settled spans
    double cap_min_ns = HUGE_VAL;          // ... of every span: no offset beyond it is believed
    double settled_min_ns = -HUGE_VAL;
    double settled_max_ns = HUGE_VAL;
    OffsetRange offset;
    friend bool operator==(const Epoch&, const Epoch&) = default;
  };
  // A span's bounds stop changing once this many spans follow it (the windows of
  // UpdateBounds, and the newest knot that a merge moves).
  static constexpr size_t kSettledSpans = kTypicalWindow / 2 + kScatterWindow + 3;
  static void AddToSums(Epoch& epoch, const GpuCalibrationSample& knot, double weight);
  static void CheckKnotOrder(const Epoch& epoch);
  // Moves knot k to the line through its neighbours when its scatter marks it an outlier.
  void SetAsideIfOutlier(Epoch& epoch, size_t k);
  // Where the knots whose fit window changed are placed (placed_ns).
  static void Smooth(Epoch& epoch);
  // The clock's rate at the first (front) or last knots, for times beyond them.
  double EdgeSlope(const Epoch& epoch, bool front) const;
  void Refit(Epoch& epoch);
  // Scatter of the knot before the last, the spans whose windows hold it, the rate jitter.
  void UpdateBounds(Epoch& epoch);
  // A span's relative bound in ns; negative while its knots cannot tell it.
  static double SpanBound(const Epoch& epoch, size_t span);
  // Map without the brackets' narrowing (early_ns == late_ns).
  Mapped MapThroughKnots(const Epoch& epoch, uint64_t gpu_ticks) const;
  // Moves a mapping by the epoch's correction and narrows its absolute bound by the
  // offset range.
  static void ApplyBrackets(const Epoch& epoch, Mapped& mapped);
  // Recomputes the offset range after a knot: moves brackets whose placement became
  // final to their span, settles spans whose bounds no longer change. O(open brackets
  // + kSettledSpans).
  void UpdateOffset(Epoch& epoch);
  // Files a bracket by how final its placement is (see Epoch); false when it stays open.
  static bool FileBracket(Epoch& epoch, const GpuTimeBracket& bracket, const Mapped& placed);
  // A span's relative bound, and the most its knots' own word allows the offset to be
  // (their stated bound, at least the relative one, plus the relative one).
  struct SpanLimits {
    double relative_ns;
    double cap_ns;
  };
  static SpanLimits LimitsOf(const Epoch& epoch, size_t span);
  // A span's constraint on the offset from its brackets' gaps: [min, max] folded in.
  static void FoldSpan(const Epoch& epoch, size_t span, const Epoch::SpanGaps& gaps, double& min_ns,
                       double& max_ns);
  // The same for a bracket not filed in its span, through its current placement.
  static void FoldOpen(const Epoch& epoch, const GpuTimeBracket& bracket, const Mapped& placed,
                       double& min_ns, double& max_ns);
  void SetOffsetRange(Epoch& epoch, double min_ns, double max_ns);
  void NoteStatedUncertainty(uint32_t uncertainty_ns);

  TickPeriod period_;
  uint8_t valid_bits_ = 64;
  uint64_t last_unwrapped_ = 0;
  bool has_last_ = false;
  std::vector<Epoch> epochs_ = std::vector<Epoch>(1);
  size_t sample_count_ = 0;
  size_t rejected_count_ = 0;
  Flags flags_;
};

}  // namespace gnomon::server
