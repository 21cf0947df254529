// Real programs, real TCP: exact counts, nesting, names, frames, messages, ordering.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>

#include "../support/process.h"
#include "capture_helper.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/statistics.h"

using gnomon::server::TraceModel;
using gnomon::server::Worker;
using gnomon::test::CaptureProgram;
using gnomon::test::CountsByName;

namespace {

const gnomon::server::ThreadTimeline* FindThread(const TraceModel& m, const std::string& name) {
  for (const auto& t : m.threads) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a multi-threaded program arrives exactly: counts, nesting, threads, frames, messages") {
  auto capture = CaptureProgram({GNOMON_TEST_PROGRAM, "zones"});
  CHECK(capture.exit_code == 0);
  CHECK(capture.worker->state() == Worker::State::kEnded);
  const TraceModel& m = capture.model();
  CHECK(m.program.name == "gnomon-test-program");
  const auto counts = CountsByName(m);
  CHECK(counts.at("Outer") == 150);
  CHECK(counts.at("Middle") == 150);
  CHECK(counts.at("Inner") == 150);
  CHECK(counts.at("Sleep 20 ms") == 3);
  CHECK(counts.at("Frame") == 10);
  CHECK(m.zone_count == 463);
  CHECK(m.open_zone_count == 0);
  CHECK(m.diagnostics.zone_ends_without_begin == 0);
  CHECK(m.diagnostics.client_dropped_events == 0);

  for (int w = 0; w < 3; ++w) {
    const auto* thread = FindThread(m, "worker " + std::to_string(w));
    REQUIRE(thread != nullptr);
    REQUIRE(thread->zones.size() == 151);
    for (size_t i = 0; i + 1 < thread->zones.size(); ++i) {
      const auto& zone = thread->zones[i];
      CHECK(zone.depth == i % 3);  // Outer, Middle, Inner
      CHECK(thread->zones[i + 1].begin_tick >= zone.begin_tick);
      if (zone.depth == 2) CHECK(zone.end_tick <= thread->zones[i - 2].end_tick);
    }
    const auto& sleep = thread->zones[150];
    const int64_t slept = m.DurationNs(sleep.begin_tick, sleep.end_tick);
    CHECK(slept >= 20000000);
    CHECK(slept < 20000000 + 200000000);
  }
  const auto* main_thread = FindThread(m, "main");
  REQUIRE(main_thread != nullptr);
  CHECK(main_thread->attributes.at(9).value == 9);

  REQUIRE(m.frames.count(0) == 1);
  CHECK(m.frames.at(0).marks.size() == 10);
  bool loading = false;
  for (const auto& [id, series] : m.frames) loading |= series.name == "Loading" && series.spans.size() == 5;
  CHECK(loading);
  REQUIRE(m.messages.size() == 3);
  CHECK(m.messages[0].text == "first");
  CHECK(m.messages[1].text == "second");
  CHECK(m.messages[2].text == "third");
  CHECK(m.messages[2].severity == 4);
  CHECK(m.messages[0].tick < m.messages[1].tick);
  REQUIRE(m.plots.size() == 1);
  CHECK(m.plots.begin()->second.name == "frame index");
  CHECK(m.plots.begin()->second.points.size() == 10);
  CHECK(m.clock.pairs().size() >= 2);
}

TEST_CASE("events recorded before the capture connects are kept") {
  auto capture = CaptureProgram({GNOMON_TEST_PROGRAM, "before-connect"}, {}, 300);
  CHECK(capture.exit_code == 0);
  const auto counts = CountsByName(capture.model());
  CHECK(counts.at("Before") == 1000);
  CHECK(counts.at("After") == 1000);
}

TEST_CASE("past the buffer budget events are dropped, counted, and the count reaches the server") {
  constexpr long kZones = 400000;  // 8.8 MB of events against a 1 MB budget
  // Connect only once the flood is over ("dropped N" printed): a capture that drains
  // during the flood could keep up with it, and nothing would be dropped.
  auto capture = CaptureProgram({GNOMON_TEST_PROGRAM, "flood", std::to_string(kZones)},
                                {{"GNOMON_BUFFER_MB", "1"}, {"GNOMON_KEEP_START_S", "0"}}, 0, "dropped ");
  CHECK(capture.exit_code == 0);
  const TraceModel& m = capture.model();
  const uint64_t dropped = m.diagnostics.client_dropped_events;
  CHECK(dropped > 0);
  CHECK(m.zone_count < uint64_t(kZones));
  const uint64_t kept_events = m.zone_count + (m.zone_count - m.open_zone_count);
  CHECK(kept_events + dropped == 2 * uint64_t(kZones));
  CHECK(capture.log.find("dropped " + std::to_string(dropped)) != std::string::npos);
}

TEST_CASE("eight threads dropping at once: every drop counted, also of the threads that exited") {
  constexpr long kZones = 100000;  // 8 x 2.2 MB of events against a 1 MB budget
  auto capture = CaptureProgram({GNOMON_TEST_PROGRAM, "flood", std::to_string(kZones), "8"},
                                {{"GNOMON_BUFFER_MB", "1"}, {"GNOMON_KEEP_START_S", "0"}}, 0, "dropped ");
  CHECK(capture.exit_code == 0);
  const TraceModel& m = capture.model();
  const uint64_t dropped = m.diagnostics.client_dropped_events;
  CHECK(dropped > 0);
  const uint64_t kept_events = m.zone_count + (m.zone_count - m.open_zone_count);
  CHECK(kept_events + dropped == 8 * 2 * uint64_t(kZones));
  CHECK(capture.log.find("dropped " + std::to_string(dropped)) != std::string::npos);
}

TEST_CASE("the C API from a C program: zones, attributes, frames, plots, messages") {
  auto capture = CaptureProgram({GNOMON_TEST_C_PROGRAM});
  CHECK(capture.exit_code == 0);
  const TraceModel& m = capture.model();
  const auto counts = CountsByName(m);
  CHECK(counts.at("C outer renamed") == 5);
  CHECK(counts.at("C inner") == 5);
  CHECK(counts.at("C scoped") == 5);
  CHECK(counts.at("C direct renamed") == 1);
  const auto* thread = FindThread(m, "c main");
  REQUIRE(thread != nullptr);
  REQUIRE(thread->zones.size() == 16);
  CHECK(thread->zones[1].depth == 1);
  CHECK(thread->zones[2].depth == 1);
  CHECK(thread->attributes.at(1).text == "inner text");
  CHECK(thread->attributes.at(1).value == 7);
  CHECK(thread->attributes.at(2).color == 0x112233);
  CHECK(m.Location(thread->zones[1].source_location).color == 0x3366FF);
  CHECK(m.Location(thread->zones[1].source_location).function == "nested");
  const auto& direct = thread->attributes.at(15);  // the functions the macros stand for
  CHECK(direct.text == "direct text");
  CHECK(direct.color == 0x445566);
  CHECK(direct.value == 9);
  CHECK(m.frames.at(0).marks.size() == 5);
  // GNOMON_FRAME_MARK_NAMED and gnomon_frame_name: one series.
  int named = 0;
  for (const auto& [id, series] : m.frames)
    named += series.name == "c frames" && series.spans.size() == 5 && series.marks.size() == 1;
  CHECK(named == 1);
  REQUIRE(m.messages.size() == 2);
  CHECK(m.messages[0].text == "direct message");
  CHECK(m.messages[0].severity == 1);
  CHECK(m.messages[1].text == "from C");
  CHECK(m.messages[1].severity == 3);
  std::map<std::string, size_t> plot_points;
  for (const auto& [id, plot] : m.plots) plot_points[plot.name] += plot.points.size();
  CHECK(plot_points == std::map<std::string, size_t>{{"c plot", 5}, {"c direct plot", 1}});

  // Memory and locks.
  REQUIRE(m.memory_pools.size() == 2);
  CHECK(m.memory_pools.at(0).allocations.size() == 1);
  CHECK(m.memory_pools.at(0).frees == 1);
  const auto& c_pool = std::next(m.memory_pools.begin())->second;
  CHECK(c_pool.name == "c pool");
  REQUIRE(c_pool.allocations.size() == 1);
  CHECK(c_pool.allocations[0].size_bytes == 200);
  CHECK_FALSE(c_pool.allocations[0].is_freed());
  REQUIRE(m.locks.size() == 1);
  const auto& lock = m.locks.begin()->second;
  CHECK(lock.name == "c mutex");
  REQUIRE(lock.holds.size() == 2);
  CHECK(lock.holds[0].is_contended());
  CHECK_FALSE(lock.holds[1].is_contended());
  CHECK(lock.holds[1].flags == gnomon::protocol::kLockShared);
  CHECK(lock.holds[1].is_released());

  // GPU: four passes, each timed 1 ms to 3 ms after the program read its clock, just
  // after it recorded the pass (later, when it lost its core between the two).
  REQUIRE(m.gpu_contexts.size() == 1);
  const auto& gpu = m.gpu_contexts.begin()->second;
  CHECK(gpu.label() == "C queue");
  CHECK(gpu.device_name == "C test GPU");
  CHECK(gpu.clock.period() == gnomon::protocol::TickPeriod{2, 1});
  CHECK(gpu.clock.valid_bits() == 48);
  CHECK(gpu.clock.sample_count() == 5);
  CHECK(gpu.clock.rejected_count() == 0);
  REQUIRE(gpu.zones.size() == 4);
  int64_t closest = INT64_MAX;  // the pass read soonest after it was recorded
  for (size_t i = 0; i < gpu.zones.size(); ++i) {
    const auto& zone = gpu.zones[i];
    REQUIRE(zone.is_timed());
    CHECK(zone.thread_id == thread->id);
    CHECK(m.Location(zone.source_location).name == "C GPU pass");
    const auto mapped = m.MapGpuZone(gpu, zone);
    CHECK(mapped.end_ns - mapped.begin_ns == doctest::Approx(2000000).epsilon(0.001));
    const int64_t recorded = m.clock.TickToNs(zone.cpu_begin_tick);
    CHECK(mapped.begin_ns - recorded >= 900000);
    closest = std::min(closest, mapped.begin_ns - recorded);
  }
  CHECK(closest <= 1500000);
  CHECK(capture.log.find("host-to-ticks ok") != std::string::npos);
}

TEST_CASE("GNOMON_DISABLE compiles out the C API: the same program, linked without Gnomon, opens no port") {
  // The program is built from the same source with GNOMON_DISABLE and linked with no
  // Gnomon library: were any call left, it would not have linked.
  gnomon::test::ScratchDir dir;
  const std::string port_file = dir.File("port");
  std::string output;
  const int exit_code = gnomon::test::RunCommand(
      "GNOMON_PORT=0 GNOMON_PORT_FILE=" + port_file + " " GNOMON_TEST_C_PROGRAM_DISABLED, &output);
  CHECK_MESSAGE(exit_code == 0, output);
  CHECK(output.find("c program done") != std::string::npos);
  CHECK(output.find("connected 0, port 0, dropped 0") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(port_file));
}

TEST_CASE("a Python program emits GPU zones and calibrations through the C ABI") {
  std::map<std::string, std::string> env{{"GNOMON_LIBRARY", GNOMON_SHARED_LIBRARY}};
  if (std::string(GNOMON_ASAN_PRELOAD).size() > 0) {
    env["LD_PRELOAD"] = GNOMON_ASAN_PRELOAD;
    env["ASAN_OPTIONS"] = "detect_leaks=0";  // the interpreter's own allocations are not ours to judge
  }
  auto capture = CaptureProgram({"/usr/bin/env", "python3", GNOMON_PYTHON_EXAMPLE}, env);
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  REQUIRE(m.gpu_contexts.size() == 1);
  const auto& gpu = m.gpu_contexts.begin()->second;
  CHECK(gpu.device_name == "Python GPU");
  CHECK(gpu.clock.sample_count() == 11);
  REQUIRE(gpu.zones.size() == 10);
  for (size_t i = 0; i < gpu.zones.size(); ++i) {
    const auto mapped = m.MapGpuZone(gpu, gpu.zones[i]);
    CHECK(mapped.end_ns - mapped.begin_ns == 500000);
    CHECK(m.Location(gpu.zones[i].source_location).name == "Python dispatch");
  }
  const auto* thread = FindThread(m, "python");
  REQUIRE(thread != nullptr);
  CHECK(gpu.zones[0].thread_id == thread->id);
}
