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
  CHECK(model.Map(gpu.Ticks(69'000'000'000)).absolute_ns() > 200);
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

TEST_CASE("a rate off by more than 1 %, within the reads' stated bounds, is a knot, not a rejected sample") {
  GpuClockModel model({1, 1}, 64);
  model.AddSample({1'000'000'000, 1'000'000'000, 100});
  // 20 ms later, read 1 ms late (a 5 % rate) by a pair stating 3 ms: its bound allows it.
  CHECK(model.AddSample({1'020'000'000, 1'021'000'000, 3'000'000}) == GpuClockModel::SampleResult::kAdded);
  // 5 ms more than that pair's bound allows: impossible, and rejected.
  CHECK(model.AddSample({1'040'000'000, 1'046'000'000, 100}) == GpuClockModel::SampleResult::kRejected);
  CHECK(model.rejected_count() == 1);
  CHECK_FALSE(model.Map(1'020'000'000).extrapolated);
}

TEST_CASE("close samples merge by weight, and a resync re-anchors later timestamps") {
  GpuClockModel model({1, 1}, 64);
  model.AddSample({1'000'000'000, 1'000'000'000, 1000});
  // A sample 1 ms later with a far smaller uncertainty pulls the knot to itself.
  CHECK(model.AddSample({1'001'000'000, 1'001'000'100, 10}) == GpuClockModel::SampleResult::kMerged);
  REQUIRE(model.knots().size() == 1);
  CHECK(std::llabs(int64_t(model.knots()[0].cpu_ns) - int64_t(model.knots()[0].gpu_ticks) - 100) <= 1);
  model.AddSample({2'000'000'000, 2'000'000'100, 10});
  const uint32_t old_epoch = model.epoch();
  // The GPU clock jumps back by 5 s (a device reset): a resync anchors the new epoch.
  model.Resync({500'000'000, 3'000'000'000, 10});
  model.AddSample({1'500'000'000, 4'000'000'000, 10});
  CHECK(model.epoch() == old_epoch + 1);
  CHECK(model.Map(1'000'000'000).cpu_ns == 3'500'000'000);
  CHECK(model.Map(1'500'000'000, old_epoch).cpu_ns == 1'500'000'100);
}

TEST_CASE(
    "merged samples keep the calibrated span: a time between the first and last read is not extrapolated") {
  GpuClockModel model({1, 1}, 64);
  model.AddSample({1'000'000'000, 1'000'000'000, 100});
  model.AddSample({2'000'000'000, 2'000'000'000, 100});
  // Read 5 ms after the knot at 2 s: merged, the knot moves to their centroid (2.0025 s).
  CHECK(model.AddSample({2'005'000'000, 2'005'000'000, 100}) == GpuClockModel::SampleResult::kMerged);
  REQUIRE(model.knots().size() == 2);
  CHECK(model.knots()[1].gpu_ticks < 2'004'000'000);
  const auto inside = model.Map(2'004'000'000);
  CHECK_FALSE(inside.extrapolated);
  CHECK(std::llabs(inside.cpu_ns - 2'004'000'000) <= 1);
  CHECK(model.Map(2'005'000'001).extrapolated);
  CHECK(model.Map(999'999'999).extrapolated);
  CHECK_FALSE(model.Map(1'000'000'000).extrapolated);
  // The same at the first knot: a second read merged into it moves it later.
  GpuClockModel first({1, 1}, 64);
  first.AddSample({1'000'000'000, 1'000'000'000, 100});
  CHECK(first.AddSample({1'004'000'000, 1'004'000'000, 100}) == GpuClockModel::SampleResult::kMerged);
  first.AddSample({2'000'000'000, 2'000'000'000, 100});
  CHECK(first.knots()[0].gpu_ticks > 1'001'000'000);
  CHECK_FALSE(first.Map(1'001'000'000).extrapolated);
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
    CHECK(mapped.absolute_ns() >= mapped.relative_ns);
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
  CHECK(mapped.absolute_ns() == 2500);
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
  CHECK(far.absolute_ns() > near.absolute_ns());
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
      CHECK(mapped.absolute_ns() >= mapped.relative_ns);
      CHECK(mapped.relative_ns >= 200);  // never below what the reads scatter by
      ++total;
      if (std::fabs(double(mapped.cpu_ns - cpu)) <= mapped.absolute_ns()) ++covered;
    }
    CHECK(double(covered) >= 0.99 * double(total));
  }
  SUBCASE("a bound the reads contradict: counted; the absolute bound widens to the data") {
    const GpuClockModel model = NoisyModel(gpu, 60, 2000, 50);
    CHECK(model.flags().contradicted > 10);
    CHECK(model.Map(gpu.Ticks(30'500'000'000)).absolute_ns() > 1000);
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

namespace {

// Calibrations every 0.5 s whose host half is read `offset_ns` early (every read shares
// it: the driver's bound covers it and no calibration removes it), and GPU writes
// bracketed like real probes: submitted `submit_ns` before the write, seen
// `seen_ns` after it.
struct BracketedStream {
  SimulatedGpu gpu{.ppm = 3, .wander_ns = 1500, .period = PeriodFromFloat(1.0)};
  double offset_ns = 900;
  uint32_t stated_ns = 2800;
  int64_t submit_ns = 15'000;
  int64_t seen_ns = 300;

  void AddCalibration(GpuClockModel& model, int64_t cpu, double noise) const {
    model.AddSample({gpu.Ticks(cpu), cpu - std::llround(offset_ns - noise), stated_ns});
  }
  GpuTimeBracket Bracket(int64_t cpu) const { return {gpu.Ticks(cpu), cpu - submit_ns, cpu + seen_ns}; }
};

// The offset range from `brackets`, computed afresh through a model of the same knots
// without brackets (whose mapping is never narrowed), as docs/gpu-timestamps.md defines
// it: each bracket allows offsets within its gaps to the placed time, widened by the
// relative bound there, and within the calibrations' stated bound plus the relative one
// (between two knots, the larger of theirs).
GpuClockModel::OffsetRange RangeFromScratch(const GpuClockModel& knots_only,
                                            const std::vector<GpuTimeBracket>& brackets) {
  GpuClockModel::OffsetRange range;
  range.brackets = brackets.size();
  const auto& knots = knots_only.knots();
  for (const GpuTimeBracket& b : brackets) {
    const auto m = knots_only.Map(b.gpu_ticks);
    double stated = m.absolute_ns();
    if (!m.extrapolated) {
      const auto after =
          std::upper_bound(knots.begin(), knots.end(), b.gpu_ticks,
                           [](uint64_t t, const GpuCalibrationSample& k) { return t < k.gpu_ticks; });
      stated = std::max({after[-1].uncertainty_ns, after[0].uncertainty_ns, m.relative_ns});
    }
    const double cap = stated + m.relative_ns;
    range.min_ns = std::max(range.min_ns, std::max(-cap, double(b.not_before_ns - m.cpu_ns) - m.relative_ns));
    range.max_ns = std::min(range.max_ns, std::min(cap, double(b.not_after_ns - m.cpu_ns) + m.relative_ns));
  }
  range.contradicted = range.min_ns > range.max_ns;
  return range;
}

// Equal but for the rounding of relative bounds to whole ns.
void CheckSameRange(const GpuClockModel::OffsetRange& a, const GpuClockModel::OffsetRange& b) {
  CHECK(a.brackets == b.brackets);
  CHECK(a.contradicted == b.contradicted);
  CHECK(std::fabs(a.min_ns - b.min_ns) <= 1.0);
  CHECK(std::fabs(a.max_ns - b.max_ns) <= 1.0);
}

}  // namespace

TEST_CASE("brackets narrow the absolute bound on the side they prove, and the truth stays inside") {
  const BracketedStream stream;
  std::mt19937_64 rng(9);
  std::normal_distribution<double> noise(0, 30);
  GpuClockModel model(stream.gpu.period, 64);
  for (int64_t cpu = 0; cpu <= 60'000'000'000; cpu += 500'000'000)
    stream.AddCalibration(model, cpu, noise(rng));
  const GpuClockModel without = model;
  for (int64_t cpu = 250'000'000; cpu < 60'000'000'000; cpu += 7'000'000'000) {
    REQUIRE(model.AddBracket(stream.Bracket(cpu)) == GpuClockModel::BracketResult::kAdded);
  }
  const GpuClockModel::OffsetRange range = model.offset_range();
  CHECK(range.brackets == 9);
  CHECK_FALSE(range.contradicted);
  INFO("offset proven within [", range.min_ns, ", ", range.max_ns, "]");
  // The truth lies 900 ns after the placement: the late side narrows from 2.8 us to
  // the probes' 300 ns plus that offset and the relative bounds; the early side, which
  // only 15 us submissions speak for, keeps the driver's bound.
  CHECK(range.max_ns >= stream.offset_ns);
  size_t covered = 0, total = 0;
  for (int64_t cpu = 1'000'000; cpu < 60'000'000'000; cpu += 99'999'999) {
    const auto narrowed = model.Map(stream.gpu.Ticks(cpu));
    const auto plain = without.Map(stream.gpu.Ticks(cpu));
    CHECK(narrowed.cpu_ns == plain.cpu_ns);  // brackets bound, they never move a time
    CHECK(narrowed.relative_ns == plain.relative_ns);
    CHECK(narrowed.early_ns == plain.early_ns);
    CHECK(narrowed.late_ns < plain.late_ns);
    CHECK(narrowed.late_ns < 2000);
    const double truth_minus_placed = double(cpu - narrowed.cpu_ns);
    ++total;
    if (truth_minus_placed >= -double(narrowed.early_ns) && truth_minus_placed <= double(narrowed.late_ns))
      ++covered;
  }
  CHECK(covered == total);
  CHECK(model.current_late_ns() < model.current_early_ns());
  CHECK(without.current_late_ns() == without.current_early_ns());
}

TEST_CASE("brackets that prove every placement late move the epoch's times, by no more than they prove") {
  // The host half of every calibration is read 1.5 us late: the GPU's writes are seen
  // by the CPU before the calibrations place them.
  BracketedStream stream;
  stream.offset_ns = -1500;
  std::mt19937_64 rng(4);
  std::normal_distribution<double> noise(0, 30);
  GpuClockModel model(stream.gpu.period, 64);
  for (int64_t cpu = 0; cpu <= 60'000'000'000; cpu += 500'000'000)
    stream.AddCalibration(model, cpu, noise(rng));
  const GpuClockModel without = model;
  for (int64_t cpu = 250'000'000; cpu < 60'000'000'000; cpu += 7'000'000'000)
    model.AddBracket(stream.Bracket(cpu));
  const GpuClockModel::OffsetRange range = model.offset_range();
  INFO("offset proven within [", range.min_ns, ", ", range.max_ns, "]");
  REQUIRE(range.max_ns < 0);
  CHECK(range.correction_ns() == range.max_ns);
  CHECK(range.max_ns >= stream.offset_ns);  // the move stops short of the truth, never past it
  const auto first = model.Map(stream.gpu.Ticks(1'000'000));
  const auto first_plain = without.Map(stream.gpu.Ticks(1'000'000));
  for (int64_t cpu = 1'000'000; cpu < 60'000'000'000; cpu += 99'999'999) {
    const auto moved = model.Map(stream.gpu.Ticks(cpu));
    const auto plain = without.Map(stream.gpu.Ticks(cpu));
    CHECK(moved.cpu_ns - plain.cpu_ns == std::llround(range.correction_ns()));
    CHECK(moved.cpu_ns - first.cpu_ns == plain.cpu_ns - first_plain.cpu_ns);  // durations kept
    CHECK(moved.relative_ns == plain.relative_ns);
    CHECK(std::llabs(cpu - moved.cpu_ns) < std::llabs(cpu - plain.cpu_ns));  // nearer the truth
    const double truth_minus_placed = double(cpu - moved.cpu_ns);
    CHECK(truth_minus_placed >= -double(moved.early_ns));
    CHECK(truth_minus_placed <= double(moved.late_ns));
    CHECK(moved.late_ns <= moved.relative_ns);  // the placement sits at the latest the brackets allow
  }
}

TEST_CASE("brackets settled as knots arrive give the range recomputed from scratch") {
  // 400 s at 0.5 s: brackets settle (leave the open list) once 146 spans follow them.
  const BracketedStream stream;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 40);
  std::uniform_int_distribution<int64_t> seen(200, 40'000);
  GpuClockModel model(stream.gpu.period, 64), knots_only(stream.gpu.period, 64);
  std::vector<GpuTimeBracket> brackets;
  for (int64_t cpu = 0; cpu <= 400'000'000'000; cpu += 500'000'000) {
    const double n = noise(rng);
    stream.AddCalibration(model, cpu, n);
    stream.AddCalibration(knots_only, cpu, n);
    // A probe just after each calibration (seen at the next knot's time, it maps by
    // extrapolation until then), and one between the knots.
    for (const int64_t at : {cpu + 1'000'000, cpu + 260'000'000}) {
      const GpuTimeBracket b{stream.gpu.Ticks(at), at - stream.submit_ns, at + seen(rng)};
      model.AddBracket(b);
      brackets.push_back(b);
    }
    if (cpu % 50'000'000'000 == 0)
      CheckSameRange(model.offset_range(), RangeFromScratch(knots_only, brackets));
  }
  CheckSameRange(model.offset_range(), RangeFromScratch(knots_only, brackets));
  CHECK(model.offset_range().brackets == 1602);
}

TEST_CASE("brackets that cannot be taken: rejected, or contradicting and not used") {
  const BracketedStream stream;
  GpuClockModel model(stream.gpu.period, 64);
  for (int64_t cpu = 0; cpu <= 10'000'000'000; cpu += 500'000'000) stream.AddCalibration(model, cpu, 0);
  const GpuClockModel without = model;
  const uint64_t ticks = stream.gpu.Ticks(5'100'000'000);
  SUBCASE("no side known, or ending before it begins: rejected and counted") {
    CHECK(model.AddBracket({ticks}) == GpuClockModel::BracketResult::kRejected);
    CHECK(model.AddBracket({ticks, 5'100'000'000, 5'000'000'000}) == GpuClockModel::BracketResult::kRejected);
    CHECK(model.flags().bad_brackets == 2);
    CHECK(model.flags().total() == 0);  // calibrations are not to blame
    CHECK(model.offset_range().brackets == 0);
    CHECK(model.Map(ticks).early_ns == without.Map(ticks).early_ns);
    CHECK(model.Map(ticks).late_ns == without.Map(ticks).late_ns);
  }
  SUBCASE("one side only: narrows that side") {
    CHECK(model.AddBracket({ticks, GpuTimeBracket::kUnknownEarliest, 5'100'000'300}) ==
          GpuClockModel::BracketResult::kAdded);
    CHECK(model.Map(ticks).late_ns < without.Map(ticks).late_ns);
    CHECK(model.Map(ticks).early_ns == without.Map(ticks).early_ns);
  }
  SUBCASE("two brackets no offset satisfies: flagged, the driver's bound stands") {
    // The GPU wrote 5.1 s at least 2 us after the CPU's 5.1 s, and at most 2 us before.
    model.AddBracket({ticks, 5'100'002'000, GpuTimeBracket::kUnknownLatest});
    model.AddBracket({ticks, GpuTimeBracket::kUnknownEarliest, 5'099'998'000});
    CHECK(model.offset_range().contradicted);
    CHECK(model.flags().contradicted_brackets == 1);
    CHECK(model.Map(ticks).early_ns == without.Map(ticks).early_ns);
    CHECK(model.Map(ticks).late_ns == without.Map(ticks).late_ns);
  }
  SUBCASE("a bracket beyond the calibrations' own stated bound contradicts them") {
    model.AddBracket({ticks, GpuTimeBracket::kUnknownEarliest, 5'100'000'000 - 50'000});
    CHECK(model.offset_range().contradicted);
    CHECK(model.Map(ticks).late_ns == without.Map(ticks).late_ns);
  }
  SUBCASE("a flood past the last knot (where a later knot still moves them) is counted, not kept") {
    const uint64_t later = stream.gpu.Ticks(11'000'000'000);
    for (size_t i = 0; i < GpuClockModel::kMaxOpenBrackets + 10; ++i) {
      model.AddBracket({later + i, 10'900'000'000, 11'200'000'000});
    }
    CHECK(model.offset_range().brackets == GpuClockModel::kMaxOpenBrackets);
    CHECK(model.flags().bad_brackets == 10);
    // Brackets between older knots are final at once, filed by span: no limit but the
    // spans'.
    for (size_t i = 0; i < 10'000; ++i) model.AddBracket({ticks + i, 5'000'000'000, 5'200'000'000});
    CHECK(model.offset_range().brackets == GpuClockModel::kMaxOpenBrackets + 10'000);
    CHECK(model.flags().bad_brackets == 10);
  }
}

TEST_CASE("brackets proving an offset beyond the tightest knot's own bound contradict it and are not used") {
  // Knots stating 10 us, then knots stating 100 ns: a bracket proving the offset at
  // least 5 us agrees with the first and not with the second.
  GpuClockModel model(PeriodFromFloat(1.0), 64);
  for (int64_t s = 0; s <= 4; ++s) model.AddSample({uint64_t(s) * 1'000'000'000, s * 1'000'000'000, 10'000});
  for (int64_t s = 5; s <= 8; ++s) model.AddSample({uint64_t(s) * 1'000'000'000, s * 1'000'000'000, 100});
  const GpuClockModel without = model;
  model.AddBracket({1'500'000'000, 1'500'005'000, GpuTimeBracket::kUnknownLatest});
  CHECK(model.offset_range().contradicted);
  CHECK(model.offset_range().correction_ns() == 0);
  CHECK(model.Map(7'500'000'000).cpu_ns == without.Map(7'500'000'000).cpu_ns);
  CHECK(model.Map(7'500'000'000).late_ns == without.Map(7'500'000'000).late_ns);
}

TEST_CASE("a read claiming a bound of seconds cannot become a knot far from the others") {
  GpuClockModel model({1, 1}, 64);
  model.AddSample({1'000'000'000, 1'000'000'000, 100});
  // 20 ms later, read 1 s late, stating 4 s: rejected (stated bounds count up to 10 ms).
  CHECK(model.AddSample({1'020'000'000, 2'020'000'000, 4'000'000'000u}) ==
        GpuClockModel::SampleResult::kRejected);
  // So the reads after it still land.
  CHECK(model.AddSample({2'000'000'000, 2'000'000'000, 100}) == GpuClockModel::SampleResult::kAdded);
}

TEST_CASE("a calibration read far off its neighbours is set aside, and the bound around it widens") {
  const SimulatedGpu gpu{.ppm = 24, .wander_ns = 500, .period = PeriodFromFloat(1.0)};
  GpuClockModel clean = NoisyModel(gpu, 40, 20, 3000);
  GpuClockModel model(gpu.period, 64);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 20);
  for (int s = 0; s <= 40; ++s) {
    const int64_t cpu = int64_t(s) * 1'000'000'000;
    // The read at 20 s came 2.5 us late: its call was held up.
    const int64_t off = s == 20 ? 2500 : std::llround(noise(rng));
    model.AddSample({gpu.Ticks(cpu), cpu + off, s == 20 ? 7000u : 3000u});
  }
  CHECK(model.flags().set_aside == 1);
  CHECK(clean.flags().set_aside == 0);
  for (int64_t t : {19'500'000'000LL, 20'000'000'000LL, 20'500'000'000LL}) {
    CAPTURE(t);
    const auto mapped = model.Map(gpu.Ticks(t));
    CHECK(std::fabs(double(mapped.cpu_ns - t)) < 150);  // straight lines through it: 1.25 us off
    CHECK(mapped.relative_ns > clean.Map(gpu.Ticks(t)).relative_ns);
  }
}

TEST_CASE("placed knots keep the mapping monotonic under hostile rates and crowded knots") {
  // Rates that jump by +-0.9 % from knot to knot, and stated bounds of 10 ms that let
  // two knots' CPU times lie a few ns apart: the fit placing each knot must not
  // reorder them.
  GpuClockModel model(PeriodFromFloat(1.0), 64);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> rate(0.991, 1.009);
  std::uniform_int_distribution<int> crowd(0, 3);
  uint64_t ticks = 1000;
  int64_t cpu = 5000;
  for (int k = 0; k < 400; ++k) {
    const uint64_t step = 20'000'000;
    ticks += step;
    cpu += crowd(rng) == 0 ? 2 : int64_t(double(step) * rate(rng));
    model.AddSample({ticks, cpu, 10'000'000});
  }
  REQUIRE(model.knots().size() > 100);
  int64_t last = INT64_MIN;
  for (const GpuCalibrationSample& k : model.knots()) {
    const int64_t placed = model.Map(k.gpu_ticks).cpu_ns;
    REQUIRE(placed > last);
    last = placed;
  }
  last = INT64_MIN;
  for (uint64_t t = 1000; t < ticks + 100'000'000; t += 1'000'003) {
    const int64_t placed = model.Map(t).cpu_ns;
    REQUIRE(placed >= last);
    last = placed;
  }
}

TEST_CASE("a knot set aside is counted once, however often merges judge it again") {
  const SimulatedGpu gpu{.ppm = 24, .wander_ns = 500, .period = PeriodFromFloat(1.0)};
  GpuClockModel model(gpu.period, 64);
  for (int s = 0; s <= 22; ++s) {
    const int64_t cpu = int64_t(s) * 1'000'000'000;
    model.AddSample({gpu.Ticks(cpu), cpu + (s == 20 ? 2500 : (s % 3) * 7), 3000});
  }
  REQUIRE(model.flags().set_aside == 1);
  for (int m = 1; m <= 3; ++m) {
    const int64_t cpu = 22'000'000'000 + m * 1'000'000;
    REQUIRE(model.AddSample({gpu.Ticks(cpu), cpu, 3000}) == GpuClockModel::SampleResult::kMerged);
  }
  CHECK(model.flags().set_aside == 1);
}
