// Tracy's Vulkan GPU zone interface, recorded by Gnomon: TracyVkContext*, the TracyVk*Zone
// macros and TracyVkCollect, with Tracy's arguments and the same contract (include
// Vulkan's header first; one context per queue; TracyVkCollect once a frame, outside a
// render pass, from one thread). Vulkan functions are the program's own (its loader's
// symbols), or, with TRACY_VK_USE_SYMBOL_TABLE, resolved through the
// vkGetInstanceProcAddr and vkGetDeviceProcAddr it passes.
//
// How it works, as in Tracy: each zone writes two timestamps into a ring of queries;
// TracyVkCollect reads the results that are ready, in order, never waiting, and resets
// their queries in the command buffer it is given. A zone that finds the ring full of
// queries in flight is not recorded (counted in zones_untimed()); a query left
// unwritten (its command buffer never submitted) is skipped after a second.
//
// The clock: TracyVkContextCalibrated reads the device clock and CLOCK_MONOTONIC_RAW (or
// CLOCK_MONOTONIC) at once with VK_EXT_calibrated_timestamps, best of five by
// maxDeviation, at creation and every 500 ms in TracyVkCollect; Gnomon maps every GPU
// time onto the CPU timeline from these pairs (docs/gpu-timestamps.md). TracyVkContext,
// without them, times one timestamp write between a submit and its completion and
// states half that bracket as the pair's uncertainty.
#pragma once

#ifndef VK_VERSION_1_0
#include <vulkan/vulkan.h>
#endif

#include "tracy/Tracy.hpp"

#ifndef TRACY_ENABLE

#define TracyVkContext(...) nullptr
#define TracyVkContextCalibrated(...) nullptr
#define TracyVkContextHostCalibrated(...) nullptr
#define TracyVkDestroy(ctx)
#define TracyVkContextName(ctx, name, size)
#define TracyVkNamedZone(ctx, varname, cmdbuf, name, active)
#define TracyVkNamedZoneC(ctx, varname, cmdbuf, name, color, active)
#define TracyVkZone(ctx, cmdbuf, name)
#define TracyVkZoneC(ctx, cmdbuf, name, color)
#define TracyVkZoneTransient(ctx, varname, cmdbuf, name, active)
#define TracyVkCollect(ctx, cmdbuf)
#define TracyVkCollectHost(ctx)
#define TracyVkNamedZoneS(ctx, varname, cmdbuf, name, depth, active)
#define TracyVkNamedZoneCS(ctx, varname, cmdbuf, name, color, depth, active)
#define TracyVkZoneS(ctx, cmdbuf, name, depth)
#define TracyVkZoneCS(ctx, cmdbuf, name, color, depth)
#define TracyVkZoneTransientS(ctx, varname, cmdbuf, name, depth, active)

namespace tracy {
class VkCtx;
}
using TracyVkCtx = void*;

#else  // TRACY_ENABLE

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

namespace tracy {

class VkCtx {
 public:
  // The Vulkan functions a context uses.
  struct Functions {
    PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties = nullptr;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties GetPhysicalDeviceQueueFamilyProperties = nullptr;
    PFN_vkCreateQueryPool CreateQueryPool = nullptr;
    PFN_vkDestroyQueryPool DestroyQueryPool = nullptr;
    PFN_vkCmdResetQueryPool CmdResetQueryPool = nullptr;
    PFN_vkCmdWriteTimestamp CmdWriteTimestamp = nullptr;
    PFN_vkGetQueryPoolResults GetQueryPoolResults = nullptr;
    PFN_vkBeginCommandBuffer BeginCommandBuffer = nullptr;
    PFN_vkEndCommandBuffer EndCommandBuffer = nullptr;
    PFN_vkQueueSubmit QueueSubmit = nullptr;
    PFN_vkQueueWaitIdle QueueWaitIdle = nullptr;
    PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT GetCalibrateableTimeDomains = nullptr;
    PFN_vkGetCalibratedTimestampsEXT GetCalibratedTimestamps = nullptr;
  };

  static constexpr uint32_t kQueries = 65536;  // as Tracy's; two per zone
  // A query not ready while later ones are, for this long, was never submitted (a
  // command buffer thrown away): Collect skips it.
  static constexpr int64_t kStuckNs = 1'000'000'000;
  static constexpr int64_t kRecalibrationNs = 500'000'000;

