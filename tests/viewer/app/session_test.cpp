// The viewer's session (src/app/session.cpp) in the real viewer under Xvfb: a file of
// several programs, the one asked for loaded; a live capture, the viewer's worker
// connected to the running demo; a file that is no trace.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "known_trace.h"
#include "viewer_run.h"

using gnomon::test::JsonValue;
using gnomon::test::RunViewer;
using gnomon::test::ViewerRun;
using gnomon::test::WriteKnownTrace;

TEST_CASE("a file of several programs: the one asked for is shown, and the viewer says which of how many") {
  gnomon::test::ScratchDir dir;
  std::vector<gnomon::test::StreamWriter> programs(3);
  for (size_t i = 0; i < programs.size(); ++i) {
    const std::string name = "rank" + std::to_string(i);
    programs[i].AppInfo(name, uint32_t(100 + i)).SourceLocation(1, "Step", "step", "train.cpp", 7);
    programs[i].ThreadInfo(1, uint32_t(200 + i), name + " main").ThreadContext(1);
    for (uint64_t k = 0; k <= i; ++k)
      programs[i].ZoneBegin(1, 1'000'000 + k * 1000).ZoneEnd(1'000'500 + k * 1000);
    programs[i].End(1'010'000);
  }
  const std::string path =
      gnomon::test::WriteTraceFile(dir.File("job.gnomon"), {&programs[0], &programs[1], &programs[2]});
  for (int k = 1; k <= 3; ++k) {
    CAPTURE(k);
    ViewerRun run = RunViewer(dir, {path, "--frames", "3", "--program", std::to_string(k)});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue* session = run.layout.Find("session");
    REQUIRE(session != nullptr);
    CHECK(session->Find("program")->number == k);
    CHECK(session->Find("programs")->number == 3);
    CHECK(session->Find("warning")->string.empty());  // the status line says which of how many
    // The other two below it, each a group of lanes titled with its place and name.
    const auto& groups = run.layout.Find("groups")->array;
    REQUIRE(groups.size() == 2);
    for (const JsonValue& group : groups) {
      const int program = int(group.Find("program")->number);
      CHECK(program != k);
      CHECK(group.Find("title")->string.starts_with("program " + std::to_string(program) + ": rank" +
                                                    std::to_string(program - 1) + " (pid"));
      CHECK(group.Find("lanes")->array.size() >= 1);
    }
    std::set<std::string> titles;
    for (const JsonValue& lane : run.layout.Find("lanes")->array) titles.insert(lane.Find("title")->string);
    const std::string expected =
        "rank" + std::to_string(k - 1) + " main (" + std::to_string(k) + (k == 1 ? " zone)" : " zones)");
    CHECK_MESSAGE(titles.count(expected) == 1, expected);
  }
  // One the file does not hold: said, and nothing shown.
  ViewerRun beyond = RunViewer(dir, {path, "--frames", "3", "--program", "4"});
  REQUIRE_MESSAGE(beyond.exit_code == 0, beyond.log);
  CHECK(beyond.layout.Find("session")->Find("warning")->string.find("there is no program 4") !=
        std::string::npos);
  CHECK(beyond.layout.Find("lanes")->array.empty());
  CHECK(beyond.layout.Find("groups")->array.size() == 3);
  std::string output;
  CHECK(gnomon::test::RunCommand(std::string(GNOMON_VIEWER) + " " + path + " --program 0", &output) == 1);
  CHECK(output.find("--program: '0' is not a whole number from 1 to 65536") != std::string::npos);
}

