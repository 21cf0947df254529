// A program's threads over several connections (lanes), in a program of its own, with a
// worker in this process merging them into a file. Under thread sanitizer (CI) both
// sides are instrumented: the program's lane threads draining threads that come and go,
// and the worker's lane threads appending beside its main one.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../support/process.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/worker.h"
#include "gnomon/tracefile/trace_writer.h"

using gnomon::server::Worker;
using gnomon::test::ChildProcess;
using gnomon::test::ReadFile;
using gnomon::test::ScratchDir;

namespace {

struct Run {
  ScratchDir dir;
  std::unique_ptr<ChildProcess> program;
  std::unique_ptr<gnomon::tracefile::TraceWriter> writer;
  std::unique_ptr<Worker> worker;
};

// Starts the test program's `scenario` and connects a worker asking for `lanes` lanes.
std::unique_ptr<Run> Start(std::vector<std::string> scenario, const char* wait_at_exit_ms,
                           uint32_t lanes = 3) {
  auto run = std::make_unique<Run>();
  scenario.insert(scenario.begin(), GNOMON_TEST_PROGRAM);
  run->program = std::make_unique<ChildProcess>(
      std::move(scenario),
      std::map<std::string, std::string>{{"GNOMON_PORT", "0"},
                                         {"GNOMON_PORT_FILE", run->dir.File("port")},
                                         {"GNOMON_BUFFER_POLICY", "wait"},
                                         {"GNOMON_WAIT_FOR_SERVER_MS", wait_at_exit_ms}},
      run->dir.File("log"));
  const uint16_t port = gnomon::test::WaitForPortFile(run->dir.File("port"));
  REQUIRE(port != 0);
  auto writer = gnomon::tracefile::TraceWriter::Create(run->dir.File("lanes.gnomon"));
  REQUIRE(writer.ok());
  run->writer = std::move(writer.value());
  REQUIRE(run->writer->Publish(gnomon::tracefile::Overwrite::kYes).ok());
  Worker::Options options;
  options.port = port;
  options.build_model = false;
  options.lanes = lanes;
  options.writer = &run->writer->first_stream();
  run->worker = std::make_unique<Worker>(options);
  REQUIRE(run->worker->Connect().ok());
  run->worker->Start();
  return run;
}

}  // namespace

TEST_CASE("lanes: threads that come and go, drained over three connections and merged, all in the file") {
  constexpr long kZones = 20'000;
  const auto run = Start({"waves", "4", std::to_string(kZones)}, "20000");
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
  const auto run = Start({"waves", "4", "400000"}, "0");
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

// Two threads of the test program, each recording a zone every 2 us for `ms`, over
// `lanes` lanes: every look of the program's sender finds a few new events. Checks that
// the file holds every zone recorded, and hands back the run and the loaded model.
std::unique_ptr<Run> RunSteady(long ms, uint32_t lanes, gnomon::server::TraceModel& model) {
  auto run = Start({"steady", "2", std::to_string(ms)}, "20000", lanes);
  run->worker->Join();
  REQUIRE(run->writer->Finish().ok());
  CHECK(run->worker->state() == Worker::State::kEnded);
  REQUIRE(run->worker->lanes() == lanes);
  const int exit_code = run->program->Wait(std::chrono::seconds(60));
  const std::string log = ReadFile(run->dir.File("log"));
  CHECK_MESSAGE(exit_code == 0, log);
  long recorded = -1;
  REQUIRE(log.find("recorded ") != std::string::npos);
  REQUIRE(std::sscanf(log.c_str() + log.find("recorded "), "recorded %ld zones", &recorded) == 1);
  REQUIRE(gnomon::server::LoadTrace(run->dir.File("lanes.gnomon"), model).ok());
  CHECK(model.diagnostics.ended_cleanly);
  CHECK(model.zone_count == uint64_t(recorded));
  return run;
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

TEST_CASE(
    "one connection: a steady trickle of events goes in batches too, each clock reply paired with its "
    "probe") {
  // As above, without lanes: a sender that shipped every look's few events made the
  // worker read 1,432 times on a 2-core host, where this bound is 689.
  constexpr long kRecordingMs = 300;
  gnomon::server::TraceModel model;
  const auto run = RunSteady(kRecordingMs, 0, model);
  // Each reply, which goes out ahead of the batch held, is paired with its probe.
  const size_t exchanges = model.host_clock_exchanges.size();
  CHECK(exchanges >= 5);
  CHECK(model.diagnostics.clock_samples_without_reply == 0);
  for (const gnomon::server::HostClockExchange& e : model.host_clock_exchanges) {
    CHECK(e.probe_sent_ns <= e.reply_received_ns);
    CHECK(e.receive_ns <= e.send_ns);
  }
  // While it records: a batch a millisecond or per 64 KiB (read in at most two pieces),
  // besides one per reply and a few as the connection opens and ends.
  const uint64_t reads = run->worker->main_reads();
  const uint64_t bytes = run->worker->bytes_received();
  INFO(reads << " reads of " << bytes << " bytes, " << exchanges << " clock exchanges");
  CHECK(reads <= uint64_t(2 * (kRecordingMs + 2)) + bytes / (64 << 10) + exchanges + 8);
}