  VkCtx(const Functions& fn, VkPhysicalDevice physical, VkDevice device, VkQueue queue, VkCommandBuffer cmd)
      : fn_(fn), device_(device) {
    VkPhysicalDeviceProperties properties{};
    fn_.GetPhysicalDeviceProperties(physical, &properties);
    if (properties.limits.timestampPeriod <= 0) return;
    VkQueryPoolCreateInfo pool_info{};
    pool_info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    pool_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    pool_info.queryCount = kQueries;
    if (fn_.CreateQueryPool(device, &pool_info, nullptr, &pool_) != VK_SUCCESS) return;
    const uint8_t valid_bits = ValidBits(physical);
    valid_mask_ = valid_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << valid_bits) - 1;

    gnomon_gpu_context_info info{};
    info.api = GNOMON_GPU_API_VULKAN;
    info.device_name = properties.deviceName;
    gnomon_gpu_period_from_float(double(properties.limits.timestampPeriod), &info.period_numerator_ns,
                                 &info.period_denominator);
    info.valid_bits = valid_bits;
    uint64_t gpu = 0;
    int64_t cpu_ns = 0;
    uint32_t uncertainty_ns = 0;
    const bool calibrated = ChooseHostDomain(physical) && BestPair(gpu, cpu_ns, uncertainty_ns);
    // One submission resets the ring (and, uncalibrated, times one timestamp write).
    if (!Submit(queue, cmd, !calibrated, gpu, cpu_ns, uncertainty_ns)) return;
    info.flags = calibrated ? GNOMON_GPU_CONTEXT_CALIBRATED : GNOMON_GPU_CONTEXT_FALLBACK_CALIBRATION;
    info.gpu_ticks = gpu;
    info.cpu_time = uint64_t(cpu_ns);
    info.cpu_domain = calibrated ? host_domain_ : GNOMON_CPU_TIME_MONOTONIC_RAW;
    info.uncertainty_ns = uncertainty_ns;
    id_ = gnomon_gpu_context_create(&info);
    calibrated_ = calibrated;
    previous_calibration_ns_ = cpu_ns;
  }
  ~VkCtx() {
    if (pool_ != VK_NULL_HANDLE) fn_.DestroyQueryPool(device_, pool_, nullptr);
  }
  VkCtx(const VkCtx&) = delete;
  VkCtx& operator=(const VkCtx&) = delete;

  bool is_active() const { return id_ != 0; }
  uint32_t id() const { return id_; }
  uint64_t zones_untimed() const { return untimed_.load(std::memory_order_relaxed); }

  void Name(const char* name, size_t size) {
    if (id_ != 0) gnomon_gpu_context_name(id_, name, size);
  }