TEST_CASE("live: the viewer's worker connects to the running demo and draws its threads") {
  gnomon::test::ScratchDir dir;
  gnomon::test::ChildProcess demo({GNOMON_DEMO, "--seconds", "4"},
                                  {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}},
                                  dir.File("demo.log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  ViewerRun run = RunViewer(dir, {"127.0.0.1:" + std::to_string(port), "--frames", "60"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  std::set<std::string> titles;
  for (const JsonValue& lane : run.layout.Find("lanes")->array) titles.insert(lane.Find("title")->string);
  bool main_thread = false, worker = false;
  for (const std::string& t : titles) {
    main_thread |= t.rfind("main (", 0) == 0;
    worker |= t.rfind("worker ", 0) == 0;
  }
  CHECK(main_thread);
  CHECK(worker);
  CHECK(titles.count("Frames") == 1);
  CHECK(run.layout.Find("items")->array.size() > 10);
  // The address went to the recent list.
  CHECK(gnomon::test::ReadFile(dir.File("gnomon/recent-addresses")).find(std::to_string(port)) !=
        std::string::npos);
}

TEST_CASE("a file that is not a trace: the session fails, and the start window shows instead of lanes") {
  gnomon::test::ScratchDir dir;
  const std::string junk = dir.File("junk.gnomon");
  {
    std::ofstream out(junk);
    for (int i = 0; i < 20; ++i) out << "this is not a trace file\n";
  }
  ViewerRun run = RunViewer(dir, {junk, "--frames", "3"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue* session = run.layout.Find("session");
  REQUIRE(session != nullptr);
  CHECK(session->Find("title")->string == "junk.gnomon");
  CHECK(session->Find("programs")->number == 1);
  CHECK(run.layout.Find("lanes")->array.empty());
  CHECK(run.layout.Find("items")->array.empty());
  // The start window is drawn in its place (with the reason), to open something else.
  CHECK(run.layout.Find("windows")->Find("start") != nullptr);

  // A trace that loads: its lanes, and no start window.
  const std::string trace = WriteKnownTrace(dir, "known");
  ViewerRun loaded = RunViewer(dir, {trace, "--frames", "3"});
  REQUIRE_MESSAGE(loaded.exit_code == 0, loaded.log);
  CHECK(loaded.layout.Find("session")->Find("title")->string == "known.gnomon");
  CHECK_FALSE(loaded.layout.Find("lanes")->array.empty());
  CHECK(loaded.layout.Find("windows")->Find("start") == nullptr);
}

namespace {

// A loopback port nothing listens on: bound for a moment by the system's choice, then freed.
uint16_t PortNobodyListensOn() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  close(fd);
  return ntohs(address.sin_port);
}

}  // namespace

TEST_CASE("an address where nothing listens is said at once, with --wait the viewer keeps trying") {
  gnomon::test::ScratchDir dir;
  const std::string address = "127.0.0.1:" + std::to_string(PortNobodyListensOn());
  // Three frames are about 60 ms: the refusal is known by then, not after a second of retries.
  ViewerRun refused = RunViewer(dir, {address, "--frames", "3"});
  REQUIRE_MESSAGE(refused.exit_code == 0, refused.log);
  const JsonValue* session = refused.layout.Find("session");
  REQUIRE(session != nullptr);
  const std::string state = session->Find("state")->string;
  CHECK_MESSAGE(state.starts_with("failed: cannot connect to " + address), state);
  CHECK(state.find("refused") != std::string::npos);
  CHECK(refused.layout.Find("windows")->Find("start") != nullptr);  // the start window says so

  ViewerRun waiting = RunViewer(dir, {address, "--wait", "--frames", "3"});
  REQUIRE_MESSAGE(waiting.exit_code == 0, waiting.log);
  CHECK(waiting.layout.Find("session")->Find("state")->string ==
        "waiting for a program to listen at " + address);
}

TEST_CASE(
    "live: the status line shows the rate, stop ends the capture and discard closes it, the program going "
    "on") {
  gnomon::test::ScratchDir dir;
  gnomon::test::ChildProcess demo({GNOMON_DEMO, "--seconds", "8"},
                                  {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}},
                                  dir.File("demo.log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  ViewerRun watching = RunViewer(dir, {address, "--frames", "40"});
  REQUIRE_MESSAGE(watching.exit_code == 0, watching.log);
  const JsonValue& live = WindowReport(watching, "live");
  CHECK(live.Find("state")->string == "receiving");
  CHECK(Number(live, "bytes_per_s") > 0);
  const std::string stop_at = live.Find("stop_at")->string;
  const std::string discard_at = live.Find("discard_at")->string;

  ViewerRun stopped = RunViewer(dir, {address, "--frames", "40", "--mouse", "click@" + stop_at});
  REQUIRE_MESSAGE(stopped.exit_code == 0, stopped.log);
  CHECK(WindowReport(stopped, "live").Find("state")->string == "stopped");
  CHECK(WindowReport(stopped, "live").Find("stop_at") == nullptr);  // nothing left to stop
  CHECK(stopped.layout.Find("items")->array.size() > 10);           // what arrived stays

  ViewerRun discarded = RunViewer(dir, {address, "--frames", "40", "--mouse", "click@" + discard_at});
  REQUIRE_MESSAGE(discarded.exit_code == 0, discarded.log);
  CHECK(discarded.layout.Find("windows")->Find("live") == nullptr);
  CHECK(discarded.layout.Find("windows")->Find("start") != nullptr);  // back to the start window
  CHECK(demo.Wait(std::chrono::seconds(30)) == 0);                    // the program ran its course
}
