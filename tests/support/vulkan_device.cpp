#include "vulkan_device.h"

#include <cstring>
#include <vector>

namespace gnomon::test {

std::string VulkanDevice::Create(std::string_view name_filter, const Extend& extend) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo instance_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  instance_info.pApplicationInfo = &app;
  if (vkCreateInstance(&instance_info, nullptr, &instance) != VK_SUCCESS) return "vkCreateInstance failed";
  uint32_t count = 0;
  if (vkEnumeratePhysicalDevices(instance, &count, nullptr) < 0 || count == 0) return "no Vulkan device";
  std::vector<VkPhysicalDevice> physicals(count);
  vkEnumeratePhysicalDevices(instance, &count, physicals.data());
  for (VkPhysicalDevice p : physicals) {
    VkPhysicalDeviceProperties properties;
    vkGetPhysicalDeviceProperties(p, &properties);
    if (std::string_view(properties.deviceName).find(name_filter) != std::string_view::npos) {
      physical = p;
      name = properties.deviceName;
      break;
    }
  }
  if (physical == VK_NULL_HANDLE) return "no Vulkan device named like \"" + std::string(name_filter) + "\"";
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
  for (family = 0; family < count && !(families[family].queueFlags & VK_QUEUE_COMPUTE_BIT); ++family) {
  }
  if (family == count) return "no compute queue";
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data());
  std::vector<const char*> enabled;
  for (const auto& e : extensions) {
    if (std::strcmp(e.extensionName, "VK_EXT_calibrated_timestamps") == 0) {
      enabled.push_back("VK_EXT_calibrated_timestamps");
      calibrated_timestamps = true;
    }
  }
  VkPhysicalDeviceVulkan12Features supported12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 supported{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  supported.pNext = &supported12;
  vkGetPhysicalDeviceFeatures2(physical, &supported);
  VkPhysicalDeviceVulkan12Features features12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  features12.hostQueryReset = supported12.hostQueryReset;
  host_query_reset = supported12.hostQueryReset == VK_TRUE;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.features.pipelineStatisticsQuery = supported.features.pipelineStatisticsQuery;
  features.pNext = &features12;
  pipeline_statistics = supported.features.pipelineStatisticsQuery == VK_TRUE;
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = family;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  const void* next = &features;
  if (const char* extension = extend ? extend(physical, next) : nullptr) enabled.push_back(extension);
  device_info.pNext = next;
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  device_info.enabledExtensionCount = uint32_t(enabled.size());
  device_info.ppEnabledExtensionNames = enabled.data();
  if (vkCreateDevice(physical, &device_info, nullptr, &device) != VK_SUCCESS) return "vkCreateDevice failed";
  vkGetDeviceQueue(device, family, 0, &queue);
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = family;
  if (vkCreateCommandPool(device, &pool_info, nullptr, &command_pool) != VK_SUCCESS)
    return "vkCreateCommandPool failed";
  return "";
}

void VulkanDevice::Destroy() {
  if (device != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device);
    vkDestroyCommandPool(device, command_pool, nullptr);
    vkDestroyDevice(device, nullptr);
  }
  if (instance != VK_NULL_HANDLE) vkDestroyInstance(instance, nullptr);
}

VkCommandBuffer VulkanDevice::NewCommandBuffer() {
  VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  allocate.commandPool = command_pool;
  allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocate.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  vkAllocateCommandBuffers(device, &allocate, &cmd);
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vkBeginCommandBuffer(cmd, &begin);
  return cmd;
}

VkFence VulkanDevice::Submit(VkCommandBuffer cmd, bool wait) {
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  vkCreateFence(device, &fence_info, nullptr, &fence);
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  vkQueueSubmit(queue, 1, &submit, fence);
  if (wait) vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX);
  return fence;
}

}  // namespace gnomon::test
