#include "gnomon/server/regression.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../../support/build_model.h"
#include "../../support/json_check.h"

using namespace gnomon::server;

namespace {

// P(B < m) for B binomial of n draws of probability p, summed term by term.
long double BinomialBelow(uint64_t n, long double p, uint64_t m) {
  long double sum = 0;
  for (uint64_t k = 0; k < m; ++k) {
    sum += std::exp(std::lgamma((long double)n + 1) - std::lgamma((long double)k + 1) -
                    std::lgamma((long double)(n - k) + 1) + k * std::log(p) + (n - k) * std::log1p(-p));
  }
  return sum;
}

// A program of four zone locations on one thread, `per_location` zones each, durations
// about `base_ns` (lognormal, 5 % spread) with Physics `physics_factor` times longer.
TraceModel Program(uint32_t seed, int per_location, double physics_factor) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> spread(0.0, 0.05);
  gnomon::test::StreamWriter w;
  w.AppInfo("game").ThreadContext(1);
  const char* names[] = {"Physics", "Render", "Audio", "Input"};
  const double base_ns[] = {100000, 250000, 20000, 5000};
  for (uint32_t id = 1; id <= 4; ++id) w.SourceLocation(id, names[id - 1], "f", "/src/game/game.cpp", id);
  uint64_t tick = 1000;
  for (int i = 0; i < per_location; ++i) {
    for (uint32_t id = 1; id <= 4; ++id) {
      const double ns = base_ns[id - 1] * spread(rng) * (id == 1 ? physics_factor : 1.0);
      w.ZoneBegin(id, tick).ZoneEnd(tick + uint64_t(ns));
      tick += uint64_t(ns) + 100;
    }
  }
  return gnomon::test::BuildWholeModel(w);
}

const RegressionRow& Row(const RegressionReport& report, const std::string& name) {
  const auto found = std::find_if(report.rows.begin(), report.rows.end(),
                                  [&](const RegressionRow& row) { return row.name == name; });
  REQUIRE(found != report.rows.end());
  return *found;
}

}  // namespace

TEST_CASE("the ranks that bracket a quantile are the widest the binomial law allows, no wider") {
  for (const uint64_t n : {1ull, 5ull, 20ull, 50ull, 200ull, 1000ull}) {
    for (const double p : {0.5, 0.9}) {
      for (const double tail : {0.025, 0.005, 1e-6}) {
        CAPTURE(n);
        CAPTURE(p);
        CAPTURE(tail);
        const OrderRanks r = QuantileRanks(n, p, tail);
        // The low end: P(B < l) within the tail, and one rank more would not be.
        CHECK(BinomialBelow(n, p, r.low) <= tail * (1 + 1e-9));
        if (r.low < n) CHECK(BinomialBelow(n, p, r.low + 1) > tail * (1 - 1e-9));
        // The high end, the same from above.
        CHECK(r.high >= r.low);
        CHECK(BinomialBelow(n, 1 - p, n + 1 - r.high) <= tail * (1 + 1e-9));
        if (r.high > 1) CHECK(BinomialBelow(n, 1 - p, n + 2 - r.high) > tail * (1 - 1e-9));
      }
    }
  }
  // The textbook case: the median of 50 values at 95 % lies between the 18th and 33rd.
  const OrderRanks median = QuantileRanks(50, 0.5, 0.025);
  CHECK(median.low == 18);
  CHECK(median.high == 33);
  // Too few values bound nothing.
  CHECK(QuantileRanks(5, 0.9, 0.005).high == 6);
  CHECK(QuantileRanks(5, 0.5, 0.005).low == 0);
  // Large counts stay quick and near the normal law's ranks.
  const OrderRanks big = QuantileRanks(100000000, 0.5, 0.005);
  CHECK(double(big.low) == doctest::Approx(5e7 - 2.5758 * 5000).epsilon(1e-6));
  CHECK(double(big.high) == doctest::Approx(5e7 + 2.5758 * 5000 + 1).epsilon(1e-6));
}

