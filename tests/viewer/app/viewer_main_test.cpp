// gnomon-viewer's main (src/app/viewer_main.cpp): its options, the interface scale and
// the loop that waits for events when idle.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/xvfb.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

TEST_CASE(
    "--scale 2 draws lanes and text twice as large, and Ctrl+= and Ctrl+- change the scale while running") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  auto lane_height = [&](const std::string& scale, const std::string& keys = "") {
    std::vector<std::string> args{trace, "--frames", "12", "--scale", scale};
    if (!keys.empty()) args.insert(args.end(), {"--keys", keys});
    ViewerRun run = RunViewer(dir, args);
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    for (const JsonValue& lane : Array(run.layout, "lanes")) {
      if (lane.Find("title")->string.rfind("main", 0) == 0) return Number(lane, "height");
    }
    FAIL("no lane 'main'");
    return 0.0;
  };
  const double normal = lane_height("1");
  const double twice = lane_height("2");
  CHECK(twice == doctest::Approx(2 * normal).epsilon(0.15));
  // Four steps of a quarter up from 1 is 2; two down from 2 is 1.5; Ctrl+0 is the
  // monitor's (Xvfb's: 1).
  CHECK(lane_height("1", "ctrl+equal,ctrl+equal,ctrl+equal,ctrl+equal") == twice);
  CHECK(lane_height("2", "ctrl+minus,ctrl+minus") == lane_height("1.5"));
  CHECK(lane_height("2", "ctrl+0") == normal);
  // Without Ctrl, = and - zoom the timeline and leave the scale alone.
  CHECK(lane_height("1", "equal,minus") == normal);
}

TEST_CASE("an idle viewer waits for events instead of drawing frames") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  gnomon::test::Xvfb xvfb;
  REQUIRE(!xvfb.display().empty());
  std::map<std::string, std::string> env{{"DISPLAY", xvfb.display()}, {"XDG_CONFIG_HOME", dir.path()}};
  if (!std::string(GNOMON_ASAN_PRELOAD).empty()) env["ASAN_OPTIONS"] = "detect_leaks=0";
  gnomon::test::ChildProcess viewer({GNOMON_VIEWER, trace, "--show", "statistics,flame-graph"}, env,
                                    dir.File("viewer.log"));
  std::this_thread::sleep_for(std::chrono::seconds(6));
  viewer.Signal(SIGTERM);
  viewer.Wait();
  // Start-up and loading take a fraction of a second; a viewer drawing all the time
  // would use all six.
  MESSAGE("idle viewer: ", viewer.cpu_seconds(), " CPU seconds in 6 s");
  CHECK(viewer.cpu_seconds() < 2.0);
}

TEST_CASE(
    "a wrong option is named, with what it wants, and the viewer exits with 1 before opening a window") {
  // No DISPLAY is needed: the options are read first.
  const std::vector<std::pair<std::string, std::string>> wrong{
      {"--size 10x10", "gnomon-viewer: --size wants WxH, e.g. 1400x900"},
      {"--frames 0", "gnomon-viewer: --frames: '0' is not a whole number from 1 to 1000000"},
      {"--keys left,space",
       "gnomon-viewer: --keys: 'space' is not one of left, right, up, down, h, f, t, z, n, f3, backspace, "
       "escape"},
      {"--frame-target 0", "gnomon-viewer: --frame-target wants frames a second, from 1 to 1000"},
      {"--frame-target 60fps", "gnomon-viewer: --frame-target wants frames a second, from 1 to 1000"},
      {"--range 5:1", "gnomon-viewer: --range: the range ends before it begins"},
      {"--range 5:", "gnomon-viewer: --range: give both ends, A:B"},
      {"--range 2s:2000ms", "gnomon-viewer: --range: the range ends where it begins"},
      {"--select soon", "gnomon-viewer: --select: 'soon' is not A:B (milliseconds, or 4.5s:5s)"},
      {"--show statistics,nonsense",
       "gnomon-viewer: --show: 'nonsense' is not a window (statistics, find-zone"},
      {"--show messages=loud",
       "messages=SEVERITY shows that severity and worse (trace, debug, info, warning"},
      {"--zoom-to Work#0", "gnomon-viewer: --zoom-to NAME#N: '0' is not a whole number from 1 to"},
      {"--mouse click@x,1",
       "gnomon-viewer: --mouse: 'click@x,1' is not click@X,Y, double-click@X,Y, hover@X,Y or drag@X,Y,X2,Y2"},
      {"--mouse drag@1,2,3", "gnomon-viewer: --mouse: 'drag@1,2,3' is not"},
      {"--sort-lanes size", "gnomon-viewer: --sort-lanes: 'size' is not name or busiest"},
      {"--scale 9", "gnomon-viewer: --scale wants a number from 0.5 to 4"},
      {"--max-expansion 0", "gnomon-viewer: --max-expansion: '0' is not a whole number from 1 to"},
      {"--memory-limit lots", "gnomon-viewer: --memory-limit: 'lots' is not a size from 1 byte to 4 EiB"},
      {"--frobnicate", "gnomon-viewer: unknown option --frobnicate"},
      {"--screenshot", "gnomon-viewer: --screenshot needs a value"}};
  for (const auto& entry : wrong) {
    const std::string& args = entry.first;  // CAPTURE's lambda takes it
    const std::string& says = entry.second;
    CAPTURE(args);
    std::string output;
    CHECK(RunCommand("env -u DISPLAY " + std::string(GNOMON_VIEWER) + " " + args, &output) == 1);
    CHECK_MESSAGE(output.find(says) != std::string::npos, output);
  }
  // An unknown option is followed by the usage; --help prints it and succeeds.
  std::string unknown;
  RunCommand("env -u DISPLAY " + std::string(GNOMON_VIEWER) + " --frobnicate", &unknown);
  CHECK(unknown.find("Usage: gnomon-viewer") != std::string::npos);
  std::string help;
  CHECK(RunCommand("env -u DISPLAY " + std::string(GNOMON_VIEWER) + " --help", &help) == 0);
  CHECK(help.find("Usage: gnomon-viewer") != std::string::npos);
  CHECK(help.find("--show LIST") != std::string::npos);
}
