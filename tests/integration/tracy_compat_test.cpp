// Programs written against Tracy's interface (tracy_program.cpp, tracy_c_program.c),
// linked with gnomon::tracy and captured over real TCP: every event they make arrives
// as what Gnomon records; built without TRACY_ENABLE they run and open no port.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <set>

#include "../support/process.h"
#include "capture_helper.h"
#include "gnomon/server/trace_model.h"

using gnomon::server::TraceModel;
using gnomon::test::CaptureProgram;
using gnomon::test::CountsByName;

namespace {

const gnomon::server::ThreadTimeline* ThreadNamed(const TraceModel& m, const std::string& name) {
  for (const auto& t : m.threads) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const gnomon::server::MemoryPool* PoolNamed(const TraceModel& m, const std::string& name) {
  for (const auto& [id, pool] : m.memory_pools) {
    if (pool.name == name) return &pool;
  }
  return nullptr;
}

size_t PlotPoints(const TraceModel& m, const std::string& name) {
  size_t n = 0;
  for (const auto& [id, plot] : m.plots) n += plot.name == name ? plot.points.size() : 0;
  return n;
}

const gnomon::server::FrameSeries* FramesNamed(const TraceModel& m, const std::string& name) {
  for (const auto& [id, series] : m.frames) {
    if (series.name == name) return &series;
  }
  return nullptr;
}

const gnomon::server::GpuContextTimeline* GpuContextLabelled(const TraceModel& m, const std::string& label) {
  for (const auto& [id, context] : m.gpu_contexts) {
    if (context.label() == label) return &context;
  }
  return nullptr;
}

std::set<std::string> MessageTexts(const TraceModel& m) {
  std::set<std::string> texts;
  for (const auto& message : m.messages) texts.insert(message.text);
  return texts;
}

// Runs a program built without TRACY_ENABLE and without Gnomon: it must work as
// before, and open no port.
void CheckDisabled(const std::string& program, const std::string& done) {
  gnomon::test::ScratchDir dir;
  const std::string port_file = dir.File("port");
  std::string output;
  const int exit_code =
      gnomon::test::RunCommand("GNOMON_PORT=0 GNOMON_PORT_FILE=" + port_file + " " + program, &output);
  CHECK_MESSAGE(exit_code == 0, output);
  CHECK(output.find(done) != std::string::npos);
  CHECK(output.find("connected 0") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(port_file));
}

}  // namespace

#ifdef GNOMON_TEST_TRACY_PROGRAM
TEST_CASE("a multi-threaded C++ program written for Tracy: zones, locks, memory, plots, frames, GPU zones") {
  auto capture = CaptureProgram({GNOMON_TEST_TRACY_PROGRAM});
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  const auto counts = CountsByName(m);
  CHECK(counts.at("tracy work") == 2000);
  CHECK(counts.at("tracy inner") == 2000);
  CHECK(counts.at("tracy frame") == 10);
  CHECK(counts.at("tracy transient") == 3);
  CHECK(counts.at("renamed 7") == 1);
  CHECK(counts.count("tracy inactive") == 0);        // active false, and an int 0
  CHECK(counts.at("tracy active by flag") == 2000);  // an unsigned that is not 0
  CHECK(m.diagnostics.events_without_thread == 0);

  for (int t = 0; t < 4; ++t) CHECK(ThreadNamed(m, "tracy worker " + std::to_string(t)) != nullptr);
  const auto* main_thread = ThreadNamed(m, "tracy main");
  REQUIRE(main_thread != nullptr);
  // Attributes, colours and nesting on a worker.
  const auto* worker = ThreadNamed(m, "tracy worker 0");
  REQUIRE(worker != nullptr);
  std::set<uint32_t> transient_locations;
  for (size_t i = 0; i < main_thread->zones.size(); ++i) {
    if (m.ZoneName(*main_thread, i) == "tracy transient")
      transient_locations.insert(main_thread->zones[i].source_location);
    if (m.ZoneName(*main_thread, i) == "renamed 7") {
      CHECK(main_thread->attributes.at(i).text == "text formatted");
      CHECK(m.Location(main_thread->zones[i].source_location).function == "ScopedFunction");
    }
  }
  CHECK(transient_locations.size() == 1);  // made at run time three times, one location
  size_t inner_seen = 0;
  for (size_t i = 0; i < worker->zones.size(); ++i) {
    const auto zone = worker->zones[i];
    if (m.ZoneName(*worker, i) == "tracy inner") {
      ++inner_seen;
      CHECK(zone.depth == 1);
      CHECK(m.Location(zone.source_location).color == 0xFF0000);
      CHECK(worker->attributes.at(i).text == "inner");
    } else if (m.ZoneName(*worker, i) == "tracy work") {
      CHECK(zone.depth == 0);
      CHECK(worker->attributes.at(i).value < 500);
      CHECK(m.Location(zone.source_location).color == 0xFF000000u);  // no colour
    }
  }
  CHECK(inner_seen == 500);

  REQUIRE(m.locks.size() == 1);
  const auto& lock = m.locks.begin()->second;
  CHECK(lock.name == "std::mutex shared_lock");
  CHECK(lock.holds.size() == 2000);
  for (size_t i = 0; i < lock.holds.size(); ++i) CHECK(lock.holds[i].is_released());

  const auto* pool = PoolNamed(m, "default");
  REQUIRE(pool != nullptr);
  CHECK(pool->allocations.size() == 2000);
  CHECK(pool->frees == 2000);
  const auto* kept = PoolNamed(m, "tracy pool");
  REQUIRE(kept != nullptr);
  CHECK(kept->allocations.size() == 4);
  CHECK(kept->frees == 0);
  CHECK(PlotPoints(m, "tracy counter") == 2000);

  CHECK(m.frames.at(0).marks.size() == 10);
  const auto* named = FramesNamed(m, "tracy frames");
  REQUIRE(named != nullptr);
  CHECK(named->marks.size() == 3);
  const auto* discontinuous = FramesNamed(m, "tracy discontinuous");
  REQUIRE(discontinuous != nullptr);
  CHECK(discontinuous->spans.size() == 2);
  CHECK(MessageTexts(m) == std::set<std::string>{"tracy test app", "tracy hello", "tracy colored"});

  // GPU zones on lavapipe: every zone timed, the pass inside its frame, each after the
  // CPU recorded it (within the context's stated bound).
  if (capture.log.find("gpu frames 20") == std::string::npos) {
    MESSAGE("no Vulkan device: GPU zones not checked");
    return;
  }
  REQUIRE(m.gpu_contexts.size() == 2);
  const auto* found = GpuContextLabelled(m, "tracy queue");
  REQUIRE(found != nullptr);
  const auto& gpu = *found;
  REQUIRE(gpu.zones.size() == 40);
  std::map<std::string, int> gpu_counts;
  for (size_t i = 0; i < gpu.zones.size(); ++i) {
    const auto& zone = gpu.zones[i];
    REQUIRE(zone.is_timed());
    CHECK(zone.thread_id == main_thread->id);
    ++gpu_counts[m.Location(zone.source_location).name];
    const auto mapped = m.MapGpuZone(gpu, zone);
    CHECK(mapped.end_ns >= mapped.begin_ns);
    CHECK(mapped.begin_ns + int64_t(mapped.absolute_ns()) + 1000 >= m.clock.TickToNs(zone.cpu_begin_tick));
    if (m.Location(zone.source_location).name == "tracy gpu pass" && i > 0) {
      const auto frame = m.MapGpuZone(gpu, gpu.zones[i - 1]);
      CHECK(mapped.begin_ns >= frame.begin_ns);
      CHECK(mapped.end_ns <= frame.end_ns);
    }
  }
  CHECK(gpu_counts == std::map<std::string, int>{{"tracy gpu frame", 20}, {"tracy gpu pass", 20}});
  // The context made through the symbol table, calibrated by a timed probe.
  const auto* symbols = GpuContextLabelled(m, "tracy symbols");
  REQUIRE(symbols != nullptr);
  REQUIRE(symbols->zones.size() == 20);
  for (size_t i = 0; i < symbols->zones.size(); ++i) {
    REQUIRE(symbols->zones[i].is_timed());
    CHECK(m.Location(symbols->zones[i].source_location).name == "tracy gpu symbols");
  }
}

TEST_CASE("the Tracy C++ program without TRACY_ENABLE needs no Gnomon and opens no port") {
  CheckDisabled(GNOMON_TEST_TRACY_PROGRAM_DISABLED, "tracy program done: counter 2000");
}
#endif

TEST_CASE(
    "a C program written for Tracy: zones, run-time locations, a lock, memory, and GPU times placed "
    "exactly") {
  auto capture = CaptureProgram({GNOMON_TEST_TRACY_C_PROGRAM});
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  const auto counts = CountsByName(m);
  CHECK(counts.at("tracy c outer") == 5);
  CHECK(counts.at("tracy c renamed") == 5);
  CHECK(counts.at("tracy c locked") == 400);  // zones of the two locker threads
  CHECK(counts.at("tracy c marker") == 5);
  CHECK(counts.count("tracy c inactive") == 0);
  const auto* main_thread = ThreadNamed(m, "tracy c main");
  REQUIRE(main_thread != nullptr);
  CHECK(ThreadNamed(m, "tracy c locker") != nullptr);
  size_t outer_seen = 0;
  std::vector<std::pair<int64_t, int64_t>> markers;
  for (size_t i = 0; i < main_thread->zones.size(); ++i) {
    const auto zone = main_thread->zones[i];
    const std::string name = m.ZoneName(*main_thread, i);
    if (name == "tracy c outer") {
      CHECK(main_thread->attributes.at(i).text == "outer text");
      CHECK(main_thread->attributes.at(i).value == outer_seen);
      CHECK(m.Location(zone.source_location).color == 0x3366FF);
      ++outer_seen;
    } else if (name == "tracy c renamed") {
      CHECK(zone.depth == 1);
      CHECK(main_thread->attributes.at(i).color == 0x112233);
      CHECK(m.Location(zone.source_location).function == "main");
    } else if (name == "tracy c marker") {
      markers.emplace_back(m.clock.TickToNs(zone.begin_tick), m.clock.TickToNs(zone.end_tick));
    }
  }
  CHECK(outer_seen == 5);

  REQUIRE(m.locks.size() == 1);
  const auto& lock = m.locks.begin()->second;
  CHECK(lock.name == "tracy c mutex");  // the custom name, given before the first use
  REQUIRE(lock.holds.size() == 402);
  // The waiter blocked 20 ms behind main's hold: a wait. Main's own took no time.
  size_t long_waits = 0;
  for (size_t i = 0; i < lock.holds.size(); ++i) {
    CHECK(lock.holds[i].is_released());
    const auto& h = lock.holds[i];
    if (h.is_contended() && m.DurationNs(h.wait_tick, h.obtain_tick) >= 15'000'000) ++long_waits;
  }
  CHECK(long_waits == 1);
  const auto* pool = PoolNamed(m, "tracy c pool");
  REQUIRE(pool != nullptr);
  CHECK(pool->allocations.size() == 5);
  CHECK(pool->frees == 5);
  CHECK(PlotPoints(m, "tracy c plot") == 10);
  CHECK(m.frames.at(0).marks.size() == 5);
  const auto* named = FramesNamed(m, "tracy c frames");
  REQUIRE(named != nullptr);
  CHECK(named->marks.size() == 1);
  CHECK(MessageTexts(m) == std::set<std::string>{"tracy c app", "tracy c hello"});

  // The GPU fed through the C interface with the CPU time of each pair: each pass
  // begins, on the timeline, inside the CPU zone that read the instant it was given,
  // within the stated bound; 250 µs long to the ns.
  REQUIRE(m.gpu_contexts.size() == 2);
  const auto* found = GpuContextLabelled(m, "tracy c queue");
  REQUIRE(found != nullptr);
  const auto& gpu = *found;
  CHECK(gpu.clock.rejected_count() == 0);
  REQUIRE(gpu.zones.size() == 5);
  REQUIRE(markers.size() == 5);
  for (size_t i = 0; i < gpu.zones.size(); ++i) {
    const auto& zone = gpu.zones[i];
    REQUIRE(zone.is_timed());
    CHECK(m.Location(zone.source_location).name == "tracy c gpu pass");
    const auto mapped = m.MapGpuZone(gpu, zone);
    CHECK(mapped.end_ns - mapped.begin_ns == doctest::Approx(250000).epsilon(0.001));
    CHECK(mapped.absolute_ns() <= 250);  // 50 ns stated per pair, interpolated
    const int64_t slack = int64_t(mapped.absolute_ns()) + 200;
    CHECK(mapped.begin_ns >= markers[i].first - slack);
    CHECK(mapped.begin_ns <= markers[i].second + slack);
  }
  // Tracy's own calls, CPU times read at the call: placed, with the 1 ms bound such
  // pairs are stated with.
  const auto* plain = GpuContextLabelled(m, "GPU context 4");
  REQUIRE(plain != nullptr);
  REQUIRE(plain->zones.size() == 3);
  for (size_t i = 0; i < plain->zones.size(); ++i) {
    REQUIRE(plain->zones[i].is_timed());
    CHECK(m.Location(plain->zones[i].source_location).name == "tracy c plain pass");
    const auto mapped = m.MapGpuZone(*plain, plain->zones[i]);
    CHECK(mapped.end_ns - mapped.begin_ns == doctest::Approx(100000).epsilon(0.01));
    CHECK(mapped.absolute_ns() >= 1000000);
  }
}

TEST_CASE("the Tracy C program without TRACY_ENABLE needs no Gnomon and opens no port") {
  CheckDisabled(GNOMON_TEST_TRACY_C_PROGRAM_DISABLED, "tracy c program done: counter 401");
}

TEST_CASE("a zone name made at run time does not compile, as in Tracy, constant names do") {
  const std::string source = std::string(GNOMON_SOURCE_DIR) + "/";
  const std::string compile = std::string(GNOMON_CXX_COMPILER) +
                              " -std=c++20 -fsyntax-only -DTRACY_ENABLE -I" + source + "client/include -I" +
                              source + "client/tracy/include -I" + source + "protocol/include " + source +
                              "tests/integration/zone_name_at_run_time.cpp";
  std::string output;
  CHECK_MESSAGE(gnomon::test::RunCommand(compile + " -DGNOMON_TEST_CONSTANT_NAMES", &output) == 0, output);
  for (const char* variant : {"", " -DGNOMON_TEST_NATIVE"}) {
    CAPTURE(variant);
    CHECK(gnomon::test::RunCommand(compile + variant, &output) != 0);
    CHECK_MESSAGE(output.find("gnomon_zone_name_must_be_a_constant") != std::string::npos, output);
  }
}
