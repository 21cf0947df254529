// The ARB_pipeline_statistics_query counter source (opengl/gl_pipeline_statistics.cpp):
// against a stand-in GL that records every call (what the source asks of the driver,
// and how it refuses a GL without the extension), and in a real GL 3.3 context (Mesa's
// llvmpipe under Xvfb in CI), where the counts of a draw are exact.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <gnomon/gpu_counters.hpp>
#include <gnomon/opengl.hpp>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../support/gl_fixture.h"

using gnomon::counters::FetchMode;
using gnomon::counters::FetchStatus;
using gnomon::test::GlFixture;
using gnomon::test::PointProgram;

namespace {

// The stand-in GL's state: what the source asked of it.
struct FakeGl {
  bool lists_extension = true;
  bool has_query_functions = true;
  uint32_t next_query = 1;
  std::set<uint32_t> live_queries;
  std::vector<std::pair<uint32_t, uint32_t>> begun;  // target, query
  std::vector<uint32_t> ended;                       // targets
  bool results_available = false;
  int flushes = 0;
} g_gl;

constexpr uint32_t kGlNumExtensions = 0x821D;
constexpr uint32_t kGlQueryResult = 0x8866;
constexpr uint32_t kGlQueryResultAvailable = 0x8867;

void FakeGetIntegerv(uint32_t name, int32_t* value) { *value = name == kGlNumExtensions ? 2 : 0; }
const uint8_t* FakeGetStringi(uint32_t, uint32_t index) {
  static const char* kWith[] = {"GL_ARB_timer_query", "GL_ARB_pipeline_statistics_query"};
  static const char* kWithout[] = {"GL_ARB_timer_query", "GL_KHR_debug"};
  const char* const* extensions = g_gl.lists_extension ? kWith : kWithout;
  return reinterpret_cast<const uint8_t*>(index < 2 ? extensions[index] : nullptr);
}
void FakeGenQueries(int32_t n, uint32_t* ids) {
  for (int32_t i = 0; i < n; ++i) {
    ids[i] = g_gl.next_query++;
    g_gl.live_queries.insert(ids[i]);
  }
}
void FakeDeleteQueries(int32_t n, const uint32_t* ids) {
  for (int32_t i = 0; i < n; ++i) g_gl.live_queries.erase(ids[i]);
}
void FakeBeginQuery(uint32_t target, uint32_t query) { g_gl.begun.emplace_back(target, query); }
void FakeEndQuery(uint32_t target) { g_gl.ended.push_back(target); }
void FakeGetQueryObjectiv(uint32_t, uint32_t name, int32_t* value) {
  *value = name == kGlQueryResultAvailable && g_gl.results_available ? 1 : 0;
}
// Each query's result is its name times ten: every value is told apart from the others.
void FakeGetQueryObjectui64v(uint32_t query, uint32_t name, uint64_t* value) {
  *value = name == kGlQueryResult ? uint64_t{query} * 10 : 0;
}
void FakeFlush() { ++g_gl.flushes; }

void* FakeLoader(const char* name) {
  const std::map<std::string, void*> functions = {
      {"glGetIntegerv", reinterpret_cast<void*>(&FakeGetIntegerv)},
      {"glGetStringi", reinterpret_cast<void*>(&FakeGetStringi)},
      {"glGenQueries", reinterpret_cast<void*>(&FakeGenQueries)},
      {"glDeleteQueries", reinterpret_cast<void*>(&FakeDeleteQueries)},
      {"glBeginQuery", reinterpret_cast<void*>(&FakeBeginQuery)},
      {"glEndQuery", reinterpret_cast<void*>(&FakeEndQuery)},
      {"glGetQueryObjectiv", reinterpret_cast<void*>(&FakeGetQueryObjectiv)},
      {"glGetQueryObjectui64v", reinterpret_cast<void*>(&FakeGetQueryObjectui64v)},
      {"glFlush", reinterpret_cast<void*>(&FakeFlush)},
  };
  if (!g_gl.has_query_functions && std::strcmp(name, "glGetQueryObjectui64v") == 0) return nullptr;
  const auto it = functions.find(name);
  return it == functions.end() ? nullptr : it->second;
}

}  // namespace

TEST_CASE("pipeline statistics: no loader, no extension or no query functions: unavailable, and why") {
  auto none = gnomon::opengl::CreatePipelineStatisticsSource(gnomon::opengl::GetProcAddress{nullptr});
  CHECK_FALSE(none->is_available());
  CHECK(none->unavailable_reason() == "no GL loader");

  g_gl = {};
  g_gl.lists_extension = false;
  auto without_extension = gnomon::opengl::CreatePipelineStatisticsSource(&FakeLoader);
  CHECK_FALSE(without_extension->is_available());
  CHECK(without_extension->unavailable_reason().find("GL_ARB_pipeline_statistics_query") !=
        std::string::npos);
  CHECK(without_extension->query_types().empty());
  CHECK(without_extension->Create(0) == 0);

  g_gl = {};
  g_gl.has_query_functions = false;
  auto without_functions = gnomon::opengl::CreatePipelineStatisticsSource(&FakeLoader);
  CHECK_FALSE(without_functions->is_available());
  CHECK(without_functions->unavailable_reason().find("query functions") != std::string::npos);
  CHECK(without_functions->Create(0) == 0);
  CHECK(g_gl.live_queries.empty());  // nothing was made
}

