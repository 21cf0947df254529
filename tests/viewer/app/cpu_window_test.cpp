// The CPU data window (src/app/cpu_window.cpp) in the real viewer under Xvfb, over a
// trace of known context switches and the two CPU plots the library records with them.
#include <doctest/doctest.h>

#include <string>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

TEST_CASE("CPU data: each thread's running time, switches, preemptions, moves and longest wait") {
  ScratchDir dir;
  using gnomon::protocol::ContextSwitchKind;
  // main (tid 10) runs 0..3 ms on CPU 2 and is preempted, then 5..9 ms on CPU 0 and
  // blocks, then 9.5 ms to the end (10 ms) on CPU 0. worker (tid 20) runs 1..2 ms on CPU 1.
  // The machine had 3 cores busy, the program 1.5, in the plots.
  gnomon::test::StreamWriter w;
  w.AppInfo("cpu")
      .Calibration(kOrigin, int64_t(kOrigin), int64_t(kOrigin), 0)
      .SourceLocation(1, "Work", "work", "cpu.cpp", 1)
      .ThreadInfo(1, 10, "main")
      .ThreadInfo(2, 20, "worker")
      .String(7, gnomon::protocol::StringKind::kPlotName, "CPU: machine (cores busy)")
      .String(8, gnomon::protocol::StringKind::kPlotName, "CPU: this program (cores busy)")
      .ThreadContext(1)
      .ZoneBegin(1, kOrigin);
  w.Switch(10, ContextSwitchKind::kIn, 2, kOrigin)
      .Switch(10, ContextSwitchKind::kOutPreempted, 2, kOrigin + 3 * kMs);
  w.Switch(10, ContextSwitchKind::kIn, 0, kOrigin + 5 * kMs)
      .Switch(10, ContextSwitchKind::kOut, 0, kOrigin + 9 * kMs);
  w.Switch(10, ContextSwitchKind::kIn, 0, kOrigin + 9 * kMs + kMs / 2);
  w.Switch(20, ContextSwitchKind::kIn, 1, kOrigin + kMs)
      .Switch(20, ContextSwitchKind::kOut, 1, kOrigin + 2 * kMs);
  for (uint64_t ms = 1; ms <= 9; ++ms) w.Plot(7, kOrigin + ms * kMs, 3.0).Plot(8, kOrigin + ms * kMs, 1.5);
  w.ThreadContext(1).ZoneEnd(kOrigin + 10 * kMs);
  w.Calibration(kOrigin + 10 * kMs, int64_t(kOrigin + 10 * kMs), int64_t(kOrigin + 10 * kMs), 0);
  w.End(kOrigin + 10 * kMs);
  const std::string trace = gnomon::test::WriteTraceFile(dir.File("cpu.gnomon"), w);
  ViewerRun run = RunViewer(dir, {trace, "--frames", "6", "--show", "cpu-data"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& cpu = WindowReport(run, "cpu-data");
  CHECK(Number(cpu, "threads") == 2);
  CHECK(Number(cpu, "machine_cores") == doctest::Approx(3.0));
  CHECK(Number(cpu, "program_cores") == doctest::Approx(1.5));
  const auto& rows = Array(cpu, "rows");
  REQUIRE(rows.size() == 2);
  const JsonValue& main = rows[0];  // the busiest first
  CHECK(Number(main, "os_thread_id") == 10);
  CHECK(Number(main, "running_ns") == doctest::Approx(7.5 * kMs));
  CHECK(Number(main, "switches") == 2);
  CHECK(Number(main, "preempted") == 1);
  CHECK(Number(main, "migrations") == 1);
  CHECK(Number(main, "longest_wait_ns") == doctest::Approx(2.0 * kMs));
  CHECK(Number(rows[1], "running_ns") == doctest::Approx(1.0 * kMs));
  // --show cpu-data shows the cores' lanes too: one per CPU (kind 7).
  int cpu_lanes = 0;
  for (const JsonValue& lane : Array(run.layout, "lanes")) cpu_lanes += Number(lane, "kind") == 7;
  CHECK(cpu_lanes == 3);

  // A trace without switches says how to get them.
  const std::string known = WriteKnownTrace(dir, "known");
  ViewerRun none = RunViewer(dir, {known, "--frames", "4", "--show", "cpu-data"});
  REQUIRE_MESSAGE(none.exit_code == 0, none.log);
  CHECK(Number(WindowReport(none, "cpu-data"), "threads") == 0);
}
