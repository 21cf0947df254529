// The sender's files (core/sender_files.cpp): the program's own trace file
// (GNOMON_OUTPUT), never over another run's, and saves of the recording
// (SaveRecording), each a trace that loads. A sender of the test's own
// (tests/support/own_sender.h), whose thread's events the test writes.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "../../support/own_sender.h"
#include "../../support/process.h"
#include "../../support/self_capture.h"
#include "../../support/worker_connection.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/worker.h"

using gnomon::client::BufferPolicy;
using gnomon::client::Config;
using gnomon::server::TraceModel;
using gnomon::test::FindThread;
using gnomon::test::OwnSender;
using gnomon::test::QuietConfig;
using gnomon::test::ReadFile;
using gnomon::test::ScratchDir;

namespace {

TraceModel Load(const std::string& path) {
  TraceModel model;
  auto loaded = gnomon::server::LoadTrace(path, model);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  CHECK(loaded.value().warning == "");
  return model;
}

size_t ZonesOf(const TraceModel& m, const std::string& thread) {
  const auto* t = FindThread(m, thread);
  return t == nullptr ? 0 : t->zones.size();
}

// Loaded from `path`: the thread's zones, in order, of the one location; the file ended.
void CheckZones(const std::string& path, const std::string& thread, size_t zones) {
  const TraceModel m = Load(path);
  CHECK(m.diagnostics.ended_cleanly);
  CHECK(m.program.pid == uint32_t(getpid()));
  const auto* t = FindThread(m, thread);
  REQUIRE(t != nullptr);
  REQUIRE(t->zones.size() == zones);
  uint64_t previous = 0;
  for (size_t i = 0; i < t->zones.size(); ++i) {
    REQUIRE(t->zones[i].begin_tick >= previous);
    previous = t->zones[i].begin_tick;
  }
  if (zones > 0) CHECK(m.Location(t->zones[0].source_location).name == thread + " zone");
}

// A sender with `config` and a thread named `thread` that recorded `zones` zones before
// it started; run, then stopped.
void RunOwnFile(const Config& config, const std::string& thread, int zones) {
  OwnSender own(config);
  const uint32_t location = own.Location(thread + " zone");
  gnomon::client::ThreadState* state = own.AddThread(thread.c_str());
  own.WriteZones(state, location, zones);
  own.Start();
  CHECK(own.port() == 0);  // it writes a file: it listens for nobody
  own.Stop();
}

}  // namespace

TEST_CASE("a program's own trace file holds everything from the start, and ends when the sender stops") {
  ScratchDir dir;
  Config config = QuietConfig();
  config.output_path = dir.File("own.gnomon");
  {
    OwnSender own(config);
    const uint32_t location = own.Location("own file zone");
    gnomon::client::ThreadState* thread = own.AddThread("own file");
    own.WriteZones(thread, location, 1000);  // before the file was opened
    own.Start();
    CHECK(own.port() == 0);
    CHECK(own.sender().is_connected());                  // the file is its server, from the start
    CHECK(std::filesystem::exists(config.output_path));  // published at once
    own.WriteZones(thread, location, 5000);
    CHECK_FALSE(own.sender().SaveRecording(dir.File("save.gnomon")));  // the file has the events already
    CHECK_FALSE(std::filesystem::exists(dir.File("save.gnomon")));
    gnomon::test::OwnSender::Exit(thread);
    own.Stop();
  }
  CheckZones(config.output_path, "own file", 6000);
}

TEST_CASE("another run's trace at the path is kept: this run's goes beside it, named after its pid") {
  ScratchDir dir;
  Config config = QuietConfig();
  config.output_path = dir.File("run.gnomon");
  std::ofstream(config.output_path) << "another run";
  const std::string pid = std::to_string(getpid());
  RunOwnFile(config, "first run", 10);
  CHECK(ReadFile(config.output_path) == "another run");
  CheckZones(dir.File("run." + pid + ".gnomon"), "first run", 10);
  RunOwnFile(config, "second run", 20);  // that name is taken now too
  CheckZones(dir.File("run." + pid + ".gnomon"), "first run", 10);
  CheckZones(dir.File("run." + pid + "-2.gnomon"), "second run", 20);
  CHECK(ReadFile(config.output_path) == "another run");
}