TEST_CASE(
    "pipeline statistics: an instance is a query per statistic, begun and ended together, read as told") {
  g_gl = {};
  auto source = gnomon::opengl::CreatePipelineStatisticsSource(&FakeLoader);
  REQUIRE_MESSAGE(source->is_available(), source->unavailable_reason());
  REQUIRE(source->query_types().size() == 1);
  const auto& type = source->query_types()[0];
  const size_t statistics = type.counters.size();
  REQUIRE(statistics > 0);
  CHECK(type.data_size == statistics * sizeof(uint64_t));
  for (size_t i = 0; i < statistics; ++i) {
    CAPTURE(i);
    CHECK(type.counters[i].offset == i * sizeof(uint64_t));
    CHECK(type.counters[i].data_type == GNOMON_COUNTER_UINT64);
  }
  CHECK(source->Create(1) == 0);  // no such query type

  const uint32_t a = source->Create(0);
  const uint32_t b = source->Create(0);
  REQUIRE(a != 0);
  REQUIRE(b != 0);
  CHECK(a != b);
  CHECK(g_gl.live_queries.size() == 2 * statistics);

  gnomon::counters::Values values;
  CHECK(source->Fetch(a, FetchMode::kWait, values) == FetchStatus::kNotReady);  // never begun
  REQUIRE(source->Begin(a));
  CHECK_FALSE(source->Begin(a));  // already running
  CHECK_FALSE(source->Begin(b));  // GL has one active query per target
  REQUIRE(g_gl.begun.size() == statistics);
  std::set<uint32_t> targets;
  for (const auto& [target, query] : g_gl.begun) targets.insert(target);
  CHECK(targets.size() == statistics);  // each statistic its own target
  CHECK(source->Fetch(a, FetchMode::kWait, values) == FetchStatus::kNotReady);  // not ended: never read
  source->End(a);
  CHECK(std::set<uint32_t>(g_gl.ended.begin(), g_gl.ended.end()) == targets);

  // Not available yet: a look does not flush, a flush does, neither reads.
  CHECK(source->Fetch(a, FetchMode::kDoNotFlush, values) == FetchStatus::kNotReady);
  CHECK(g_gl.flushes == 0);
  CHECK(source->Fetch(a, FetchMode::kFlush, values) == FetchStatus::kNotReady);
  CHECK(g_gl.flushes == 1);
  g_gl.results_available = true;
  REQUIRE(source->Fetch(a, FetchMode::kDoNotFlush, values) == FetchStatus::kReady);
  REQUIRE(values.values.size() == statistics);
  for (size_t i = 0; i < statistics; ++i) {
    CAPTURE(i);
    CHECK(values.values[i] == uint64_t{g_gl.begun[i].second} * 10);  // each counter its own query's
  }
  CHECK(values.flags == 0);

  // Waiting reads without asking whether the results are there (GL waits for them).
  g_gl.results_available = false;
  g_gl.begun.clear();
  REQUIRE(source->Begin(b));
  source->End(b);
  REQUIRE(source->Fetch(b, FetchMode::kWait, values) == FetchStatus::kReady);
  CHECK(values.values[0] == uint64_t{g_gl.begun[0].second} * 10);

  // Destroyed while running: its queries are ended first, then deleted.
  REQUIRE(source->Begin(a));
  g_gl.ended.clear();
  source->Destroy(a);
  CHECK(g_gl.ended.size() == statistics);
  CHECK(g_gl.live_queries.size() == statistics);  // b's
  CHECK(source->Fetch(a, FetchMode::kWait, values) == FetchStatus::kFailed);
  REQUIRE(source->Begin(b));  // nothing runs any more
  source->End(b);
  source.reset();
  CHECK(g_gl.live_queries.empty());  // the source deletes what it made
}

TEST_CASE("ARB pipeline statistics: not ready before the instance ends, then exact counts of a draw") {
  GlFixture gl;
  auto source = gnomon::opengl::CreatePipelineStatisticsSource(glfwGetProcAddress);
  REQUIRE_MESSAGE(source->is_available(), source->unavailable_reason());
  REQUIRE(source->query_types().size() == 1);
  const auto& type = source->query_types()[0];
  CHECK(type.name == "pipeline statistics");
  REQUIRE(type.counters.size() == 11);
  CHECK(type.counters[0].name == "vertices submitted");
  CHECK(type.counters[1].name == "primitives submitted");

  GLuint program = PointProgram();
  GLuint vao = 0;
  glGenVertexArrays(1, &vao);
  glBindVertexArray(vao);
  glUseProgram(program);

  const uint32_t instance = source->Create(0);
  REQUIRE(instance != 0);
  gnomon::counters::Values values;
  CHECK(source->Fetch(instance, gnomon::counters::FetchMode::kWait, values) ==
        gnomon::counters::FetchStatus::kNotReady);  // never begun
  REQUIRE(source->Begin(instance));
  CHECK_FALSE(source->Begin(instance));  // already running
  glDrawArrays(GL_POINTS, 0, 1000);
  CHECK(source->Fetch(instance, gnomon::counters::FetchMode::kWait, values) ==
        gnomon::counters::FetchStatus::kNotReady);  // not ended: never read
  source->End(instance);
  // The first look submits the draw; later looks only look (for up to five seconds).
  gnomon::counters::FetchStatus status = source->Fetch(instance, gnomon::counters::FetchMode::kFlush, values);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (status == gnomon::counters::FetchStatus::kNotReady && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    status = source->Fetch(instance, gnomon::counters::FetchMode::kDoNotFlush, values);
  }
  REQUIRE(status == gnomon::counters::FetchStatus::kReady);
  REQUIRE(values.values.size() == 11);
  CHECK(values.values[0] == 1000);  // vertices submitted
  CHECK(values.values[1] == 1000);  // primitives submitted (points)
  source->Destroy(instance);
  glDeleteVertexArrays(1, &vao);
  glDeleteProgram(program);
}
