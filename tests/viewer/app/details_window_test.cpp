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

TEST_CASE(
    "zone details: the share of the parent, the time in each kind of child, messages and allocations "
    "inside") {
  ScratchDir dir;
  StreamWriter w;
  w.AppInfo("inside")
      .SourceLocation(1, "Frame", "frame", "f.cpp", 1)
      .SourceLocation(2, "A", "a", "f.cpp", 2)
      .SourceLocation(3, "B", "b", "f.cpp", 3)
      .ThreadInfo(1, 101, "main")
      .ThreadInfo(2, 102, "other")
      .ThreadContext(1);
  const uint64_t ms = kMs;
  w.ZoneBegin(1, kOrigin);                                      // Frame: 10 ms
  w.ZoneBegin(2, kOrigin + 1 * ms).ZoneEnd(kOrigin + 3 * ms);   // A: 2 ms
  w.ZoneBegin(3, kOrigin + 3 * ms).ZoneEnd(kOrigin + 8 * ms);   // B: 5 ms
  w.ZoneBegin(2, kOrigin + 8 * ms).ZoneEnd(kOrigin + 10 * ms);  // A: 2 ms
  for (uint64_t i = 0; i < 3; ++i) w.Alloc(0, 0x1000 + i * 0x100, 100, kOrigin + (2 + i) * ms);
  w.Message(kOrigin + 5 * ms, 2, "inside");
  w.ZoneEnd(kOrigin + 10 * ms);
  w.Alloc(0, 0x9000, 1000, kOrigin + 11 * ms).Message(kOrigin + 12 * ms, 2, "after");  // outside
  w.ThreadContext(2).Alloc(0, 0x8000, 7, kOrigin + 4 * ms).Message(kOrigin + 4 * ms, 2, "another thread");
  w.End(kOrigin + 20 * ms);
  const std::string trace = WriteTraceFile(dir.File("inside.gnomon"), w);

  ViewerRun frame = RunViewer(dir, {trace, "--frames", "3", "--zoom-to", "Frame"});
  REQUIRE_MESSAGE(frame.exit_code == 0, frame.log);
  const JsonValue& details = WindowReport(frame, "details");
  CHECK(Number(details, "of_parent_pct") == -1);  // a top-level zone
  const auto& groups = Array(details, "time_in_children");
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].Find("name")->string == "B");  // the longest total first
  CHECK(Number(groups[0], "total_ns") == 5e6);
  CHECK(groups[1].Find("name")->string == "A");
  CHECK(Number(groups[1], "count") == 2);
  CHECK(Number(groups[1], "total_ns") == 4e6);
  CHECK(Number(details, "messages_inside") == 1);
  CHECK(Number(details, "allocations_inside") == 3);
  CHECK(Number(details, "bytes_allocated_inside") == 300);

  ViewerRun child = RunViewer(dir, {trace, "--frames", "3", "--zoom-to", "A#2"});
  REQUIRE_MESSAGE(child.exit_code == 0, child.log);
  CHECK(Number(WindowReport(child, "details"), "of_parent_pct") == doctest::Approx(20));
  CHECK(Number(WindowReport(child, "details"), "allocations_inside") == 0);
}
