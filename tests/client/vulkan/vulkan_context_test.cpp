// The Vulkan collector on a real Vulkan device (Mesa's lavapipe in CI), captured by a
// worker connected to this process: the ring's rules, one by one.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <gnomon/gnomon.hpp>
#include <gnomon/vulkan.hpp>
#include <thread>

#include "../../support/self_capture.h"
#include "../../support/vulkan_fixture.h"
#include "gnomon/protocol/messages.h"

using gnomon::server::TraceModel;
using gnomon::vulkan::Context;
using gnomon::vulkan::ContextOptions;

namespace {

std::atomic<int> g_query_pools_created{0};
PFN_vkCreateQueryPool g_real_create_query_pool = nullptr;

VKAPI_ATTR VkResult VKAPI_CALL CountingCreateQueryPool(VkDevice device, const VkQueryPoolCreateInfo* info,
                                                       const VkAllocationCallbacks* allocator,
                                                       VkQueryPool* pool) {
  ++g_query_pools_created;
  return g_real_create_query_pool(device, info, allocator, pool);
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL CountingGetDeviceProcAddr(VkDevice device, const char* name) {
  if (std::string(name) == "vkCreateQueryPool") {
    g_real_create_query_pool = reinterpret_cast<PFN_vkCreateQueryPool>(vkGetDeviceProcAddr(device, name));
    return reinterpret_cast<PFN_vkVoidFunction>(&CountingCreateQueryPool);
  }
  return vkGetDeviceProcAddr(device, name);
}

// A loader of our own: counts query pools the collector creates.
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL CountingGetInstanceProcAddr(VkInstance instance, const char* name) {
  if (std::string(name) == "vkGetDeviceProcAddr")
    return reinterpret_cast<PFN_vkVoidFunction>(&CountingGetDeviceProcAddr);
  return vkGetInstanceProcAddr(instance, name);
}

struct Fixture : gnomon::test::VulkanFixture {
  std::unique_ptr<Context> Make(ContextOptions options) {
    options.calibrated_timestamps = vk.calibrated_timestamps;
    options.host_query_reset = vk.host_query_reset;
    return Context::Create(&CountingGetInstanceProcAddr, vk.instance, vk.physical, vk.device, vk.queue,
                           vk.family, options);
  }
};

gnomon_source_location g_pass{"Test pass", "test", __FILE__, 1, GNOMON_NO_COLOR, 0};

void WaitAtGate(VkCommandBuffer cmd, VkEvent gate) {
  vkCmdWaitEvents(cmd, 1, &gate, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, nullptr,
                  0, nullptr, 0, nullptr);
}

const gnomon::server::GpuContextTimeline* FindContext(const TraceModel& m, uint32_t id) {
  auto it = m.gpu_contexts.find(id);
  return it == m.gpu_contexts.end() ? nullptr : &it->second;
}

}  // namespace

TEST_CASE("an inert context creates no Vulkan object and times nothing") {
  Fixture f;
  g_query_pools_created = 0;
  ContextOptions options;
  options.enabled = false;
  auto gpu = f.Make(options);
  CHECK_FALSE(gpu->is_active());
  CHECK(g_query_pools_created == 0);
  VkCommandBuffer cmd = f.vk.NewCommandBuffer();
  gpu->BeginFrame(cmd);
  CHECK_FALSE(gpu->BeginZone(cmd, &g_pass));
  gpu->EndFrame();
  gpu->Collect();
  CHECK(gpu->stats().zones_recorded == 0);

  auto active = f.Make({});
  CHECK(active->is_active());
  CHECK(g_query_pools_created == 1);
  CHECK(active->uses_calibrated_timestamps() == f.vk.calibrated_timestamps);
}

TEST_CASE("10,000 frames pass through the ring with nothing lost or invented") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  Fixture f;
  std::thread([&] {
    gnomon::SetThreadName("vulkan ring");
    ContextOptions options;
    options.frames_in_flight = 3;  // as many as this loop keeps in flight
    options.queries_per_frame = 8;
    auto gpu = f.Make(options);
    REQUIRE(gpu->is_active());
    constexpr int kFrames = 10000;
    VkCommandBuffer cmds[3] = {f.vk.NewCommandBuffer(), f.vk.NewCommandBuffer(), f.vk.NewCommandBuffer()};
    VkFence fences[3] = {};
    for (int frame = 0; frame < kFrames; ++frame) {
      const int slot = frame % 3;
      if (fences[slot] != VK_NULL_HANDLE) {
        vkWaitForFences(f.vk.device, 1, &fences[slot], VK_TRUE, UINT64_MAX);
        vkDestroyFence(f.vk.device, fences[slot], nullptr);
        vkResetCommandBuffer(cmds[slot], 0);
        VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        vkBeginCommandBuffer(cmds[slot], &begin);
      }
      gpu->BeginFrame(cmds[slot]);
      for (int zone = 0; zone < 2; ++zone) {
        REQUIRE(gpu->BeginZone(cmds[slot], &g_pass));
        gpu->EndZone(cmds[slot]);
      }
      vkEndCommandBuffer(cmds[slot]);
      fences[slot] = f.vk.Submit(cmds[slot], false);
      gpu->EndFrame();
    }
    vkDeviceWaitIdle(f.vk.device);
    for (VkFence fence : fences) vkDestroyFence(f.vk.device, fence, nullptr);
    gpu->Collect();
    const auto& stats = gpu->stats();
    CHECK(stats.frames_begun == kFrames);
    CHECK(stats.frames_harvested == kFrames);
    CHECK(stats.frames_untimed_ring_full == 0);
    CHECK(stats.zones_untimed == 0);
    CHECK(stats.timestamps_read == 4u * kFrames);
    const uint32_t id = gpu->id();
    REQUIRE(gnomon::test::WaitForModel(worker, [id](const TraceModel& m) {
      const auto* c = FindContext(m, id);
      if (c == nullptr || c->zones.size() < 2u * kFrames) return false;
      for (size_t i = 0; i < c->zones.size(); ++i) {
        if (!c->zones[i].is_timed()) return false;
      }
      return true;
    }));
    worker.WithModel([id](const TraceModel& m) {
      const auto* c = FindContext(m, id);
      CHECK(c->zones.size() == 2u * kFrames);
      CHECK(c->unmatched_gpu_times == 0);
      uint64_t previous_begin = 0;
      for (size_t i = 0; i < c->zones.size(); ++i) {
        const auto& zone = c->zones[i];
        REQUIRE(zone.is_timed());
        REQUIRE(zone.gpu_end >= zone.gpu_begin);
        REQUIRE(zone.gpu_begin >= previous_begin);  // one queue: GPU order is record order
        previous_begin = zone.gpu_begin;
      }
      CHECK(m.diagnostics.gpu_queries_reused_before_time == 0);
    });
  }).join();
}

