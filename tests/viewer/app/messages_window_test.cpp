// The Messages window (src/app/messages_window.cpp), drawn in the real viewer under Xvfb.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

TEST_CASE("messages: every message in time order, each with the name of the thread that logged it") {
  ScratchDir dir;
  // Five messages 10 ms apart, from "main" and "worker" in turn, after a zone on main.
  gnomon::test::StreamWriter w;
  w.AppInfo("messages")
      .Calibration(kOrigin, int64_t(kOrigin), int64_t(kOrigin), 0)
      .SourceLocation(1, "Work", "work", "messages.cpp", 10)
      .ThreadInfo(1, 101, "main")
      .ThreadInfo(2, 102, "worker")
      .ThreadContext(1)
      .ZoneBegin(1, kOrigin)
      .ZoneEnd(kOrigin + 5 * kMs);
  for (uint64_t i = 0; i < 5; ++i) {
    w.ThreadContext(i % 2 == 0 ? 1 : 2)
        .Message(kOrigin + (10 + 10 * i) * kMs, 2, "message " + std::to_string(i));
  }
  w.ThreadContext(1).Calibration(kOrigin + 70 * kMs, int64_t(kOrigin + 70 * kMs), int64_t(kOrigin + 70 * kMs),
                                 0);
  w.End(kOrigin + 70 * kMs);
  const std::string trace = gnomon::test::WriteTraceFile(dir.File("messages.gnomon"), w);
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--size", "1200x800", "--show", "messages"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& report = WindowReport(run, "messages");
  CHECK(Number(report, "rows") == 5);
  std::vector<std::string> threads;
  for (const JsonValue& thread : Array(report, "threads")) threads.push_back(thread.string);
  CHECK(threads == std::vector<std::string>{"main", "worker", "main", "worker", "main"});
}

TEST_CASE("messages: --show messages=SEVERITY keeps that severity and worse") {
  ScratchDir dir;
  gnomon::test::StreamWriter w;
  w.AppInfo("severities").ThreadInfo(1, 101, "main").ThreadContext(1);
  for (uint8_t severity = 0; severity <= 5; ++severity) {
    w.Message(kOrigin + severity * kMs, severity, "severity " + std::to_string(severity));
  }
  w.End(kOrigin + 10 * kMs);
  const std::string trace = gnomon::test::WriteTraceFile(dir.File("severities.gnomon"), w);
  for (const auto& [name, rows] :
       {std::pair{"messages", 6}, {"messages=warning", 3}, {"messages=fatal", 1}}) {
    CAPTURE(name);
    ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--show", name});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    CHECK(Number(WindowReport(run, "messages"), "rows") == rows);
  }
}