TEST_CASE("a quantile's interval holds as often as it says, on a skewed distribution") {
  // Exponential durations: the true median is ln 2, the true p90 ln 10.
  std::mt19937_64 rng(11);
  std::exponential_distribution<double> draw(1.0);
  const uint64_t n = 301;
  const double tail = 0.025;
  int misses_median = 0, misses_p90 = 0;
  const int trials = 4000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> v(n);
    for (double& x : v) x = draw(rng);
    std::sort(v.begin(), v.end());
    for (const auto& [p, truth, misses] :
         {std::tuple{0.5, std::log(2.0), &misses_median}, std::tuple{0.9, std::log(10.0), &misses_p90}}) {
      const OrderRanks r = QuantileRanks(n, p, tail);
      REQUIRE(r.low >= 1);
      REQUIRE(r.high <= n);
      if (v[r.low - 1] > truth || v[r.high - 1] < truth) ++*misses;
    }
  }
  // At most 5 % missed, give or take the noise of 4,000 trials (sd 0.34 %).
  CHECK(misses_median <= trials * 0.05 + 3 * std::sqrt(trials * 0.05 * 0.95));
  CHECK(misses_p90 <= trials * 0.05 + 3 * std::sqrt(trials * 0.05 * 0.95));
  // And not far less: the interval is not needlessly wide.
  CHECK(misses_median >= trials * 0.02);
}

TEST_CASE("a 10 % shift in one location is flagged, and nothing else is, at 1,000 and 1,000,000 zones") {
  for (const int per_location : {250, 250000}) {
    CAPTURE(per_location);
    const TraceModel old_trace = Program(1, per_location, 1.0);
    const TraceModel new_trace = Program(2, per_location, 1.10);
    const RegressionReport report = CompareForRegressions({&old_trace}, {&new_trace});
    CHECK(report.old_zones == uint64_t(4 * per_location));
    CHECK(report.compared == 4);
    CHECK(report.slower == 1);
    CHECK(report.faster == 0);
    const RegressionRow& physics = Row(report, "Physics");
    CHECK(physics.verdict == RegressionRow::Verdict::kSlower);
    CHECK(report.rows.front().name == "Physics");  // the slower come first
    CHECK(physics.where == "game.cpp");
    CHECK(physics.median.change == doctest::Approx(0.10).epsilon(0.3));
    CHECK(physics.median.low > 0.05);
    CHECK(physics.median.low < 0.10);
    CHECK(physics.median.high > 0.10);
    for (const char* name : {"Render", "Audio", "Input"}) {
      CAPTURE(name);
      const RegressionRow& row = Row(report, name);
      CHECK(row.verdict == RegressionRow::Verdict::kSame);
      CHECK(row.median.low < 0);
      CHECK(row.median.high > 0);
    }
    // The other way round, the same location is faster.
    const RegressionReport back = CompareForRegressions({&new_trace}, {&old_trace});
    CHECK(back.slower == 0);
    CHECK(back.faster == 1);
    CHECK(Row(back, "Physics").verdict == RegressionRow::Verdict::kFaster);
    // A threshold above the shift flags nothing.
    const RegressionReport loose = CompareForRegressions({&old_trace}, {&new_trace}, {.threshold = 0.15});
    CHECK(loose.slower == 0);
  }
}

