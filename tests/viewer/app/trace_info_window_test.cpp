// The Trace info window (src/app/trace_info_window.cpp), drawn in the real viewer under
// Xvfb: what the trace says of itself, row by row.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "../../support/zone_sets.h"
#include "gnomon/server/trace_loader.h"
#include "known_trace.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

TEST_CASE("trace info: the program, its machine and settings, its clocks, what it dropped, and the file") {
  ScratchDir dir;
  StreamWriter w;
  w.AppInfo("info", 4242)
      .Add(gnomon::protocol::HostInfo{.rank = 3}, {.host = "render-7"})
      .Add(gnomon::protocol::ProgramEnvironment{.logical_cpus = 64, .memory_bytes = uint64_t{256} << 30},
           {.system = "Linux 6.1.0 x86_64", .cpu = "Test CPU", .settings = "GNOMON_PORT=9000"})
      .SourceLocation(1, "Work", "work", "info.cpp", 1)
      .ThreadInfo(1, 101, "main")
      .ThreadContext(1)
      .ZoneBegin(1, kOrigin)
      .ZoneEnd(kOrigin + 2 * kMs)
      .Dropped(17)
      .End(kOrigin + 5 * kMs);
  const std::string trace = WriteTraceFile(dir.File("info.gnomon"), w);
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--show", "trace-info"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& info = WindowReport(run, "trace-info");
  CHECK(info.Find("Program")->string == "info (pid 4242, host render-7, rank 3)");
  CHECK(info.Find("System")->string == "Linux 6.1.0 x86_64, 64 logical CPUs (Test CPU), 256 GiB");
  CHECK(info.Find("Settings")->string == "GNOMON_PORT=9000");
  CHECK(info.Find("Length")->string == "5 ms");
  CHECK(info.Find("Zones")->string == "1 on 1 threads");
  CHECK(info.Find("Dropped")->string.rfind("17 event(s) dropped by the program", 0) == 0);
  CHECK(info.Find("Stream")->string == "ended cleanly");
  CHECK(info.Find("GPU")->string == "none");
  CHECK(info.Find("File")->string.find("info.gnomon (") != std::string::npos);

  // A trace from a program that said nothing of its machine says so.
  ViewerRun known = RunViewer(dir, {WriteKnownTrace(dir, "known"), "--frames", "3", "--show", "trace-info"});
  REQUIRE_MESSAGE(known.exit_code == 0, known.log);
  const JsonValue& quiet = WindowReport(known, "trace-info");
  CHECK(quiet.Find("System")->string.rfind("not recorded", 0) == 0);
  CHECK_MESSAGE(quiet.Find("GPU")->string.rfind("known GPU: 0 zones, 11 calibrations (0 rejected), placed "
                                                "+/- 4.52 us relative, +/- 4.52 us absolute",
                                                0) == 0,
                quiet.Find("GPU")->string);
}

TEST_CASE(
    "trace info: the selected range saved as a trace of its own holds exactly the zones that overlap it") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  const std::vector<std::string> shown{trace, "--show", "trace-info", "--select", "10:20"};
  std::vector<std::string> args = shown;
  args.insert(args.end(), {"--frames", "3"});
  ViewerRun before = RunViewer(dir, args);
  REQUIRE_MESSAGE(before.exit_code == 0, before.log);
  const JsonValue& info = WindowReport(before, "trace-info");
  REQUIRE(info.Find("save_range_at") != nullptr);
  CHECK(info.Find("range_save")->string.empty());

  // A click on "Save the range as a trace": the file beside the trace, proposed.
  args = shown;
  args.insert(args.end(), {"--frames", "30", "--mouse", "click@" + info.Find("save_range_at")->string});
  ViewerRun saved = RunViewer(dir, args);
  REQUIRE_MESSAGE(saved.exit_code == 0, saved.log);
  const std::string said = WindowReport(saved, "trace-info").Find("range_save")->string;
  CHECK_MESSAGE((said.rfind("saved ", 0) == 0 || said == "saving the range..."), said);
  const std::string cut = dir.File("known-range.gnomon");
  REQUIRE(std::filesystem::exists(cut));  // complete once the viewer has exited

  gnomon::server::TraceModel whole, part;
  REQUIRE(gnomon::server::LoadTrace(trace, whole).ok());
  REQUIRE(gnomon::server::LoadTrace(cut, part).ok());
  const auto expected = gnomon::test::ZonesOverlapping(whole, 10 * int64_t(kMs), 20 * int64_t(kMs));
  REQUIRE(expected.size() >= 10);
  CHECK(gnomon::test::AllZones(part) == expected);

  // Again: the file is there, and that is said rather than replaced.
  ViewerRun again = RunViewer(dir, args);
  REQUIRE_MESSAGE(again.exit_code == 0, again.log);
  const std::string refused = WindowReport(again, "trace-info").Find("range_save")->string;
  CHECK_MESSAGE((refused.find("exists") != std::string::npos || refused == "saving the range..."), refused);
}
