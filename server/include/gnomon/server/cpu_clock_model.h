// Maps the program's CPU timer ticks to nanoseconds of CLOCK_MONOTONIC_RAW.
//
// The program sends calibration pairs (tick, CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC)
// throughout the run, each read inside a bracket whose width is its uncertainty. The
// model is a weighted least-squares line through all pairs (weight 1/(uncertainty+1)^2),
// fitted in coordinates relative to the first pair so that precision does not decay with
// the trace's length. Both clocks of a pair come from the same oscillator on Linux, so a
// line is exact up to read noise; with fewer than two pairs the program's start-up
// estimate of the tick rate stands in.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace gnomon::server {

// Trace times are kept within +-2^61 ns (73 years), so that no sum or difference of two
// overflows; times from a stream beyond that are absurd and are clamped or ignored.
inline constexpr int64_t kMaxTraceNs = int64_t{1} << 61;
inline int64_t ClampTraceNs(int64_t ns) { return std::clamp(ns, -kMaxTraceNs, kMaxTraceNs); }

struct CpuCalibrationPair {
  uint64_t tick = 0;
  int64_t monotonic_raw_ns = 0;
  int64_t monotonic_ns = 0;
  uint32_t uncertainty_ns = 0;
  friend bool operator==(const CpuCalibrationPair&, const CpuCalibrationPair&) = default;
};

class CpuClockModel {
 public:
  // `ticks_per_second` is the program's estimate (0 when unknown); `is_nanoseconds`
  // says the timer already counts nanoseconds.
  void SetTimer(double ticks_per_second, bool is_nanoseconds);
  // Adds a pair; one with a time beyond +-kMaxTraceNs is ignored (false).
  bool AddPair(const CpuCalibrationPair& pair);

  // Nanoseconds of CLOCK_MONOTONIC_RAW at `tick`, saturated to +-kMaxTraceNs so that
  // absurd ticks from a hostile stream overflow neither here nor in a difference of two.
  [[gnu::always_inline]] int64_t TickToNs(uint64_t tick) const {
    constexpr double kLimit = double(kMaxTraceNs);
    const double ns = double(anchor_ns_) + double(static_cast<int64_t>(tick - anchor_tick_)) * ns_per_tick_;
    // ns_per_tick_ is finite and positive (SetTimer, Refit): ns is never NaN, and the
    // clamp takes no branch.
    return static_cast<int64_t>(std::min(std::max(ns, -kLimit), kLimit));
  }
  // The inverse: the tick at `ns` (rounded down).
  uint64_t NsToTick(int64_t ns) const {
    const double ticks =
        std::clamp(std::floor((double(ns) - double(anchor_ns_)) / ns_per_tick_), -9.2e18, 9.2e18);
    return anchor_tick_ + static_cast<uint64_t>(static_cast<int64_t>(ticks));
  }
  double ns_per_tick() const { return ns_per_tick_; }
  // CLOCK_MONOTONIC ns to CLOCK_MONOTONIC_RAW ns, through the pairs' offsets
  // (interpolated between pairs; NTP slews CLOCK_MONOTONIC). Unchanged without pairs.
  int64_t MonotonicToRawNs(int64_t monotonic_ns) const;
  const std::vector<CpuCalibrationPair>& pairs() const { return pairs_; }
  // Root-mean-square distance of the pairs from the fitted line, in ns. O(pairs).
  double ResidualRmsNs() const;

  friend bool operator==(const CpuClockModel&, const CpuClockModel&) = default;

 private:
  void Refit();

  std::vector<CpuCalibrationPair> pairs_;
  double estimate_ns_per_tick_ = 1.0;
  uint64_t anchor_tick_ = 0;
  int64_t anchor_ns_ = 0;
  double ns_per_tick_ = 1.0;
  // Weighted sums over pairs, relative to the first pair (incremental fit).
  long double sum_w_ = 0, sum_wx_ = 0, sum_wy_ = 0, sum_wxx_ = 0, sum_wxy_ = 0;
};

}  // namespace gnomon::server