TEST_CASE("a frame whose slot is still in flight goes untimed, and collecting never blocks") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  Fixture f;
  ContextOptions options;
  options.frames_in_flight = 1;  // two slots
  auto gpu = f.Make(options);
  REQUIRE(gpu->is_active());
  const VkEvent gate = f.NewGate();

  // Frame 1 stalls on the GPU until the host sets the event.
  VkCommandBuffer stalled = f.vk.NewCommandBuffer();
  gpu->BeginFrame(stalled);
  WaitAtGate(stalled, gate);
  REQUIRE(gpu->BeginZone(stalled, &g_pass));
  gpu->EndZone(stalled);
  vkEndCommandBuffer(stalled);
  VkFence stalled_fence = f.vk.Submit(stalled, false);
  gpu->EndFrame();

  // Frames 2 and 3: frame 2 takes the free slot, frame 3 finds frame 1's slot in flight.
  std::vector<VkFence> fences;
  for (int frame = 2; frame <= 3; ++frame) {
    VkCommandBuffer cmd = f.vk.NewCommandBuffer();
    const auto start = std::chrono::steady_clock::now();
    gpu->BeginFrame(cmd);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(200));
    const bool timed = gpu->BeginZone(cmd, &g_pass);
    CHECK(timed == (frame == 2));
    if (timed) gpu->EndZone(cmd);
    vkEndCommandBuffer(cmd);
    fences.push_back(f.vk.Submit(cmd, false));
    gpu->EndFrame();
  }
  CHECK(gpu->stats().frames_untimed_ring_full == 1);
  CHECK(gpu->stats().zones_untimed == 1);
  gpu->Collect();
  CHECK(gpu->stats().frames_harvested == 0);  // frame 1 holds the ring in order

  vkSetEvent(f.vk.device, gate);
  vkDeviceWaitIdle(f.vk.device);
  gpu->Collect();
  CHECK(gpu->stats().frames_harvested == 2);
  CHECK(gpu->stats().timestamps_read == 4);
  const uint32_t id = gpu->id();
  REQUIRE(gnomon::test::WaitForModel(worker, [id](const TraceModel& m) {
    const auto* c = FindContext(m, id);
    return c != nullptr && c->zones.size() == 2 && c->zones[0].is_timed() && c->zones[1].is_timed();
  }));
  vkDestroyFence(f.vk.device, stalled_fence, nullptr);
  for (VkFence fence : fences) vkDestroyFence(f.vk.device, fence, nullptr);
  vkDestroyEvent(f.vk.device, gate, nullptr);
}

