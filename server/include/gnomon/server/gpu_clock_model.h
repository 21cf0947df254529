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
//    relative bound.
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
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gnomon/protocol/tick_period.h"

namespace gnomon::server {

using protocol::PeriodFromFloat;
using protocol::TickPeriod;

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

  // The relative bound: a span's is the larger of kLocalFactor x the largest knot scatter
  // among kScatterWindow knots on either side, and kTypicalFactor x the 90th percentile
  // of the scatter of the kTypicalWindow knots around it; plus kReadFloorNs.
  static constexpr int kScatterWindow = 16;
  static constexpr int kTypicalWindow = 256;
  static constexpr double kLocalFactor = 3.0;
  static constexpr double kTypicalFactor = 4.0;
  static constexpr double kReadFloorNs = 20.0;
  // A stated uncertainty above this is absurd (no calibration call takes 100 ms).
  static constexpr uint32_t kAbsurdUncertaintyNs = 100'000'000;

  struct Mapped {
    int64_t cpu_ns = 0;
    uint32_t absolute_ns = 0;  // the knots' stated bound, at least relative_ns; grown when extrapolated
    uint32_t relative_ns = 0;  // from the knots' scatter (see above); grown when extrapolated
    bool extrapolated = false;
  };
  // Maps unwrapped GPU ticks of `epoch` (see epoch()) to trace time. Requires at least
  // one knot in that epoch; else returns the ticks scaled by the period.
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

  // Calibration samples whose stated uncertainty could not be taken at its word.
  struct Flags {
    size_t zero_uncertainty = 0;    // stated 0 ns: no read is exact
    size_t absurd_uncertainty = 0;  // above kAbsurdUncertaintyNs
    size_t contradicted = 0;        // its scatter exceeds its own and its neighbours' stated bounds
    size_t total() const { return zero_uncertainty + absurd_uncertainty + contradicted; }
    friend bool operator==(const Flags&, const Flags&) = default;
  };
  const Flags& flags() const { return flags_; }

  friend bool operator==(const GpuClockModel&, const GpuClockModel&) = default;

 private:
  struct Epoch {
    std::vector<GpuCalibrationSample> knots;
    std::vector<double> weights;  // of each knot, summed when samples merge
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
    friend bool operator==(const Epoch&, const Epoch&) = default;
  };
  static void AddToSums(Epoch& epoch, const GpuCalibrationSample& knot, double weight);
  static void CheckKnotOrder(const Epoch& epoch);
  void Refit(Epoch& epoch);
  // Scatter of the knot before the last, the spans whose windows hold it, the rate jitter.
  void UpdateBounds(Epoch& epoch);
  // A span's relative bound in ns; negative while its knots cannot tell it.
  static double SpanBound(const Epoch& epoch, size_t span);
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
