#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "core/inside_library.h"
#include "gnomon/gnomon.h"
#include "gnomon/vulkan.hpp"

namespace gnomon::vulkan {

DeviceMemoryReport::DeviceMemoryReport(PFN_vkGetInstanceProcAddr get_instance_proc_addr, VkInstance instance,
                                       VkPhysicalDevice physical_device) {
  auto resolve = [&](const char* name) { return get_instance_proc_addr(instance, name); };
  auto properties_of =
      reinterpret_cast<PFN_vkGetPhysicalDeviceProperties>(resolve("vkGetPhysicalDeviceProperties"));
  auto memory_of = reinterpret_cast<PFN_vkGetPhysicalDeviceMemoryProperties>(
      resolve("vkGetPhysicalDeviceMemoryProperties"));
  auto extensions_of = reinterpret_cast<PFN_vkEnumerateDeviceExtensionProperties>(
      resolve("vkEnumerateDeviceExtensionProperties"));
  auto features_of =
      reinterpret_cast<PFN_vkGetPhysicalDeviceFeatures2>(resolve("vkGetPhysicalDeviceFeatures2"));
  if (properties_of == nullptr || memory_of == nullptr || extensions_of == nullptr) return;
  VkPhysicalDeviceProperties properties{};
  properties_of(physical_device, &properties);
  device_name_ = properties.deviceName;
  // Pools of their own for each device, also for two of one model (memory object ids
  // are unique within a device only): the second is "<name> #2".
  std::string label = device_name_;
  {
    static std::mutex mutex;
    static std::map<std::string, int> reports_per_name;
    std::lock_guard lock(mutex);
    if (const int n = ++reports_per_name[device_name_]; n > 1) label += " #" + std::to_string(n);
  }
  VkPhysicalDeviceMemoryProperties memory{};
  memory_of(physical_device, &memory);
  for (uint32_t heap = 0; heap < memory.memoryHeapCount; ++heap) {
    const bool local = (memory.memoryHeaps[heap].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0;
    heap_pools_.push_back("Vulkan heap " + std::to_string(heap) +
                          (local ? " (device local), " : " (host), ") + label);
  }
  other_pool_ = "Vulkan memory, " + label;

  uint32_t count = 0;
  extensions_of(physical_device, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  extensions_of(physical_device, nullptr, &count, extensions.data());
  bool has_extension = false;
  for (const VkExtensionProperties& e : extensions) {
    has_extension |= std::strcmp(e.extensionName, VK_EXT_DEVICE_MEMORY_REPORT_EXTENSION_NAME) == 0;
  }
  VkPhysicalDeviceDeviceMemoryReportFeaturesEXT feature{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DEVICE_MEMORY_REPORT_FEATURES_EXT};
  if (has_extension && features_of != nullptr) {
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &feature;
    features_of(physical_device, &features);
  }
  supported_ = has_extension && feature.deviceMemoryReport == VK_TRUE;
  if (!supported_) {
    char text[400];
    std::snprintf(text, sizeof(text),
                  "gnomon: %s has no %s: its device memory is not recorded (GPU zones are)",
                  device_name_.c_str(),
                  has_extension ? "deviceMemoryReport feature" : VK_EXT_DEVICE_MEMORY_REPORT_EXTENSION_NAME);
    std::fprintf(stderr, "%s\n", text);
    gnomon_message(text, std::strlen(text), GNOMON_WARNING);
  }
}

const void* DeviceMemoryReport::Chain(const void* next) {
  if (!supported_) return next;
  info_ = {VK_STRUCTURE_TYPE_DEVICE_DEVICE_MEMORY_REPORT_CREATE_INFO_EXT};
  info_.pNext = const_cast<void*>(next);
  info_.pfnUserCallback = &DeviceMemoryReport::OnReport;
  info_.pUserData = this;
  feature_ = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DEVICE_MEMORY_REPORT_FEATURES_EXT};
  feature_.pNext = &info_;
  feature_.deviceMemoryReport = VK_TRUE;
  return &feature_;
}

const char* DeviceMemoryReport::PoolName(uint32_t heap) const {
  return heap < heap_pools_.size() ? heap_pools_[heap].c_str() : other_pool_.c_str();
}

void VKAPI_PTR DeviceMemoryReport::OnReport(const VkDeviceMemoryReportCallbackDataEXT* data, void* user) {
  static_cast<DeviceMemoryReport*>(user)->Record(*data);
}

void DeviceMemoryReport::Record(const VkDeviceMemoryReportCallbackDataEXT& event) {
  // The object's id stands for its address: unique while it lives, named again by its free.
  const void* id = reinterpret_cast<const void*>(uintptr_t(event.memoryObjectId));
  switch (event.type) {
    case VK_DEVICE_MEMORY_REPORT_EVENT_TYPE_ALLOCATE_EXT:
    case VK_DEVICE_MEMORY_REPORT_EVENT_TYPE_IMPORT_EXT: {
      {
        client::InsideLibrary inside;  // the map's own allocation is not the program's
        std::lock_guard lock(heaps_mutex_);
        heap_of_[event.memoryObjectId] = event.heapIndex;
      }
      gnomon_alloc(id, size_t(event.size), PoolName(event.heapIndex));
      allocations_.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    case VK_DEVICE_MEMORY_REPORT_EVENT_TYPE_FREE_EXT:
    case VK_DEVICE_MEMORY_REPORT_EVENT_TYPE_UNIMPORT_EXT: {
      // heapIndex (and size) are undefined here: the allocation's heap is the one.
      uint32_t heap = ~0u;
      {
        client::InsideLibrary inside;
        std::lock_guard lock(heaps_mutex_);
        if (const auto it = heap_of_.find(event.memoryObjectId); it != heap_of_.end()) {
          heap = it->second;
          heap_of_.erase(it);
        }
      }
      gnomon_free(id, PoolName(heap));
      frees_.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    case VK_DEVICE_MEMORY_REPORT_EVENT_TYPE_ALLOCATION_FAILED_EXT: {
      char text[200];
      std::snprintf(text, sizeof(text), "Vulkan allocation of %" PRIu64 " bytes failed in %s",
                    uint64_t(event.size), PoolName(event.heapIndex));
      gnomon_message(text, std::strlen(text), GNOMON_WARNING);
      break;
    }
    default:
      break;
  }
}

}  // namespace gnomon::vulkan