TEST_CASE("an abandoned frame returns its slot and invents no times") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  Fixture f;
  ContextOptions options;
  options.frames_in_flight = 1;
  auto gpu = f.Make(options);
  VkCommandBuffer refused = f.vk.NewCommandBuffer();
  gpu->BeginFrame(refused);
  REQUIRE(gpu->BeginZone(refused, &g_pass));
  gpu->EndZone(refused);
  gpu->AbandonFrame();  // never submitted
  CHECK(gpu->stats().frames_abandoned == 1);
  for (int frame = 0; frame < 4; ++frame) {
    VkCommandBuffer cmd = f.vk.NewCommandBuffer();
    gpu->BeginFrame(cmd);
    REQUIRE(gpu->BeginZone(cmd, &g_pass));
    gpu->EndZone(cmd);
    vkEndCommandBuffer(cmd);
    vkDestroyFence(f.vk.device, f.vk.Submit(cmd, true), nullptr);
    gpu->EndFrame();
  }
  vkDeviceWaitIdle(f.vk.device);  // the slot fences follow the frames' own work
  gpu->Collect();
  CHECK(gpu->stats().frames_untimed_ring_full == 0);
  CHECK(gpu->stats().timestamps_read == 8);
  const uint32_t id = gpu->id();
  REQUIRE(gnomon::test::WaitForModel(worker, [id](const TraceModel& m) {
    const auto* c = FindContext(m, id);
    if (c == nullptr || c->zones.size() != 5) return false;
    for (size_t i = 1; i < 5; ++i) {
      if (!c->zones[i].is_timed()) return false;
    }
    return true;
  }));
  worker.WithModel([id](const TraceModel& m) {
    const auto* c = FindContext(m, id);
    CHECK_FALSE(c->zones[0].is_timed());  // the abandoned zone has no GPU time at all
    CHECK(c->zones[0].gpu_begin == gnomon::server::kOpenZone);
  });
}

