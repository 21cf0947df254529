// The GPU clock model on a real recording: 60 s of vkGetCalibratedTimestampsEXT on an
// NVIDIA H200 (tests/data), through gnomon-calibration-bench as a user would run it.
#include <doctest/doctest.h>

#include <map>
#include <sstream>

#include "../support/process.h"

namespace {

struct Figures {
  double p50, p99, max, in_bracket;
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
                    &f.p50, &f.p99, &f.max, &f.in_bracket) == 5) {
      methods[name] = f;
    }
  }
  return methods;
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
}

TEST_CASE("the synthetic stream exercises the same path") {
  const auto methods = Run("--synthetic");
  CHECK(methods.at("gnomon").p50 <= 40);
  CHECK(methods.at("gnomon").in_bracket == 100.0);
}

TEST_CASE("a second H200 stream, recorded by gnomon-calibration-record over 120 s, meets the same bars") {
  const auto methods =
      Run(std::string(GNOMON_DATA_DIR) + "/h200_vulkan_calibration_120s.csv.zst --cadence 1");
  const Figures& g = methods.at("gnomon");
  CHECK(g.p50 <= 40);
  CHECK(g.p99 <= 350);
  CHECK(g.in_bracket == 100.0);
  CHECK(methods.at("after_call").p50 >= 10 * g.p50);
}
