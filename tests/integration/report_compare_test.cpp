// gnomon-report NEW --compare OLD as a CI job runs it: real trace files, exit codes, JSON.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "../support/json_check.h"
#include "../support/process.h"
#include "../support/trace_files.h"

using gnomon::test::RunCommand;
using gnomon::test::ScratchDir;

namespace {

// A program's trace: 2,000 frames, each with an Update zone of about `update_ns` and a
// Draw zone of about 300 us (2 % spread).
std::string Trace(const ScratchDir& dir, uint32_t seed, double update_ns) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> spread(1.0, 0.02);
  gnomon::test::StreamWriter w;
  w.AppInfo("game").ThreadContext(1);
  w.SourceLocation(1, "Update", "update", "/home/ci/src/game.cpp", 10);
  w.SourceLocation(2, "Draw", "draw", "/home/ci/src/draw.cpp", 20);
  uint64_t tick = 0;
  for (int i = 0; i < 2000; ++i) {
    w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, tick);
    const auto update = uint64_t(update_ns * spread(rng));
    const auto draw = uint64_t(300000 * spread(rng));
    w.ZoneBegin(1, tick).ZoneEnd(tick + update);
    w.ZoneBegin(2, tick + update).ZoneEnd(tick + update + draw);
    tick += 1000000;  // frames keep their pace: only Update changes
  }
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, tick);
  return gnomon::test::WriteTrace(dir, w, 64 * 1024);
}

}  // namespace

TEST_CASE("gnomon-report --compare flags the slower location, exits 4, and says so in JSON") {
  ScratchDir old_dir, new_dir, faster_dir;
  const std::string old_trace = Trace(old_dir, 1, 200000);
  const std::string new_trace = Trace(new_dir, 2, 220000);
  const std::string report = GNOMON_REPORT;
  std::string output;
  CHECK(RunCommand(report + " " + new_trace + " --compare " + old_trace, &output) == 4);
  CHECK_MESSAGE(output.find("SLOWER  zone     Update") != std::string::npos, output);
  CHECK(output.find("same    zone     Draw") != std::string::npos);
  CHECK(output.find("same    frames   main") != std::string::npos);
  CHECK(output.find("1 slower and 0 faster beyond 5 %, of 3 compared.") != std::string::npos);
  // Faster only: 5. The same trace: 0.
  CHECK(RunCommand(report + " " + old_trace + " --compare " + new_trace, &output) == 5);
  CHECK(output.find("FASTER  zone     Update") != std::string::npos);
  CHECK(RunCommand(report + " " + old_trace + " --compare " + old_trace, &output) == 0);
  CHECK(output.find("0 slower and 0 faster") != std::string::npos);
  // A threshold above the change: nothing counts.
  CHECK(RunCommand(report + " " + new_trace + " --compare " + old_trace + " --threshold 15%", &output) == 0);

  // JSON, to a file and to standard output.
  const std::string json_path = new_dir.File("compare.json");
  CHECK(RunCommand(report + " " + new_trace + " --compare " + old_trace + " --json " + json_path +
                       " --confidence 0.999",
                   &output) == 4);
  std::ifstream in(json_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gnomon::test::JsonValue json;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(text, json, error), error);
  CHECK(json.Find("confidence")->number == doctest::Approx(0.999));
  CHECK(json.Find("slower")->number == 1);
  const gnomon::test::JsonValue& first = json.Find("rows")->array.at(0);
  CHECK(first.Find("name")->string == "Update");
  CHECK(first.Find("where")->string == "game.cpp");
  CHECK(first.Find("median")->Find("change")->number == doctest::Approx(0.10).epsilon(0.2));
  CHECK(first.Find("median")->Find("low")->number > 0.05);
  CHECK(RunCommand(report + " " + new_trace + " --compare " + old_trace + " --json -", &output) == 4);
  CHECK(output.find("\"verdict\":\"slower\"") != std::string::npos);
}

TEST_CASE("gnomon-report --compare explains bad use") {
  ScratchDir dir;
  const std::string trace = Trace(dir, 1, 200000);
  const std::string report = GNOMON_REPORT;
  std::string output;
  CHECK(RunCommand(report + " " + trace + " --compare " + trace + " --threshold much", &output) == 1);
  CHECK(output.find("--threshold: 'much' is not a percentage from 0 to 1000") != std::string::npos);
  CHECK(RunCommand(report + " " + trace + " --compare " + trace + " --confidence 1", &output) == 1);
  CHECK(output.find("--confidence: '1' is not a confidence from 0.5 to 0.999999") != std::string::npos);
  CHECK(RunCommand(report + " " + trace + " --threshold 5", &output) == 1);
  CHECK(output.find("--threshold, --min-change and --confidence go with --compare OLD") != std::string::npos);
  CHECK(RunCommand(report + " " + trace + " --compare " + trace + " --csv", &output) == 1);
  CHECK(output.find("leave out --csv") != std::string::npos);
  CHECK(RunCommand(report + " " + trace + " --compare " + dir.File("missing.gnomon"), &output) == 2);
  CHECK(output.find("missing.gnomon") != std::string::npos);
  CHECK(RunCommand(report + " " + trace + " --compare " + trace + " --min-change x", &output) == 1);
  CHECK(output.find("--min-change: 'x' is not a whole number") != std::string::npos);
  // Nothing in common: said, with its own exit code, never a pass.
  gnomon::test::StreamWriter other;
  other.AppInfo("other")
      .ThreadContext(1)
      .SourceLocation(1, "Else", "f", "else.cpp", 1)
      .ZoneBegin(1, 0)
      .ZoneEnd(10);
  ScratchDir other_dir;
  const std::string unrelated = gnomon::test::WriteTrace(other_dir, other, 64 * 1024);
  CHECK(RunCommand(report + " " + unrelated + " --compare " + trace, &output) == 6);
  CHECK(output.find("nothing to compare: no zone location or frame series is in both traces") !=
        std::string::npos);
  CHECK(RunCommand(report + " " + trace + " --compare", &output) == 1);
  CHECK(output.find("--compare needs a value") != std::string::npos);
  CHECK(RunCommand(report + " --help", &output) == 0);
  CHECK(output.find("--compare OLD") != std::string::npos);
}
