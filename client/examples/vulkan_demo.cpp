// gnomon-vulkan-demo: a headless Vulkan compute program with CPU and GPU zones.
//
// Each frame records two dispatches and a buffer fill, each in a GPU zone, inside a
// "GPU frame" zone; the CPU side has "Record", "Submit" and "Wait for GPU" zones. Runs
// on any Vulkan device: Mesa's lavapipe (CPU) in CI, an NVIDIA GPU on real hardware.
//
//   gnomon-vulkan-demo [--frames N] [--in-flight K] [--iterations N] [--no-calibrated]
//                      [--device SUBSTRING]
//
// With --in-flight 1 each frame is submitted and waited for inside one CPU zone,
// "Submit and wait", the bracket its GPU zones must lie in.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <gnomon/gnomon.hpp>
#include <gnomon/vulkan.hpp>
#include <string>
#include <vector>

#include "vulkan_compute_spirv.h"

namespace {

struct Options {
  int frames = 300;
  uint32_t in_flight = 2;
  uint32_t iterations = 2000;
  bool calibrated = true;
  std::string device;
};

[[noreturn]] void Fail(const char* what, VkResult result) {
  std::fprintf(stderr, "gnomon-vulkan-demo: %s failed (VkResult %d)\n", what, int(result));
  std::exit(1);
}

void Check(VkResult result, const char* what) {
  if (result != VK_SUCCESS) Fail(what, result);
}

bool HasExtension(const std::vector<VkExtensionProperties>& extensions, const char* name) {
  for (const auto& e : extensions) {
    if (std::strcmp(e.extensionName, name) == 0) return true;
  }
  return false;
}

uint32_t FindMemory(VkPhysicalDevice physical, uint32_t type_bits, VkMemoryPropertyFlags wanted) {
  VkPhysicalDeviceMemoryProperties memory;
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    if ((type_bits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & wanted) == wanted) return i;
  }
  Fail("finding host-visible memory", VK_ERROR_FEATURE_NOT_PRESENT);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (arg == "--frames") {
      options.frames = std::atoi(value().c_str());
    } else if (arg == "--in-flight") {
      options.in_flight = uint32_t(std::max(1, std::atoi(value().c_str())));
    } else if (arg == "--iterations") {
      options.iterations = uint32_t(std::atoi(value().c_str()));
    } else if (arg == "--no-calibrated") {
      options.calibrated = false;
    } else if (arg == "--device") {
      options.device = value();
    } else {
      std::printf(
          "Usage: gnomon-vulkan-demo [--frames N] [--in-flight K] [--iterations N] [--no-calibrated] "
          "[--device SUBSTRING]\n");
      return arg == "--help" || arg == "-h" ? 0 : 1;
    }
  }
  gnomon::SetThreadName("render");

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "gnomon-vulkan-demo";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo instance_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  instance_info.pApplicationInfo = &app;
  VkInstance instance;
  Check(vkCreateInstance(&instance_info, nullptr, &instance),
        "vkCreateInstance (is a Vulkan driver installed?)");

  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> physicals(count);
  vkEnumeratePhysicalDevices(instance, &count, physicals.data());
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties{};
  for (VkPhysicalDevice candidate : physicals) {
    vkGetPhysicalDeviceProperties(candidate, &properties);
    if (options.device.empty() || std::strstr(properties.deviceName, options.device.c_str())) {
      physical = candidate;
      break;
    }
  }
  if (physical == VK_NULL_HANDLE)
    Fail("finding a Vulkan device (see --device)", VK_ERROR_INITIALIZATION_FAILED);
  std::printf("gnomon-vulkan-demo: %s, timestampPeriod %.6g ns\n", properties.deviceName,
              double(properties.limits.timestampPeriod));

  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
  uint32_t family = UINT32_MAX;
  for (uint32_t f = 0; f < count && family == UINT32_MAX; ++f) {
    if (families[f].queueFlags & VK_QUEUE_COMPUTE_BIT) family = f;
  }
  if (family == UINT32_MAX) Fail("finding a compute queue", VK_ERROR_FEATURE_NOT_PRESENT);

  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data());
  std::vector<const char*> enabled;
  bool calibrated = false;
  if (options.calibrated) {
    for (const char* name : {"VK_KHR_calibrated_timestamps", "VK_EXT_calibrated_timestamps"}) {
      if (!calibrated && HasExtension(extensions, name)) {
        enabled.push_back(name);
        calibrated = true;
      }
    }
  }
  VkPhysicalDeviceVulkan12Features supported12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 supported{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  supported.pNext = &supported12;
  vkGetPhysicalDeviceFeatures2(physical, &supported);
  VkPhysicalDeviceVulkan12Features features12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  features12.hostQueryReset = supported12.hostQueryReset;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = family;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  // Pipeline statistics (compute invocations per dispatch) where the device has them.
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.features.pipelineStatisticsQuery = supported.features.pipelineStatisticsQuery;
  features.pNext = &features12;
  VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  device_info.pNext = &features;
  // The device's memory as pools (a lane per heap), where the driver reports it.
  gnomon::vulkan::DeviceMemoryReport memory_report(vkGetInstanceProcAddr, instance, physical);
  if (memory_report.is_supported()) {
    enabled.push_back(VK_EXT_DEVICE_MEMORY_REPORT_EXTENSION_NAME);
    device_info.pNext = memory_report.Chain(device_info.pNext);
  }
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  device_info.enabledExtensionCount = uint32_t(enabled.size());
  device_info.ppEnabledExtensionNames = enabled.data();
  VkDevice device;
  Check(vkCreateDevice(physical, &device_info, nullptr, &device), "vkCreateDevice");
  VkQueue queue;
  vkGetDeviceQueue(device, family, 0, &queue);

  gnomon::vulkan::ContextOptions gpu_options;
  gpu_options.calibrated_timestamps = calibrated;
  gpu_options.host_query_reset = supported12.hostQueryReset == VK_TRUE;
  gpu_options.frames_in_flight = options.in_flight;
  gpu_options.name = "compute queue";
  if (supported.features.pipelineStatisticsQuery) {
    gpu_options.pipeline_statistics = VK_QUERY_PIPELINE_STATISTIC_COMPUTE_SHADER_INVOCATIONS_BIT |
                                      VK_QUERY_PIPELINE_STATISTIC_VERTEX_SHADER_INVOCATIONS_BIT |
                                      VK_QUERY_PIPELINE_STATISTIC_FRAGMENT_SHADER_INVOCATIONS_BIT;
  }
  auto gpu = gnomon::vulkan::Context::Create(vkGetInstanceProcAddr, instance, physical, device, queue, family,
                                             gpu_options);
  std::printf("gnomon-vulkan-demo: GPU timing %s, %s\n", gpu->is_active() ? "on" : "off (no timestamps)",
              gpu->uses_calibrated_timestamps() ? "calibrated timestamps" : "fallback calibration");

  // A storage buffer, a compute pipeline with a push constant.
  constexpr uint32_t kElements = 64 * 256;
  VkBufferCreateInfo buffer_info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  buffer_info.size = kElements * sizeof(uint32_t);
  buffer_info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  VkBuffer buffer;
  Check(vkCreateBuffer(device, &buffer_info, nullptr, &buffer), "vkCreateBuffer");
  VkMemoryRequirements requirements;
  vkGetBufferMemoryRequirements(device, buffer, &requirements);
  VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  allocate.allocationSize = requirements.size;
  allocate.memoryTypeIndex =
      FindMemory(physical, requirements.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  VkDeviceMemory memory;
  Check(vkAllocateMemory(device, &allocate, nullptr, &memory), "vkAllocateMemory");
  Check(vkBindBufferMemory(device, buffer, memory, 0), "vkBindBufferMemory");

  VkDescriptorSetLayoutBinding binding{0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT,
                                       nullptr};
  VkDescriptorSetLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  layout_info.bindingCount = 1;
  layout_info.pBindings = &binding;
  VkDescriptorSetLayout set_layout;
  Check(vkCreateDescriptorSetLayout(device, &layout_info, nullptr, &set_layout),
        "vkCreateDescriptorSetLayout");
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(uint32_t)};
  VkPipelineLayoutCreateInfo pipeline_layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pipeline_layout_info.setLayoutCount = 1;
  pipeline_layout_info.pSetLayouts = &set_layout;
  pipeline_layout_info.pushConstantRangeCount = 1;
  pipeline_layout_info.pPushConstantRanges = &push;
  VkPipelineLayout pipeline_layout;
  Check(vkCreatePipelineLayout(device, &pipeline_layout_info, nullptr, &pipeline_layout),
        "vkCreatePipelineLayout");
  VkShaderModuleCreateInfo shader_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  shader_info.codeSize = sizeof(kComputeSpirv);
  shader_info.pCode = kComputeSpirv;
  VkShaderModule shader;
  Check(vkCreateShaderModule(device, &shader_info, nullptr, &shader), "vkCreateShaderModule");
  VkComputePipelineCreateInfo pipeline_info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipeline_info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                         nullptr,
                         0,
                         VK_SHADER_STAGE_COMPUTE_BIT,
                         shader,
                         "main",
                         nullptr};
  pipeline_info.layout = pipeline_layout;
  VkPipeline pipeline;
  Check(vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &pipeline),
        "vkCreateComputePipelines");
  VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
  VkDescriptorPoolCreateInfo descriptor_pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  descriptor_pool_info.maxSets = 1;
  descriptor_pool_info.poolSizeCount = 1;
  descriptor_pool_info.pPoolSizes = &pool_size;
  VkDescriptorPool descriptor_pool;
  Check(vkCreateDescriptorPool(device, &descriptor_pool_info, nullptr, &descriptor_pool),
        "vkCreateDescriptorPool");
  VkDescriptorSetAllocateInfo set_allocate{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  set_allocate.descriptorPool = descriptor_pool;
  set_allocate.descriptorSetCount = 1;
  set_allocate.pSetLayouts = &set_layout;
  VkDescriptorSet set;
  Check(vkAllocateDescriptorSets(device, &set_allocate, &set), "vkAllocateDescriptorSets");
  VkDescriptorBufferInfo descriptor_buffer{buffer, 0, VK_WHOLE_SIZE};
  VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  write.dstSet = set;
  write.descriptorCount = 1;
  write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  write.pBufferInfo = &descriptor_buffer;
  vkUpdateDescriptorSets(device, 1, &write, 0, nullptr);

  VkCommandPoolCreateInfo command_pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  command_pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  command_pool_info.queueFamilyIndex = family;
  VkCommandPool command_pool;
  Check(vkCreateCommandPool(device, &command_pool_info, nullptr, &command_pool), "vkCreateCommandPool");
  std::vector<VkCommandBuffer> commands(options.in_flight);
  VkCommandBufferAllocateInfo command_allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  command_allocate.commandPool = command_pool;
  command_allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  command_allocate.commandBufferCount = options.in_flight;
  Check(vkAllocateCommandBuffers(device, &command_allocate, commands.data()), "vkAllocateCommandBuffers");
  std::vector<VkFence> fences(options.in_flight);
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  fence_info.flags = VK_FENCE_CREATE_SIGNALED_BIT;
  for (VkFence& fence : fences) Check(vkCreateFence(device, &fence_info, nullptr, &fence), "vkCreateFence");

  const bool bracket = options.in_flight == 1;
  for (int frame = 0; frame < options.frames; ++frame) {
    GNOMON_ZONE("Frame");
    const uint32_t slot = uint32_t(frame) % options.in_flight;
    if (!bracket) {
      GNOMON_ZONE("Wait for GPU");
      Check(vkWaitForFences(device, 1, &fences[slot], VK_TRUE, UINT64_MAX), "vkWaitForFences");
    }
    vkResetFences(device, 1, &fences[slot]);
    VkCommandBuffer cmd = commands[slot];
    {
      GNOMON_ZONE("Record");
      vkResetCommandBuffer(cmd, 0);
      VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
      begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
      vkBeginCommandBuffer(cmd, &begin);
      gpu->BeginFrame(cmd);
      {
        GNOMON_VK_ZONE(*gpu, cmd, "GPU frame");
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
        vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_layout, 0, 1, &set, 0, nullptr);
        VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
        barrier.dstAccessMask =
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
        {
          GNOMON_VK_ZONE_COUNTERS(*gpu, cmd, "Simulate");
          vkCmdPushConstants(cmd, pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(uint32_t),
                             &options.iterations);
          vkCmdDispatch(cmd, kElements / 64, 1, 1);
        }
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0,
                             1, &barrier, 0, nullptr, 0, nullptr);
        {
          GNOMON_VK_ZONE_COUNTERS(*gpu, cmd, "Integrate");
          const uint32_t half = options.iterations / 2;
          vkCmdPushConstants(cmd, pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(uint32_t), &half);
          vkCmdDispatch(cmd, kElements / 64, 1, 1);
        }
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0,
                             1, &barrier, 0, nullptr, 0, nullptr);
        if (frame % 10 == 9) {
          GNOMON_VK_ZONE(*gpu, cmd, "Clear");
          vkCmdFillBuffer(cmd, buffer, 0, VK_WHOLE_SIZE, uint32_t(frame));
        }
      }
      Check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    }
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    if (bracket) {
      GNOMON_ZONE("Submit and wait");
      Check(vkQueueSubmit(queue, 1, &submit, fences[slot]), "vkQueueSubmit");
      gpu->EndFrame();
      Check(vkWaitForFences(device, 1, &fences[slot], VK_TRUE, UINT64_MAX), "vkWaitForFences");
    } else {
      GNOMON_ZONE("Submit");
      Check(vkQueueSubmit(queue, 1, &submit, fences[slot]), "vkQueueSubmit");
      gpu->EndFrame();
    }
    GNOMON_FRAME_MARK();
  }
  vkDeviceWaitIdle(device);
  gpu->Collect();
  const auto& stats = gpu->stats();
  std::printf(
      "gnomon-vulkan-demo: %d frames, %llu GPU zones, %llu timestamps read, %llu frames untimed (ring full), "
      "%llu calibrations (last maxDeviation %u ns), %llu zones with pipeline statistics\n",
      options.frames, (unsigned long long)stats.zones_recorded, (unsigned long long)stats.timestamps_read,
      (unsigned long long)stats.frames_untimed_ring_full, (unsigned long long)stats.calibrations,
      stats.last_calibration_uncertainty_ns, (unsigned long long)stats.counter_results_read);

  gpu.reset();
  for (VkFence fence : fences) vkDestroyFence(device, fence, nullptr);
  vkDestroyCommandPool(device, command_pool, nullptr);
  vkDestroyDescriptorPool(device, descriptor_pool, nullptr);
  vkDestroyPipeline(device, pipeline, nullptr);
  vkDestroyShaderModule(device, shader, nullptr);
  vkDestroyPipelineLayout(device, pipeline_layout, nullptr);
  vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
  vkDestroyBuffer(device, buffer, nullptr);
  vkFreeMemory(device, memory, nullptr);
  vkDestroyDevice(device, nullptr);
  if (memory_report.is_supported()) {
    std::printf("gnomon-vulkan-demo: device memory: %llu allocations, %llu frees reported\n",
                (unsigned long long)memory_report.allocations(), (unsigned long long)memory_report.frees());
  }
  vkDestroyInstance(instance, nullptr);
  return 0;
}
