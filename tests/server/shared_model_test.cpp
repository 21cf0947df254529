#include "gnomon/server/shared_model.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

using gnomon::server::SharedModel;
using gnomon::server::TraceModel;

TEST_CASE("readers share the model; a writer that must not wait is told at once when one holds it") {
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
