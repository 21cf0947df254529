#include "timer.h"

#include <cstdlib>
#include <cstring>

#include "gnomon/client/thread_writer.h"

#if GNOMON_HAS_TSC
#include <cpuid.h>
#endif

namespace gnomon::detail {
constinit bool g_timer_is_tsc = false;
}

namespace gnomon::client {
namespace {

bool HasInvariantTsc() {
#if GNOMON_HAS_TSC
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const auto max_leaf =
      static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr));  // int in clang, unsigned in GCC
  if (max_leaf < 0x80000007u) return false;
  __cpuid(0x80000007u, eax, ebx, ecx, edx);
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

}  // namespace

void InitTimer() {
  const char* forced = std::getenv("GNOMON_TIMER");
  const bool want_monotonic = forced != nullptr && std::strcmp(forced, "monotonic") == 0;
  detail::g_timer_is_tsc = !want_monotonic && HasInvariantTsc();
}

protocol::TimerKind CurrentTimerKind() {
  return detail::g_timer_is_tsc ? protocol::TimerKind::kTsc : protocol::TimerKind::kMonotonicRaw;
}

int64_t ReadClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

CalibrationPair ReadCalibrationPair() {
  CalibrationPair best;
  int64_t best_width = INT64_MAX;
  for (int attempt = 0; attempt < 7; ++attempt) {
    const int64_t raw_before = ReadClockNs(CLOCK_MONOTONIC_RAW);
    const int64_t mono_before = ReadClockNs(CLOCK_MONOTONIC);
    const uint64_t tick = detail::Now();
    const int64_t mono_after = ReadClockNs(CLOCK_MONOTONIC);
    const int64_t raw_after = ReadClockNs(CLOCK_MONOTONIC_RAW);
    const int64_t width = raw_after - raw_before;
    if (width < best_width) {
      best_width = width;
      best.tick = tick;
      best.monotonic_raw_ns = raw_before + width / 2;
      best.monotonic_ns = mono_before + (mono_after - mono_before) / 2;
      best.uncertainty_ns = static_cast<uint32_t>(width);
    }
  }
  return best;
}

}  // namespace gnomon::client