TEST_CASE(
    "pipeline statistics: the set is described once, a result is not read before the GPU is done, then "
    "arrives") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  Fixture f;
  REQUIRE_MESSAGE(f.vk.pipeline_statistics, "the device has no pipelineStatisticsQuery");
  ContextOptions options;
  options.pipeline_statistics = VK_QUERY_PIPELINE_STATISTIC_VERTEX_SHADER_INVOCATIONS_BIT |
                                VK_QUERY_PIPELINE_STATISTIC_COMPUTE_SHADER_INVOCATIONS_BIT;
  auto gpu = f.Make(options);
  REQUIRE(gpu->is_active());
  REQUIRE(gpu->counter_set() != 0);
  const VkEvent gate = f.NewGate();

  // A counted zone (with a nested one, which Vulkan cannot count) behind a gate.
  VkCommandBuffer cmd = f.vk.NewCommandBuffer();
  gpu->BeginFrame(cmd);
  WaitAtGate(cmd, gate);
  REQUIRE(gpu->BeginZone(cmd, &g_pass, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, true));
  REQUIRE(gpu->BeginZone(cmd, &g_pass, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, true));
  gpu->EndZone(cmd);
  gpu->EndZone(cmd);
  vkEndCommandBuffer(cmd);
  VkFence fence = f.vk.Submit(cmd, false);
  gpu->EndFrame();
  CHECK(gpu->stats().zones_counted == 1);
  CHECK(gpu->stats().zones_uncounted_nested == 1);

  gpu->Collect();  // the GPU waits at the gate: nothing is read, nothing invented
  CHECK(gpu->stats().counter_results_read == 0);
  CHECK(gpu->stats().timestamps_read == 0);

  vkSetEvent(f.vk.device, gate);
  vkWaitForFences(f.vk.device, 1, &fence, VK_TRUE, UINT64_MAX);
  vkQueueWaitIdle(f.vk.queue);
  gpu->Collect();
  CHECK(gpu->stats().counter_results_read == 1);
  const uint32_t id = gpu->id();
  const uint32_t set = gpu->counter_set();
  REQUIRE(gnomon::test::WaitForModel(worker, [id](const TraceModel& m) {
    const auto* c = FindContext(m, id);
    return c != nullptr && c->zones.size() == 2 && c->zones[0].is_timed() && c->counter_samples.size() == 1;
  }));
  worker.WithModel([&](const TraceModel& m) {
    const auto& described = m.counter_sets.at(set);
    CHECK(described.name == "pipeline statistics");
    CHECK(described.context_id == id);
    REQUIRE(described.counters.size() == 2);
    CHECK(described.counters[0].name == "vertex shader invocations");
    CHECK(described.counters[1].name == "compute shader invocations");
    CHECK(described.counters[1].type == uint8_t(gnomon::protocol::CounterType::kEvent));
    CHECK(described.counters[1].data_type == uint8_t(gnomon::protocol::CounterDataType::kUint64));
    CHECK(described.counters[1].offset == 8);
    const auto* c = FindContext(m, id);
    const auto& sample = c->counter_samples[0];
    CHECK(sample.target_index == 0);  // the outer zone
    CHECK(c->counter_sample_of_zone.at(0) == 0);
    CHECK_FALSE(c->counter_sample_of_zone.contains(1));
    CHECK(c->counter_values[sample.first_value] == 0);  // nothing ran inside: exactly 0
    CHECK(c->counter_values[sample.first_value + 1] == 0);
  });
  vkDestroyFence(f.vk.device, fence, nullptr);
  vkDestroyEvent(f.vk.device, gate, nullptr);
}

TEST_CASE(
    "a context sends its probes as brackets when created and destroyed, and they agree with its clock") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  Fixture f;
  for (const bool calibrated : {true, false}) {
    CAPTURE(calibrated);
    ContextOptions options;
    options.bracket_probes = 4;
    options.calibrated_timestamps = calibrated && f.vk.calibrated_timestamps;
    options.host_query_reset = f.vk.host_query_reset;
    auto gpu = Context::Create(&vkGetInstanceProcAddr, f.vk.instance, f.vk.physical, f.vk.device, f.vk.queue,
                               f.vk.family, options);
    REQUIRE(gpu->is_active());
    CHECK(gpu->stats().brackets == 4);
    // A frame between the probes: the fallback's calibrations share the probe queries.
    VkCommandBuffer cmd = f.vk.NewCommandBuffer();
    gpu->BeginFrame(cmd);
    REQUIRE(gpu->BeginZone(cmd, &g_pass));
    gpu->EndZone(cmd);
    vkEndCommandBuffer(cmd);
    VkFence fence = f.vk.Submit(cmd, true);
    gpu->EndFrame();
    vkQueueWaitIdle(f.vk.queue);
    gpu->Collect();
    CHECK(gpu->stats().timestamps_read == 2);
    vkDestroyFence(f.vk.device, fence, nullptr);
    const uint32_t id = gpu->id();
    gpu.reset();  // four more probes
    REQUIRE(gnomon::test::WaitForModel(worker, [id](const TraceModel& m) {
      const auto* c = FindContext(m, id);
      return c != nullptr && c->clock.offset_range().brackets == 8 && c->zones.size() == 1 &&
             c->zones[0].is_timed();
    }));
    worker.WithModel([id](const TraceModel& m) {
      const auto& clock = FindContext(m, id)->clock;
      const auto range = clock.offset_range();
      INFO("offset within [", range.min_ns, ", ", range.max_ns, "] ns");
      CHECK_FALSE(range.contradicted);
      CHECK(clock.flags().bad_brackets == 0);
      // The device's clock is the host's (lavapipe): the true offset is 0, up to the
      // server's conversion between CLOCK_MONOTONIC and CLOCK_MONOTONIC_RAW.
      CHECK(range.min_ns <= 1000);
      CHECK(range.max_ns >= -1000);
    });
  }
}
