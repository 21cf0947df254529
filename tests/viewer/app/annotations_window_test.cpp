// Annotations (src/app/annotations_window.cpp) in the real viewer under Xvfb: a named
// range is kept beside the trace, comes back when the trace is opened again, and is
// drawn where its times are.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "known_trace.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

TEST_CASE("annotations: a named range is kept beside the trace, drawn, and there again next time") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  const std::string kept = trace + ".annotations.json";
  ViewerRun named =
      RunViewer(dir, {trace, "--frames", "3", "--select", "100:150", "--annotate", "slow \"part\""});
  REQUIRE_MESSAGE(named.exit_code == 0, named.log);
  CHECK(Number(WindowReport(named, "annotations"), "count") == 1);
  CHECK(WindowReport(named, "annotations").Find("path")->string == kept);
  CHECK(ReadFile(kept) ==
        "[\n{\"begin_ns\":100000000,\"end_ns\":150000000,\"color\":4282433776,\"text\":\"slow "
        "\\\"part\\\"\"}\n]\n");

  // Opened again: read back and drawn over 100 to 150 ms of the 420 ms in view.
  ViewerRun again = RunViewer(dir, {trace, "--frames", "3"});
  REQUIRE_MESSAGE(again.exit_code == 0, again.log);
  CHECK(Number(WindowReport(again, "annotations"), "count") == 1);
  const JsonValue& drawn = WindowReport(again, "annotations-drawn");
  REQUIRE(drawn.array.size() == 1);
  CHECK(drawn.array[0].Find("text")->string == "slow \"part\"");
  const JsonValue& timeline = *again.layout.Find("timeline");
  const double width = Number(timeline, "x1") - Number(timeline, "x0");
  const double view_ms =
      (Number(*again.layout.Find("view"), "end_ns") - Number(*again.layout.Find("view"), "begin_ns")) / 1e6;
  CHECK((Number(drawn.array[0], "x1") - Number(drawn.array[0], "x0")) / width ==
        doctest::Approx(50 / view_ms).epsilon(0.03));

  // Kept elsewhere when asked; a file that is not annotations is said, and none are shown.
  std::ofstream(dir.File("bad.json")) << "[{\"begin_ns\":1}]";
  ViewerRun bad = RunViewer(dir, {trace, "--frames", "3", "--annotations", dir.File("bad.json")});
  REQUIRE_MESSAGE(bad.exit_code == 0, bad.log);
  CHECK(Number(WindowReport(bad, "annotations"), "count") == 0);
  CHECK(WindowReport(bad, "annotations").Find("error")->string.find("without begin_ns and end_ns") !=
        std::string::npos);
  ViewerRun elsewhere = RunViewer(dir, {trace, "--frames", "3", "--annotations", dir.File("mine.json")});
  REQUIRE_MESSAGE(elsewhere.exit_code == 0, elsewhere.log);
  CHECK(Number(WindowReport(elsewhere, "annotations"), "count") == 0);
}
