// The GPU clocks window (src/app/clock_window.cpp), drawn in the real viewer under Xvfb
// for the known trace.
#include <doctest/doctest.h>

#include <string>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

TEST_CASE("GPU clocks: the residual plot spans its height, and messages name their threads") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  ViewerRun run =
      RunViewer(dir, {trace, "--frames", "3", "--size", "1200x800", "--show", "gpu-clocks,messages"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const auto& contexts = Array(WindowReport(run, "gpu-clocks"), "contexts");
  REQUIRE(contexts.size() == 1);
  CHECK(Number(contexts[0], "calibrations") == 11);  // the context's own pair, then ten
  const JsonValue* plot = contexts[0].Find("plot");
  REQUIRE(plot != nullptr);
  CHECK(Number(*plot, "y1") - Number(*plot, "y0") >= 60);
  CHECK(Number(contexts[0], "points_bottom") - Number(contexts[0], "points_top") >= 50);
  const JsonValue& messages = WindowReport(run, "messages");
  CHECK(Number(messages, "rows") == 3);
  for (const JsonValue& thread : Array(messages, "threads")) CHECK(thread.string == "worker");
}
