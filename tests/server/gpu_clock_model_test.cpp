#include "gnomon/server/gpu_clock_model.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace gnomon::server;

namespace {

// A GPU clock against CPU time: rate error in ppm, a slow wander, a tick period.
struct SimulatedGpu {
  double ppm = 0;
  double wander_ns = 0;
  TickPeriod period;
  uint64_t start_ticks = 123456789;
  double GpuNs(int64_t cpu_ns) const {
    const double t = double(cpu_ns) / 1e9;
    return double(cpu_ns) * (1 + ppm * 1e-6) + wander_ns * std::sin(t / 37.0);
  }
  uint64_t Ticks(int64_t cpu_ns) const {
    return start_ticks +
           uint64_t(std::llround(GpuNs(cpu_ns) * double(period.denominator) / double(period.numerator_ns)));
  }
};

// Feeds one calibration per second for `seconds`, with uniform jitter of +-jitter_ns on
// the CPU side, then returns the worst error over timestamps between calibrations.
double WorstError(const SimulatedGpu& gpu, int seconds, int jitter_ns) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> jitter(-jitter_ns, jitter_ns);
  GpuClockModel model(gpu.period, 64);
  for (int s = 0; s <= seconds; ++s) {
    const int64_t cpu = int64_t(s) * 1'000'000'000;
    REQUIRE(model.AddSample({gpu.Ticks(cpu), cpu + jitter(rng), uint32_t(jitter_ns)}) ==
            GpuClockModel::SampleResult::kAdded);
  }
  double worst = 0;
  std::uniform_int_distribution<int64_t> when(0, int64_t(seconds) * 1'000'000'000);
  for (int i = 0; i < 2000; ++i) {
    const int64_t t = when(rng);
    worst = std::max(worst, std::fabs(double(model.Map(gpu.Ticks(t)).cpu_ns - t)));
  }
  return worst;
}

}  // namespace

TEST_CASE("drift of +-100 ppm with microseconds of wander is followed within the injected jitter") {
  for (double ppm : {-100.0, -7.3, 0.0, 2.4, 100.0}) {
    SimulatedGpu gpu{ppm, 3000, {1, 1}};
    CHECK_MESSAGE(WorstError(gpu, 120, 20) <= 25.0, "ppm ", ppm);
  }
}

TEST_CASE("a 52.083 ns period over one hour keeps full precision") {
  const TickPeriod period = PeriodFromFloat(52.083332);
  CHECK(period.numerator_ns == 625);
  CHECK(period.denominator == 12);
  CHECK(PeriodFromFloat(1.0) == TickPeriod{1, 1});
  CHECK(PeriodFromFloat(83.333333) == TickPeriod{250, 3});
  SimulatedGpu gpu{50, 2000, period, 1ull << 58};
  // Tick quantisation is 52 ns; the error stays within it plus the jitter.
  CHECK(WorstError(gpu, 3600, 10) <= 10 + 53);
}

TEST_CASE("counters of 32, 40 and 48 valid bits unwrap across many wraps") {
  for (uint8_t bits : {uint8_t(32), uint8_t(40), uint8_t(48)}) {
    SimulatedGpu gpu{5, 500, {1, 1}, (uint64_t{1} << bits) - 1000};  // wraps right away
    GpuClockModel model(gpu.period, bits);
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    // 30 s at 1 GHz: a 32-bit counter wraps seven times.
    for (int s = 0; s <= 30; ++s) {
      const int64_t cpu = int64_t(s) * 1'000'000'000;
      model.AddSample({model.Unwrap(gpu.Ticks(cpu) & mask), cpu, 5});
    }
    CHECK(model.rejected_count() == 0);
    CHECK(model.knots().size() == 31);
    CHECK(model.knots().back().gpu_ticks - model.knots().front().gpu_ticks > (uint64_t{1} << 32) * 6);
    CHECK(model.drift_ppm() == doctest::Approx(5.0).epsilon(0.05));
  }
}

