// A program's threads over several connections (lanes: core/sender_lanes.cpp), in a
// program of its own, with a worker in this process merging them into a file. Under
// thread sanitizer (CI) both sides are instrumented: the program's lane threads
// draining threads that come and go, and the worker's lane threads appending beside
// its main one.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

#include "../../support/program_run.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/worker.h"

using gnomon::server::Worker;
using gnomon::test::ReadFile;
using gnomon::test::RunSteady;
using gnomon::test::StartProgram;

TEST_CASE("lanes: threads that come and go, drained over three connections and merged, all in the file") {
  constexpr long kZones = 20'000;
  const auto run = StartProgram({"waves", "4", std::to_string(kZones)}, "20000");
  run->worker->Join();
  REQUIRE(run->writer->Finish().ok());
  CHECK(run->worker->state() == Worker::State::kEnded);
  CHECK(run->worker->lanes() == 3);
  CHECK(run->worker->lane_bytes_received() > run->worker->bytes_received() / 2);
  const int exit_code = run->program->Wait(std::chrono::seconds(60));
  CHECK_MESSAGE(exit_code == 0, ReadFile(run->dir.File("log")));
  gnomon::server::TraceModel model;
  auto loaded = gnomon::server::LoadTrace(run->dir.File("lanes.gnomon"), model);
  REQUIRE(loaded.ok());
  CHECK(model.diagnostics.ended_cleanly);
  CHECK(model.diagnostics.zone_ends_without_begin == 0);
  CHECK(model.zone_count == uint64_t(2 * 4 * (2 * kZones + kZones / 2)));
}

TEST_CASE("lanes: a capture that stops mid-stream leaves the program running and whole") {
  const auto run = StartProgram({"waves", "4", "400000"}, "0");
  while (run->worker->lane_bytes_received() == 0 && !run->worker->is_finished())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  run->worker->RequestStop();
  run->worker->Join();
  REQUIRE(run->writer->Finish().ok());
  CHECK(run->worker->state() == Worker::State::kStopped);
  // The program's lanes lose their server while they send: it lets them go and records on.
  const int exit_code = run->program->Wait(std::chrono::seconds(60));
  const std::string log = ReadFile(run->dir.File("log"));
  CHECK_MESSAGE(exit_code == 0, log);
  CHECK(log.find("waves done") != std::string::npos);
  gnomon::server::TraceModel model;
  CHECK(gnomon::server::LoadTrace(run->dir.File("lanes.gnomon"), model).ok());
}

TEST_CASE("lanes: a steady trickle of events goes in batches of 64 KiB or a millisecond, not one a look") {
  // A lane that shipped every look's few events at once sent thousands of batches
  // (4,653 on a 2-core host, where this bound is 684).
  constexpr long kRecordingMs = 300;
  gnomon::server::TraceModel model;
  const auto run = RunSteady(kRecordingMs, 3, model);
  const uint64_t batches = run->worker->lane_batches_received();
  const uint64_t bytes = run->worker->lane_bytes_received();
  INFO(batches << " batches of " << bytes << " bytes");
  CHECK(batches > 0);
  // The two threads' lanes, each while they record: at most one batch a millisecond or
  // per 64 KiB, and one as the program finishes.
  CHECK(batches <= uint64_t(2 * (kRecordingMs + 2)) + bytes / (64 << 10) + 4);
}