  // Takes two queries for a zone (begin, end) and returns the begin's sequence
  // number; false when the ring is full of queries in flight.
  bool TakeZoneQueries(uint64_t& begin) {
    uint64_t head = head_.load(std::memory_order_relaxed);
    do {
      if (head + 2 - tail_.load(std::memory_order_acquire) > kQueries) {
        untimed_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
    } while (!head_.compare_exchange_weak(head, head + 2, std::memory_order_acq_rel));
    begin = head;
    return true;
  }
  void WriteTimestamp(VkCommandBuffer cmd, VkPipelineStageFlagBits stage, uint64_t sequence) {
    fn_.CmdWriteTimestamp(cmd, stage, pool_, uint32_t(sequence % kQueries));
  }

  // Reads what is ready, in order, never waiting; resets those queries in `cmd`, which
  // must be submitted before the zones recorded after this call run (Tracy's contract).
  void Collect(VkCommandBuffer cmd) {
    if (id_ == 0) return;
    const uint64_t head = head_.load(std::memory_order_acquire);
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    while (tail != head) {
      const uint32_t first = uint32_t(tail % kQueries);
      const uint32_t count = uint32_t(std::min<uint64_t>(head - tail, kQueries - first));
      results_.assign(size_t(count) * 2, 0);
      const VkResult r = fn_.GetQueryPoolResults(
          device_, pool_, first, count, results_.size() * sizeof(uint64_t), results_.data(),
          2 * sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
      if (r != VK_SUCCESS && r != VK_NOT_READY) break;
      uint32_t done = 0;
      while (done < count && results_[size_t(done) * 2 + 1] != 0) {
        gnomon_gpu_time(id_, uint32_t(tail + done), results_[size_t(done) * 2] & valid_mask_);
        ++done;
      }
      if (done == 0 && SkipStuck(count)) done = 1;  // its zone stays without a time
      if (done == 0) break;
      fn_.CmdResetQueryPool(cmd, pool_, first, done);
      tail += done;
      tail_.store(tail, std::memory_order_release);
      if (done < count) break;
    }
    Recalibrate();
  }

  uint64_t queries_skipped() const { return skipped_; }

 private:
  // The oldest query is not ready but a later one is: the GPU ran past it, so its
  // command buffer was never submitted. After kStuckNs of that, skip it.
  bool SkipStuck(uint32_t count) {
    bool later_ready = false;
    for (uint32_t i = 1; i < count && !later_ready; ++i) later_ready = results_[size_t(i) * 2 + 1] != 0;
    if (!later_ready) {
      stuck_since_ns_ = 0;
      return false;
    }
    const int64_t now_ns = MonotonicRawNs();
    if (stuck_since_ns_ == 0) stuck_since_ns_ = now_ns;
    if (now_ns - stuck_since_ns_ < kStuckNs) return false;
    stuck_since_ns_ = 0;
    ++skipped_;
    return true;
  }

  uint8_t ValidBits(VkPhysicalDevice physical) const {
    uint32_t n = 0;
    fn_.GetPhysicalDeviceQueueFamilyProperties(physical, &n, nullptr);
    std::vector<VkQueueFamilyProperties> families(n);
    fn_.GetPhysicalDeviceQueueFamilyProperties(physical, &n, families.data());
    // The queue's family is not known here: the widest counter of any family.
    uint32_t bits = 0;
    for (const auto& f : families) bits = std::max(bits, f.timestampValidBits);
    return uint8_t(bits == 0 || bits > 64 ? 64 : bits);
  }

  bool ChooseHostDomain(VkPhysicalDevice physical) {
    if (fn_.GetCalibrateableTimeDomains == nullptr || fn_.GetCalibratedTimestamps == nullptr) return false;
    uint32_t n = 0;
    if (fn_.GetCalibrateableTimeDomains(physical, &n, nullptr) != VK_SUCCESS) return false;
    std::vector<VkTimeDomainEXT> domains(n);
    if (fn_.GetCalibrateableTimeDomains(physical, &n, domains.data()) != VK_SUCCESS) return false;
    const auto has = [&](VkTimeDomainEXT d) {
      return std::find(domains.begin(), domains.end(), d) != domains.end();
    };
    if (!has(VK_TIME_DOMAIN_DEVICE_EXT)) return false;
    if (has(VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT)) {
      host_vk_domain_ = VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT;
      host_domain_ = GNOMON_CPU_TIME_MONOTONIC_RAW;
      return true;
    }
    if (has(VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT)) {
      host_vk_domain_ = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
      host_domain_ = GNOMON_CPU_TIME_MONOTONIC;
      return true;
    }
    return false;
  }

  // The pair of least deviation of five.
  bool BestPair(uint64_t& gpu, int64_t& cpu_ns, uint32_t& uncertainty_ns) {
    VkCalibratedTimestampInfoEXT infos[2]{};
    infos[0].sType = infos[1].sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT;
    infos[0].timeDomain = VK_TIME_DOMAIN_DEVICE_EXT;
    infos[1].timeDomain = host_vk_domain_;
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; ++i) {
      uint64_t timestamps[2] = {0, 0};
      uint64_t deviation = 0;
      if (fn_.GetCalibratedTimestamps(device_, 2, infos, timestamps, &deviation) != VK_SUCCESS) continue;
      if (deviation < best) {
        best = deviation;
        gpu = timestamps[0] & valid_mask_;
        cpu_ns = int64_t(timestamps[1]);
      }
    }
    uncertainty_ns = uint32_t(std::min<uint64_t>(best, UINT32_MAX));
    return best != UINT64_MAX;
  }

  static int64_t MonotonicRawNs() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }

  // Resets every query of the ring; when `time_one`, also writes a timestamp into a
  // query pool of its own and brackets the submission with CPU reads. The command
  // buffer is the program's, begun and submitted once, as Tracy does.
  bool Submit(VkQueue queue, VkCommandBuffer cmd, bool time_one, uint64_t& gpu, int64_t& cpu_ns,
              uint32_t& uncertainty_ns) {
    VkQueryPool probe = VK_NULL_HANDLE;
    if (time_one) {
      VkQueryPoolCreateInfo pool_info{};
      pool_info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
      pool_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
      pool_info.queryCount = 1;
      if (fn_.CreateQueryPool(device_, &pool_info, nullptr, &probe) != VK_SUCCESS) return false;
    }
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    bool ok = fn_.BeginCommandBuffer(cmd, &begin) == VK_SUCCESS;
    if (ok) {
      fn_.CmdResetQueryPool(cmd, pool_, 0, kQueries);
      if (time_one) {
        fn_.CmdResetQueryPool(cmd, probe, 0, 1);
        fn_.CmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, probe, 0);
      }
      ok = fn_.EndCommandBuffer(cmd) == VK_SUCCESS;
    }
    VkSubmitInfo submit{};
    submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    const int64_t before_ns = MonotonicRawNs();
    ok = ok && fn_.QueueSubmit(queue, 1, &submit, VK_NULL_HANDLE) == VK_SUCCESS &&
         fn_.QueueWaitIdle(queue) == VK_SUCCESS;
    const int64_t after_ns = MonotonicRawNs();
    if (ok && time_one) {
      uint64_t value = 0;
      ok = fn_.GetQueryPoolResults(device_, probe, 0, 1, sizeof(value), &value, sizeof(value),
                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS;
      gpu = value & valid_mask_;
      cpu_ns = before_ns + (after_ns - before_ns) / 2;
      uncertainty_ns = uint32_t(std::min<int64_t>((after_ns - before_ns) / 2 + 1, UINT32_MAX));
    }
    if (probe != VK_NULL_HANDLE) fn_.DestroyQueryPool(device_, probe, nullptr);
    return ok;
  }

  void Recalibrate() {
    if (!calibrated_) return;
    const int64_t now_ns = MonotonicRawNs();
    if (now_ns - last_check_ns_ < kRecalibrationNs) return;
    last_check_ns_ = now_ns;
    uint64_t gpu = 0;
    int64_t cpu_ns = 0;
    uint32_t uncertainty_ns = 0;
    if (!BestPair(gpu, cpu_ns, uncertainty_ns) || cpu_ns <= previous_calibration_ns_) return;
    gnomon_gpu_calibration_data data{};
    data.gpu_ticks = gpu;
    data.cpu_time = uint64_t(cpu_ns);
    data.cpu_delta_ns = cpu_ns - previous_calibration_ns_;
    data.uncertainty_ns = uncertainty_ns;
    data.context = id_;
    data.cpu_domain = host_domain_;
    gnomon_gpu_calibration(&data);
    previous_calibration_ns_ = cpu_ns;
  }

  Functions fn_;
  VkDevice device_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  uint32_t id_ = 0;
  uint64_t valid_mask_ = ~uint64_t{0};
  bool calibrated_ = false;
  VkTimeDomainEXT host_vk_domain_ = VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT;
  gnomon_cpu_time_domain host_domain_ = GNOMON_CPU_TIME_MONOTONIC_RAW;
  int64_t previous_calibration_ns_ = 0;
  int64_t last_check_ns_ = 0;
  int64_t stuck_since_ns_ = 0;
  uint64_t skipped_ = 0;
  alignas(64) std::atomic<uint64_t> head_{0};  // next query to take, by zones' threads
  alignas(64) std::atomic<uint64_t> tail_{0};  // oldest query not read back, by Collect
  std::atomic<uint64_t> untimed_{0};
  std::vector<uint64_t> results_;  // value, availability
};

