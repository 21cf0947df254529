// GPU counter sources' shared part (counters/gpu_counters.cpp): result structures
// decoded by a query type's layout, and query types and results sent through the real
// client to a worker connected to this process.
#include "gnomon/gpu_counters.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cstring>
#include <ctime>
#include <span>
#include <thread>
#include <vector>

#include "../../support/self_capture.h"
#include "gnomon/gnomon.hpp"
#include "gnomon/protocol/messages.h"

using gnomon::server::TraceModel;

TEST_CASE("result structures decode by offset, size and data type, and are refused when too short") {
  gnomon::counters::QueryType type;
  type.counters = {{"a", "", GNOMON_COUNTER_EVENT, GNOMON_COUNTER_UINT32, 0, 4, 0},
                   {"b", "", GNOMON_COUNTER_RAW, GNOMON_COUNTER_DOUBLE, 8, 8, 0},
                   {"c", "", GNOMON_COUNTER_EVENT, GNOMON_COUNTER_BOOL32, 4, 4, 0}};
  uint8_t data[16] = {};
  const uint32_t a = 7, c = 1;
  const double b = -2.5;
  std::memcpy(data, &a, 4);
  std::memcpy(data + 4, &c, 4);
  std::memcpy(data + 8, &b, 8);
  gnomon::counters::Values values;
  REQUIRE(gnomon::counters::DecodeValues(type, data, values));
  CHECK(values.values == std::vector<uint64_t>{7, std::bit_cast<uint64_t>(-2.5), 1});
  CHECK_FALSE(gnomon::counters::DecodeValues(type, std::span<const uint8_t>(data, 12), values));
  CHECK(values.values.size() == 3);  // untouched
}

TEST_CASE("a float is read as its double, and a counter of an unknown data type refuses the result") {
  gnomon::counters::QueryType type;
  type.counters = {{"f", "", GNOMON_COUNTER_RAW, GNOMON_COUNTER_FLOAT, 0, 4, 0},
                   {"u", "", GNOMON_COUNTER_EVENT, GNOMON_COUNTER_UINT64, 4, 8, 0}};
  uint8_t data[12] = {};
  const float f = 0.75f;
  const uint64_t u = uint64_t{1} << 40;
  std::memcpy(data, &f, 4);
  std::memcpy(data + 4, &u, 8);
  gnomon::counters::Values values;
  REQUIRE(gnomon::counters::DecodeValues(type, data, values));
  CHECK(values.values == std::vector<uint64_t>{std::bit_cast<uint64_t>(0.75), u});

  // 7: no data type Gnomon defines (yet a value the enumeration holds).
  type.counters.push_back({"?", "", GNOMON_COUNTER_RAW, static_cast<gnomon_counter_data_type>(7), 0, 4, 0});
  gnomon::counters::Values refused;
  CHECK_FALSE(gnomon::counters::DecodeValues(type, data, refused));
  CHECK(refused.values.empty());
}

TEST_CASE(
    "a query type is described as a counter set of its context, and a result reaches it as its values") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  uint32_t context = 0, set = 0, empty_set = 1, oversized_set = 1;
  std::thread([&] {
    gnomon::SetThreadName("counter results");
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    gnomon::GpuContextInfo info{};
    info.api = GNOMON_GPU_API_VULKAN;
    info.device_name = "counting GPU";
    info.period_numerator_ns = 1;
    info.period_denominator = 1;
    info.valid_bits = 64;
    info.gpu_ticks = 1000;
    info.cpu_time = uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
    info.cpu_domain = GNOMON_CPU_TIME_MONOTONIC_RAW;
    info.uncertainty_ns = 10;
    context = gnomon::GpuContextCreate(info);
    gnomon::counters::QueryType type;
    type.name = "unit query";
    type.counters = {{"draws", "draw calls", GNOMON_COUNTER_EVENT, GNOMON_COUNTER_UINT64, 0, 8, 100},
                     {"busy", "", GNOMON_COUNTER_DURATION_RAW, GNOMON_COUNTER_DOUBLE, 8, 8, 0}};
    set = gnomon::counters::DefineSet(context, type);
    empty_set = gnomon::counters::DefineSet(context, gnomon::counters::QueryType{});
    gnomon::counters::QueryType oversized;
    oversized.name = "too many";
    oversized.counters.resize(GNOMON_MAX_COUNTER_VALUES + 1, type.counters[0]);
    oversized_set = gnomon::counters::DefineSet(context, oversized);
    gnomon::counters::Values values;
    values.values = {7, std::bit_cast<uint64_t>(2.5)};
    values.flags = GNOMON_COUNTER_FREQUENCY_CHANGED;
    gnomon::counters::SendResult(context, set, GNOMON_COUNTER_TARGET_FRAME, 3, values);
  }).join();
  REQUIRE(context != 0);
  REQUIRE(set != 0);
  CHECK(empty_set == 0);  // no counters: no set
  CHECK(oversized_set == 0);
  REQUIRE(gnomon::test::WaitForModel(worker, [&](const TraceModel& m) {
    const auto it = m.gpu_contexts.find(context);
    return m.counter_sets.contains(set) && it != m.gpu_contexts.end() && !it->second.counter_samples.empty();
  }));
  worker.WithModel([&](const TraceModel& m) {
    const auto& described = m.counter_sets.at(set);
    CHECK(described.name == "unit query");
    CHECK(described.context_id == context);
    CHECK(described.counter_count == 2);
    REQUIRE(described.counters.size() == 2);
    CHECK(described.counters[0].name == "draws");
    CHECK(described.counters[0].description == "draw calls");
    CHECK(described.counters[0].type == uint8_t(gnomon::protocol::CounterType::kEvent));
    CHECK(described.counters[0].data_type == uint8_t(gnomon::protocol::CounterDataType::kUint64));
    CHECK(described.counters[0].raw_max == 100);
    CHECK(described.counters[1].name == "busy");
    CHECK(described.counters[1].data_type == uint8_t(gnomon::protocol::CounterDataType::kDouble));
    CHECK(described.counters[1].offset == 8);
    const auto& c = m.gpu_contexts.at(context);
    REQUIRE(c.counter_samples.size() == 1);
    const auto& sample = c.counter_samples[0];
    CHECK(sample.set_id == set);
    CHECK(sample.target == GNOMON_COUNTER_TARGET_FRAME);
    CHECK(sample.target_index == 3);
    CHECK(sample.flags == GNOMON_COUNTER_FREQUENCY_CHANGED);
    REQUIRE(sample.value_count == 2);
    CHECK(c.counter_values[sample.first_value] == 7.0);
    CHECK(c.counter_values[sample.first_value + 1] == 2.5);
  });
}
