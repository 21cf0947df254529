// The OpenGL demo under Xvfb (llvmpipe in CI), captured over TCP: each GPU zone lies in
// its CPU bracket (from before the draw to the return of glFinish), within the
// calibration's reported uncertainty.
#include <doctest/doctest.h>

#include "../support/xvfb.h"
#include "capture_helper.h"
#include "gnomon/protocol/messages.h"

using gnomon::server::TraceModel;

TEST_CASE("OpenGL under Xvfb: every GPU zone inside its draw-to-glFinish bracket") {
  gnomon::test::Xvfb xvfb;
  REQUIRE_MESSAGE(!xvfb.display().empty(), "Xvfb did not start");
  std::map<std::string, std::string> env{{"DISPLAY", xvfb.display()}};
  if (!std::string(GNOMON_ASAN_PRELOAD).empty())
    env["ASAN_OPTIONS"] = "detect_leaks=0";  // Mesa leaks at unload
  constexpr int kFrames = 60;
  auto capture = gnomon::test::CaptureProgram({GNOMON_OPENGL_DEMO, "--frames", std::to_string(kFrames)}, env);
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  REQUIRE(m.gpu_contexts.size() == 1);
  const auto& gpu = m.gpu_contexts.begin()->second;
  CHECK(gpu.api == uint8_t(gnomon::protocol::GpuApi::kOpenGL));
  CHECK(gpu.label() == "GL context");
  std::vector<std::pair<int64_t, int64_t>> brackets;
  for (const auto& thread : m.threads) {
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      if (m.ZoneName(thread, i) == "Draw and finish") {
        brackets.emplace_back(m.clock.TickToNs(thread.zones[i].begin_tick),
                              m.clock.TickToNs(thread.zones[i].end_tick));
      }
    }
  }
  REQUIRE(brackets.size() == kFrames);
  REQUIRE(gpu.zones.size() == kFrames);
  const int64_t slack = gpu.clock.current_uncertainty_ns();
  CHECK(slack < 1'000'000);
  for (size_t i = 0; i < gpu.zones.size(); ++i) {
    REQUIRE(gpu.zones[i].is_timed());
    const auto mapped = m.MapGpuZone(gpu, gpu.zones[i]);
    CHECK_MESSAGE(mapped.begin_ns >= brackets[i].first - slack, "frame ", i);
    CHECK_MESSAGE(mapped.end_ns <= brackets[i].second + slack, "frame ", i);
  }
  // ARB_pipeline_statistics_query on llvmpipe: one triangle of three vertices per pass.
  REQUIRE(m.counter_sets.size() == 1);
  const auto& set = m.counter_sets.begin()->second;
  REQUIRE(set.counters.size() == 11);
  CHECK(set.counters[0].name == "vertices submitted");
  REQUIRE(gpu.counter_samples.size() == kFrames);
  for (const auto& sample : gpu.counter_samples) {
    CHECK(gpu.counter_values[sample.first_value + 0] == 3);  // vertices submitted
    CHECK(gpu.counter_values[sample.first_value + 1] == 1);  // primitives submitted
    CHECK(gpu.counter_values[sample.first_value + 7] > 0);   // fragment shader invocations
  }
}
