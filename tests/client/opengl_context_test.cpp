// The OpenGL collector in a real GL 3.3 context (Mesa's llvmpipe under Xvfb in CI),
// captured by a worker connected to this process.
#include <doctest/doctest.h>

#define GLFW_INCLUDE_GLCOREARB
#define GL_GLEXT_PROTOTYPES
#include <GLFW/glfw3.h>
#include <gnomon/gnomon.hpp>
#include <gnomon/opengl.hpp>

#include <cstdlib>
#include <string>

#include "../support/self_capture.h"
#include "../support/xvfb.h"

using gnomon::opengl::Context;
using gnomon::opengl::ContextOptions;
using gnomon::server::TraceModel;

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

// A hidden window with a current GL 3.3 core context, on an Xvfb of its own.
struct GlFixture {
  gnomon::test::Xvfb xvfb;
  GLFWwindow* window = nullptr;
  GlFixture() {
    REQUIRE_MESSAGE(!xvfb.display().empty(), "Xvfb did not start");
    setenv("DISPLAY", xvfb.display().c_str(), 1);
    REQUIRE(glfwInit());
    glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    window = glfwCreateWindow(64, 64, "gnomon test", nullptr, nullptr);
    REQUIRE(window != nullptr);
    glfwMakeContextCurrent(window);
  }
  ~GlFixture() {
    glfwDestroyWindow(window);
    glfwTerminate();
  }
};

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
    CHECK(c.pending.empty());
    CHECK(c.early_times.empty());
    for (size_t i = 1; i < c.zones.size(); ++i) REQUIRE(c.zones[i].gpu_begin >= c.zones[i - 1].gpu_end);
  });
}
