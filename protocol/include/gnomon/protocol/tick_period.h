// A GPU tick period as an exact fraction of a nanosecond.
//
// APIs report periods as floats (Vulkan's timestampPeriod = 52.083332 on a 19.2 MHz
// clock); multiplying hours of ticks by such a float loses nanoseconds. Gnomon carries
// the period as numerator/denominator (625/12 ns) and scales ticks exactly.
#pragma once

#include <cmath>
#include <cstdint>

namespace gnomon::protocol {

struct TickPeriod {
  uint64_t numerator_ns = 1;
  uint64_t denominator = 1;
  double ns() const { return double(numerator_ns) / double(denominator); }
  friend bool operator==(const TickPeriod&, const TickPeriod&) = default;
};

// The simplest fraction (denominator at most 10^6) within a float's precision of
// `period_ns`: 52.083332 -> 625/12, 1.0 -> 1/1, 83.333336 -> 250/3. 1/1 for nonsense.
inline TickPeriod PeriodFromFloat(double period_ns) {
  if (!(period_ns > 0) || !std::isfinite(period_ns) || period_ns > 1e12) return {};
  uint64_t h_prev = 1, h = uint64_t(period_ns);
  uint64_t k_prev = 0, k = 1;
  double rest = period_ns - std::floor(period_ns);
  while (std::fabs(double(h) / double(k) - period_ns) > period_ns * 1e-7 && rest > 1e-12) {
    const double inverse = 1.0 / rest;
    const uint64_t a = uint64_t(inverse);
    rest = inverse - double(a);
    const uint64_t h_next = a * h + h_prev;
    const uint64_t k_next = a * k + k_prev;
    if (k_next > 1000000) break;
    h_prev = h;
    k_prev = k;
    h = h_next;
    k = k_next;
  }
  if (h == 0) return {};
  return {h, k};
}

}  // namespace gnomon::protocol
