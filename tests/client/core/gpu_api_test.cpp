// The GPU half of the C API (core/gpu_api.cpp): contexts, their names and clock
// samples, GPU zones and times, counter sets and results, and host times as CPU times,
// through the real client to a worker connected to this process.
#include <doctest/doctest.h>

#include <bit>
#include <ctime>
#include <gnomon/gnomon.hpp>
#include <thread>
#include <vector>

#include "../../support/self_capture.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/protocol/tick_period.h"
#include "gnomon/server/worker.h"

using gnomon::server::TraceModel;
using gnomon::server::Worker;
using gnomon::test::WaitForModel;

namespace {

Worker& ConnectedWorker() { return gnomon::test::SelfCapture(); }

int64_t HostNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A context of 1 ns ticks whose first pair is (1000 ticks, now on CLOCK_MONOTONIC_RAW).
gnomon::GpuContextInfo NanosecondContext(const char* device, int64_t now) {
  gnomon::GpuContextInfo info{};
  info.api = GNOMON_GPU_API_VULKAN;
  info.device_name = device;
  info.period_numerator_ns = 1;
  info.period_denominator = 1;
  info.valid_bits = 64;
  info.gpu_ticks = 1000;
  info.cpu_time = uint64_t(now);
  info.cpu_domain = GNOMON_CPU_TIME_MONOTONIC_RAW;
  info.uncertainty_ns = 20;
  return info;
}

const gnomon::server::GpuContextTimeline* FindContext(const TraceModel& m, uint32_t id) {
  const auto it = m.gpu_contexts.find(id);
  return it == m.gpu_contexts.end() ? nullptr : &it->second;
}

}  // namespace

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

TEST_CASE("a context without info or without a period is refused, a valid one is described as given") {
  Worker& worker = ConnectedWorker();
  CHECK(gnomon_gpu_context_create(nullptr) == 0);
  gnomon::GpuContextInfo info = NanosecondContext("described GPU", HostNs(CLOCK_MONOTONIC_RAW));
  info.period_numerator_ns = 0;
  CHECK(gnomon::GpuContextCreate(info) == 0);
  info.period_numerator_ns = 1;
  info.period_denominator = 0;
  CHECK(gnomon::GpuContextCreate(info) == 0);
  info.period_denominator = 1;
  info.flags = GNOMON_GPU_CONTEXT_CALIBRATED;
  info.api = GNOMON_GPU_API_OPENGL;
  const uint32_t first = gnomon::GpuContextCreate(info);
  const uint32_t second = gnomon::GpuContextCreate(info);
  REQUIRE(first != 0);
  REQUIRE(second != 0);
  CHECK(first != second);
  gnomon::GpuContextName(second, "first name");
  gnomon_gpu_context_name(second, "second name and more", 11);  // the latest, as long as said
  REQUIRE(WaitForModel(worker, [&](const TraceModel& m) {
    const auto* c = FindContext(m, second);
    return FindContext(m, first) != nullptr && c != nullptr && c->label() == "second name";
  }));
  worker.WithModel([&](const TraceModel& m) {
    const auto* c = FindContext(m, first);
    CHECK(c->device_name == "described GPU");
    CHECK(c->label() == "described GPU");
    CHECK(c->api == uint8_t(gnomon::protocol::GpuApi::kOpenGL));
    CHECK(c->flags == GNOMON_GPU_CONTEXT_CALIBRATED);
    CHECK(c->clock.period() == gnomon::protocol::TickPeriod{1, 1});
  });
}

TEST_CASE("a time bracket reaches its context's clock, one that ends before it begins is refused there") {
  Worker& worker = ConnectedWorker();
  const int64_t now = HostNs(CLOCK_MONOTONIC_RAW);
  const uint32_t kept = gnomon::GpuContextCreate(NanosecondContext("bracketed GPU", now));
  const uint32_t refused = gnomon::GpuContextCreate(NanosecondContext("misbracketed GPU", now));
  REQUIRE(kept != 0);
  REQUIRE(refused != 0);
  // The GPU wrote tick 1500 (500 ns after the pair) within [now + 400, now + 600].
  gnomon::GpuTimeBracket(kept, 1500, uint64_t(now + 400), uint64_t(now + 600), GNOMON_CPU_TIME_MONOTONIC_RAW);
  gnomon::GpuTimeBracket(refused, 1500, uint64_t(now + 600), uint64_t(now + 400),
                         GNOMON_CPU_TIME_MONOTONIC_RAW);
  REQUIRE(WaitForModel(worker, [&](const TraceModel& m) {
    const auto* a = FindContext(m, kept);
    const auto* b = FindContext(m, refused);
    return a != nullptr && b != nullptr && a->clock.offset_range().brackets == 1 &&
           b->clock.flags().bad_brackets == 1;
  }));
  worker.WithModel([&](const TraceModel& m) {
    CHECK_FALSE(FindContext(m, kept)->clock.offset_range().contradicted);
    CHECK(FindContext(m, kept)->clock.flags().bad_brackets == 0);
    CHECK(FindContext(m, refused)->clock.offset_range().brackets == 0);
  });
}

