// The Vulkan demo on a real Vulkan device (lavapipe in CI), captured over TCP: every GPU
// zone lands inside the CPU bracket from just before its submission to the return of
// the fence wait, nesting survives, and the report shows the context's clock.
#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>

#include "capture_helper.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/report.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/trace_loader.h"

using gnomon::server::TraceModel;

namespace {

// The demo's path; GNOMON_VULKAN_DEMO overrides it (to run these tests on another machine).
std::string Demo() {
  const char* path = std::getenv("GNOMON_VULKAN_DEMO");
  return path && *path ? path : GNOMON_VULKAN_DEMO;
}

// The demo loads a Mesa driver, which leaks at unload (see support/mesa_leak_options.cpp).
std::map<std::string, std::string> DemoEnvironment() {
  if (std::string(GNOMON_ASAN_PRELOAD).empty()) return {};
  return {{"ASAN_OPTIONS", "detect_leaks=0"}};
}

// Every GPU frame lies between its submit and the return of its fence wait: exactly
// (calibrated timestamps), or within the absolute bound stated for its times
// (`within_bounds`: the fallback's calibrations are brackets of their own).
void CheckBrackets(const TraceModel& m, int frames, bool within_bounds = false) {
  REQUIRE(m.gpu_contexts.size() == 1);
  const auto& gpu = m.gpu_contexts.begin()->second;
  CHECK(gpu.api == uint8_t(gnomon::protocol::GpuApi::kVulkan));
  CHECK(gpu.label() == "compute queue");
  std::vector<std::pair<int64_t, int64_t>> brackets;
  for (const auto& thread : m.threads) {
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      if (m.ZoneName(thread, i) != "Submit and wait") continue;
      brackets.emplace_back(m.clock.TickToNs(thread.zones[i].begin_tick),
                            m.clock.TickToNs(thread.zones[i].end_tick));
    }
  }
  REQUIRE(brackets.size() == size_t(frames));
  size_t frame = 0;
  std::pair<int64_t, int64_t> parent{0, 0};
  size_t timed = 0;
  for (size_t i = 0; i < gpu.zones.size(); ++i) {
    const auto& zone = gpu.zones[i];
    REQUIRE(zone.is_timed());
    ++timed;
    const auto mapped = gpu.clock.Map(zone.gpu_begin, zone.epoch);
    const auto mapped_end = gpu.clock.Map(zone.gpu_end, zone.epoch);
    // The context calibrates once more as it is destroyed: no zone after the last.
    CHECK_FALSE(mapped.extrapolated);
    CHECK_FALSE(mapped_end.extrapolated);
    if (zone.depth == 0) {
      REQUIRE(frame < brackets.size());
      const int64_t submit = brackets[frame].first, signalled = brackets[frame].second;
      ++frame;
      const int64_t early_slack = within_bounds ? int64_t(mapped.late_ns) : 0;
      const int64_t late_slack = within_bounds ? int64_t(mapped_end.early_ns) : 0;
      CHECK_MESSAGE(mapped.cpu_ns >= submit - early_slack, "frame ", frame, " starts ",
                    submit - mapped.cpu_ns, " ns early");
      CHECK_MESSAGE(mapped_end.cpu_ns <= signalled + late_slack, "frame ", frame, " ends ",
                    mapped_end.cpu_ns - signalled, " ns late");
      parent = {mapped.cpu_ns, mapped_end.cpu_ns};
    } else {
      CHECK(zone.depth == 1);
      CHECK(mapped.cpu_ns >= parent.first);
      CHECK(mapped_end.cpu_ns <= parent.second);
    }
  }
  CHECK(frame == size_t(frames));
  CHECK(timed == size_t(frames) * 3 + size_t(frames / 10));
}

}  // namespace

