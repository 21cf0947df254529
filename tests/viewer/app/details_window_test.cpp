// The Zone details window (src/app/details_window.cpp), drawn in the real viewer under
// Xvfb for the known trace.
#include <doctest/doctest.h>

#include <string>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

TEST_CASE("zone details: the first thread's longest zone, its exact duration and its child") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--all-windows"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& details = WindowReport(run, "details");
  CHECK(details.Find("zone")->string == "Work");
  CHECK(details.Find("thread")->string.rfind("main", 0) == 0);
  CHECK(Number(details, "duration_ns") == 4e6);
  CHECK(Number(details, "self_ns") == 2e6);
  CHECK(details.Find("parent")->string.empty());
  CHECK(Number(details, "children") == 1);
}
