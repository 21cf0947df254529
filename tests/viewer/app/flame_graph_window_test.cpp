// The Flame graph window (src/app/flame_graph_window.cpp), drawn in the real viewer
// under Xvfb for the known trace.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../../support/process.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

namespace {

// The known trace's three boxes (all zones > Work > Inner), as wide as their totals.
void CheckKnownBoxes(const ViewerRun& run, bool selected) {
  const auto& boxes = Array(WindowReport(run, "flame-graph"), "boxes");
  REQUIRE(boxes.size() == 3);
  const double root_width = Number(boxes[0], "x1") - Number(boxes[0], "x0");
  CHECK(root_width > 500);
  CHECK(Number(boxes[0], "total_ns") == (selected ? 40e6 : 200e6));
  CHECK(Number(boxes[1], "total_ns") == (selected ? 40e6 : 200e6));
  CHECK(Number(boxes[2], "total_ns") == (selected ? 20e6 : 100e6));
  CHECK(Number(boxes[1], "x1") - Number(boxes[1], "x0") == doctest::Approx(root_width).epsilon(0.01));
  CHECK(Number(boxes[2], "x1") - Number(boxes[2], "x0") == doctest::Approx(root_width / 2).epsilon(0.01));
  // Inner's box is drawn in Inner's colour (0xC05030), under its label's baseline.
  const int x = int(Number(boxes[2], "x1")) - 6, y = int(Number(boxes[2], "y0")) + 2;
  CHECK_MESSAGE(Close(run.shot.At(x, y), 0xFF3050C0u), "pixel ", run.shot.At(x, y));
}

}  // namespace

TEST_CASE("flame graph: widths are total time, for the whole trace and for the selected range") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  // Held, and over --memory-limit: the zones read from the file give the same boxes.
  for (const bool held : {true, false}) {
    for (const bool selected : {false, true}) {
      CAPTURE(held);
      CAPTURE(selected);
      std::vector<std::string> args{trace, "--frames", "3", "--show", "flame-graph"};
      if (selected) args.insert(args.end(), {"--select", "0:79.5"});
      if (!held) args.insert(args.end(), {"--memory-limit", "1K"});
      ViewerRun run = RunViewer(dir, args);
      REQUIRE_MESSAGE(run.exit_code == 0, run.log);
      CHECK(Number(WindowReport(run, "flame-graph"), "from_file") == (held ? 0 : 1));
      CheckKnownBoxes(run, selected);
    }
  }
}
