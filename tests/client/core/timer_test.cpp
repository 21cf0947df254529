// The program's timer and its calibration against the system clocks (core/timer.cpp):
// calibration pairs read inside the clocks around them, ticks that advance at one
// rate, and the timer a program chooses, seen in a trace of a program of its own.
#include "core/timer.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>
#include <thread>

#include "../../support/process.h"
#include "core/profiler.h"
#include "gnomon/server/trace_loader.h"

using gnomon::client::CalibrationPair;
using gnomon::client::ReadCalibrationPair;
using gnomon::protocol::TimerKind;
using gnomon::test::ChildProcess;
using gnomon::test::ReadFile;
using gnomon::test::ScratchDir;

namespace {

int64_t DirectNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The timer this process records with: chosen now, as the profiler's start does, unless
// the profiler has started (and chosen it: the choice is never made twice while events
// are recorded).
TimerKind ChosenTimer() {
  if (!gnomon::client::Profiler::IsStarted()) gnomon::client::InitTimer();
  return gnomon::client::CurrentTimerKind();
}

// The test program's "exit" scenario (one zone "Exit"), writing its own trace with
// `env`; the trace, loaded.
gnomon::server::TraceModel RecordExitZone(const ScratchDir& dir, std::map<std::string, std::string> env) {
  const std::string path = dir.File("exit.gnomon");
  env["GNOMON_OUTPUT"] = path;
  ChildProcess program({GNOMON_TEST_PROGRAM, "exit", "0"}, env, dir.File("log"));
  REQUIRE_MESSAGE(program.Wait() == 0, ReadFile(dir.File("log")));
  gnomon::server::TraceModel model;
  auto loaded = gnomon::server::LoadTrace(path, model);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  return model;
}

}  // namespace

TEST_CASE("a clock read is the clock's, and a calibration pair lies inside the readings around it") {
  ChosenTimer();
  for (int i = 0; i < 20; ++i) {
    CAPTURE(i);
    const int64_t raw_before = DirectNs(CLOCK_MONOTONIC_RAW);
    const int64_t mono_before = DirectNs(CLOCK_MONOTONIC);
    const CalibrationPair pair = ReadCalibrationPair();
    const int64_t mono_after = DirectNs(CLOCK_MONOTONIC);
    const int64_t raw_after = DirectNs(CLOCK_MONOTONIC_RAW);
    CHECK(pair.monotonic_raw_ns >= raw_before);
    CHECK(pair.monotonic_raw_ns <= raw_after);
    CHECK(pair.monotonic_ns >= mono_before);
    CHECK(pair.monotonic_ns <= mono_after);
    // The tightest of its brackets, each inside the one around the call.
    CHECK(int64_t(pair.uncertainty_ns) <= raw_after - raw_before);
    const int64_t raw = gnomon::client::ReadClockNs(CLOCK_MONOTONIC_RAW);
    CHECK(raw >= raw_after);
    CHECK(raw <= DirectNs(CLOCK_MONOTONIC_RAW));
  }
}

TEST_CASE("ticks advance with CLOCK_MONOTONIC_RAW at one rate: its nanoseconds, or a TSC's") {
  const TimerKind kind = ChosenTimer();
  const CalibrationPair a = ReadCalibrationPair();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const CalibrationPair b = ReadCalibrationPair();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const CalibrationPair c = ReadCalibrationPair();
  REQUIRE(b.tick > a.tick);
  REQUIRE(c.tick > b.tick);
  REQUIRE(b.monotonic_raw_ns - a.monotonic_raw_ns >= 100'000'000);
  REQUIRE(c.monotonic_raw_ns - b.monotonic_raw_ns >= 100'000'000);
  const double first_rate = double(b.tick - a.tick) / double(b.monotonic_raw_ns - a.monotonic_raw_ns);
  const double second_rate = double(c.tick - b.tick) / double(c.monotonic_raw_ns - b.monotonic_raw_ns);
  CHECK(second_rate == doctest::Approx(first_rate).epsilon(0.01));
  if (kind == TimerKind::kMonotonicRaw) {
    // The ticks are the clock's nanoseconds, read inside each pair's bracket.
    for (const CalibrationPair& pair : {a, b, c}) {
      CHECK(std::llabs(int64_t(pair.tick) - pair.monotonic_raw_ns) <= int64_t(pair.uncertainty_ns) / 2 + 1);
    }
    CHECK(first_rate == doctest::Approx(1.0).epsilon(0.001));
  } else {
    REQUIRE(kind == TimerKind::kTsc);
    CHECK(first_rate > 0.1);  // a counter of 100 MHz to 10 GHz
    CHECK(first_rate < 10.0);
  }
}

TEST_CASE("GNOMON_TIMER=monotonic: a program's ticks are CLOCK_MONOTONIC_RAW nanoseconds") {
  ScratchDir dir;
  const int64_t before = DirectNs(CLOCK_MONOTONIC_RAW);
  const gnomon::server::TraceModel model = RecordExitZone(dir, {{"GNOMON_TIMER", "monotonic"}});
  const int64_t after = DirectNs(CLOCK_MONOTONIC_RAW);
  CHECK(model.program.timer_kind == uint8_t(TimerKind::kMonotonicRaw));
  bool found = false;
  for (const auto& thread : model.threads) {
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      if (model.Location(thread.zones[i].source_location).name != "Exit") continue;
      found = true;
      CHECK(int64_t(thread.zones[i].begin_tick) >= before);
      CHECK(int64_t(thread.zones[i].end_tick) <= after);
      CHECK(thread.zones[i].end_tick >= thread.zones[i].begin_tick);
    }
  }
  CHECK(found);
}

TEST_CASE("a program chooses the timer this process does: the same CPU and environment, the same choice") {
  const TimerKind here = ChosenTimer();
  ScratchDir dir;
  // (GNOMON_TIMER, when this process has it, is the program's too: it inherits the environment.)
  const gnomon::server::TraceModel model = RecordExitZone(dir, {});
  CHECK(model.program.timer_kind == uint8_t(here));
  CHECK(model.zone_count == 1);
}
