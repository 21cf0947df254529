// A Vulkan device for tests and benchmarks: the first device the loader offers (Mesa's
// lavapipe in CI) whose name contains `name_filter`, one compute queue, calibrated
// timestamps, host query reset and pipeline statistics when offered.
#pragma once

#include <vulkan/vulkan.h>

#include <functional>
#include <string>
#include <string_view>

namespace gnomon::test {

struct VulkanDevice {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  bool calibrated_timestamps = false;
  bool host_query_reset = false;
  bool pipeline_statistics = false;
  std::string name;

  // Called once the physical device is chosen, before the device is made: may put
  // structures in front of `next` (the device create info's chain), and returns an
  // extension to enable too, or nullptr.
  using Extend = std::function<const char*(VkPhysicalDevice physical, const void*& next)>;
  // Empty `error` on success.
  std::string Create(std::string_view name_filter = {}, const Extend& extend = nullptr);
  void Destroy();
  VkCommandBuffer NewCommandBuffer();
  // Submits `cmd` (already ended) and, when `wait`, waits for it.
  VkFence Submit(VkCommandBuffer cmd, bool wait);
};

}  // namespace gnomon::test
