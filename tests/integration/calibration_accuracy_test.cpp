// The GPU clock model on a real recording: 60 s of vkGetCalibratedTimestampsEXT on an
// NVIDIA H200 (tests/data), through gnomon-calibration-bench as a user would run it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../support/process.h"

namespace {

struct Figures {
  double p50, p99, max, in_bracket;
  // The bounds the method states (gnomon only; -1 elsewhere).
  double rel_coverage = -1, rel_p50 = -1, abs_coverage = -1;
  double abs_p50 = -1, early_p50 = -1, late_p50 = -1, bracket_pct = -1;
  double correction = 0, held_out_in_bracket = -1, bracketed_in_bracket = -1;
  // The p99's 95 % confidence interval, and the held-out reads counted as the truth.
  double p99_low = -1, p99_high = -1, truth_reads = -1, set_aside = -1;
  // The coverage without the truth's own uncertainty, and the factor on the relative
  // bound that 99 % coverage needs.
  double plain_coverage = -1, scale_needed = -1;
};

std::map<std::string, Figures> Run(const std::string& arguments) {
  std::string output;
  const int rc = gnomon::test::RunCommand(std::string(GNOMON_CALIBRATION_BENCH) + " " + arguments, &output);
  REQUIRE_MESSAGE(rc == 0, output);
  std::map<std::string, Figures> methods;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    char name[32];
    Figures f;
    if (std::sscanf(line.c_str(), "method=%31s p50_ns=%lf p99_ns=%lf max_ns=%lf in_bracket_pct=%lf", name,
                    &f.p50, &f.p99, &f.max, &f.in_bracket) != 5) {
      continue;
    }
    auto field = [&](const char* key, double& out) {
      const size_t at = line.find(key);
      if (at != std::string::npos) out = std::atof(line.c_str() + at + std::strlen(key));
    };
    field(" rel_bound_coverage_pct=", f.rel_coverage);
    field(" rel_bound_p50_ns=", f.rel_p50);
    field(" abs_bound_coverage_pct=", f.abs_coverage);
    field(" abs_bound_p50_ns=", f.abs_p50);
    field(" abs_early_p50_ns=", f.early_p50);
    field(" abs_late_p50_ns=", f.late_p50);
    field(" abs_bracket_pct=", f.bracket_pct);
    field(" correction_ns=", f.correction);
    field(" held_out_in_bracket_pct=", f.held_out_in_bracket);
    field(" bracketed_in_bracket_pct=", f.bracketed_in_bracket);
    field(" p99_low_ns=", f.p99_low);
    field(" p99_high_ns=", f.p99_high);
    field(" truth_reads=", f.truth_reads);
    field(" set_aside=", f.set_aside);
    field(" rel_bound_plain_coverage_pct=", f.plain_coverage);
    field(" bound_scale_needed=", f.scale_needed);
    methods[name] = f;
  }
  return methods;
}

// The relative bound holds for 99 % of held-out reads and says something: its median is
// within 3x the p99 error (the driver's 3 us bound, taken as relative, fails this).
void CheckBounds(const Figures& g) {
  INFO("coverage ", g.rel_coverage, " %, median bound ", g.rel_p50, " ns, p99 error ", g.p99, " ns");
  CHECK(g.rel_coverage >= 99.0);
  CHECK(g.rel_p50 > 0);
  CHECK(g.rel_p50 <= 3 * g.p99);
}

}  // namespace

TEST_CASE(
    "H200 stream at one calibration per second: p50 <= 40 ns, p99 <= 350 ns, every GPU write in its "
    "bracket") {
  const auto methods = Run(std::string(GNOMON_DATA_DIR) + "/h200_vulkan_calibration_60s.csv.zst --cadence 1");
  REQUIRE(methods.count("gnomon") == 1);
  REQUIRE(methods.count("offset") == 1);
  REQUIRE(methods.count("after_call") == 1);
  const Figures& g = methods.at("gnomon");
  CHECK(g.p50 <= 40);
  CHECK(g.p99 <= 350);
  CHECK(g.in_bracket == 100.0);
  CHECK(methods.at("after_call").p50 >= 10 * g.p50);
  CHECK(methods.at("offset").p50 >= 10 * g.p50);
  CheckBounds(g);
}

