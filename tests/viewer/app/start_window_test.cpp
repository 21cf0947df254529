// The start window (src/app/start_window.cpp) in the real viewer under Xvfb.
#include <doctest/doctest.h>

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <string>

#include "../../support/process.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

TEST_CASE("the start window lists the programs running, to connect to without an address") {
  ScratchDir dir;
  const std::string runtime = dir.File("runtime");
  std::filesystem::create_directory(runtime);
  std::filesystem::permissions(runtime, std::filesystem::perms::owner_all);
  gnomon::test::ChildProcess demo(
      {GNOMON_DEMO, "--seconds", "20"},
      {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}, {"XDG_RUNTIME_DIR", runtime}},
      dir.File("demo.log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  ViewerRun run = RunViewer(dir, {"--frames", "3"}, {{"XDG_RUNTIME_DIR", runtime}});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const auto& programs = Array(WindowReport(run, "start"), "programs");
  REQUIRE(programs.size() == 1);
  CHECK(programs[0].Find("name")->string == "gnomon-demo");
  CHECK(Number(programs[0], "pid") == demo.pid());
  CHECK(programs[0].Find("address")->string == "127.0.0.1:" + std::to_string(port));
  demo.Signal(SIGTERM);
  demo.Wait();
}