// A GPU zone on a command buffer, from its construction to its destruction.
class VkCtxScope {
 public:
  VkCtxScope(VkCtx* ctx, gnomon_source_location* location, VkCommandBuffer cmd, bool active) : cmd_(cmd) {
    if (!active || ctx == nullptr || !ctx->is_active() || location == nullptr ||
        !ctx->TakeZoneQueries(begin_))
      return;
    ctx_ = ctx;
    ctx_->WriteTimestamp(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, begin_);
    gnomon_gpu_zone_begin(ctx_->id(), uint32_t(begin_), location);
  }
  VkCtxScope(VkCtx* ctx, gnomon_source_location* location, VkCommandBuffer cmd, int /*depth*/, bool active)
      : VkCtxScope(ctx, location, cmd, active) {}
  VkCtxScope(VkCtx* ctx, uint32_t line, const char* source, size_t source_size, const char* function,
             size_t function_size, const char* name, size_t name_size, VkCommandBuffer cmd, bool active)
      : VkCtxScope(ctx,
                   active ? ___gnomon_tracy_transient_location(line, source, source_size, function,
                                                               function_size, name, name_size, 0)
                          : nullptr,
                   cmd, active) {}
  ~VkCtxScope() {
    if (ctx_ == nullptr) return;
    ctx_->WriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, begin_ + 1);
    gnomon_gpu_zone_end(ctx_->id(), uint32_t(begin_ + 1));
  }
  VkCtxScope(const VkCtxScope&) = delete;
  VkCtxScope& operator=(const VkCtxScope&) = delete;

 private:
  VkCtx* ctx_ = nullptr;
  VkCommandBuffer cmd_;
  uint64_t begin_ = 0;
};

namespace detail {

#if defined(TRACY_VK_USE_SYMBOL_TABLE)
inline VkCtx::Functions VkFunctions(VkInstance instance, PFN_vkGetInstanceProcAddr instance_proc,
                                    VkDevice device, PFN_vkGetDeviceProcAddr device_proc, bool calibrated) {
  VkCtx::Functions f;
#define TRACY_GNOMON_VK_I(member, name) \
  f.member = reinterpret_cast<PFN_##name>(instance_proc(instance, #name))
#define TRACY_GNOMON_VK_D(member, name) f.member = reinterpret_cast<PFN_##name>(device_proc(device, #name))
  TRACY_GNOMON_VK_I(GetPhysicalDeviceProperties, vkGetPhysicalDeviceProperties);
  TRACY_GNOMON_VK_I(GetPhysicalDeviceQueueFamilyProperties, vkGetPhysicalDeviceQueueFamilyProperties);
  TRACY_GNOMON_VK_D(CreateQueryPool, vkCreateQueryPool);
  TRACY_GNOMON_VK_D(DestroyQueryPool, vkDestroyQueryPool);
  TRACY_GNOMON_VK_D(CmdResetQueryPool, vkCmdResetQueryPool);
  TRACY_GNOMON_VK_D(CmdWriteTimestamp, vkCmdWriteTimestamp);
  TRACY_GNOMON_VK_D(GetQueryPoolResults, vkGetQueryPoolResults);
  TRACY_GNOMON_VK_D(BeginCommandBuffer, vkBeginCommandBuffer);
  TRACY_GNOMON_VK_D(EndCommandBuffer, vkEndCommandBuffer);
  TRACY_GNOMON_VK_D(QueueSubmit, vkQueueSubmit);
  TRACY_GNOMON_VK_D(QueueWaitIdle, vkQueueWaitIdle);
  if (calibrated) {
    TRACY_GNOMON_VK_I(GetCalibrateableTimeDomains, vkGetPhysicalDeviceCalibrateableTimeDomainsEXT);
    TRACY_GNOMON_VK_D(GetCalibratedTimestamps, vkGetCalibratedTimestampsEXT);
  }
#undef TRACY_GNOMON_VK_I
#undef TRACY_GNOMON_VK_D
  return f;
}
#else
// The program's own Vulkan functions (its loader's symbols, or volk's pointers).
inline VkCtx::Functions VkFunctions(PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT domains,
                                    PFN_vkGetCalibratedTimestampsEXT timestamps) {
  VkCtx::Functions f;
  f.GetPhysicalDeviceProperties = vkGetPhysicalDeviceProperties;
  f.GetPhysicalDeviceQueueFamilyProperties = vkGetPhysicalDeviceQueueFamilyProperties;
  f.CreateQueryPool = vkCreateQueryPool;
  f.DestroyQueryPool = vkDestroyQueryPool;
  f.CmdResetQueryPool = vkCmdResetQueryPool;
  f.CmdWriteTimestamp = vkCmdWriteTimestamp;
  f.GetQueryPoolResults = vkGetQueryPoolResults;
  f.BeginCommandBuffer = vkBeginCommandBuffer;
  f.EndCommandBuffer = vkEndCommandBuffer;
  f.QueueSubmit = vkQueueSubmit;
  f.QueueWaitIdle = vkQueueWaitIdle;
  f.GetCalibrateableTimeDomains = domains;
  f.GetCalibratedTimestamps = timestamps;
  return f;
}
#endif

}  // namespace detail
}  // namespace tracy

