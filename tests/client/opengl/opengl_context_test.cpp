// The OpenGL collector in a real GL 3.3 context (Mesa's llvmpipe under Xvfb in CI),
// captured by a worker connected to this process.
#include <doctest/doctest.h>

#include <chrono>
#include <gnomon/gnomon.hpp>
#include <gnomon/opengl.hpp>
#include <map>
#include <string>
#include <thread>

#include "../../support/gl_fixture.h"
#include "../../support/self_capture.h"
#include "tracy/TracyOpenGL.hpp"

using gnomon::opengl::Context;
using gnomon::opengl::ContextOptions;
using gnomon::server::TraceModel;
using gnomon::test::GlFixture;
using gnomon::test::PointProgram;

namespace {

int g_gen_queries_calls = 0;
void (*g_real_gen_queries)(GLsizei, GLuint*) = nullptr;
void CountingGenQueries(GLsizei n, GLuint* ids) {
  ++g_gen_queries_calls;
  g_real_gen_queries(n, ids);
}
void* CountingLoader(const char* name) {
  if (std::string(name) == "glGenQueries") {
    g_real_gen_queries = reinterpret_cast<void (*)(GLsizei, GLuint*)>(glfwGetProcAddress(name));
    return reinterpret_cast<void*>(&CountingGenQueries);
  }
  return reinterpret_cast<void*>(glfwGetProcAddress(name));
}

gnomon_source_location g_pass{"GL test pass", "test", __FILE__, 1, GNOMON_NO_COLOR, 0};

}  // namespace

TEST_CASE("an inert GL context creates no query and times nothing") {
  GlFixture gl;
  ContextOptions options;
  options.enabled = false;
  auto inert = Context::CreateWith(&CountingLoader, options);
  CHECK_FALSE(inert->is_active());
  CHECK_FALSE(inert->BeginZone(&g_pass));
  CHECK(g_gen_queries_calls == 0);
  auto active = Context::CreateWith(&CountingLoader, {});
  CHECK(active->is_active());
  CHECK(g_gen_queries_calls == 1);
}

TEST_CASE("10,000 GL frames: every zone timed once, nothing invented, and a full ring never overwrites") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  GlFixture gl;
  gnomon::SetThreadName("gl ring");
  ContextOptions options;
  options.queries = 64;
  auto gpu = Context::Create(glfwGetProcAddress, options);
  REQUIRE(gpu->is_active());
  constexpr int kFrames = 10000;
  for (int frame = 0; frame < kFrames; ++frame) {
    REQUIRE(gpu->BeginZone(&g_pass));
    glClear(GL_COLOR_BUFFER_BIT);
    gpu->EndZone();
    if (frame % 8 == 7) {
      glFinish();
      gpu->Collect();
    }
  }
  glFinish();
  gpu->Collect();
  CHECK(gpu->stats().timestamps_read == 2u * kFrames);
  CHECK(gpu->stats().zones_untimed == 0);

  // Without collecting, the ring fills: 32 zones fit in 64 queries, the 33rd is untimed.
  for (int zone = 0; zone < 33; ++zone) {
    const bool timed = gpu->BeginZone(&g_pass);
    CHECK(timed == (zone < 32));
    if (timed) gpu->EndZone();
  }
  CHECK(gpu->stats().zones_untimed == 1);
  glFinish();
  gpu->Collect();
  CHECK(gpu->stats().timestamps_read == 2u * kFrames + 64);

  const uint32_t id = gpu->id();
  REQUIRE(gnomon::test::WaitForModel(worker, [id](const TraceModel& m) {
    auto it = m.gpu_contexts.find(id);
    if (it == m.gpu_contexts.end() || it->second.zones.size() != kFrames + 32) return false;
    for (size_t i = 0; i < it->second.zones.size(); ++i) {
      if (!it->second.zones[i].is_timed()) return false;
    }
    return true;
  }));
  worker.WithModel([id](const TraceModel& m) {
    const auto& c = m.gpu_contexts.at(id);
    CHECK(c.api == uint8_t(gnomon::protocol::GpuApi::kOpenGL));
    CHECK(c.unmatched_gpu_times == 0);
    for (size_t i = 0; i < c.zones.size(); ++i) REQUIRE(c.zones[i].is_timed());
    for (size_t i = 1; i < c.zones.size(); ++i) REQUIRE(c.zones[i].gpu_begin >= c.zones[i - 1].gpu_end);
  });
}

