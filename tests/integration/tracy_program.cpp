// A program written against Tracy's C++ interface only (tracy/Tracy.hpp,
// tracy/TracyVulkan.hpp), built twice: linked with gnomon::tracy (TRACY_ENABLE), and
// without TRACY_ENABLE and without any Gnomon library. tracy_compat_test.cpp captures
// the first and checks every event; the second must run and open no port.
//
// Four threads share a tracked lock, allocate and free, plot and nest zones; the main
// thread marks frames, sends messages, makes transient zones and, where a Vulkan
// device is found (lavapipe in CI), times GPU zones on it.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../support/vulkan_device.h"
#include "tracy/Tracy.hpp"
#include "tracy/TracyVulkan.hpp"

TracyVkCtx MakeContextFromSymbols(VkInstance instance, VkPhysicalDevice physical, VkDevice device,
                                  VkQueue queue, VkCommandBuffer cmd);

namespace {

constexpr int kThreads = 4;
constexpr int kIterations = 500;
constexpr int kGpuFrames = 20;

TracyLockable(std::mutex, shared_lock);
int shared_counter = 0;

void Worker(int index) {
  const std::string name = "tracy worker " + std::to_string(index);
  tracy::SetThreadName(name.c_str());
  for (int i = 0; i < kIterations; ++i) {
    ZoneScopedN("tracy work");
    ZoneValue(uint64_t(i));
    {
      ZoneScopedNC("tracy inner", tracy::Color::Red);
      ZoneText("inner", 5);
      std::lock_guard<LockableBase(std::mutex)> hold(shared_lock);
      ++shared_counter;
    }
    void* block = std::malloc(64);
    TracyAlloc(block, 64);
    TracyFree(block);
    std::free(block);
    TracyPlot("tracy counter", int64_t(i));
    ZoneNamedN(never, "tracy inactive", false);
    [[maybe_unused]] const int verbose = 0;  // an int, as programs pass it
    ZoneNamedN(quiet, "tracy inactive", verbose);
    [[maybe_unused]] const unsigned flags = 4;
    ZoneNamedN(loud, "tracy active by flag", flags & 4u);
  }
  // Reported as never freed: the pool sees no free.
  void* kept = std::malloc(128);
  TracyAllocN(kept, 128, "tracy pool");
  std::free(kept);
}

void ScopedFunction() {
  ZoneScoped;
  ZoneNameF("renamed %d", 7);
  ZoneTextF("text %s", "formatted");
}

// GPU zones on the first Vulkan device: a frame of two nested zones each, collected
// at the start of the next frame's command buffer, as Tracy's users do.
int RunGpuFrames() {
  gnomon::test::VulkanDevice vk;
  if (const std::string error = vk.Create(); !error.empty()) {
    std::printf("no Vulkan device: %s\n", error.c_str());
    return 0;
  }
  VkCommandBuffer cmd = vk.NewCommandBuffer();
  [[maybe_unused]] TracyVkCtx ctx = nullptr;
  if (vk.calibrated_timestamps) {
    [[maybe_unused]] auto domains = reinterpret_cast<PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT>(
        vkGetInstanceProcAddr(vk.instance, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT"));
    [[maybe_unused]] auto timestamps = reinterpret_cast<PFN_vkGetCalibratedTimestampsEXT>(
        vkGetDeviceProcAddr(vk.device, "vkGetCalibratedTimestampsEXT"));
    ctx = TracyVkContextCalibrated(vk.physical, vk.device, vk.queue, cmd, domains, timestamps);
  } else {
    ctx = TracyVkContext(vk.physical, vk.device, vk.queue, cmd);
  }
  TracyVkContextName(ctx, "tracy queue", 11);
  // A second context, made the other way (symbol table; uncalibrated: a timed probe).
  [[maybe_unused]] TracyVkCtx symbols =
      MakeContextFromSymbols(vk.instance, vk.physical, vk.device, vk.queue, cmd);
  TracyVkContextName(symbols, "tracy symbols", 13);
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  for (int frame = 0; frame <= kGpuFrames; ++frame) {
    vkBeginCommandBuffer(cmd, &begin);
    TracyVkCollect(ctx, cmd);
    TracyVkCollect(symbols, cmd);
    if (frame < kGpuFrames) {
      TracyVkNamedZone(symbols, on_symbols, cmd, "tracy gpu symbols", true);
      TracyVkZone(ctx, cmd, "tracy gpu frame");
      { TracyVkZoneC(ctx, cmd, "tracy gpu pass", tracy::Color::Blue); }
    }
    vkEndCommandBuffer(cmd);
    vk.Submit(cmd, true);
  }
  TracyVkDestroy(ctx);
  TracyVkDestroy(symbols);
  vk.Destroy();
  std::printf("gpu frames %d\n", kGpuFrames);
  return kGpuFrames;
}

}  // namespace

int main() {
  tracy::SetThreadName("tracy main");
  TracyAppInfo("tracy test app", 14);
  TracyMessageL("tracy hello");
  TracyMessageC("tracy colored", 13, 0xFF0000);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(Worker, t);
  for (auto& t : threads) t.join();
  for (int f = 0; f < 10; ++f) {
    ZoneScopedN("tracy frame");
    FrameMark;
  }
  [[maybe_unused]] static const char* const kNamed = "tracy frames";
  for (int f = 0; f < 3; ++f) FrameMarkNamed(kNamed);
  [[maybe_unused]] static const char* const kDiscontinuous = "tracy discontinuous";
  for (int f = 0; f < 2; ++f) {
    FrameMarkStart(kDiscontinuous);
    FrameMarkEnd(kDiscontinuous);
  }
  for (int z = 0; z < 3; ++z) {
    const std::string name = std::string("tracy ") + "transient";  // a new buffer each time
    ZoneTransientN(transient, name.c_str(), true);
  }
  ScopedFunction();
  const int gpu_frames = RunGpuFrames();
  std::printf("tracy program done: counter %d, gpu frames %d, connected %d\n", shared_counter, gpu_frames,
              int(TracyIsConnected));
  return shared_counter == kThreads * kIterations ? 0 : 1;
}