using TracyVkCtx = tracy::VkCtx*;

#if defined(TRACY_VK_USE_SYMBOL_TABLE)
#define TracyVkContext(instance, physdev, device, queue, cmdbuf, instanceProcAddr, deviceProcAddr)      \
  new ::tracy::VkCtx(                                                                                   \
      ::tracy::detail::VkFunctions(instance, instanceProcAddr, device, deviceProcAddr, false), physdev, \
      device, queue, cmdbuf)
#define TracyVkContextCalibrated(instance, physdev, device, queue, cmdbuf, instanceProcAddr, deviceProcAddr) \
  new ::tracy::VkCtx(::tracy::detail::VkFunctions(instance, instanceProcAddr, device, deviceProcAddr, true), \
                     physdev, device, queue, cmdbuf)
#else
#define TracyVkContext(physdev, device, queue, cmdbuf) \
  new ::tracy::VkCtx(::tracy::detail::VkFunctions(nullptr, nullptr), physdev, device, queue, cmdbuf)
#define TracyVkContextCalibrated(physdev, device, queue, cmdbuf, gpdctd, gct) \
  new ::tracy::VkCtx(::tracy::detail::VkFunctions(gpdctd, gct), physdev, device, queue, cmdbuf)
#endif
// Host-reset contexts (TracyVkContextHostCalibrated) are not provided: null, and every
// macro below accepts a null context and records nothing.
#define TracyVkContextHostCalibrated(...) static_cast<::tracy::VkCtx*>(nullptr)
#define TracyVkDestroy(ctx) delete (ctx)
#define TracyVkContextName(ctx, name, size) \
  do {                                      \
    if (ctx) (ctx)->Name(name, size);       \
  } while (0)
#define TracyVkNamedZone(ctx, varname, cmdbuf, name, active) \
  ::tracy::VkCtxScope varname(ctx, TracyGnomonLocation(name, 0), cmdbuf, active)
#define TracyVkNamedZoneC(ctx, varname, cmdbuf, name, color, active) \
  ::tracy::VkCtxScope varname(ctx, TracyGnomonLocation(name, color), cmdbuf, active)
#define TracyVkZone(ctx, cmdbuf, name) TracyVkNamedZone(ctx, ___tracy_gpu_zone, cmdbuf, name, true)
#define TracyVkZoneC(ctx, cmdbuf, name, color) \
  TracyVkNamedZoneC(ctx, ___tracy_gpu_zone, cmdbuf, name, color, true)
#define TracyVkZoneTransient(ctx, varname, cmdbuf, name, active)                                \
  ::tracy::VkCtxScope varname(ctx, TracyLine, TracyFile, std::strlen(TracyFile), TracyFunction, \
                              std::strlen(TracyFunction), name, std::strlen(name), cmdbuf, active)
#define TracyVkCollect(ctx, cmdbuf)  \
  do {                               \
    if (ctx) (ctx)->Collect(cmdbuf); \
  } while (0)
#define TracyVkCollectHost(ctx) static_cast<void>(ctx)
#define TracyVkNamedZoneS(ctx, varname, cmdbuf, name, depth, active) \
  TracyVkNamedZone(ctx, varname, cmdbuf, name, active)
#define TracyVkNamedZoneCS(ctx, varname, cmdbuf, name, color, depth, active) \
  TracyVkNamedZoneC(ctx, varname, cmdbuf, name, color, active)
#define TracyVkZoneS(ctx, cmdbuf, name, depth) TracyVkZone(ctx, cmdbuf, name)
#define TracyVkZoneCS(ctx, cmdbuf, name, color, depth) TracyVkZoneC(ctx, cmdbuf, name, color)
#define TracyVkZoneTransientS(ctx, varname, cmdbuf, name, depth, active) \
  TracyVkZoneTransient(ctx, varname, cmdbuf, name, active)

#endif  // TRACY_ENABLE
