// The client library inside this very process, captured by a real worker over loopback.
#include <doctest/doctest.h>

#include <ctime>
#include <gnomon/gnomon.hpp>
#include <thread>
#include <vector>

#include "../support/self_capture.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/worker.h"

using gnomon::server::TraceModel;
using gnomon::server::Worker;

void RecordWithProfilingCompiledOut(int zones);  // disabled_code.cpp

using gnomon::test::FindThread;
using gnomon::test::WaitForModel;

namespace {
Worker& ConnectedWorker() { return gnomon::test::SelfCapture(); }
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

TEST_CASE("runtime attributes, messages, plots and frames reach the worker") {
  Worker& worker = ConnectedWorker();
  std::thread([] {
    gnomon::SetThreadName("attributes");
    {
      GNOMON_ZONE_C("Attributed", 0x00FF00);
      gnomon::ZoneName("renamed at run time");
      gnomon::ZoneText("some text");
      gnomon::ZoneValue(42);
      gnomon::ZoneColor(0xABCDEF);
    }
    gnomon::Message("hello from the test", gnomon::Severity::kError);
    GNOMON_PLOT("test plot", 2.5);
    GNOMON_FRAME_MARK_NAMED("test frames");
    const uint32_t series = gnomon::FrameName("test spans");
    gnomon::FrameBegin(series);
    gnomon::FrameEnd(series);
  }).join();
  // Wait for the last events too (the span's end): the stream may arrive in pieces.
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    const auto* t = FindThread(m, "attributes");
    bool span_ended = false;
    for (const auto& [id, series] : m.frames)
      span_ended |= series.name == "test spans" && !series.spans.empty();
    return t != nullptr && !t->zones.empty() && !m.messages.empty() && !m.plots.empty() && span_ended;
  }));
  worker.WithModel([](const TraceModel& m) {
    const auto* t = FindThread(m, "attributes");
    REQUIRE(t->zones.size() == 1);
    const auto& a = t->attributes.at(0);
    CHECK(m.ZoneName(*t, 0) == "renamed at run time");
    CHECK(a.text == "some text");
    CHECK(a.value == 42);
    CHECK(a.color == 0xABCDEF);
    CHECK(m.Location(t->zones[0].source_location).color == 0x00FF00);
    bool found = false;
    for (const auto& message : m.messages)
      found |= message.text == "hello from the test" && message.severity == 4;
    CHECK(found);
    bool plot = false;
    for (const auto& [id, series] : m.plots) plot |= series.name == "test plot" && series.points.size() == 1;
    CHECK(plot);
    bool marks = false, spans = false;
    for (const auto& [id, series] : m.frames) {
      marks |= series.name == "test frames" && series.marks.size() == 1;
      spans |= series.name == "test spans" && series.spans.size() == 1;
    }
    CHECK(marks);
    CHECK(spans);
  });
}

TEST_CASE("code compiled with GNOMON_DISABLE records nothing") {
  Worker& worker = ConnectedWorker();
  std::thread([] {
    gnomon::SetThreadName("disabled");
    RecordWithProfilingCompiledOut(1000);
    GNOMON_ZONE("Marker");  // proves the thread's events did flow
  }).join();
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    const auto* t = FindThread(m, "disabled");
    return t != nullptr && !t->zones.empty();
  }));
  worker.WithModel([](const TraceModel& m) {
    const auto* t = FindThread(m, "disabled");
    REQUIRE(t->zones.size() == 1);
    CHECK(m.Location(t->zones[0].source_location).name == "Marker");
    for (const auto& [id, pool] : m.memory_pools) CHECK(pool.name != "disabled pool");
    for (const auto& [id, lock] : m.locks) CHECK(lock.name.find("disabled") == std::string::npos);
  });
}

TEST_CASE("the C++ GPU API: a context, zones, times, calibrations and a resync reach the worker") {
  Worker& worker = ConnectedWorker();
  uint32_t context = 0;
  std::thread([&context] {
    gnomon::SetThreadName("cpp gpu");
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    const int64_t now = int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    gnomon::GpuContextInfo info{};
    info.api = GNOMON_GPU_API_CUDA;
    info.device_name = "C++ GPU";
    info.period_numerator_ns = 625;  // a 19.2 MHz counter
    info.period_denominator = 12;
    info.valid_bits = 32;
    info.gpu_ticks = 1000;
    info.cpu_time = uint64_t(now);
    info.cpu_domain = GNOMON_CPU_TIME_MONOTONIC_RAW;
    info.uncertainty_ns = 30;
    context = gnomon::GpuContextCreate(info);
    gnomon::GpuContextName(context, "C++ stream");
    static gnomon_source_location kernel{"C++ kernel", "kernel", __FILE__, 1, GNOMON_NO_COLOR, 0};
    gnomon::GpuZoneBegin(context, 7, &kernel);
    gnomon::GpuZoneEnd(context, 8);
    gnomon::GpuTime(context, 7, 1000 + 12);  // 625 ns after the pair
    gnomon::GpuTime(context, 8, 1000 + 24);
    gnomon::GpuCalibration({1000 + 19'200'000, uint64_t(now) + 1'000'000'000, 1'000'000'000, 30, context,
                            GNOMON_CPU_TIME_MONOTONIC_RAW});
    gnomon::GpuResync(context, 5, uint64_t(now) + 2'000'000'000, GNOMON_CPU_TIME_MONOTONIC_RAW, 30);
    CHECK(gnomon::CpuTimeFromHostNs(GNOMON_CPU_TIME_MONOTONIC_RAW, now) <= gnomon::Now());
  }).join();
  REQUIRE(WaitForModel(worker, [context](const TraceModel& m) {
    auto it = m.gpu_contexts.find(context);
    return it != m.gpu_contexts.end() && it->second.zones.size() == 1 && it->second.zones[0].is_timed() &&
           it->second.clock.epoch() == 1;
  }));
  worker.WithModel([context](const TraceModel& m) {
    const auto& c = m.gpu_contexts.at(context);
    CHECK(c.label() == "C++ stream");
    CHECK(c.api == uint8_t(gnomon::protocol::GpuApi::kCuda));
    CHECK(c.clock.period() == gnomon::protocol::TickPeriod{625, 12});
    const auto mapped = m.MapGpuZone(c, c.zones[0]);
    CHECK(mapped.end_ns - mapped.begin_ns == 625);
    CHECK(c.clock.sample_count() == 3);
  });
}
