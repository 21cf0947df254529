// Tracy's C interface recorded by Gnomon (tracy/tracy_api.cpp): the ___tracy_* functions
// a C program or a binding calls, through the real client to a worker connected to this
// process. (tests/integration/tracy_compat_test.cpp runs whole programs written for
// Tracy; these check each call's mapping.)
#ifndef TRACY_ENABLE
#define TRACY_ENABLE  // the functions are declared with it; gnomon::tracy records either way
#endif
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <gnomon/gnomon.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../../support/self_capture.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/worker.h"
#include "tracy/TracyC.h"

using gnomon::server::TraceModel;
using gnomon::server::Worker;
using gnomon::test::FindThread;
using gnomon::test::WaitForModel;

namespace {

const gnomon::server::Lock* FindLock(const TraceModel& m, const std::string& name) {
  for (const auto& [id, lock] : m.locks) {
    if (lock.name == name) return &lock;
  }
  return nullptr;
}

const gnomon::server::GpuContextTimeline* FindGpuContext(const TraceModel& m, const std::string& label) {
  for (const auto& [id, context] : m.gpu_contexts) {
    if (context.label() == label) return &context;
  }
  return nullptr;
}

size_t LocationsNamed(const TraceModel& m, const std::string& name) {
  size_t n = 0;
  for (const auto& location : m.source_locations) n += location.name == name;
  return n;
}

}  // namespace

TEST_CASE(
    "Tracy's C zones: locations by pointer or by content, attributes, and inactive zones not recorded") {
  Worker& worker = gnomon::test::SelfCapture();
  CHECK(___tracy_profiler_started() == 1);
  CHECK(___tracy_connected() == 1);
  std::thread([] {
    static const ___tracy_source_location_data kOuter{"tracy zone", "TracyZones", __FILE__, 10, 0x00FF00};
    ___tracy_set_thread_name("tracy c zones");
    const TracyCZoneCtx outer = ___tracy_emit_zone_begin(&kOuter, 1);
    ___tracy_emit_zone_text(outer, "some text", 9);
    ___tracy_emit_zone_name(outer, "named at run time", 17);
    ___tracy_emit_zone_value(outer, 7);
    const TracyCZoneCtx inactive = ___tracy_emit_zone_begin(&kOuter, 0);
    ___tracy_emit_zone_text(inactive, "never", 5);
    ___tracy_emit_zone_end(inactive);  // closes nothing: the outer zone stays open
    for (int i = 0; i < 100; ++i) {
      // A location made at run time, the same each time: one location in all.
      const std::string function = std::string("Transient") + "Function";
      const uint64_t srcloc = ___tracy_alloc_srcloc_name(20, __FILE__, std::strlen(__FILE__), function.data(),
                                                         function.size(), "tracy transient", 15, 0);
      const TracyCZoneCtx transient = ___tracy_emit_zone_begin_alloc(srcloc, 1);
      ___tracy_emit_zone_end(transient);
    }
    ___tracy_emit_zone_end(outer);
  }).join();
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    const auto* t = FindThread(m, "tracy c zones");
    return t != nullptr && t->zones.size() == 101 && t->zones[0].end_tick != gnomon::server::kOpenZone;
  }));
  worker.WithModel([](const TraceModel& m) {
    const auto* t = FindThread(m, "tracy c zones");
    const auto& outer = m.Location(t->zones[0].source_location);
    CHECK(outer.name == "tracy zone");
    CHECK(outer.function == "TracyZones");
    CHECK(outer.line == 10);
    CHECK(outer.color == 0x00FF00);
    CHECK(t->zones[0].depth == 0);
    CHECK(m.ZoneName(*t, 0) == "named at run time");
    CHECK(t->attributes.at(0).text == "some text");
    CHECK(t->attributes.at(0).value == 7);
    for (size_t i = 1; i < t->zones.size(); ++i) {
      REQUIRE(t->zones[i].depth == 1);
      REQUIRE(m.Location(t->zones[i].source_location).name == "tracy transient");
    }
    const auto& transient = m.Location(t->zones[1].source_location);
    CHECK(transient.function == "TransientFunction");
    CHECK(transient.color == GNOMON_NO_COLOR);  // Tracy's 0: no colour
    CHECK(LocationsNamed(m, "tracy transient") == 1);
  });
}

