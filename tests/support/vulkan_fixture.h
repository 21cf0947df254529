// A test's Vulkan device (vulkan_device.h), made for the test and destroyed after it,
// with gates: events the host sets, which a command buffer waiting at one holds the
// GPU at.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "vulkan_device.h"

namespace gnomon::test {

struct VulkanFixture {
  VulkanDevice vk;
  VulkanFixture() {
    const std::string error = vk.Create();
    REQUIRE_MESSAGE(error.empty(), error);
  }
  ~VulkanFixture() { vk.Destroy(); }
  VulkanFixture(const VulkanFixture&) = delete;
  VulkanFixture& operator=(const VulkanFixture&) = delete;
  VkEvent NewGate() {
    VkEventCreateInfo info{VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
    VkEvent gate = VK_NULL_HANDLE;
    REQUIRE(vkCreateEvent(vk.device, &info, nullptr, &gate) == VK_SUCCESS);
    return gate;
  }
};

}  // namespace gnomon::test
