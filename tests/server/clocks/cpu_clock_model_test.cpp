#include "gnomon/server/cpu_clock_model.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

using gnomon::server::CpuClockModel;

namespace {
// A 2.9 GHz TSC that started long ago, against CLOCK_MONOTONIC_RAW.
constexpr double kGhz = 2.9;
constexpr uint64_t kTick0 = 1ull << 50;
constexpr int64_t kNs0 = 123456789012345;
uint64_t TickAt(int64_t ns) { return kTick0 + uint64_t(std::llround(double(ns - kNs0) * kGhz)); }
}  // namespace

TEST_CASE("an hour of noisy pairs maps every tick within the injected noise") {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> jitter(-20, 20);
  CpuClockModel model;
  model.SetTimer(kGhz * 1e9 * 1.001, false);  // a start-up estimate 0.1 % off
  for (int s = 0; s <= 3600; ++s) {
    const int64_t ns = kNs0 + int64_t(s) * 1000000000;
    model.AddPair({TickAt(ns), ns + jitter(rng), ns, 40});
  }
  double worst = 0;
  for (int64_t probe = 0; probe < 3600ll * 1000000000; probe += 7777777777ll) {
    const int64_t ns = kNs0 + probe;
    worst = std::max(worst, std::fabs(double(model.TickToNs(TickAt(ns)) - ns)));
  }
  CHECK(worst < 20.0);
  CHECK(model.ns_per_tick() == doctest::Approx(1.0 / kGhz).epsilon(1e-9));
  CHECK(model.ResidualRmsNs() < 20.0);
}

TEST_CASE("a pair with a wide bracket barely moves the fit") {
  CpuClockModel model;
  for (int s = 0; s < 10; ++s) {
    const int64_t ns = kNs0 + int64_t(s) * 1000000000;
    model.AddPair({TickAt(ns), ns, ns, 30});
  }
  const int64_t bad_ns = kNs0 + 5500000000;
  model.AddPair({TickAt(bad_ns), bad_ns + 1000000, bad_ns, 1000000});  // 1 ms off, 1 ms uncertain
  CHECK(std::llabs(model.TickToNs(TickAt(bad_ns)) - bad_ns) < 50);
}

TEST_CASE("without pairs the start-up estimate maps ticks and a nanosecond timer is the identity") {
  CpuClockModel estimate;
  estimate.SetTimer(2e9, false);
  CHECK(estimate.ns_per_tick() == doctest::Approx(0.5));
  CpuClockModel ns_timer;
  ns_timer.SetTimer(0, true);
  ns_timer.AddPair({1000, 1000, 5000, 10});
  ns_timer.AddPair({2000000000, 2000000000, 2000004000, 10});
  CHECK(ns_timer.TickToNs(1234567890) == 1234567890);
}
