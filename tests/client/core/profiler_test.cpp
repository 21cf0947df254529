// The process-wide profiler (core/profiler.cpp): its settings from the environment,
// each checked by the test program in a process of its own (a setting that does not
// parse is ignored and named, with what it takes; one that does takes effect), and, in
// this process, a profiler that runs takes no more configuration and gives each thread
// a state of its own.
#include "core/profiler.h"

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../../support/process.h"
#include "../../support/self_capture.h"
#include "gnomon/protocol/discovery.h"
#include "gnomon/server/trace_loader.h"

using gnomon::client::Profiler;
using gnomon::server::TraceModel;
using gnomon::test::ChildProcess;
using gnomon::test::ReadFile;
using gnomon::test::RuntimeDir;
using gnomon::test::ScratchDir;

namespace {

// The test program's "exit 0" (one zone, "Exit") with `env`, on a free port; its log.
std::string RunExit(const ScratchDir& dir, std::map<std::string, std::string> env) {
  env.emplace("GNOMON_PORT", "0");
  ChildProcess program({GNOMON_TEST_PROGRAM, "exit", "0"}, env, dir.File("log"));
  const int exit_code = program.Wait(std::chrono::seconds(60));
  const std::string log = ReadFile(dir.File("log"));
  CHECK_MESSAGE(exit_code == 0, log);
  return log;
}

bool WaitForText(const std::string& path, const std::string& text) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (ReadFile(path).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TraceModel Load(const std::string& path) {
  TraceModel model;
  auto loaded = gnomon::server::LoadTrace(path, model);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  return model;
}

// The test program's "save-signal" (four threads that record until a file exists) under
// the ring policy with `env`: saved to its GNOMON_OUTPUT when sent `signal`. Whether its
// announcement was there once the sender's loop had saved.
bool SavedOnSignal(const std::map<std::string, std::string>& env, int signal, const RuntimeDir& runtime) {
  ScratchDir dir;
  const std::string path = dir.File("signalled.gnomon");
  std::map<std::string, std::string> all = env;
  all.emplace("GNOMON_BUFFER_POLICY", "ring");
  all.emplace("GNOMON_OUTPUT", path);
  all.emplace("GNOMON_PORT", "0");
  ChildProcess program({GNOMON_TEST_PROGRAM, "save-signal", dir.File("stop")}, all, dir.File("log"));
  REQUIRE(WaitForText(dir.File("log"), "recording"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the threads' first events started it
  CHECK_FALSE(std::filesystem::exists(path));                   // the ring writes on a save only
  program.Signal(signal);
  REQUIRE_MESSAGE(WaitForText(dir.File("log"), "saved the recording to " + path), ReadFile(dir.File("log")));
  const std::string announcement = runtime.announce_dir() + "/" + std::to_string(program.pid()) +
                                   std::string(gnomon::protocol::kAnnounceFileSuffix);
  const bool announced = std::filesystem::exists(announcement);
  std::FILE* stop = std::fopen(dir.File("stop").c_str(), "w");
  REQUIRE(stop != nullptr);
  std::fclose(stop);
  CHECK_MESSAGE(program.Wait(std::chrono::seconds(60)) == 0, ReadFile(dir.File("log")));
  const TraceModel m = Load(path);
  int recorders = 0;
  for (const auto& thread : m.threads)
    recorders += thread.name.starts_with("recorder ") && !thread.zones.empty();
  CHECK(recorders == 4);
  return announced;
}

}  // namespace

TEST_CASE("settings that do not parse are ignored, each named with what it takes, the defaults hold") {
  RuntimeDir runtime;
  ScratchDir dir;
  const std::string log = RunExit(dir, {{"GNOMON_BUFFER_POLICY", "sometimes"},
                                        {"GNOMON_ANNOUNCE", "everywhere"},
                                        {"GNOMON_ON_DEMAND", "maybe"},
                                        {"GNOMON_CALLSTACK_DEPTH", "65"},
                                        {"GNOMON_BUFFER_MB", "0"},
                                        {"GNOMON_OUTPUT", dir.File("out.gnomon")}});
  CHECK(
      log.find(
          "gnomon: ignoring GNOMON_BUFFER_POLICY: 'sometimes' is not one of auto, drop, grow, wait, ring") !=
      std::string::npos);
  CHECK(log.find("gnomon: ignoring GNOMON_ANNOUNCE: 'everywhere' is not one of off, local, lan") !=
        std::string::npos);
  CHECK(log.find("gnomon: ignoring GNOMON_ON_DEMAND: 'maybe' is not 1 or 0") != std::string::npos);
  CHECK(log.find("gnomon: ignoring GNOMON_CALLSTACK_DEPTH: '65'") != std::string::npos);
  CHECK(log.find("gnomon: ignoring GNOMON_BUFFER_MB: '0'") != std::string::npos);
  // Not the ring (which writes no file unless asked), and no call stacks: the defaults.
  const TraceModel m = Load(dir.File("out.gnomon"));
  CHECK(m.zone_count == 1);
  for (const auto& thread : m.threads) CHECK(thread.callstacks.empty());
}

TEST_CASE("a save signal that is not one a program may take is refused, and says which it may") {
  RuntimeDir runtime;  // the program listens: it announces itself there
  for (const char* refused : {"KILL", "9", "0", "SIGSEGV"}) {
    CAPTURE(refused);
    ScratchDir dir;
    const std::string log = RunExit(dir, {{"GNOMON_SAVE_SIGNAL", refused}});
    CHECK(log.find(std::string("gnomon: ignoring GNOMON_SAVE_SIGNAL: '") + refused +
                   "' is not one of USR1, USR2, HUP, QUIT, URG or a real-time signal's number") !=
          std::string::npos);
  }
}

TEST_CASE("a save signal by its name, with or without SIG, or a real-time signal's number, saves") {
  RuntimeDir runtime;
  SavedOnSignal({{"GNOMON_SAVE_SIGNAL", "SIGUSR2"}}, SIGUSR2, runtime);
  SavedOnSignal({{"GNOMON_SAVE_SIGNAL", "HUP"}}, SIGHUP, runtime);
  SavedOnSignal({{"GNOMON_SAVE_SIGNAL", std::to_string(SIGRTMIN + 2)}}, SIGRTMIN + 2, runtime);
}

TEST_CASE("GNOMON_ANNOUNCE: a program announces itself in its runtime directory, or with off nowhere") {
  RuntimeDir runtime;
  CHECK(SavedOnSignal({{"GNOMON_SAVE_SIGNAL", "USR1"}, {"GNOMON_ANNOUNCE", "local"}}, SIGUSR1, runtime));
  CHECK_FALSE(SavedOnSignal({{"GNOMON_SAVE_SIGNAL", "USR1"}, {"GNOMON_ANNOUNCE", "off"}}, SIGUSR1, runtime));
}

TEST_CASE("GNOMON_OUTPUT's %p is the program's pid: one file each for programs given one name") {
  ScratchDir dir;
  ChildProcess program({GNOMON_TEST_PROGRAM, "exit", "0"},
                       {{"GNOMON_OUTPUT", dir.File("run-%p.gnomon")}, {"GNOMON_PORT", "0"}}, dir.File("log"));
  REQUIRE_MESSAGE(program.Wait(std::chrono::seconds(60)) == 0, ReadFile(dir.File("log")));
  const std::string own = dir.File("run-" + std::to_string(program.pid()) + ".gnomon");
  REQUIRE(std::filesystem::exists(own));
  CHECK(Load(own).zone_count == 1);
  CHECK_FALSE(std::filesystem::exists(dir.File("run-%p.gnomon")));
}

TEST_CASE("a profiler that runs takes no more configuration, and gives each thread a state of its own") {
  gnomon::test::SelfCapture();
  REQUIRE(Profiler::IsStarted());
  CHECK(Profiler::Get().listen_ok());
  bool changed = false;
  CHECK_FALSE(Profiler::Configure([&changed](gnomon::client::Config&) { changed = true; }));
  CHECK_FALSE(changed);
  gnomon::client::ThreadState* mine = gnomon::client::CurrentThreadState();
  REQUIRE(mine != nullptr);
  CHECK(gnomon::client::CurrentThreadState() == mine);
  const uint32_t my_id = mine->id;
  uint32_t other_id = 0;
  std::thread([&other_id] {
    const gnomon::client::ThreadState* state = gnomon::client::CurrentThreadState();
    other_id = state != nullptr ? state->id : 0;
  }).join();
  CHECK(other_id != 0);
  CHECK(other_id != my_id);
}