TEST_CASE("the synthetic stream exercises the same path") {
  const auto methods = Run("--synthetic --cadence 0.5");  // at 1 s its curve widens the bound to 3.4x p99
  CHECK(methods.at("gnomon").p50 <= 40);
  CHECK(methods.at("gnomon").in_bracket == 100.0);
  CheckBounds(methods.at("gnomon"));
  CHECK(methods.at("gnomon").abs_coverage >= 99.0);  // against the known truth
}

TEST_CASE("a second H200 stream, recorded by gnomon-calibration-record over 120 s, meets the same bars") {
  const auto methods =
      Run(std::string(GNOMON_DATA_DIR) + "/h200_vulkan_calibration_120s.csv.zst --cadence 1");
  const Figures& g = methods.at("gnomon");
  CHECK(g.p50 <= 40);
  CHECK(g.p99 <= 350);
  CHECK(g.in_bracket == 100.0);
  CHECK(methods.at("after_call").p50 >= 10 * g.p50);
  CheckBounds(g);
}

// Every recorded stream in tests/data: whichever GPU, host and load it came from.
std::vector<std::string> RecordedStreams() {
  std::vector<std::string> streams;
  for (const auto& entry : std::filesystem::directory_iterator(GNOMON_DATA_DIR)) {
    const std::string name = entry.path().filename().string();
    if (name.find("_calibration_") != std::string::npos && name.ends_with(".csv.zst"))
      streams.push_back(entry.path().string());
  }
  std::sort(streams.begin(), streams.end());
  return streams;
}

TEST_CASE(
    "every recorded stream at every cadence from 0.25 s to 2 s: the bound holds on the truth, p99 near the "
    "floor and never above plain interpolation") {
  // The floor: the same model after the fact through a calibration every 10 ms, which
  // leaves the held-out reads' own error. `piecewise`: straight lines between the same
  // calibrations the model sees. A p99 is compared with another's 95 % interval (its
  // noise, from the number of reads it is taken over).
  const std::vector<std::string> streams = RecordedStreams();
  REQUIRE(streams.size() >= 6);
  std::map<std::string, double> scale_needed;  // the largest of each stream's cadences
  for (const std::string& stream : streams) {
    double sparser_p99_high = -1;
    for (const char* cadence : {"2", "1", "0.5", "0.25"}) {
      CAPTURE(stream);
      CAPTURE(cadence);
      const auto methods = Run(stream + " --cadence " + cadence);
      const Figures& g = methods.at("gnomon");
      CheckBounds(g);
      CHECK(g.truth_reads > 0.97 * (g.truth_reads + g.set_aside));  // the truth rule sets few aside
      // Within 5 % of the floor at the collectors' cadence and faster; at 1 s and 2 s the
      // H200's clock wanders between calibrations by more than a line follows (up to 8 %).
      const double over_floor = std::atof(cadence) <= 0.5 ? 1.05 : 1.10;
      CHECK(g.p99 <= over_floor * methods.at("floor").p99_high);
      CHECK(g.p99 <= methods.at("piecewise").p99_high);
      // More calibrations never make it worse, beyond noise.
      if (sparser_p99_high > 0) CHECK(g.p99 <= sparser_p99_high);
      sparser_p99_high = g.p99_high;
      // Against the held-out reads as they are (their own jitter counted as our error).
      CHECK(g.plain_coverage >= 90.0);
      scale_needed[stream] = std::max(scale_needed[stream], g.scale_needed);
    }
  }
  // Cross-validation: the bound's one fitted constant is its width against the scatter.
  // Fitted on every stream but one (the largest factor they need), it must hold on the
  // one left out; and the factor the model ships (1) must be at least what any such fit
  // asks for.
  for (const auto& [held_out, needed] : scale_needed) {
    double fitted = 0;
    for (const auto& [other, other_needed] : scale_needed) {
      if (other != held_out) fitted = std::max(fitted, other_needed);
    }
    CAPTURE(held_out);
    CHECK(fitted <= 1.0);
    CHECK(needed <= 1.0);
    MESSAGE(held_out, ": needs ", needed, ", the others ", fitted);
  }
}