TEST_CASE("the mapping is monotonic, also where it extrapolates") {
  SimulatedGpu gpu{-80, 4000, {1, 1}};
  GpuClockModel model(gpu.period, 64);
  std::mt19937_64 rng(2);
  std::uniform_int_distribution<int> jitter(-200, 200);
  for (int s = 5; s <= 60; s += 5) {
    const int64_t cpu = int64_t(s) * 1'000'000'000;
    model.AddSample({gpu.Ticks(cpu), cpu + jitter(rng), 200});
  }
  int64_t previous = INT64_MIN;
  for (int64_t t = 0; t <= 70'000'000'000; t += 9'999'991) {
    const int64_t mapped = model.Map(gpu.Ticks(t)).cpu_ns;
    REQUIRE(mapped >= previous);
    previous = mapped;
  }
  CHECK(model.Map(gpu.Ticks(1'000'000'000)).extrapolated);
  CHECK_FALSE(model.Map(gpu.Ticks(30'000'000'000)).extrapolated);
  CHECK(model.Map(gpu.Ticks(69'000'000'000)).absolute_ns > 200);
}

TEST_CASE("bad calibrations are rejected and leave the mapping alone") {
  GpuClockModel model({1, 1}, 64);
  CHECK(model.AddSample({1'000'000'000, 5'000'000'000, 10}) == GpuClockModel::SampleResult::kAdded);
  CHECK(model.AddSample({2'000'000'000, 6'000'000'000, 10}) == GpuClockModel::SampleResult::kAdded);
  CHECK(model.AddSample({2'000'000'000, 7'000'000'000, 10}) ==
        GpuClockModel::SampleResult::kRejected);  // zero GPU delta
  CHECK(model.AddSample({1'500'000'000, 7'000'000'000, 10}) ==
        GpuClockModel::SampleResult::kRejected);  // backwards
  CHECK(model.AddSample({3'000'000'000, 9'000'000'000, 10}) ==
        GpuClockModel::SampleResult::kRejected);  // 2x rate
  CHECK(model.rejected_count() == 3);
  CHECK(model.Map(1'500'000'000).cpu_ns == 5'500'000'000);
}

TEST_CASE("close samples merge by weight, and a resync re-anchors later timestamps") {
  GpuClockModel model({1, 1}, 64);
  model.AddSample({1'000'000'000, 1'000'000'000, 1000});
  // A sample 1 ms later with a far smaller uncertainty pulls the knot to itself.
  CHECK(model.AddSample({1'001'000'000, 1'001'000'100, 10}) == GpuClockModel::SampleResult::kMerged);
  REQUIRE(model.knots().size() == 1);
  CHECK(std::llabs(model.knots()[0].cpu_ns - model.knots()[0].gpu_ticks - 100) <= 1);
  model.AddSample({2'000'000'000, 2'000'000'100, 10});
  const uint32_t old_epoch = model.epoch();
  // The GPU clock jumps back by 5 s (a device reset): a resync anchors the new epoch.
  model.Resync({500'000'000, 3'000'000'000, 10});
  model.AddSample({1'500'000'000, 4'000'000'000, 10});
  CHECK(model.epoch() == old_epoch + 1);
  CHECK(model.Map(1'000'000'000).cpu_ns == 3'500'000'000);
  CHECK(model.Map(1'500'000'000, old_epoch).cpu_ns == 1'500'000'100);
}

namespace {

// A model fed one calibration per second for `seconds`, each read off by Gaussian noise
// of `noise_ns`, each stating `stated_ns` as its uncertainty (the driver's bound).
GpuClockModel NoisyModel(const SimulatedGpu& gpu, int seconds, double noise_ns, uint32_t stated_ns,
                         uint64_t seed = 5) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, noise_ns);
  GpuClockModel model(gpu.period, 64);
  for (int s = 0; s <= seconds; ++s) {
    const int64_t cpu = int64_t(s) * 1'000'000'000;
    model.AddSample({gpu.Ticks(cpu), cpu + std::llround(noise(rng)), stated_ns});
  }
  return model;
}

}  // namespace

TEST_CASE("the relative bound covers the true error, and is far tighter than the driver's bound") {
  const SimulatedGpu gpu{.ppm = 7, .wander_ns = 2000, .period = PeriodFromFloat(1.0)};
  const GpuClockModel model = NoisyModel(gpu, 300, 30, 3000);
  size_t covered = 0, total = 0;
  std::vector<double> relative;
  for (int64_t cpu = 1'000'000; cpu < 300'000'000'000; cpu += 7'777'777) {
    const auto mapped = model.Map(gpu.Ticks(cpu));
    REQUIRE_FALSE(mapped.extrapolated);
    ++total;
    if (std::fabs(double(mapped.cpu_ns - cpu)) <= mapped.relative_ns) ++covered;
    relative.push_back(mapped.relative_ns);
    CHECK(mapped.absolute_ns >= mapped.relative_ns);
  }
  std::sort(relative.begin(), relative.end());
  CHECK(double(covered) >= 0.99 * double(total));
  const double median = relative[relative.size() / 2];
  INFO("median relative bound ", median, " ns");
  CHECK(median < 600);                // a few times the 30 ns noise, not...
  CHECK(median * 5 < 3000);           // ...the driver's 3 us
  CHECK(model.flags().total() == 0);  // 3 us covers 30 ns reads
}

TEST_CASE(
    "with fewer than three knots there is no scatter to go by: the relative bound is the absolute one") {
  const SimulatedGpu gpu{.ppm = 3, .period = PeriodFromFloat(1.0)};
  GpuClockModel model(gpu.period, 64);
  model.AddSample({gpu.Ticks(0), 0, 2500});
  model.AddSample({gpu.Ticks(1'000'000'000), 1'000'000'000, 2500});
  const auto mapped = model.Map(gpu.Ticks(500'000'000));
  CHECK(mapped.relative_ns == 2500);
  CHECK(mapped.absolute_ns == 2500);
  CHECK(model.current_relative_ns() == 2500);
  model.AddSample({gpu.Ticks(2'000'000'000), 2'000'000'000, 2500});
  CHECK(model.Map(gpu.Ticks(500'000'000)).relative_ns < 2500);
}

TEST_CASE("outside the knots the relative bound grows with the distance") {
  const SimulatedGpu gpu{.ppm = 7, .wander_ns = 2000, .period = PeriodFromFloat(1.0)};
  const GpuClockModel model = NoisyModel(gpu, 60, 30, 3000);
  const auto inside = model.Map(gpu.Ticks(59'500'000'000));
  const auto near = model.Map(gpu.Ticks(60'100'000'000));
  const auto far = model.Map(gpu.Ticks(70'000'000'000));
  CHECK_FALSE(inside.extrapolated);
  CHECK(near.extrapolated);
  CHECK(near.relative_ns >= inside.relative_ns);
  CHECK(far.relative_ns > near.relative_ns);
  CHECK(far.absolute_ns > near.absolute_ns);
  // And still true 10 s out.
  CHECK(std::fabs(double(far.cpu_ns - 70'000'000'000)) <= far.relative_ns);
}

TEST_CASE("stated uncertainties of zero, absurd ones and ones the data contradicts are flagged") {
  const SimulatedGpu gpu{.ppm = 2, .period = PeriodFromFloat(1.0)};
  SUBCASE("zero: counted, and the bounds follow the scatter instead") {
    const GpuClockModel model = NoisyModel(gpu, 60, 200, 0);
    CHECK(model.flags().zero_uncertainty == 61);
    CHECK(model.flags().contradicted > 0);
    CHECK(model.current_uncertainty_ns() == 0);  // what was stated...
    CHECK(model.current_absolute_ns() >= 200);   // ...is not what is reported
    size_t covered = 0, total = 0;
    for (int64_t cpu = 1'000'000; cpu < 60'000'000'000; cpu += 13'131'313) {
      const auto mapped = model.Map(gpu.Ticks(cpu));
      CHECK(mapped.absolute_ns >= mapped.relative_ns);
      CHECK(mapped.relative_ns >= 200);  // never below what the reads scatter by
      ++total;
      if (std::fabs(double(mapped.cpu_ns - cpu)) <= mapped.absolute_ns) ++covered;
    }
    CHECK(double(covered) >= 0.99 * double(total));
  }
  SUBCASE("a bound the reads contradict: counted; the absolute bound widens to the data") {
    const GpuClockModel model = NoisyModel(gpu, 60, 2000, 50);
    CHECK(model.flags().contradicted > 10);
    CHECK(model.Map(gpu.Ticks(30'500'000'000)).absolute_ns > 1000);
  }
  SUBCASE("absurd: counted") {
    GpuClockModel model(gpu.period, 64);
    model.AddSample({gpu.Ticks(0), 0, 4'000'000'000u});
    model.AddSample({gpu.Ticks(1'000'000'000), 1'000'000'000, 3000});
    CHECK(model.flags().absurd_uncertainty == 1);
    CHECK(model.flags().zero_uncertainty == 0);
  }
}

TEST_CASE("a model built twice from the same samples states the same bounds") {
  const SimulatedGpu gpu{.ppm = 7, .wander_ns = 2000, .period = PeriodFromFloat(1.0)};
  CHECK(NoisyModel(gpu, 400, 30, 3000) == NoisyModel(gpu, 400, 30, 3000));
  CHECK_FALSE(NoisyModel(gpu, 400, 30, 3000) == NoisyModel(gpu, 400, 30, 3000, 6));
}

TEST_CASE("a sample below the last knot is rejected, also where the tick difference would wrap") {
  GpuClockModel model(PeriodFromFloat(1.0), 64);
  REQUIRE(model.AddSample({UINT64_MAX - 100, 1'000'000'000, 3000}) == GpuClockModel::SampleResult::kAdded);
  // 2e7 ticks later only modulo 2^64: far below the last knot.
  CHECK(model.AddSample({19'999'900, 1'020'000'000, 3000}) == GpuClockModel::SampleResult::kRejected);
  CHECK(model.AddSample({UINT64_MAX - 200, 1'000'000'100, 3000}) == GpuClockModel::SampleResult::kRejected);
  CHECK(model.knots().size() == 1);
  CHECK(model.rejected_count() == 2);
}

TEST_CASE("reading one moment many times does not shrink its stated bound") {
  GpuClockModel model(PeriodFromFloat(1.0), 64);
  for (int i = 0; i < 50; ++i) model.AddSample({1'000'000 + uint64_t(i), 1'000'000 + i, 2500});
  REQUIRE(model.knots().size() == 1);
  CHECK(model.knots()[0].uncertainty_ns == 2500);
  CHECK(model.flags().total() == 0);
}

TEST_CASE("a bad last calibration widens the spans around it before another knot arrives") {
  const SimulatedGpu gpu{.ppm = 7, .wander_ns = 2000, .period = PeriodFromFloat(1.0)};
  GpuClockModel model = NoisyModel(gpu, 60, 30, 3000);
  const uint32_t before = model.Map(gpu.Ticks(60'500'000'000)).relative_ns;
  // One more read, 10 us off.
  model.AddSample({gpu.Ticks(61'000'000'000), 61'000'000'000 + 10'000, 3000});
  const auto mapped = model.Map(gpu.Ticks(60'500'000'000));
  CHECK_FALSE(mapped.extrapolated);
  INFO("bound before ", before, " ns, with the bad read ", mapped.relative_ns, " ns");
  CHECK(mapped.relative_ns > 10'000);  // the 5 us the bad read pulls this time away is covered
  CHECK(std::fabs(double(mapped.cpu_ns - 60'500'000'000)) <= mapped.relative_ns);
}