// The Intel source (opengl/intel_performance_query.cpp) on a real driver: its own tests,
// intel_performance_query_test.cpp, run in client_tests against a stand-in driver, with
// no GL context to make; this one needs one, so it runs here.
TEST_CASE("Mesa has no GL_INTEL_performance_query: that source is unavailable and says why") {
  GlFixture gl;
  auto intel = gnomon::opengl::CreateIntelPerformanceQuerySource(glfwGetProcAddress);
  CHECK_FALSE(intel->is_available());
  CHECK(intel->unavailable_reason().find("GL_INTEL_performance_query") != std::string::npos);
  CHECK(intel->query_types().empty());
}

TEST_CASE(
    "GL zones with counters: each counted zone's statistics reach the worker, exact, before its times") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  GlFixture gl;
  gnomon::SetThreadName("gl counters");
  auto source = gnomon::opengl::CreatePipelineStatisticsSource(glfwGetProcAddress);  // outlives the context
  auto gpu = Context::Create(glfwGetProcAddress);
  REQUIRE(gpu->is_active());
  REQUIRE(gpu->AttachCounters(*source));
  GLuint program = PointProgram();
  GLuint vao = 0;
  glGenVertexArrays(1, &vao);
  glBindVertexArray(vao);
  glUseProgram(program);
  constexpr int kFrames = 20;
  for (int frame = 0; frame < kFrames; ++frame) {
    GNOMON_GL_ZONE_COUNTERS(*gpu, "Points");
    {
      GNOMON_GL_ZONE_COUNTERS(*gpu, "Nested");  // GL cannot count inside a counted zone
      glDrawArrays(GL_TRIANGLES, 0, 3 * (frame + 1));
    }
  }
  glFlush();  // as a buffer swap would: Collect() itself never flushes
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (gpu->stats().counter_results_read < kFrames && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    gpu->Collect();
  }
  CHECK(gpu->stats().zones_counted == kFrames);
  CHECK(gpu->stats().zones_uncounted_nested == kFrames);
  CHECK(gpu->stats().counter_results_read == kFrames);
  const uint32_t id = gpu->id();
  REQUIRE(gnomon::test::WaitForModel(worker, [id](const TraceModel& m) {
    auto it = m.gpu_contexts.find(id);
    return it != m.gpu_contexts.end() && it->second.counter_samples.size() == kFrames;
  }));
  worker.WithModel([&](const TraceModel& m) {
    const auto& c = m.gpu_contexts.at(id);
    CHECK(m.diagnostics.counter_results_dropped == 0);
    for (size_t i = 0; i < c.counter_samples.size(); ++i) {
      const auto& sample = c.counter_samples[i];
      CHECK(m.Location(c.zones[sample.target_index].source_location).name == "Points");
      CHECK(c.counter_values[sample.first_value + 0] == 3.0 * double(i + 1));  // vertices submitted
      CHECK(c.counter_values[sample.first_value + 1] == double(i + 1));        // triangles
    }
  });
  glDeleteVertexArrays(1, &vao);
  glDeleteProgram(program);
}

TEST_CASE("Tracy's OpenGL macros: a context from the program's own GL symbols, zones timed and named") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  GlFixture gl;
  gnomon::SetThreadName("tracy gl");
  TracyGpuContext;
  TracyGpuContextName("tracy gl context", 16);
  REQUIRE(tracy::detail::tls_gl_context != nullptr);
  REQUIRE(tracy::detail::tls_gl_context->is_active());
  const uint32_t id = tracy::detail::tls_gl_context->id();
  static constexpr int kFrames = 50;
  for (int frame = 0; frame < kFrames; ++frame) {
    TracyGpuZone("tracy gl frame");
    {
      TracyGpuZoneC("tracy gl clear", tracy::Color::Green);
      glClear(GL_COLOR_BUFFER_BIT);
    }
    TracyGpuNamedZone(off, "tracy gl inactive", false);
    glFinish();
    TracyGpuCollect;
  }
  glFinish();
  TracyGpuCollect;
  REQUIRE(gnomon::test::WaitForModel(worker, [id](const TraceModel& m) {
    auto it = m.gpu_contexts.find(id);
    if (it == m.gpu_contexts.end() || it->second.zones.size() != 2 * kFrames) return false;
    for (size_t i = 0; i < it->second.zones.size(); ++i) {
      if (!it->second.zones[i].is_timed()) return false;
    }
    return true;
  }));
  worker.WithModel([id](const TraceModel& m) {
    const auto& c = m.gpu_contexts.at(id);
    CHECK(c.label() == "tracy gl context");
    std::map<std::string, int> names;
    for (size_t i = 0; i < c.zones.size(); ++i) {
      const auto& location = m.Location(c.zones[i].source_location);
      ++names[location.name];
      if (location.name == "tracy gl clear") CHECK(location.color == 0x00FF00);
    }
    CHECK(names == std::map<std::string, int>{{"tracy gl frame", kFrames}, {"tracy gl clear", kFrames}});
  });
}