TEST_CASE("an own file that cannot be written, or a folder, leaves the program listening for a capture") {
  ScratchDir dir;
  for (const std::string& path : {dir.File("no such folder/own.gnomon"), dir.path()}) {
    CAPTURE(path);
    Config config = QuietConfig();
    config.output_path = path;
    OwnSender own(config);
    const uint32_t location = own.Location("listening zone");
    gnomon::client::ThreadState* thread = own.AddThread("listening");
    own.WriteZones(thread, location, 10);
    own.Start();
    REQUIRE(own.port() != 0);
    gnomon::server::Worker worker(gnomon::test::OptionsFor(own.port()));
    REQUIRE(worker.Connect().ok());
    worker.Start();
    CHECK(gnomon::test::WaitForModel(worker,
                                     [](const TraceModel& m) { return ZonesOf(m, "listening") == 10; }));
  }
  CHECK(std::filesystem::is_directory(dir.path()));
  CHECK_FALSE(std::filesystem::exists(dir.File("no such folder")));
}

TEST_CASE(
    "under the ring the file is written on a save only: what the buffer holds, again to the same file") {
  ScratchDir dir;
  Config config = QuietConfig();
  config.buffer_policy = BufferPolicy::kRing;
  config.output_path = dir.File("ring.gnomon");
  OwnSender own(config);
  const uint32_t location = own.Location("ring zone");
  gnomon::client::ThreadState* thread = own.AddThread("ring");
  own.WriteZones(thread, location, 100);
  own.Start();
  CHECK(own.port() != 0);  // it listens, as a program without a file does
  CHECK_FALSE(std::filesystem::exists(config.output_path));
  REQUIRE(own.sender().SaveRecording(""));  // to GNOMON_OUTPUT
  CheckZones(config.output_path, "ring", 100);
  own.WriteZones(thread, location, 50);
  REQUIRE(own.sender().SaveRecording(""));  // this run's own save: replaced
  CheckZones(config.output_path, "ring", 150);
  REQUIRE(own.sender().SaveRecording(dir.File("named.gnomon")));  // a path given
  CheckZones(dir.File("named.gnomon"), "ring", 150);
}

TEST_CASE("a save is refused before the sender runs, to a folder, and while a server receives the events") {
  ScratchDir dir;
  OwnSender own;
  const uint32_t location = own.Location("refused zone");
  gnomon::client::ThreadState* thread = own.AddThread("refused");
  own.WriteZones(thread, location, 10);
  CHECK_FALSE(own.sender().SaveRecording(dir.File("early.gnomon")));
  own.Start();
  CHECK_FALSE(own.sender().SaveRecording(dir.path()));
  REQUIRE(own.sender().SaveRecording(dir.File("saved.gnomon")));  // the sender can save
  CheckZones(dir.File("saved.gnomon"), "refused", 10);
  gnomon::server::Worker worker(gnomon::test::OptionsFor(own.port()));
  REQUIRE(worker.Connect().ok());
  worker.Start();
  REQUIRE(own.sender().WaitForServer(std::chrono::seconds(5)));
  CHECK_FALSE(own.sender().SaveRecording(dir.File("connected.gnomon")));  // the capture has them
  CHECK_FALSE(std::filesystem::exists(dir.File("early.gnomon")));
  CHECK_FALSE(std::filesystem::exists(dir.File("connected.gnomon")));
  CHECK(gnomon::test::WaitForModel(worker, [](const TraceModel& m) { return ZonesOf(m, "refused") == 10; }));
}