TEST_CASE("counter sets: refused without counters, a result for a GPU zone is that zone's") {
  Worker& worker = ConnectedWorker();
  uint32_t context = 0, set = 0;
  std::thread([&] {
    gnomon::SetThreadName("gpu counters");
    const int64_t now = HostNs(CLOCK_MONOTONIC_RAW);
    context = gnomon::GpuContextCreate(NanosecondContext("counted GPU", now));
    const gnomon_counter_info counters[2] = {
        {"invocations", "shader invocations", GNOMON_COUNTER_EVENT, GNOMON_COUNTER_UINT64, 0, 8, 0},
        {"ratio", nullptr, GNOMON_COUNTER_RAW, GNOMON_COUNTER_DOUBLE, 8, 8, 0}};
    CHECK(gnomon_counter_set_create(context, "none", nullptr, 2) == 0);
    CHECK(gnomon_counter_set_create(context, "none", counters, 0) == 0);
    CHECK(gnomon_counter_set_create(context, "none", counters, GNOMON_MAX_COUNTER_VALUES + 1) == 0);
    set = gnomon_counter_set_create(context, "zone counters", counters, 2);
    static gnomon_source_location pass{"counted pass", "pass", __FILE__, __LINE__, GNOMON_NO_COLOR, 0};
    gnomon::GpuZoneBegin(context, 21, &pass);
    gnomon::GpuZoneEnd(context, 22);
    // Its values before its times, as a counter source sends them.
    const uint64_t values[2] = {1234, std::bit_cast<uint64_t>(0.5)};
    gnomon_counter_result(context, set, GNOMON_COUNTER_TARGET_GPU_ZONE, 21, 0, values, 2);
    gnomon::GpuTime(context, 21, 2000);
    gnomon::GpuTime(context, 22, 3000);
  }).join();
  REQUIRE(set != 0);
  REQUIRE(WaitForModel(worker, [&](const TraceModel& m) {
    const auto* c = FindContext(m, context);
    return c != nullptr && c->zones.size() == 1 && c->zones[0].is_timed() && !c->counter_samples.empty();
  }));
  worker.WithModel([&](const TraceModel& m) {
    const auto& described = m.counter_sets.at(set);
    CHECK(described.name == "zone counters");
    REQUIRE(described.counters.size() == 2);
    CHECK(described.counters[0].name == "invocations");
    CHECK(described.counters[0].description == "shader invocations");
    CHECK(described.counters[1].description == "");
    const auto* c = FindContext(m, context);
    REQUIRE(c->counter_samples.size() == 1);
    CHECK(c->counter_sample_of_zone.at(0) == 0);
    const auto& sample = c->counter_samples[0];
    CHECK(sample.target == GNOMON_COUNTER_TARGET_GPU_ZONE);
    CHECK(sample.target_index == 0);
    CHECK(c->counter_values[sample.first_value] == 1234.0);
    CHECK(c->counter_values[sample.first_value + 1] == 0.5);
    CHECK(c->zones[0].gpu_end - c->zones[0].gpu_begin == 1000);
  });
}

TEST_CASE("a float period becomes an exact fraction of it") {
  for (const double period : {1.0, 0.5, 52.083333333, 38.4615384615}) {
    CAPTURE(period);
    uint64_t numerator = 0, denominator = 0;
    gnomon_gpu_period_from_float(period, &numerator, &denominator);
    REQUIRE(denominator != 0);
    CHECK(double(numerator) / double(denominator) == doctest::Approx(period).epsilon(1e-6));
  }
  uint64_t numerator = 0;
  gnomon_gpu_period_from_float(2.0, &numerator, nullptr);  // either may be left out
  CHECK(numerator != 0);
}

TEST_CASE("a host clock reading becomes the CPU time between the ticks read around it") {
  ConnectedWorker();  // the profiler runs, and has calibrated
  for (const gnomon_cpu_time_domain domain : {GNOMON_CPU_TIME_MONOTONIC_RAW, GNOMON_CPU_TIME_MONOTONIC}) {
    CAPTURE(int(domain));
    const clockid_t clock = domain == GNOMON_CPU_TIME_MONOTONIC ? CLOCK_MONOTONIC : CLOCK_MONOTONIC_RAW;
    const uint64_t before = gnomon_now();
    const int64_t host = HostNs(clock);
    const uint64_t after = gnomon_now();
    const uint64_t ticks = gnomon::CpuTimeFromHostNs(domain, host);
    // Two milliseconds of ticks: the calibration's own error is far smaller, even on
    // CLOCK_MONOTONIC, which NTP may slew against CLOCK_MONOTONIC_RAW between pairs.
    const uint64_t slack = gnomon::CpuTimeFromHostNs(domain, host + 2'000'000) - ticks;
    CHECK(slack > 0);
    CHECK(ticks + slack >= before);
    CHECK(ticks <= after + slack);
  }
}
