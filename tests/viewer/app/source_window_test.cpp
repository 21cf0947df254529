// The Source window (src/app/source_window.cpp) in the real viewer under Xvfb, over a
// real sampled capture of a program that burns three quarters of its CPU on one known
// line and a quarter on the next.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

TEST_CASE("source: the file's lines with their samples, the hottest first, found or mapped elsewhere") {
  ScratchDir dir;
  const std::string trace = dir.File("hot.gnomon");
  std::string output;
  REQUIRE(RunCommand("GNOMON_SAMPLING_HZ=1000 " + std::string(GNOMON_CAPTURE) + " -o " + trace + " -f -- " +
                         GNOMON_TEST_RESOURCES + " hot-lines",
                     &output) == 0);
  ViewerRun run = RunViewer(dir, {trace, "--frames", "6", "--show", "source=resource_program.cpp:1"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& source = WindowReport(run, "source");
  if (Number(source, "samples") == 0) {
    MESSAGE("perf events are refused on this machine: no samples to put on the lines");
    return;
  }
  // Found on disk by the end of its path, read whole.
  CHECK(source.Find("file")->string.ends_with("tests/integration/resource_program.cpp"));
  CHECK(Number(source, "readable") == 1);
  CHECK(Number(source, "file_lines") > 200);
  // The two lines of the loops: the first with three quarters of their samples.
  std::vector<const JsonValue*> lines;
  for (const JsonValue& l : Array(source, "lines")) lines.push_back(&l);
  std::sort(lines.begin(), lines.end(),
            [](const JsonValue* a, const JsonValue* b) { return Number(*a, "self") > Number(*b, "self"); });
  REQUIRE(lines.size() >= 2);
  const double hot = Number(*lines[0], "self"), warm = Number(*lines[1], "self");
  CHECK(Number(*lines[1], "line") == Number(*lines[0], "line") + 1);
  CHECK(hot + warm >= 300);
  CHECK(hot / (hot + warm) == doctest::Approx(0.75).epsilon(0.07));

  // Opened at the hot line, it shows it; mapped to a folder where the file is not, it
  // says it cannot read it and still lists the lines with samples.
  const std::string at = "source=resource_program.cpp:" + std::to_string(int(Number(*lines[0], "line")));
  ViewerRun moved = RunViewer(dir, {trace, "--frames", "6", "--show", at, "--source-map", "/=/nowhere/"});
  REQUIRE_MESSAGE(moved.exit_code == 0, moved.log);
  const JsonValue& mapped = WindowReport(moved, "source");
  CHECK(mapped.Find("file")->string.starts_with("/nowhere/"));
  CHECK(Number(mapped, "readable") == 0);
  CHECK(Number(mapped, "line") == Number(*lines[0], "line"));
  CHECK(Array(mapped, "lines").size() == Array(source, "lines").size());

  // The symbol view of the burning function: its instructions, and on those of the two
  // loops' lines the samples, three quarters on the first.
  ViewerRun symbol = RunViewer(dir, {trace, "--frames", "8", "--show", "symbol=BurnOnKnownLines"});
  REQUIRE_MESSAGE(symbol.exit_code == 0, symbol.log);
  const JsonValue& code = WindowReport(symbol, "symbol");
  CHECK_MESSAGE(code.Find("error")->string.empty(), code.Find("error")->string);
  CHECK(code.Find("function")->string.find("BurnOnKnownLines") != std::string::npos);
  CHECK(code.Find("module")->string == "gnomon-test-resources");
  CHECK(Number(code, "instructions") > 10);
  const double in_function = Number(code, "samples");
  CHECK(in_function >= 300);
  double on_hot = 0, on_warm = 0, texts = 0;
  for (const JsonValue& instruction : Array(code, "listed")) {
    texts += !instruction.Find("text")->string.empty();
    if (Number(instruction, "line") == Number(*lines[0], "line")) on_hot += Number(instruction, "samples");
    if (Number(instruction, "line") == Number(*lines[1], "line")) on_warm += Number(instruction, "samples");
  }
  CHECK(texts == Number(code, "instructions"));
  CHECK(on_hot + on_warm >= 0.95 * in_function);
  CHECK(on_hot / (on_hot + on_warm) == doctest::Approx(0.75).epsilon(0.07));
  // A name no sample ran: said.
  ViewerRun none = RunViewer(dir, {trace, "--frames", "8", "--show", "symbol=NoSuchFunction"});
  REQUIRE_MESSAGE(none.exit_code == 0, none.log);
  const JsonValue& missing = WindowReport(none, "symbol");
  CHECK(Number(missing, "instructions") == 0);
  CHECK(missing.Find("error")->string.find("no sample found a function named NoSuchFunction") !=
        std::string::npos);
}

TEST_CASE("source: a trace without samples, or a file no sample is in, shows the file and says so") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--show", "source=/no/such/file.cpp:12"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& source = WindowReport(run, "source");
  CHECK(Number(source, "samples") == 0);
  CHECK(Number(source, "readable") == 0);
  CHECK(Number(source, "line") == 12);
  CHECK(Array(source, "lines").empty());
}
