// gnomon-calibration-record: records a calibration stream from a Vulkan device, in the
// format gnomon-calibration-bench reads:
//   kind,i,t_before_ns,device_ticks,host_ns,max_dev_ns,t_after_ns
// `burst`: back-to-back vkGetCalibratedTimestampsEXT calls; `paced`: one call per ms;
// `gpuwrite`: a timestamp written by the GPU, with the host clock read just before
// vkQueueSubmit and again as soon as the CPU sees the value: spinning on the query's
// availability (--bracket spin, the default, as the Vulkan collector's probes do) or
// when the fence wait returns (--bracket fence). The host clock is CLOCK_MONOTONIC_RAW
// where the device pairs with it, else CLOCK_MONOTONIC.
//
//   gnomon-calibration-record OUT.csv [--seconds S] [--burst N] [--device SUBSTRING]
//                             [--bracket spin|fence]
#include <vulkan/vulkan.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "../support/vulkan_device.h"

namespace {

// The host clock the device pairs with: CLOCK_MONOTONIC_RAW where offered, else
// CLOCK_MONOTONIC. Brackets are read on the same clock.
clockid_t g_host_clock = CLOCK_MONOTONIC_RAW;

int64_t RawNs() {
  timespec ts;
  clock_gettime(g_host_clock, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "gnomon-calibration-record: %s\n", what.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path, device_filter;
  double seconds = 60;
  int burst = 10000;
  bool spin = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--bracket" && i + 1 < argc) {
      const std::string how = argv[++i];
      if (how != "spin" && how != "fence") Fail("--bracket takes spin or fence, not " + how);
      spin = how == "spin";
    } else if (arg == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (arg == "--burst" && i + 1 < argc) {
      burst = std::atoi(argv[++i]);
    } else if (arg == "--device" && i + 1 < argc) {
      device_filter = argv[++i];
    } else if (arg[0] != '-' && out_path.empty()) {
      out_path = arg;
    } else {
      std::printf(
          "Usage: gnomon-calibration-record OUT.csv [--seconds S] [--burst N] [--device SUBSTRING]\n"
          "                                 [--bracket spin|fence]\n");
      return arg == "-h" || arg == "--help" ? 0 : 1;
    }
  }
  if (out_path.empty()) Fail("name the output file");

  gnomon::test::VulkanDevice vk;
  if (const std::string error = vk.Create(device_filter); !error.empty()) Fail(error);
  if (!vk.calibrated_timestamps) Fail(vk.name + " does not offer VK_EXT_calibrated_timestamps");
  const VkDevice device = vk.device;
  VkPhysicalDeviceProperties properties;
  vkGetPhysicalDeviceProperties(vk.physical, &properties);
  auto calibrate = reinterpret_cast<PFN_vkGetCalibratedTimestampsEXT>(
      vkGetDeviceProcAddr(device, "vkGetCalibratedTimestampsEXT"));
  if (!calibrate) Fail("vkGetCalibratedTimestampsEXT is missing");
  auto domains_fn = reinterpret_cast<PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT>(
      vkGetInstanceProcAddr(vk.instance, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT"));
  uint32_t domain_count = 0;
  domains_fn(vk.physical, &domain_count, nullptr);
  std::vector<VkTimeDomainEXT> domains(domain_count);
  domains_fn(vk.physical, &domain_count, domains.data());
  VkTimeDomainEXT host_domain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
  for (VkTimeDomainEXT d : domains) {
    if (d == VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT) host_domain = d;
  }
  g_host_clock =
      host_domain == VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT ? CLOCK_MONOTONIC_RAW : CLOCK_MONOTONIC;
  // Two queries take turns: each write's command buffer resets the other query, so the
  // one written reads as unavailable until the GPU writes it.
  VkQueryPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  pool_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  pool_info.queryCount = 2;
  VkQueryPool pool;
  vkCreateQueryPool(device, &pool_info, nullptr, &pool);
  VkCommandBuffer writes[2];
  for (uint32_t q = 0; q < 2; ++q) {
    writes[q] = vk.NewCommandBuffer();
    vkCmdResetQueryPool(writes[q], pool, q ^ 1, 1);
    vkCmdWriteTimestamp(writes[q], VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, q);
    vkEndCommandBuffer(writes[q]);
  }
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  vkCreateFence(device, &fence_info, nullptr, &fence);
  auto submit_and_wait = [&](VkCommandBuffer cmd) {
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    vkResetFences(device, 1, &fence);
    vkQueueSubmit(vk.queue, 1, &submit, fence);
    vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX);
  };
  {
    VkCommandBuffer reset = vk.NewCommandBuffer();
    vkCmdResetQueryPool(reset, pool, 0, 2);
    vkEndCommandBuffer(reset);
    submit_and_wait(reset);
  }

  std::FILE* out = std::fopen(out_path.c_str(), "w");
  if (!out) Fail("cannot create " + out_path);
  std::fprintf(out, "kind,i,t_before_ns,device_ticks,host_ns,max_dev_ns,t_after_ns\n");
  VkCalibratedTimestampInfoEXT infos[2] = {
      {VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, nullptr, VK_TIME_DOMAIN_DEVICE_EXT},
      {VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, nullptr, host_domain}};
  auto sample = [&](const char* kind, long index) {
    uint64_t timestamps[2];
    uint64_t deviation = 0;
    const int64_t before = RawNs();
    if (calibrate(device, 2, infos, timestamps, &deviation) != VK_SUCCESS)
      Fail("vkGetCalibratedTimestampsEXT failed");
    const int64_t after = RawNs();
    std::fprintf(out, "%s,%ld,%lld,%llu,%llu,%llu,%lld\n", kind, index, (long long)before,
                 (unsigned long long)timestamps[0], (unsigned long long)timestamps[1],
                 (unsigned long long)deviation, (long long)after);
  };
  for (int i = 0; i < burst; ++i) sample("burst", i);
  const long paced = long(seconds * 1000);
  const int64_t start = RawNs();
  for (long i = 0; i < paced; ++i) {
    const int64_t due = start + i * 1000000;
    while (RawNs() < due) std::this_thread::sleep_for(std::chrono::microseconds(100));
    sample("paced", i);
    if (i % 10 == 5) {
      const uint32_t query = uint32_t(i / 10) % 2;
      VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
      submit.commandBufferCount = 1;
      submit.pCommandBuffers = &writes[query];
      vkResetFences(device, 1, &fence);
      const int64_t before = RawNs();
      vkQueueSubmit(vk.queue, 1, &submit, fence);
      uint64_t result[2] = {0, 0};  // the value, then its availability
      int64_t after = 0;
      while (spin && after == 0 && RawNs() - before < 1000000000) {
        vkGetQueryPoolResults(device, pool, query, 1, sizeof(result), result, sizeof(result),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
        if (result[1] != 0) after = RawNs();
      }
      vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX);
      if (after == 0) after = RawNs();
      vkGetQueryPoolResults(device, pool, query, 1, sizeof(result), result, sizeof(result),
                            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
      std::fprintf(out, "gpuwrite,%ld,%lld,%llu,0,0,%lld\n", i, (long long)before,
                   (unsigned long long)result[0], (long long)after);
    }
  }
  std::fclose(out);
  std::printf(
      "gnomon-calibration-record: %s, host clock %s, period %.6g ns: %d burst, %ld paced, %ld gpuwrite rows "
      "(%s) -> %s\n",
      properties.deviceName, g_host_clock == CLOCK_MONOTONIC_RAW ? "CLOCK_MONOTONIC_RAW" : "CLOCK_MONOTONIC",
      double(properties.limits.timestampPeriod), burst, paced, paced / 10,
      spin ? "spun on availability" : "fence waits", out_path.c_str());
  vkDestroyFence(device, fence, nullptr);
  vkDestroyQueryPool(device, pool, nullptr);
  vk.Destroy();
  return 0;
}
