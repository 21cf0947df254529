#include "gnomon/server/cpu_clock_model.h"

#include <algorithm>
#include <cmath>

namespace gnomon::server {

void CpuClockModel::SetTimer(double ticks_per_second, bool is_nanoseconds) {
  if (is_nanoseconds) {
    estimate_ns_per_tick_ = 1.0;
  } else if (ticks_per_second > 0 && std::isfinite(ticks_per_second)) {
    estimate_ns_per_tick_ = 1e9 / ticks_per_second;
  }
  Refit();
}

bool CpuClockModel::AddPair(const CpuCalibrationPair& pair) {
  if (pair.monotonic_raw_ns != ClampTraceNs(pair.monotonic_raw_ns) ||
      pair.monotonic_ns != ClampTraceNs(pair.monotonic_ns)) {
    return false;
  }
  pairs_.push_back(pair);
  const CpuCalibrationPair& first = pairs_.front();
  const long double x = static_cast<long double>(static_cast<int64_t>(pair.tick - first.tick));
  const long double y = static_cast<long double>(pair.monotonic_raw_ns - first.monotonic_raw_ns);
  const long double u = static_cast<long double>(pair.uncertainty_ns) + 1.0L;
  const long double w = 1.0L / (u * u);
  sum_w_ += w;
  sum_wx_ += w * x;
  sum_wy_ += w * y;
  sum_wxx_ += w * x * x;
  sum_wxy_ += w * x * y;
  Refit();
  return true;
}

void CpuClockModel::Refit() {
  if (pairs_.empty()) {
    ns_per_tick_ = estimate_ns_per_tick_;
    return;
  }
  const CpuCalibrationPair& first = pairs_.front();
  const long double mean_x = sum_wx_ / sum_w_;
  const long double mean_y = sum_wy_ / sum_w_;
  const long double sxx = sum_wxx_ - sum_wx_ * mean_x;
  const long double sxy = sum_wxy_ - sum_wx_ * mean_y;
  long double slope = estimate_ns_per_tick_;
  if (pairs_.size() >= 2 && sxx > 0) {
    const long double fitted = sxy / sxx;
    if (fitted > 0 && std::isfinite(static_cast<double>(fitted))) slope = fitted;
  }
  // Anchor the line at the weighted centroid, expressed as a whole tick near it.
  const int64_t centroid_dx = std::llround(static_cast<double>(mean_x));
  anchor_tick_ = first.tick + static_cast<uint64_t>(centroid_dx);
  anchor_ns_ =
      first.monotonic_raw_ns +
      std::llround(static_cast<double>(mean_y + (static_cast<long double>(centroid_dx) - mean_x) * slope));
  ns_per_tick_ = static_cast<double>(slope);
}

int64_t CpuClockModel::MonotonicToRawNs(int64_t monotonic_ns) const {
  monotonic_ns = ClampTraceNs(monotonic_ns);
  if (pairs_.empty()) return monotonic_ns;
  auto after = std::upper_bound(pairs_.begin(), pairs_.end(), monotonic_ns,
                                [](int64_t t, const CpuCalibrationPair& p) { return t < p.monotonic_ns; });
  auto offset = [](const CpuCalibrationPair& p) { return p.monotonic_raw_ns - p.monotonic_ns; };
  if (after == pairs_.begin()) return monotonic_ns + offset(pairs_.front());
  if (after == pairs_.end()) return monotonic_ns + offset(pairs_.back());
  const CpuCalibrationPair& a = *(after - 1);
  const CpuCalibrationPair& b = *after;
  const double t = double(monotonic_ns - a.monotonic_ns) / double(b.monotonic_ns - a.monotonic_ns);
  return monotonic_ns + offset(a) + std::llround(double(offset(b) - offset(a)) * t);
}

double CpuClockModel::ResidualRmsNs() const {
  if (pairs_.empty()) return 0.0;
  long double sum = 0;
  for (const CpuCalibrationPair& pair : pairs_) {
    const long double r = static_cast<long double>(pair.monotonic_raw_ns - TickToNs(pair.tick));
    sum += r * r;
  }
  return std::sqrt(static_cast<double>(sum / pairs_.size()));
}

}  // namespace gnomon::server
