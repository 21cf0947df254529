// The skeleton every GPU collector is built from (gnomon/client/gpu_collector.h).
#include "gnomon/client/gpu_collector.h"

#include <doctest/doctest.h>

#include <thread>

namespace {

struct FakeContext {
  bool opens = true;
  int begun = 0, ended = 0;
  int last_target = 0;
  bool BeginZone(int target, gnomon_source_location*, bool counters) {
    ++begun;
    last_target = target + (counters ? 100 : 0);
    return opens;
  }
  void EndZone(int target) {
    ++ended;
    last_target = target;
  }
};

}  // namespace

TEST_CASE("a scoped GPU zone ends only a zone its context opened, with the same target") {
  FakeContext context;
  gnomon_source_location location{"z", "f", "a.cpp", 1, GNOMON_NO_COLOR, 0};
  {
    gnomon::client::ScopedGpuZone<FakeContext, int> zone(context, 7, &location, true);
    CHECK(context.last_target == 107);
  }
  CHECK(context.begun == 1);
  CHECK(context.ended == 1);
  CHECK(context.last_target == 7);
  context.opens = false;
  { gnomon::client::ScopedGpuZone<FakeContext, int> zone(context, 8, &location); }
  CHECK(context.begun == 2);
  CHECK(context.ended == 1);
}

TEST_CASE("a calibration channel sends pairs in CPU order only, and counts them") {
  gnomon::client::GpuZoneStats stats;
  gnomon::client::CalibrationChannel channel(1, 1'000);
  CHECK_FALSE(channel.Send(10, 1'000, 5, GNOMON_CPU_TIME_MONOTONIC_RAW, stats));  // not after the first
  CHECK(channel.Send(20, 2'000, 6, GNOMON_CPU_TIME_MONOTONIC_RAW, stats));
  CHECK_FALSE(channel.Send(30, 1'500, 7, GNOMON_CPU_TIME_MONOTONIC_RAW, stats));  // back in time
  CHECK(stats.calibrations == 1);
  CHECK(stats.last_calibration_uncertainty_ns == 6);
}

TEST_CASE("a calibration schedule is due once its period has passed, and again after a restart") {
  gnomon::client::CalibrationSchedule schedule(std::chrono::milliseconds(20));
  CHECK_FALSE(schedule.IsDue());
  std::this_thread::sleep_for(std::chrono::milliseconds(25));
  CHECK(schedule.IsDue());
  schedule.Restart();
  CHECK_FALSE(schedule.IsDue());
}
