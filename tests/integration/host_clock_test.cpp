// A program's clock against the capture's, over real TCP: programs started in Linux
// time namespaces (their CLOCK_MONOTONIC and CLOCK_MONOTONIC_RAW shifted by a known
// number of seconds, as another host's would be) are placed by the capture's clock
// exchanges within the stated bound. Needs root (unshare --time); skipped with a
// message elsewhere.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "../support/json_check.h"
#include "../support/process.h"
#include "capture_helper.h"
#include "gnomon/server/host_clock_model.h"
#include "gnomon/server/json_report.h"

using gnomon::server::HostClockModel;
using gnomon::test::CaptureProgram;

namespace {

// util-linux's unshare, or "" when there is none.
std::string UnsharePath() {
  for (const char* path : {"/usr/bin/unshare", "/bin/unshare"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

bool TimeNamespacesAllowed() {
  return geteuid() == 0 && !UnsharePath().empty() &&
         gnomon::test::RunCommand(UnsharePath() + " --time --monotonic 1 true") == 0;
}

// Captures the demo for a second and a half in a time namespace `seconds` ahead (none
// for 0), and checks the capture finds the program's clock that far ahead.
void CheckProgramAhead(int64_t seconds) {
  CAPTURE(seconds);
  std::vector<std::string> argv;
  if (seconds != 0) argv = {UnsharePath(), "--time", "--monotonic", std::to_string(seconds)};
  for (const char* arg : {GNOMON_DEMO, "--seconds", "1.5"}) argv.push_back(arg);
  auto capture = CaptureProgram(argv, {{"GNOMON_RANK", "3"}});
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const auto& m = capture.model();
  CHECK(m.program.rank == 3);
  CHECK_FALSE(m.program.host.empty());
  // Ten probes in the first 100 ms, then ten a second.
  REQUIRE(m.host_clock_exchanges.size() >= 12);
  // Every exchange brackets the truth: capture = program - seconds.
  const int64_t truth = -seconds * 1'000'000'000;
  for (const auto& e : m.host_clock_exchanges) {
    CHECK(int64_t(e.probe_sent_ns) - int64_t(e.receive_ns) <= truth);
    CHECK(truth <= int64_t(e.reply_received_ns) - int64_t(e.send_ns));
  }
  const HostClockModel clock(m.host_clock_exchanges);
  CHECK(clock.rejected() == 0);
  CHECK(clock.epochs().size() == 1);
  const auto* epoch = clock.main_epoch();
  REQUIRE(epoch != nullptr);
  MESSAGE("offset error ", epoch->offset_ns() - truth, " ns, stated +/- ", epoch->uncertainty_ns(), " ns");
  CHECK(std::llabs(epoch->offset_ns() - truth) <= epoch->uncertainty_ns());
  CHECK(epoch->uncertainty_ns() < 5'000'000);  // loopback: far under a millisecond, even on a busy machine

  // The report's JSON says the same, per process.
  std::ostringstream json;
  gnomon::server::WriteJsonReport(m, json);
  gnomon::test::JsonValue report;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(json.str(), report, error), error);
  const auto* processes = report.Find("processes");
  REQUIRE(processes != nullptr);
  REQUIRE(processes->array.size() == 1);
  const auto& process = processes->array[0];
  REQUIRE(process.Find("rank") != nullptr);
  CHECK(process.Find("rank")->number == 3);
  REQUIRE(process.Find("clock_offset_ns") != nullptr);
  CHECK(process.Find("clock_offset_ns")->number == double(epoch->offset_ns()));
  CHECK(process.Find("clock_uncertainty_ns")->number == double(epoch->uncertainty_ns()));
  CHECK(process.Find("host")->string == m.program.host);
}

}  // namespace

TEST_CASE(
    "host clocks: programs whose clocks run 1,000 s and 5,000 s ahead are placed within the stated bound") {
  if (!TimeNamespacesAllowed()) {
    MESSAGE("skipped: time namespaces need root and a kernel that allows them (unshare --time)");
    return;
  }
  CheckProgramAhead(1000);
  CheckProgramAhead(5000);
}

TEST_CASE("host clocks: a program on the capture's own clock is found there, within the stated bound") {
  CheckProgramAhead(0);
}