TEST_CASE("Tracy's plots, frames, messages and memory become Gnomon's") {
  Worker& worker = gnomon::test::SelfCapture();
  static char block[32];
  std::thread([] {
    ___tracy_set_thread_name("tracy c events");
    ___tracy_emit_plot("tracy plot", 1.5);
    ___tracy_emit_plot_int("tracy plot", 2);
    ___tracy_emit_plot_float("tracy plot", 2.5f);
    ___tracy_emit_frame_mark_start("tracy spans");
    ___tracy_emit_frame_mark_end("tracy spans");
    ___tracy_emit_frame_mark("tracy marks");
    ___tracy_emit_frame_mark("tracy marks");
    ___tracy_emit_messageL("tracy message", 0);
    ___tracy_emit_messageC("tracy sized message and more", 19, 0xFF0000, 0);
    ___tracy_emit_memory_alloc_named(block, sizeof(block), 0, "tracy pool");
    ___tracy_emit_memory_free_named(block, 0, "tracy pool");
  }).join();
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    const auto* t = FindThread(m, "tracy c events");
    if (t == nullptr) return false;
    size_t messages = 0;
    for (const auto& message : m.messages) messages += message.thread_id == t->id;
    bool freed = false;
    for (const auto& [id, pool] : m.memory_pools) freed |= pool.name == "tracy pool" && pool.frees == 1;
    return messages == 2 && freed;
  }));
  worker.WithModel([](const TraceModel& m) {
    const auto* t = FindThread(m, "tracy c events");
    std::vector<std::string> texts;
    for (const auto& message : m.messages) {
      if (message.thread_id != t->id) continue;
      texts.push_back(message.text);
      CHECK(message.severity == GNOMON_INFO);
    }
    CHECK(texts == std::vector<std::string>{"tracy message", "tracy sized message"});
    bool plotted = false;
    for (const auto& [id, plot] : m.plots) {
      if (plot.name != "tracy plot") continue;
      plotted = true;
      REQUIRE(plot.points.size() == 3);
      CHECK(plot.points[0].second == 1.5);
      CHECK(plot.points[1].second == 2.0);
      CHECK(plot.points[2].second == 2.5);
    }
    CHECK(plotted);
    size_t spans = 0, marks = 0;
    for (const auto& [id, series] : m.frames) {
      if (series.name == "tracy spans") spans += series.spans.size();
      if (series.name == "tracy marks") marks += series.marks.size();
    }
    CHECK(spans == 1);
    CHECK(marks == 2);
    for (const auto& [id, pool] : m.memory_pools) {
      if (pool.name != "tracy pool") continue;
      REQUIRE(pool.allocations.size() == 1);
      CHECK(pool.allocations[0].size_bytes == sizeof(block));
      CHECK(pool.allocations[0].address == reinterpret_cast<uintptr_t>(block));
      CHECK(pool.allocations[0].is_freed());
    }
  });
}

