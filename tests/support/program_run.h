// The test program (GNOMON_TEST_PROGRAM) in a process of its own, with a worker of this
// process connected to it (over `lanes` lanes besides the main connection) writing what
// it receives to a trace file: for the tests of how a program ships its events.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gnomon/server/trace_loader.h"
#include "gnomon/server/worker.h"
#include "gnomon/tracefile/trace_writer.h"
#include "process.h"

namespace gnomon::test {

struct ProgramRun {
  ScratchDir dir;
  std::unique_ptr<ChildProcess> program;
  std::unique_ptr<tracefile::TraceWriter> writer;  // dir/lanes.gnomon
  std::unique_ptr<server::Worker> worker;
};

// Starts the test program's `scenario` (under the wait policy, waiting `wait_at_exit_ms`
// at exit for a capture) and connects a worker asking for `lanes` lanes.
inline std::unique_ptr<ProgramRun> StartProgram(std::vector<std::string> scenario,
                                                const char* wait_at_exit_ms, uint32_t lanes = 3) {
  auto run = std::make_unique<ProgramRun>();
  scenario.insert(scenario.begin(), GNOMON_TEST_PROGRAM);
  run->program = std::make_unique<ChildProcess>(
      std::move(scenario),
      std::map<std::string, std::string>{{"GNOMON_PORT", "0"},
                                         {"GNOMON_PORT_FILE", run->dir.File("port")},
                                         {"GNOMON_BUFFER_POLICY", "wait"},
                                         {"GNOMON_WAIT_FOR_SERVER_MS", wait_at_exit_ms}},
      run->dir.File("log"));
  const uint16_t port = WaitForPortFile(run->dir.File("port"));
  REQUIRE(port != 0);
  auto writer = tracefile::TraceWriter::Create(run->dir.File("lanes.gnomon"));
  REQUIRE(writer.ok());
  run->writer = std::move(writer.value());
  REQUIRE(run->writer->Publish(tracefile::Overwrite::kYes).ok());
  server::Worker::Options options;
  options.port = port;
  options.build_model = false;
  options.lanes = lanes;
  options.writer = &run->writer->first_stream();
  run->worker = std::make_unique<server::Worker>(options);
  REQUIRE(run->worker->Connect().ok());
  run->worker->Start();
  return run;
}

// Two threads of the test program, each recording a zone every 2 us for `ms`, over
// `lanes` lanes: every look of the program's sender finds a few new events. Checks that
// the file holds every zone recorded, and hands back the run and the loaded model.
inline std::unique_ptr<ProgramRun> RunSteady(long ms, uint32_t lanes, server::TraceModel& model) {
  auto run = StartProgram({"steady", "2", std::to_string(ms)}, "20000", lanes);
  run->worker->Join();
  REQUIRE(run->writer->Finish().ok());
  CHECK(run->worker->state() == server::Worker::State::kEnded);
  REQUIRE(run->worker->lanes() == lanes);
  const int exit_code = run->program->Wait(std::chrono::seconds(60));
  const std::string log = ReadFile(run->dir.File("log"));
  CHECK_MESSAGE(exit_code == 0, log);
  long recorded = -1;
  REQUIRE(log.find("recorded ") != std::string::npos);
  REQUIRE(std::sscanf(log.c_str() + log.find("recorded "), "recorded %ld zones", &recorded) == 1);
  REQUIRE(server::LoadTrace(run->dir.File("lanes.gnomon"), model).ok());
  CHECK(model.diagnostics.ended_cleanly);
  CHECK(model.zone_count == uint64_t(recorded));
  return run;
}

}  // namespace gnomon::test
