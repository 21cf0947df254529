// A Tracy Vulkan context made through TRACY_VK_USE_SYMBOL_TABLE (the instance and the
// vkGet*ProcAddr functions passed in, Tracy's argument order), for tracy_program.cpp.
#define TRACY_VK_USE_SYMBOL_TABLE
#include <vulkan/vulkan.h>

#include "tracy/TracyVulkan.hpp"

// Without TRACY_ENABLE the macro takes none of its arguments.
TracyVkCtx MakeContextFromSymbols([[maybe_unused]] VkInstance instance,
                                  [[maybe_unused]] VkPhysicalDevice physical,
                                  [[maybe_unused]] VkDevice device, [[maybe_unused]] VkQueue queue,
                                  [[maybe_unused]] VkCommandBuffer cmd) {
  return TracyVkContext(instance, physical, device, queue, cmd, vkGetInstanceProcAddr, vkGetDeviceProcAddr);
}
