// GPU counters through the decoder and the builder: descriptions round-trip, results
// attach to their zone or frame, values are normalised by type, and bad results are
// counted, never stored.
#include "gnomon/server/counter_values.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <sstream>

#include "../../support/build_model.h"
#include "gnomon/server/chrome_export.h"
#include "gnomon/server/report.h"
#include "gnomon/server/trace_loader.h"
#include "model/trace_builder.h"

using gnomon::protocol::CounterDataType;
using gnomon::protocol::CounterTarget;
using gnomon::protocol::CounterType;
using gnomon::server::TraceModel;
using gnomon::test::StreamWriter;

namespace {

TraceModel Build(const StreamWriter& w) { return gnomon::test::BuildWholeModel(w); }

// A context (1 ns ticks, CPU time = GPU time), a set of five counters, one zone.
StreamWriter WithCounters() {
  StreamWriter w;
  w.AppInfo("app").SourceLocation(1, "Draw", "f", "a.cpp", 3).ThreadInfo(1, 10, "render").ThreadContext(1);
  w.GpuContext(5, "GPU", 1, 1, 64, 1'000'000, 1'000'000);
  w.CounterSet(5, 9, 5, "Render basic");
  w.Counter(9, 0, CounterType::kEvent, CounterDataType::kUint64, "GPU core clocks", "render clocks", 0, 8,
            1'000'000);
  w.Counter(9, 1, CounterType::kDurationNorm, CounterDataType::kUint32, "EU busy", "clocks the EUs were busy",
            8, 4);
  w.Counter(9, 2, CounterType::kThroughput, CounterDataType::kUint64, "bytes read", "", 12, 8);
  w.Counter(9, 3, CounterType::kRaw, CounterDataType::kFloat, "temperature", "", 20, 4);
  w.Counter(9, 4, CounterType::kEvent, CounterDataType::kBool32, "split", "", 24, 4);
  return w;
}

}  // namespace

TEST_CASE("a counter set's description round-trips, and a zone's result is stored and normalised") {
  StreamWriter w = WithCounters();
  w.GpuZoneBegin(5, 100, 1, 2'000'000).GpuZoneEnd(5, 101, 2'000'100);
  // The result comes before the zone's times (a collector reads both in one harvest).
  w.CounterResult(5, 9, CounterTarget::kGpuZone, 100,
                  {4000, 1000, 2'000'000, std::bit_cast<uint64_t>(71.5), 1},
                  gnomon::protocol::kCounterSplitOccurred);
  w.GpuTime(5, 100, 3'000'000).GpuTime(5, 101, 3'500'000);  // 500 us on the GPU
  const TraceModel m = Build(w);
  CHECK(m.diagnostics.counter_results_dropped == 0);

  const auto& set = m.counter_sets.at(9);
  CHECK(set.name == "Render basic");
  CHECK(set.context_id == 5);
  REQUIRE(set.counters.size() == 5);
  CHECK(set.counters[0].name == "GPU core clocks");
  CHECK(set.counters[0].description == "render clocks");
  CHECK(set.counters[0].raw_max == 1'000'000);
  CHECK(set.counters[1].type == uint8_t(CounterType::kDurationNorm));
  CHECK(set.counters[1].data_type == uint8_t(CounterDataType::kUint32));
  CHECK(set.counters[1].offset == 8);
  CHECK(set.counters[1].size == 4);

  const auto& context = m.gpu_contexts.at(5);
  REQUIRE(context.counter_samples.size() == 1);
  const auto& sample = context.counter_samples[0];
  CHECK(sample.target_index == 0);
  CHECK(sample.flags == gnomon::protocol::kCounterSplitOccurred);
  const auto* found = gnomon::server::FindZoneCounters(context, 0);
  REQUIRE(found == &sample);
  CHECK(context.counter_values[sample.first_value + 3] == 71.5);  // a float, as a double's bits

  CHECK(gnomon::server::NormalizedCounterValue(m, context, sample, 0) == 4000);
  CHECK(gnomon::server::NormalizedCounterValue(m, context, sample, 1) ==
        doctest::Approx(25.0));  // 1000 / 4000
  CHECK(gnomon::server::NormalizedCounterValue(m, context, sample, 2) ==
        doctest::Approx(4e9));  // 2 MB in 500 us
  CHECK(gnomon::server::NormalizedCounterValue(m, context, sample, 3) == 71.5);
  CHECK(gnomon::server::CounterUnit(set, 1) == "%");
  CHECK(gnomon::server::CounterUnit(set, 2) == "/s");
  CHECK(gnomon::server::CounterUnit(set, 3) == "");

  const auto stats = gnomon::server::ComputeCounterStatistics(m);
  REQUIRE(stats.size() == 5);
  CHECK(stats[1].source_location == 1);
  CHECK(stats[1].count == 1);
  CHECK(stats[1].mean == doctest::Approx(25.0));
  std::ostringstream report;
  gnomon::server::PrintCounterStatistics(m, report);
  CHECK(report.str().find("EU busy (%)") != std::string::npos);
  CHECK(report.str().find("bytes read (/s)") != std::string::npos);

  // Chrome/Perfetto: a counter track per counter, the value from the zone's begin, 0 at its end.
  std::ostringstream chrome;
  gnomon::server::WriteChromeTrace(m, chrome);
  CHECK(chrome.str().find("{\"ph\":\"C\",\"cat\":\"counter\",\"name\":\"GPU: EU busy\",\"pid\":") !=
        std::string::npos);
  CHECK(chrome.str().find("\"args\":{\"value\":25}") != std::string::npos);
}