TEST_CASE(
    "Tracy's locks: named by the program or their location, held, and waited for when it took a while") {
  Worker& worker = gnomon::test::SelfCapture();
  std::thread([] {
    ___tracy_set_thread_name("tracy c locks");
    static const ___tracy_source_location_data kNamed{"tracy mutex", "Locks", __FILE__, 30, 0};
    __tracy_lockable_context_data* lock = ___tracy_announce_lockable_ctx(&kNamed);
    ___tracy_custom_name_lockable_ctx(lock, "custom lock name", 16);  // before its first event: its name
    ___tracy_after_try_lock_lockable_ctx(lock, 1);                    // taken at once: a hold, no wait
    ___tracy_after_unlock_lockable_ctx(lock);
    ___tracy_after_try_lock_lockable_ctx(lock, 0);  // not taken: nothing
    CHECK(___tracy_before_lock_lockable_ctx(lock) == 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // it blocked
    ___tracy_after_lock_lockable_ctx(lock);
    ___tracy_after_unlock_lockable_ctx(lock);
    ___tracy_terminate_lockable_ctx(lock);
    static const ___tracy_source_location_data kUnnamed{nullptr, "LockFunction", __FILE__, 42, 0};
    __tracy_lockable_context_data* unnamed = ___tracy_announce_lockable_ctx(&kUnnamed);
    ___tracy_after_try_lock_lockable_ctx(unnamed, 1);
    ___tracy_after_unlock_lockable_ctx(unnamed);
    ___tracy_terminate_lockable_ctx(unnamed);
  }).join();
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    const auto* named = FindLock(m, "custom lock name");
    const auto* unnamed = FindLock(m, "LockFunction:42");
    return named != nullptr && named->holds.size() == 2 && named->holds[1].is_released() &&
           unnamed != nullptr && unnamed->holds.size() == 1;
  }));
  worker.WithModel([](const TraceModel& m) {
    const auto* t = FindThread(m, "tracy c locks");
    REQUIRE(t != nullptr);
    const auto& holds = FindLock(m, "custom lock name")->holds;
    CHECK_FALSE(holds[0].is_contended());
    CHECK(holds[0].is_released());
    CHECK(holds[0].thread_id == t->id);
    CHECK(holds[1].is_contended());
    CHECK(holds[1].wait_tick < holds[1].obtain_tick);
    CHECK(holds[1].obtain_tick >= holds[0].release_tick);
    CHECK(FindLock(m, "tracy mutex") == nullptr);  // the program's name won
  });
}

TEST_CASE("Tracy's GPU contexts: made with their CPU time, named, their zones timed, others go nowhere") {
  Worker& worker = gnomon::test::SelfCapture();
  std::thread([] {
    ___tracy_set_thread_name("tracy c gpu");
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    const int64_t now = int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    ___tracy_emit_gpu_new_context_cpu_time({.gpuTime = 5000,
                                            .cpuTime = now,
                                            .period = 1.0f,
                                            .deviation = 100,
                                            .context = 201,
                                            .flags = 1,  // calibrated
                                            .type = 2,   // Vulkan
                                            .cpuClock = ___gnomon_tracy_cpu_clock_monotonic_raw});
    static const char kName[] = "tracy gpu context";
    ___tracy_emit_gpu_context_name({.context = 201, .name = kName, .len = uint16_t(sizeof(kName) - 1)});
    static const ___tracy_source_location_data kPass{"tracy gpu pass", "Gpu", __FILE__, 50, 0};
    const auto srcloc = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&kPass));
    ___tracy_emit_gpu_zone_begin({.srcloc = srcloc, .queryId = 1, .context = 201});
    ___tracy_emit_gpu_zone_end({.queryId = 2, .context = 201});
    // Context 202 was never made: nothing of it is recorded.
    ___tracy_emit_gpu_zone_begin({.srcloc = srcloc, .queryId = 3, .context = 202});
    ___tracy_emit_gpu_zone_end({.queryId = 4, .context = 202});
    ___tracy_emit_gpu_time({.gpuTime = 6000, .queryId = 1, .context = 201});
    ___tracy_emit_gpu_time({.gpuTime = 6500, .queryId = 2, .context = 201});
    GNOMON_ZONE("tracy c gpu done");  // the thread's events did flow past them
  }).join();
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    const auto* c = FindGpuContext(m, "tracy gpu context");
    const auto* t = FindThread(m, "tracy c gpu");
    return c != nullptr && c->zones.size() == 1 && c->zones[0].is_timed() && t != nullptr &&
           !t->zones.empty();
  }));
  worker.WithModel([](const TraceModel& m) {
    const auto* c = FindGpuContext(m, "tracy gpu context");
    CHECK(c->device_name == "GPU context 201");
    CHECK(c->api == uint8_t(gnomon::protocol::GpuApi::kVulkan));
    CHECK(c->flags == GNOMON_GPU_CONTEXT_CALIBRATED);
    CHECK(c->zones[0].gpu_end - c->zones[0].gpu_begin == 500);
    CHECK(m.Location(c->zones[0].source_location).name == "tracy gpu pass");
    size_t zones_on_thread = 0;
    const auto* t = FindThread(m, "tracy c gpu");
    for (const auto& [id, context] : m.gpu_contexts) {
      for (size_t i = 0; i < context.zones.size(); ++i)
        zones_on_thread += context.zones[i].thread_id == t->id;
    }
    CHECK(zones_on_thread == 1);
  });
}
