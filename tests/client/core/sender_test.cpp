// The sender (core/sender.cpp): its loop draining every thread's chunks and the
// definitions, shipping them in batches, and its end. The recording threads of this
// very process, captured by a real worker over loopback; a sender of the test's own
// (tests/support/own_sender.h), driven through its API, whose threads' events the test
// writes; and the test program in a process of its own.
#include "core/sender.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <gnomon/gnomon.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../support/own_sender.h"
#include "../../support/program_run.h"
#include "../../support/self_capture.h"
#include "../../support/worker_connection.h"
#include "gnomon/server/worker.h"

using gnomon::server::TraceModel;
using gnomon::server::Worker;
using gnomon::test::FindThread;
using gnomon::test::OwnSender;
using gnomon::test::RunSteady;
using gnomon::test::WaitForModel;

namespace {

Worker& ConnectedWorker() { return gnomon::test::SelfCapture(); }

// Waits up to five seconds for `done()`.
template <typename F>
bool WaitFor(F done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

size_t ThreadCount(gnomon::client::Registry& registry) {
  std::lock_guard lock(registry.mutex());
  return registry.threads().size();
}

size_t ZonesOf(const TraceModel& m, const std::string& thread) {
  const auto* t = FindThread(m, thread);
  return t == nullptr ? 0 : t->zones.size();
}

}  // namespace

TEST_CASE("zones from several threads arrive complete, nested and named") {
  Worker& worker = ConnectedWorker();
  constexpr int kThreads = 3;
  constexpr int kIterations = 20000;  // several chunks per thread
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      const std::string name = "recorder " + std::to_string(t);
      gnomon::SetThreadName(name.c_str());
      for (int i = 0; i < kIterations; ++i) {
        GNOMON_ZONE("Outer");
        GNOMON_ZONE("Inner");
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    for (int t = 0; t < kThreads; ++t) {
      const auto* thread = FindThread(m, "recorder " + std::to_string(t));
      if (thread == nullptr || thread->zones.size() < 2 * kIterations) return false;
    }
    return true;
  }));
  worker.WithModel([](const TraceModel& m) {
    for (int t = 0; t < kThreads; ++t) {
      const auto* thread = FindThread(m, "recorder " + std::to_string(t));
      REQUIRE(thread != nullptr);
      CHECK(thread->zones.size() == 2 * kIterations);
      CHECK(thread->zones[thread->zones.size() - 1].end_tick != gnomon::server::kOpenZone);
      uint64_t previous = 0;
      for (size_t i = 0; i < thread->zones.size(); ++i) {
        const auto& zone = thread->zones[i];
        CHECK(zone.depth == i % 2);
        CHECK(zone.begin_tick >= previous);
        CHECK(zone.end_tick >= zone.begin_tick);
        previous = zone.begin_tick;
      }
      CHECK(m.Location(thread->zones[0].source_location).name == "Outer");
      CHECK(m.Location(thread->zones[1].source_location).name == "Inner");
    }
    CHECK(m.diagnostics.client_dropped_events == 0);
  });
}

TEST_CASE(
    "one connection: a steady trickle of events goes in batches too, each clock reply paired with its "
    "probe") {
  // As lanes do (sender_lanes_test.cpp), over one connection: a sender that shipped every look's few events
  // made the worker read 1,432 times on a 2-core host, where this bound is 689.
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

TEST_CASE(
    "a server that connects late gets the definitions kept and the events held, then the rest, in order") {
  OwnSender own;
  const uint32_t location = own.Location("hand-written zone");
  gnomon::client::ThreadState* thread = own.AddThread("hand-written thread");
  own.Start();
  own.WriteZones(thread, location, 1000);  // nobody connected: held
  Worker worker(gnomon::test::OptionsFor(own.port()));
  REQUIRE(worker.Connect().ok());
  worker.Start();
  REQUIRE(
      WaitForModel(worker, [](const TraceModel& m) { return ZonesOf(m, "hand-written thread") == 1000; }));
  own.WriteZones(thread, location, 5000);  // into further chunks, linked as a thread does
  own.registry().CountDrop(nullptr);
  own.registry().CountDrop(nullptr);
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    return ZonesOf(m, "hand-written thread") == 6000 && m.diagnostics.client_dropped_events == 2;
  }));
  OwnSender::Exit(thread);  // drained, then let go
  CHECK(WaitFor([&] { return ThreadCount(own.registry()) == 0; }));
  // The sender ends its stream and waits for the server to close; the worker closes once
  // it has the end.
  std::thread stopping([&own] { own.Stop(); });
  worker.Join();
  stopping.join();
  CHECK(worker.state() == Worker::State::kEnded);  // the program said goodbye
  const TraceModel& m = worker.model();
  CHECK(m.diagnostics.ended_cleanly);
  CHECK(m.program.pid == uint32_t(getpid()));
  const auto* t = FindThread(m, "hand-written thread");
  REQUIRE(t != nullptr);
  REQUIRE(t->zones.size() == 6000);
  uint64_t previous = 0;
  for (size_t i = 0; i < t->zones.size(); ++i) {
    const auto& zone = t->zones[i];
    REQUIRE(zone.depth == 0);
    REQUIRE(zone.begin_tick >= previous);
    REQUIRE(zone.end_tick >= zone.begin_tick);
    previous = zone.begin_tick;
  }
  CHECK(m.Location(t->zones[0].source_location).name == "hand-written zone");
  CHECK(m.Location(t->zones[5999].source_location).name == "hand-written zone");
}

TEST_CASE("a sender whose server left records on, and the next server gets what the first did not") {
  OwnSender own;
  const uint32_t location = own.Location("between servers");
  gnomon::client::ThreadState* thread = own.AddThread("between servers");
  own.Start();
  own.WriteZones(thread, location, 300);
  {
    Worker first(gnomon::test::OptionsFor(own.port()));
    REQUIRE(first.Connect().ok());
    first.Start();
    REQUIRE(WaitForModel(first, [](const TraceModel& m) { return ZonesOf(m, "between servers") == 300; }));
    CHECK(own.sender().is_connected());
    first.RequestStop();
    first.Join();
  }
  REQUIRE(WaitFor([&] { return !own.sender().is_connected(); }));  // it noticed
  own.WriteZones(thread, location, 200);
  Worker second(gnomon::test::OptionsFor(own.port()));
  REQUIRE(second.Connect().ok());
  second.Start();
  REQUIRE(WaitForModel(second, [](const TraceModel& m) { return ZonesOf(m, "between servers") == 200; }));
  own.WriteZones(thread, location, 100);
  REQUIRE(WaitForModel(second, [](const TraceModel& m) { return ZonesOf(m, "between servers") == 300; }));
  second.WithModel([](const TraceModel& m) {
    const auto* t = FindThread(m, "between servers");
    CHECK(m.Location(t->zones[0].source_location).name == "between servers");  // defined again for it
  });
}

TEST_CASE("waiting for a server: false when none comes in time, true once one has connected") {
  OwnSender own;
  own.Start();
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(own.sender().WaitForServer(std::chrono::milliseconds(100)));
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(100));
  Worker worker(gnomon::test::OptionsFor(own.port()));
  REQUIRE(worker.Connect().ok());
  worker.Start();
  CHECK(own.sender().WaitForServer(std::chrono::seconds(5)));
  CHECK(own.sender().is_connected());
}