TEST_CASE("Vulkan with calibrated timestamps: every GPU zone inside its submit-to-fence bracket") {
  constexpr int kFrames = 40;
  auto capture = gnomon::test::CaptureProgram(
      {Demo(), "--frames", std::to_string(kFrames), "--in-flight", "1", "--iterations", "300"},
      DemoEnvironment());
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  CheckBrackets(m, kFrames);
  const auto& gpu = m.gpu_contexts.begin()->second;
  CHECK((gpu.flags & gnomon::protocol::kGpuContextCalibrated) != 0);

  std::ostringstream summary;
  gnomon::server::PrintSummary(m, summary);
  CHECK(summary.str().find("compute queue (Vulkan, context 1)") != std::string::npos);
  CHECK(summary.str().find("drift") != std::string::npos);
  CHECK(summary.str().find("calibrated timestamps") != std::string::npos);
  CHECK(summary.str().find("relative (from the calibrations' scatter)") != std::string::npos);
  CHECK(summary.str().find("outside the calibrated span") == std::string::npos);
  const auto stats = gnomon::server::ComputeGpuZoneStatistics(m);
  REQUIRE(stats.size() == 4);
  CHECK(m.Location(stats[0].source_location).name == "GPU frame");
  CHECK(stats[0].count == kFrames);

  // Pipeline statistics: each dispatch runs 256 workgroups of 64 invocations, exactly.
  REQUIRE(m.counter_sets.size() == 1);
  const auto& set = m.counter_sets.begin()->second;
  CHECK(set.name == "pipeline statistics");
  REQUIRE(set.counters.size() == 3);
  CHECK(set.counters[2].name == "compute shader invocations");
  CHECK(gpu.counter_samples.size() == size_t(kFrames) * 2);
  for (const auto& sample : gpu.counter_samples) {
    const std::string& zone = m.Location(gpu.zones[sample.target_index].source_location).name;
    CHECK((zone == "Simulate" || zone == "Integrate"));
    CHECK(gpu.counter_values[sample.first_value + 0] == 0);  // vertex shader invocations
    CHECK(gpu.counter_values[sample.first_value + 1] == 0);  // fragment shader invocations
    CHECK(gpu.counter_values[sample.first_value + 2] == 16384);
  }
  std::ostringstream counters;
  gnomon::server::PrintCounterStatistics(m, counters);
  CHECK(counters.str().find("compute shader invocations") != std::string::npos);
  CHECK(counters.str().find("16384") != std::string::npos);
}

TEST_CASE("Vulkan without calibrated timestamps: the fence-bracket fallback, within its uncertainty") {
  // Over 10 ms on a fast GPU too: the last calibration must not merge into the first.
  constexpr int kFrames = 200;
  auto capture = gnomon::test::CaptureProgram({Demo(), "--frames", std::to_string(kFrames), "--in-flight",
                                               "1", "--iterations", "300", "--no-calibrated"},
                                              DemoEnvironment());
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  const auto& gpu = m.gpu_contexts.begin()->second;
  CHECK((gpu.flags & gnomon::protocol::kGpuContextFallbackCalibration) != 0);
  const uint32_t uncertainty = gpu.clock.current_uncertainty_ns();
  CHECK(uncertainty > 0);
  CHECK(uncertainty < 50'000'000);
  CheckBrackets(m, kFrames, true);
}

TEST_CASE(
    "on an NVIDIA H200 the collector's probes prove the placement late: every time moves, within its "
    "bracket") {
  // gnomon-vulkan-demo --frames 1000 --in-flight 1 --iterations 100000 on an H200,
  // captured with gnomon-capture (2026-12-02). The 16 probes (the CPU spinning on a
  // timestamp's availability) saw their writes before the calibrations place them;
  // every time moves earlier by what they prove, and each GPU frame stays between its
  // submit and the return of its fence wait.
  TraceModel m;
  auto loaded =
      gnomon::server::LoadTrace(std::string(GNOMON_DATA_DIR) + "/h200_vulkan_demo_probes.gnomon", m);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  const auto& gpu = m.gpu_contexts.begin()->second;
  const auto range = gpu.clock.offset_range();
  CHECK(range.brackets == 16);
  CHECK_FALSE(range.contradicted);
  CHECK(range.correction_ns() < -100);
  CHECK(gpu.clock.current_late_ns() < gpu.clock.current_early_ns());
  CheckBrackets(m, 1000);
}
