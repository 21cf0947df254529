// The Vulkan pipeline-statistics counter source (vulkan/vulkan_pipeline_statistics.cpp)
// on a real Vulkan device (Mesa's lavapipe in CI): an instance is not read before the
// GPU has passed its end, then gives the counts.
#include <doctest/doctest.h>

#include <gnomon/gpu_counters.hpp>
#include <gnomon/vulkan.hpp>
#include <string>
#include <vector>

#include "../../support/vulkan_fixture.h"

namespace {

using Fixture = gnomon::test::VulkanFixture;

void WaitAtGate(VkCommandBuffer cmd, VkEvent gate) {
  vkCmdWaitEvents(cmd, 1, &gate, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, nullptr,
                  0, nullptr, 0, nullptr);
}

}  // namespace

TEST_CASE("the Vulkan pipeline-statistics source: not ready until the GPU passes the end, then the values") {
  Fixture f;
  REQUIRE(f.vk.pipeline_statistics);
  auto source = gnomon::vulkan::CreatePipelineStatisticsSource(
      vkGetInstanceProcAddr, f.vk.instance, f.vk.device,
      VK_QUERY_PIPELINE_STATISTIC_COMPUTE_SHADER_INVOCATIONS_BIT |
          VK_QUERY_PIPELINE_STATISTIC_CLIPPING_INVOCATIONS_BIT);
  REQUIRE_MESSAGE(source->is_available(), source->unavailable_reason());
  REQUIRE(source->query_types().size() == 1);
  const auto& type = source->query_types()[0];
  REQUIRE(type.counters.size() == 2);
  CHECK(type.counters[0].name == "clipping invocations");  // Vulkan's bit order
  CHECK(type.counters[1].name == "compute shader invocations");
  CHECK(type.data_size == 16);

  const VkEvent gate = f.NewGate();
  const uint32_t instance = source->Create(0);
  REQUIRE(instance != 0);
  VkCommandBuffer cmd = f.vk.NewCommandBuffer();
  WaitAtGate(cmd, gate);
  CHECK_FALSE(source->Begin(instance));  // Vulkan records into a command buffer
  REQUIRE(source->Begin(instance, cmd));
  gnomon::counters::Values values;
  CHECK(source->Fetch(instance, gnomon::counters::FetchMode::kDoNotFlush, values) ==
        gnomon::counters::FetchStatus::kNotReady);  // not ended
  source->End(instance, cmd);
  vkEndCommandBuffer(cmd);
  VkFence fence = f.vk.Submit(cmd, false);
  for (auto mode : {gnomon::counters::FetchMode::kDoNotFlush, gnomon::counters::FetchMode::kFlush}) {
    CHECK(source->Fetch(instance, mode, values) == gnomon::counters::FetchStatus::kNotReady);  // gated
  }
  CHECK_FALSE(source->Begin(instance, cmd));  // still in flight
  vkSetEvent(f.vk.device, gate);
  REQUIRE(source->Fetch(instance, gnomon::counters::FetchMode::kWait, values) ==
          gnomon::counters::FetchStatus::kReady);
  CHECK(values.values == std::vector<uint64_t>{0, 0});  // nothing ran between begin and end
  vkWaitForFences(f.vk.device, 1, &fence, VK_TRUE, UINT64_MAX);
  vkDestroyFence(f.vk.device, fence, nullptr);
  source->Destroy(instance);
  vkDestroyEvent(f.vk.device, gate, nullptr);
}

TEST_CASE(
    "the Vulkan pipeline-statistics source: no device or no statistics asked for: unavailable, and why") {
  Fixture f;
  auto no_loader = gnomon::vulkan::CreatePipelineStatisticsSource(
      PFN_vkGetInstanceProcAddr{nullptr}, f.vk.instance, f.vk.device,
      VK_QUERY_PIPELINE_STATISTIC_COMPUTE_SHADER_INVOCATIONS_BIT);
  CHECK_FALSE(no_loader->is_available());
  CHECK(no_loader->unavailable_reason() == "no Vulkan device");
  auto no_device = gnomon::vulkan::CreatePipelineStatisticsSource(
      vkGetInstanceProcAddr, f.vk.instance, VK_NULL_HANDLE,
      VK_QUERY_PIPELINE_STATISTIC_COMPUTE_SHADER_INVOCATIONS_BIT);
  CHECK_FALSE(no_device->is_available());
  CHECK(no_device->unavailable_reason() == "no Vulkan device");
  CHECK(no_device->query_types().empty());
  CHECK(no_device->Create(0) == 0);

  // Bits Vulkan does not define are not statistics: asking only for those asks for none.
  auto none = gnomon::vulkan::CreatePipelineStatisticsSource(
      vkGetInstanceProcAddr, f.vk.instance, f.vk.device, VkQueryPipelineStatisticFlags{1u << 30});
  CHECK_FALSE(none->is_available());
  CHECK(none->unavailable_reason() == "no pipeline statistics asked for");
  CHECK(none->Create(0) == 0);
}