TEST_CASE("frame results are kept, results without their set, context or zone are counted and dropped") {
  StreamWriter w = WithCounters();
  w.GpuZoneBegin(5, 200, 1, 2'000'000).GpuZoneEnd(5, 201, 2'000'100).GpuTime(5, 200, 3'000'000);
  const std::vector<uint64_t> five = {1, 2, 3, 4, 5};
  w.CounterResult(5, 9, CounterTarget::kFrame, 7, five);      // kept
  w.CounterResult(5, 9, CounterTarget::kGpuZone, 200, five);  // its begin time came first
  w.CounterResult(5, 9, CounterTarget::kGpuZone, 999, five);  // no such zone
  w.CounterResult(5, 8, CounterTarget::kGpuZone, 201, five);  // unknown set
  w.CounterResult(6, 9, CounterTarget::kFrame, 0, five);      // unknown context
  w.CounterResult(5, 9, CounterTarget::kFrame, 0, {1, 2});    // wrong number of values
  w.CounterResult(5, 9, CounterTarget(7), 0, five);           // unknown target
  w.Counter(9, 5, CounterType::kEvent, CounterDataType::kUint64, "past the end");  // index out of range
  w.CounterSet(77, 10, 1, "no such context");
  w.CounterSet(5, 0, 1, "set id 0");
  const TraceModel m = Build(w);
  const auto& context = m.gpu_contexts.at(5);
  REQUIRE(context.counter_samples.size() == 1);
  CHECK(context.counter_samples[0].target == uint8_t(CounterTarget::kFrame));
  CHECK(context.counter_samples[0].target_index == 7);
  CHECK(m.diagnostics.counter_results_dropped == 6);
  CHECK(m.diagnostics.invalid_ids == 2);
  CHECK(m.counter_sets.size() == 1);
  CHECK(gnomon::server::FindZoneCounters(context, 0) == nullptr);
}

TEST_CASE("a frame's result becomes a counter track over the frame in the Chrome export") {
  StreamWriter w = WithCounters();
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, 2'000'000)
      .Frame(gnomon::protocol::MessageType::kFrameMark, 0, 2'500'000);
  w.CounterResult(5, 9, CounterTarget::kFrame, 0, {8000, 2000, 1'000'000, std::bit_cast<uint64_t>(40.0), 0});
  w.CounterResult(5, 9, CounterTarget::kFrame, 1, {1, 1, 1, 1, 1});  // no mark ends frame 1: not drawn
  const TraceModel m = Build(w);
  const auto& context = m.gpu_contexts.at(5);
  REQUIRE(context.counter_samples.size() == 2);
  // Throughput over the frame's 500 us; a normalised duration against the frame's clocks.
  CHECK(gnomon::server::NormalizedCounterValue(m, context, context.counter_samples[0], 2) ==
        doctest::Approx(2e9));
  CHECK(gnomon::server::NormalizedCounterValue(m, context, context.counter_samples[0], 1) ==
        doctest::Approx(25.0));
  std::ostringstream chrome;
  gnomon::server::WriteChromeTrace(m, chrome);
  const std::string json = chrome.str();
  CHECK(json.find("\"name\":\"GPU: temperature\",\"pid\":") != std::string::npos);
  CHECK(json.find("\"args\":{\"value\":40}") != std::string::npos);
  size_t tracks = 0;
  for (size_t at = json.find("\"cat\":\"counter\""); at != std::string::npos;
       at = json.find("\"cat\":\"counter\"", at + 1)) {
    ++tracks;
  }
  CHECK(tracks == 10);  // five counters, a value and a 0 each, for frame 0 only
}

TEST_CASE("a recorded lavapipe trace keeps loading with its pipeline statistics") {
  TraceModel m;
  auto loaded = gnomon::server::LoadTrace(GNOMON_DATA_DIR "/lavapipe_vulkan_counters.gnomon", m);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  REQUIRE(m.counter_sets.size() == 1);
  const auto& context = m.gpu_contexts.begin()->second;
  CHECK(context.counter_samples.size() == 80);  // 40 frames, Simulate and Integrate
  for (const auto& sample : context.counter_samples) {
    CHECK(gnomon::server::NormalizedCounterValue(m, context, sample, 2) == 16384);
  }
}