TEST_CASE("a calibration read while the CPU was held up is set aside, not interpolated through") {
  // On this H100 host one calibration of the 1 s cadence was read 2 us off the others
  // (its call took 1.6x the usual): straight lines through it put the 2 s around it
  // 1-2 us off, a p99 seven times the floor.
  const auto methods =
      Run(std::string(GNOMON_DATA_DIR) + "/h100b_vulkan_calibration_90s_fast_drift.csv.zst --cadence 1");
  const Figures& g = methods.at("gnomon");
  CHECK(methods.at("piecewise").p99 > 4 * methods.at("floor").p99);
  CHECK(g.p99 <= 1.05 * methods.at("floor").p99);
  CheckBounds(g);
}

TEST_CASE(
    "brackets narrow the absolute bound where recorded GPU writes prove it, and meet every held-out one") {
  // Every other gpuwrite row (submitted, then seen by the CPU) is a bracket; the others
  // are held out: each one's narrowed interval must still meet its own bracket.
  for (const char* stream : {"h200_vulkan_calibration_60s.csv.zst", "h200_vulkan_calibration_120s.csv.zst",
                             "h200_vulkan_calibration_300s_loaded.csv.zst"}) {
    CAPTURE(stream);
    const Figures g = Run(std::string(GNOMON_DATA_DIR) + "/" + stream + " --cadence 0.5").at("gnomon");
    CHECK(g.bracket_pct == 100.0);
    CHECK(g.early_p50 <= g.abs_p50);
    CHECK(g.late_p50 <= g.abs_p50);
  }
  // The 120 s stream has a GPU write seen 0.7 us after it was written: the late side
  // narrows from the driver's 3.1 us.
  const Figures g =
      Run(std::string(GNOMON_DATA_DIR) + "/h200_vulkan_calibration_120s.csv.zst --cadence 0.5").at("gnomon");
  CHECK(g.late_p50 < 0.7 * g.abs_p50);
  CHECK(g.early_p50 == g.abs_p50);  // submissions take 14 us or more: no word on that side
  CHECK(g.correction == 0);         // fence waits are too slow to prove the placement off
}

TEST_CASE(
    "GPU writes seen by a spinning CPU prove the H200's placement late: every time moves, the bound "
    "narrows") {
  // Recorded as the Vulkan collector probes: the CPU spins on the query's availability,
  // so it sees a write within a microsecond. The calibrations place the writes later
  // than that; the brackets move them by what they prove, and no further.
  for (const char* stream :
       {"h200_vulkan_calibration_60s_spin.csv.zst", "h200_vulkan_calibration_60s_spin_loaded.csv.zst"}) {
    CAPTURE(stream);
    const Figures g = Run(std::string(GNOMON_DATA_DIR) + "/" + stream + " --cadence 0.5").at("gnomon");
    CHECK(g.in_bracket < 20);  // placed after the CPU saw them, without brackets
    CHECK(g.correction <= 0);
    CHECK(g.bracket_pct == 100.0);  // every held-out write still meets its narrowed interval
    CHECK(g.late_p50 <= 0.35 * g.abs_p50);
    CHECK(g.bracketed_in_bracket >= g.held_out_in_bracket);  // the move is toward the CPU's view
    CHECK(g.p50 <= 60);
    CheckBounds(g);
  }
  const Figures quiet =
      Run(std::string(GNOMON_DATA_DIR) + "/h200_vulkan_calibration_60s_spin.csv.zst --cadence 0.5")
          .at("gnomon");
  CHECK(quiet.bracketed_in_bracket > quiet.held_out_in_bracket);
  CHECK(quiet.correction < 0);
  CHECK(quiet.late_p50 <= quiet.rel_p50);  // placed at the latest the brackets allow
}

TEST_CASE("on the synthetic stream the narrowed absolute bound still holds the known truth") {
  const Figures g = Run("--synthetic --cadence 0.5").at("gnomon");
  CHECK(g.abs_coverage >= 99.0);
  CHECK(g.bracket_pct == 100.0);
  CHECK(g.late_p50 < 0.8 * g.early_p50);
}
