// The background job the viewer's windows compute on (header-only
// gnomon/viewer/background_job.h).
#include "gnomon/viewer/background_job.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

using gnomon::viewer::BackgroundJob;

TEST_CASE("a background job computes the newest request off the calling thread, and keeps the last result") {
  BackgroundJob<int, int> job;
  std::atomic<bool> release{false};
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> elsewhere{false}, started{false};
  job.Request(1, [&] {
    elsewhere = std::this_thread::get_id() != caller;
    started = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return 10;
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  job.Request(2, [] { return 20; });  // waits for the first...
  job.Request(3, [] { return 30; });  // ...and is replaced by this one before it starts
  CHECK(job.result() == nullptr);
  CHECK(job.is_busy());
  release = true;
  job.Wait();
  REQUIRE(job.result() != nullptr);
  CHECK(*job.result() == 30);
  CHECK(*job.result_key() == 3);
  CHECK(elsewhere.load());
  const uint64_t generation = job.result_generation();
  job.Request(3, [] { return 99; });  // the same key: nothing new
  job.Wait();
  CHECK(*job.result() == 30);
  CHECK(job.result_generation() == generation);
}