TEST_CASE("frame series are compared, and what one trace lacks is listed, not judged") {
  auto program = [](double frame_ns, bool with_extra) {
    gnomon::test::StreamWriter w;
    w.AppInfo("game").ThreadContext(1);
    w.SourceLocation(1, "Tick", "tick", "a.cpp", 1);
    w.SourceLocation(2, with_extra ? "Extra" : "Old", "x", "a.cpp", 2);
    uint64_t tick = 0;
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> jitter(0.98, 1.02);
    for (int i = 0; i < 500; ++i) {
      w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, tick);
      w.ZoneBegin(1, tick).ZoneEnd(tick + 1000);
      w.ZoneBegin(2, tick + 2000).ZoneEnd(tick + 3000);
      tick += uint64_t(frame_ns * jitter(rng));
    }
    w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, tick);
    return gnomon::test::BuildWholeModel(w);
  };
  const TraceModel old_trace = program(16.6e6, false);
  const TraceModel new_trace = program(20e6, true);
  const RegressionReport report = CompareForRegressions({&old_trace}, {&new_trace});
  CHECK(report.compared == 2);  // Tick and the main frames
  const RegressionRow& frames = Row(report, "main");
  CHECK(frames.kind == RegressionRow::Kind::kFrames);
  CHECK(frames.old_count == 500);
  CHECK(frames.verdict == RegressionRow::Verdict::kSlower);
  CHECK(frames.median.change == doctest::Approx(20.0 / 16.6 - 1).epsilon(0.05));
  CHECK(Row(report, "Tick").verdict == RegressionRow::Verdict::kSame);
  CHECK(Row(report, "Old").verdict == RegressionRow::Verdict::kOnlyOld);
  CHECK(Row(report, "Extra").verdict == RegressionRow::Verdict::kOnlyNew);
  CHECK(report.rows.back().verdict == RegressionRow::Verdict::kOnlyNew);

  std::ostringstream text;
  PrintRegressions(report, text);
  CHECK(text.str().find("SLOWER  frames") != std::string::npos);
  CHECK(text.str().find("gone    zone     Old") != std::string::npos);
  CHECK(text.str().find("1 slower and 0 faster beyond 5 %, of 2 compared.") != std::string::npos);
  std::ostringstream json;
  WriteRegressionJson(report, json);
  gnomon::test::JsonValue parsed;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(json.str(), parsed, error), error);
  CHECK(parsed.Find("slower")->number == 1);
  CHECK(parsed.Find("rows")->array.size() == report.rows.size());
  CHECK(json.str().find("\"verdict\":\"slower\",\"kind\":\"frames\",\"name\":\"main\"") != std::string::npos);
  CHECK(json.str().find("\"verdict\":\"only_old\"") != std::string::npos);
}

TEST_CASE("a location with too few zones is never judged, and empty traces compare to nothing") {
  const TraceModel a = Program(1, 3, 1.0);
  const TraceModel b = Program(2, 3, 3.0);  // three times slower, but three zones say little
  const RegressionReport report = CompareForRegressions({&a}, {&b});
  CHECK(report.slower == 0);
  CHECK(std::isinf(Row(report, "Physics").p90.low));
  const TraceModel empty;
  const RegressionReport none = CompareForRegressions({&empty}, {&empty});
  CHECK(none.rows.empty());
  CHECK(none.compared == 0);
}

TEST_CASE("a change of fewer nanoseconds than the floor is no change, however sure") {
  auto program = [](uint64_t ns) {
    gnomon::test::StreamWriter w;
    w.AppInfo("tiny").ThreadContext(1).SourceLocation(1, "Tiny", "tiny", "t.cpp", 1);
    for (uint64_t i = 0; i < 2000; ++i) w.ZoneBegin(1, i * 100).ZoneEnd(i * 100 + ns);
    return gnomon::test::BuildWholeModel(w);
  };
  const TraceModel old_trace = program(40), new_trace = program(44);  // +10 %, 4 ns
  CHECK(CompareForRegressions({&old_trace}, {&new_trace}).slower == 0);
  const RegressionReport strict = CompareForRegressions({&old_trace}, {&new_trace}, {.min_change_ns = 0});
  CHECK(strict.slower == 1);
  CHECK(strict.rows[0].median.low_ns == 4);
  CHECK(strict.rows[0].median.high_ns == 4);
  // From 0 ns the change is infinite, and the floor still judges it.
  const TraceModel zero = program(0), one = program(1);
  CHECK(CompareForRegressions({&zero}, {&one}).slower == 0);
  CHECK(std::isinf(CompareForRegressions({&zero}, {&one}).rows[0].median.change));
}
