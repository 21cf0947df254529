// The Vulkan device memory report (vulkan/vulkan_memory_report.cpp) on a real Vulkan
// device (Mesa's lavapipe in CI), captured by a worker connected to this process: each
// allocation in its heap's pool where the driver reports it, and the driver's events as
// the extension defines them.
#include <doctest/doctest.h>

#include <gnomon/gnomon.hpp>
#include <gnomon/vulkan.hpp>
#include <map>
#include <memory>
#include <string>

#include "../../support/self_capture.h"
#include "../../support/vulkan_device.h"

using gnomon::server::TraceModel;
using gnomon::test::VulkanDevice;

TEST_CASE("device memory report: each allocation in its heap's pool where the driver reports it, else said") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  VulkanDevice vk;
  std::unique_ptr<gnomon::vulkan::DeviceMemoryReport> report;
  const std::string error = vk.Create({}, [&](VkPhysicalDevice physical, const void*& next) -> const char* {
    report =
        std::make_unique<gnomon::vulkan::DeviceMemoryReport>(&vkGetInstanceProcAddr, vk.instance, physical);
    if (!report->is_supported()) {
      CHECK(report->Chain(next) == next);  // nothing added
      return nullptr;
    }
    next = report->Chain(next);
    return VK_EXT_DEVICE_MEMORY_REPORT_EXTENSION_NAME;
  });
  REQUIRE_MESSAGE(error.empty(), error);
  const std::string device = vk.name;
  if (!report->is_supported()) {
    // Lavapipe has no memory report: the program was told, and so is the trace.
    MESSAGE(device, " has no VK_EXT_device_memory_report: checking that the trace says so");
    CHECK(gnomon::test::WaitForModel(worker, [&](const TraceModel& m) {
      for (const auto& message : m.messages) {
        if (message.text.find(device + " has no VK_EXT_device_memory_report") != std::string::npos)
          return true;
      }
      return false;
    }));
    vk.Destroy();
    return;
  }
  // A driver that reports: 3 allocations of 1 MiB from the first memory type, freed.
  VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  allocate.allocationSize = 1 << 20;
  allocate.memoryTypeIndex = 0;
  VkDeviceMemory memory[3];
  for (VkDeviceMemory& m : memory) REQUIRE(vkAllocateMemory(vk.device, &allocate, nullptr, &m) == VK_SUCCESS);
  for (VkDeviceMemory m : memory) vkFreeMemory(vk.device, m, nullptr);
  CHECK(report->allocations() >= 3);
  CHECK(report->frees() >= 3);
  VkPhysicalDeviceMemoryProperties properties;
  vkGetPhysicalDeviceMemoryProperties(vk.physical, &properties);
  const std::string pool = report->PoolName(properties.memoryTypes[0].heapIndex);
  CHECK(gnomon::test::WaitForModel(worker, [&](const TraceModel& m) {
    for (const auto& [id, p] : m.memory_pools) {
      if (p.name != pool) continue;
      size_t freed = 0;
      for (size_t i = 0; i < p.allocations.size(); ++i) {
        freed += p.allocations[i].size_bytes >= (1u << 20) && p.allocations[i].is_freed();
      }
      return freed >= 3;
    }
    return false;
  }));
  vk.Destroy();
}

TEST_CASE("device memory report: a driver's events go to their heap's pool, frees found by object id") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  VulkanDevice vk;
  std::unique_ptr<gnomon::vulkan::DeviceMemoryReport> report;
  const std::string error = vk.Create({}, [&](VkPhysicalDevice physical, const void*&) -> const char* {
    report =
        std::make_unique<gnomon::vulkan::DeviceMemoryReport>(&vkGetInstanceProcAddr, vk.instance, physical);
    return nullptr;
  });
  REQUIRE_MESSAGE(error.empty(), error);
  // As the spec has them: a free's heap index and size are undefined (here: garbage), a
  // failed allocation is only a size. Ids far from any address the test makes.
  auto event = [](VkDeviceMemoryReportEventTypeEXT type, uint64_t id, VkDeviceSize size, uint32_t heap) {
    VkDeviceMemoryReportCallbackDataEXT e{VK_STRUCTURE_TYPE_DEVICE_MEMORY_REPORT_CALLBACK_DATA_EXT};
    e.type = type;
    e.memoryObjectId = id;
    e.size = size;
    e.heapIndex = heap;
    return e;
  };
  constexpr uint64_t kId = 0x7e57'0000'0000;
  report->Record(event(VK_DEVICE_MEMORY_REPORT_EVENT_TYPE_ALLOCATE_EXT, kId + 1, 3 << 20, 0));
  report->Record(event(VK_DEVICE_MEMORY_REPORT_EVENT_TYPE_IMPORT_EXT, kId + 2, 5 << 20, 0));
  report->Record(event(VK_DEVICE_MEMORY_REPORT_EVENT_TYPE_ALLOCATE_EXT, kId + 3, 7 << 20, 0));
  report->Record(event(VK_DEVICE_MEMORY_REPORT_EVENT_TYPE_FREE_EXT, kId + 1, 0, 0xdead));
  report->Record(event(VK_DEVICE_MEMORY_REPORT_EVENT_TYPE_UNIMPORT_EXT, kId + 2, 0, 0xdead));
  report->Record(event(VK_DEVICE_MEMORY_REPORT_EVENT_TYPE_ALLOCATION_FAILED_EXT, 0, 1ull << 40, 0));
  CHECK(report->allocations() == 3);
  CHECK(report->frees() == 2);
  const std::string pool = report->PoolName(0);
  CHECK(pool.starts_with("Vulkan heap 0 ("));
  // A second device of the same name gets pools of its own.
  const gnomon::vulkan::DeviceMemoryReport second(&vkGetInstanceProcAddr, vk.instance, vk.physical);
  CHECK(std::string(second.PoolName(0)) == pool + " #2");
  CHECK(gnomon::test::WaitForModel(worker, [&](const TraceModel& m) {
    bool failed_said = false;
    for (const auto& message : m.messages)
      failed_said |= message.text.find("1099511627776 bytes failed") != std::string::npos;
    for (const auto& [id, p] : m.memory_pools) {
      if (p.name != pool || p.allocations.size() < 3 || !failed_said) continue;
      std::map<uint64_t, bool> freed;  // by size
      for (size_t i = 0; i < p.allocations.size(); ++i)
        freed[p.allocations[i].size_bytes] = p.allocations[i].is_freed();
      return freed == std::map<uint64_t, bool>{{3 << 20, true}, {5 << 20, true}, {7 << 20, false}} &&
             p.unmatched_frees == 0;
    }
    return false;
  }));
  vk.Destroy();
}
