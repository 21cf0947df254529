#include "gnomon/server/shared_model.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

using gnomon::server::SharedModel;
using gnomon::server::TraceModel;

TEST_CASE("readers share the model, a writer that must not wait is told at once when one holds it") {
  SharedModel shared;
  std::atomic<bool> holding{false}, release{false};
  std::thread reader([&] {
    shared.Read([&](const TraceModel&) {
      holding = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  });
  while (!holding) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // A second reader gets in beside the first.
  CHECK(shared.Read([](const TraceModel& m) { return m.zone_count; }) == 0);
  bool wrote = false;
  CHECK_FALSE(shared.TryWrite([&](TraceModel&) { wrote = true; }));
  CHECK_FALSE(wrote);
  release = true;
  reader.join();
  CHECK(shared.TryWrite([](TraceModel& m) { m.zone_count = 7; }));
  shared.Write([](TraceModel& m) { ++m.zone_count; });
  CHECK(shared.Read([](const TraceModel& m) { return m.zone_count; }) == 8);
  CHECK(shared.unshared().zone_count == 8);
}

TEST_CASE("joined writers hold the model together, apart from readers and from a writer alone") {
  SharedModel shared;
  REQUIRE(shared.TryJoinWriters());
  CHECK(shared.TryJoinWriters());  // a second beside the first
  CHECK_FALSE(shared.TryWrite([](TraceModel&) {}));
  // A reader waits for both to leave; once it waits, no new writer joins.
  std::atomic<bool> read{false};
  std::thread reader([&] { read = shared.Read([](const TraceModel& m) { return m.zone_count == 2; }); });
  auto waited = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (shared.TryJoinWriters()) {  // until the reader is seen waiting
    shared.LeaveWriters();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(std::chrono::steady_clock::now() < waited);
  }
  CHECK_FALSE(read.load());
  ++shared.joined().zone_count;
  shared.LeaveWriters();
  CHECK_FALSE(read.load());
  ++shared.joined().zone_count;
  shared.LeaveWriters();
  reader.join();
  CHECK(read.load());
  // A writer that waits to join gets in once readers are done, and keeps new ones out.
  shared.JoinWriters();
  CHECK_FALSE(shared.TryWrite([](TraceModel&) {}));
  shared.LeaveWriters();
  CHECK(shared.TryWrite([](TraceModel& m) { m.zone_count = 5; }));
  CHECK(shared.Read([](const TraceModel& m) { return m.zone_count; }) == 5);
}
