#include <algorithm>
#include <cstring>
#include <ctime>
#include <string>

#include "core/timer.h"
#include "gnomon/protocol/tick_period.h"
#include "gnomon/vulkan.hpp"
#include "vulkan_statistics.h"

namespace gnomon::vulkan {
namespace {

constexpr int kCalibrationTries = 5;
// How long a probe spins on its query's availability before it waits on its fence: a few
// submission latencies, so that a probe behind other work falls back to the wait.
constexpr int64_t kProbeSpinNs = 2'000'000;
// A submitted frame not readable after this many later frames was never executed (its
// command buffer was not submitted after all): its slot is reclaimed, its data dropped.
constexpr uint64_t kLostFrameAge = 64;

int64_t RawNs() { return client::ReadClockNs(CLOCK_MONOTONIC_RAW); }

}  // namespace

struct Context::Functions {
  PFN_vkGetDeviceProcAddr GetDeviceProcAddr = nullptr;
  PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties = nullptr;
  PFN_vkGetPhysicalDeviceQueueFamilyProperties GetPhysicalDeviceQueueFamilyProperties = nullptr;
  PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT GetCalibrateableTimeDomains = nullptr;
  PFN_vkGetCalibratedTimestampsEXT GetCalibratedTimestamps = nullptr;
  PFN_vkCreateQueryPool CreateQueryPool = nullptr;
  PFN_vkDestroyQueryPool DestroyQueryPool = nullptr;
  PFN_vkGetQueryPoolResults GetQueryPoolResults = nullptr;
  PFN_vkCmdWriteTimestamp CmdWriteTimestamp = nullptr;
  PFN_vkCmdResetQueryPool CmdResetQueryPool = nullptr;
  PFN_vkCmdBeginQuery CmdBeginQuery = nullptr;
  PFN_vkCmdEndQuery CmdEndQuery = nullptr;
  PFN_vkResetQueryPool ResetQueryPool = nullptr;
  PFN_vkCreateCommandPool CreateCommandPool = nullptr;
  PFN_vkDestroyCommandPool DestroyCommandPool = nullptr;
  PFN_vkAllocateCommandBuffers AllocateCommandBuffers = nullptr;
  PFN_vkBeginCommandBuffer BeginCommandBuffer = nullptr;
  PFN_vkEndCommandBuffer EndCommandBuffer = nullptr;
  PFN_vkResetCommandBuffer ResetCommandBuffer = nullptr;
  PFN_vkQueueSubmit QueueSubmit = nullptr;
  PFN_vkCreateFence CreateFence = nullptr;
  PFN_vkDestroyFence DestroyFence = nullptr;
  PFN_vkWaitForFences WaitForFences = nullptr;
  PFN_vkResetFences ResetFences = nullptr;
  PFN_vkGetFenceStatus GetFenceStatus = nullptr;
};

std::unique_ptr<Context> Context::Create(PFN_vkGetInstanceProcAddr gipa, VkInstance instance,
                                         VkPhysicalDevice physical_device, VkDevice device, VkQueue queue,
                                         uint32_t queue_family, const ContextOptions& options) {
  std::unique_ptr<Context> context(new Context);
  if (gipa == nullptr || !options.enabled) return context;  // inert
  auto fn = std::make_unique<Functions>();
  auto instance_fn = [&](const char* name) { return gipa(instance, name); };
  fn->GetDeviceProcAddr = reinterpret_cast<PFN_vkGetDeviceProcAddr>(instance_fn("vkGetDeviceProcAddr"));
  fn->GetPhysicalDeviceProperties =
      reinterpret_cast<PFN_vkGetPhysicalDeviceProperties>(instance_fn("vkGetPhysicalDeviceProperties"));
  fn->GetPhysicalDeviceQueueFamilyProperties = reinterpret_cast<PFN_vkGetPhysicalDeviceQueueFamilyProperties>(
      instance_fn("vkGetPhysicalDeviceQueueFamilyProperties"));
  if (!fn->GetDeviceProcAddr || !fn->GetPhysicalDeviceProperties ||
      !fn->GetPhysicalDeviceQueueFamilyProperties) {
    return context;
  }
  VkPhysicalDeviceProperties properties{};
  fn->GetPhysicalDeviceProperties(physical_device, &properties);
  uint32_t family_count = 0;
  fn->GetPhysicalDeviceQueueFamilyProperties(physical_device, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  fn->GetPhysicalDeviceQueueFamilyProperties(physical_device, &family_count, families.data());
  if (queue_family >= family_count || families[queue_family].timestampValidBits == 0 ||
      !(properties.limits.timestampPeriod > 0)) {
    return context;  // no timestamps on this queue: inert, nothing created
  }
  const uint32_t valid_bits = families[queue_family].timestampValidBits;

  auto device_fn = [&](const char* name) { return fn->GetDeviceProcAddr(device, name); };
#define GNOMON_LOAD(member, name) fn->member = reinterpret_cast<decltype(fn->member)>(device_fn(name))
  GNOMON_LOAD(CreateQueryPool, "vkCreateQueryPool");
  GNOMON_LOAD(DestroyQueryPool, "vkDestroyQueryPool");
  GNOMON_LOAD(GetQueryPoolResults, "vkGetQueryPoolResults");
  GNOMON_LOAD(CmdWriteTimestamp, "vkCmdWriteTimestamp");
  GNOMON_LOAD(CmdResetQueryPool, "vkCmdResetQueryPool");
  GNOMON_LOAD(CmdBeginQuery, "vkCmdBeginQuery");
  GNOMON_LOAD(CmdEndQuery, "vkCmdEndQuery");
  GNOMON_LOAD(CreateCommandPool, "vkCreateCommandPool");
  GNOMON_LOAD(DestroyCommandPool, "vkDestroyCommandPool");
  GNOMON_LOAD(AllocateCommandBuffers, "vkAllocateCommandBuffers");
  GNOMON_LOAD(BeginCommandBuffer, "vkBeginCommandBuffer");
  GNOMON_LOAD(EndCommandBuffer, "vkEndCommandBuffer");
  GNOMON_LOAD(ResetCommandBuffer, "vkResetCommandBuffer");
  GNOMON_LOAD(QueueSubmit, "vkQueueSubmit");
  GNOMON_LOAD(CreateFence, "vkCreateFence");
  GNOMON_LOAD(DestroyFence, "vkDestroyFence");
  GNOMON_LOAD(WaitForFences, "vkWaitForFences");
  GNOMON_LOAD(ResetFences, "vkResetFences");
  GNOMON_LOAD(GetFenceStatus, "vkGetFenceStatus");
  if (options.host_query_reset) {
    GNOMON_LOAD(ResetQueryPool, "vkResetQueryPool");
    if (!fn->ResetQueryPool) GNOMON_LOAD(ResetQueryPool, "vkResetQueryPoolEXT");
  }
  if (options.calibrated_timestamps) {
    GNOMON_LOAD(GetCalibratedTimestamps, "vkGetCalibratedTimestampsKHR");
    if (!fn->GetCalibratedTimestamps) GNOMON_LOAD(GetCalibratedTimestamps, "vkGetCalibratedTimestampsEXT");
    fn->GetCalibrateableTimeDomains = reinterpret_cast<PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT>(
        instance_fn("vkGetPhysicalDeviceCalibrateableTimeDomainsKHR"));
    if (!fn->GetCalibrateableTimeDomains) {
      fn->GetCalibrateableTimeDomains = reinterpret_cast<PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT>(
          instance_fn("vkGetPhysicalDeviceCalibrateableTimeDomainsEXT"));
    }
  }
#undef GNOMON_LOAD
  if (!fn->CreateQueryPool || !fn->GetQueryPoolResults || !fn->CmdWriteTimestamp || !fn->CmdResetQueryPool ||
      !fn->QueueSubmit || !fn->CreateFence || !fn->WaitForFences || !fn->ResetFences || !fn->GetFenceStatus) {
    return context;
  }

  Context& c = *context;
  c.device_ = device;
  c.queue_ = queue;
  c.queue_family_ = queue_family;
  c.host_reset_ = fn->ResetQueryPool != nullptr;
  c.schedule_ = client::CalibrationSchedule(options.recalibration_period);
  c.bracket_probes_ = options.bracket_probes;
  c.queries_per_slot_ = std::max<uint32_t>(2, options.queries_per_frame & ~1u);
  c.valid_mask_ = valid_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << valid_bits) - 1;
  c.slots_.resize(std::max<uint32_t>(1, options.frames_in_flight) + 1);
  for (Slot& slot : c.slots_) slot.wire_ids.resize(c.queries_per_slot_);
  c.results_.resize(size_t(c.queries_per_slot_) * 2);

  if (fn->GetCalibratedTimestamps && fn->GetCalibrateableTimeDomains) {
    uint32_t count = 0;
    fn->GetCalibrateableTimeDomains(physical_device, &count, nullptr);
    std::vector<VkTimeDomainEXT> domains(count);
    fn->GetCalibrateableTimeDomains(physical_device, &count, domains.data());
    auto has = [&](VkTimeDomainEXT d) {
      return std::find(domains.begin(), domains.end(), d) != domains.end();
    };
    if (has(VK_TIME_DOMAIN_DEVICE_EXT)) {
      if (has(VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT)) {
        c.host_domain_ = VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT;
      } else if (has(VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT)) {
        c.host_domain_ = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
      }
    }
    c.calibrated_ = c.host_domain_ != 0;
  }

  // One pool: a slot of queries per ring frame, plus two for the probes.
  VkQueryPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  pool_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  pool_info.queryCount = uint32_t(c.slots_.size()) * c.queries_per_slot_ + 2;
  if (fn->CreateQueryPool(device, &pool_info, nullptr, &c.pool_) != VK_SUCCESS)
    return std::unique_ptr<Context>(new Context);
  VkFenceCreateInfo slot_fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  for (Slot& slot : c.slots_) {
    if (fn->CreateFence(device, &slot_fence_info, nullptr, &slot.done) != VK_SUCCESS) {
      c.fn_ = std::move(fn);
      return std::unique_ptr<Context>(new Context);
    }
  }
  // The probes' command buffer and fence: the fallback calibration and the brackets.
  VkCommandPoolCreateInfo command_pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  command_pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  command_pool_info.queueFamilyIndex = queue_family;
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  if (fn->CreateCommandPool(device, &command_pool_info, nullptr, &c.command_pool_) != VK_SUCCESS ||
      fn->CreateFence(device, &fence_info, nullptr, &c.probe_fence_) != VK_SUCCESS) {
    c.fn_ = std::move(fn);
    return std::unique_ptr<Context>(new Context);  // c's destructor frees what was made
  }
  allocate.commandPool = c.command_pool_;
  allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocate.commandBufferCount = 1;
  if (fn->AllocateCommandBuffers(device, &allocate, &c.probe_cmd_) != VK_SUCCESS) {
    c.fn_ = std::move(fn);
    return std::unique_ptr<Context>(new Context);
  }
  c.fn_ = std::move(fn);
  c.probe_query_ = uint32_t(c.slots_.size()) * c.queries_per_slot_;
  c.probe_queries_ready_ = c.ResetProbeQueries();

  // The context's first calibration pair defines it on the wire.
  uint64_t gpu_ticks = 0;
  int64_t cpu_ns = 0;
  uint32_t uncertainty = 0;
  if (!c.BestPair(c.calibrated_ ? kCalibrationTries : 3, gpu_ticks, cpu_ns, uncertainty)) {
    return std::unique_ptr<Context>(new Context);
  }

  const protocol::TickPeriod period = protocol::PeriodFromFloat(properties.limits.timestampPeriod);
  gnomon_gpu_context_info info{};
  info.api = GNOMON_GPU_API_VULKAN;
  info.device_name = properties.deviceName;
  info.period_numerator_ns = period.numerator_ns;
  info.period_denominator = period.denominator;
  info.valid_bits = uint8_t(valid_bits);
  info.flags =
      uint16_t(c.calibrated_ ? GNOMON_GPU_CONTEXT_CALIBRATED : GNOMON_GPU_CONTEXT_FALLBACK_CALIBRATION);
  info.gpu_ticks = gpu_ticks;
  info.cpu_time = uint64_t(cpu_ns);
  info.cpu_domain = c.host_domain_ == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT ? GNOMON_CPU_TIME_MONOTONIC
                                                                         : GNOMON_CPU_TIME_MONOTONIC_RAW;
  info.uncertainty_ns = uncertainty;
  c.id_ = gnomon_gpu_context_create(&info);
  if (options.name != nullptr) gnomon_gpu_context_name(c.id_, options.name, std::strlen(options.name));
  if (options.pipeline_statistics != 0 && c.id_ != 0) c.CreateStatistics(options.pipeline_statistics);
  c.calibration_ = client::CalibrationChannel(c.id_, cpu_ns);
  c.stats_.last_calibration_uncertainty_ns = uncertainty;
  c.active_ = c.id_ != 0;
  if (c.active_) c.SendBrackets(options.bracket_probes);
  return context;
}

void Context::CreateStatistics(VkQueryPipelineStatisticFlags flags) {
  if (!fn_->CmdBeginQuery || !fn_->CmdEndQuery) return;
  const counters::QueryType type = PipelineStatisticsType(flags);
  if (type.counters.empty()) return;
  statistics_per_slot_ = std::max<uint32_t>(1, queries_per_slot_ / 2);
  VkQueryPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  pool_info.queryType = VK_QUERY_TYPE_PIPELINE_STATISTICS;
  pool_info.queryCount = uint32_t(slots_.size()) * statistics_per_slot_;
  pool_info.pipelineStatistics = KnownStatistics(flags);
  if (fn_->CreateQueryPool(device_, &pool_info, nullptr, &statistics_pool_) != VK_SUCCESS) {
    statistics_pool_ = VK_NULL_HANDLE;  // the device lacks pipelineStatisticsQuery: timestamps only
    return;
  }
  statistics_count_ = uint32_t(type.counters.size());
  counter_set_ = counters::DefineSet(id_, type);
  statistics_results_.resize(size_t(statistics_per_slot_) * (statistics_count_ + 1));
  for (Slot& slot : slots_) slot.counted_zone_ids.resize(statistics_per_slot_);
}

Context::~Context() {
  if (!fn_) return;
  // The frames done so far, then one more calibration: every zone lies between two.
  if (active_) {
    Collect();
    Calibrate(calibrated_ ? kCalibrationTries : 1);
    SendBrackets(bracket_probes_);
  }
  // Nothing is destroyed under a probe still queued (returns on a lost device too).
  if (probe_pending_) fn_->WaitForFences(device_, 1, &probe_fence_, VK_TRUE, UINT64_MAX);
  if (pool_ != VK_NULL_HANDLE && fn_->DestroyQueryPool) fn_->DestroyQueryPool(device_, pool_, nullptr);
  if (statistics_pool_ != VK_NULL_HANDLE && fn_->DestroyQueryPool) {
    fn_->DestroyQueryPool(device_, statistics_pool_, nullptr);
  }
  if (probe_fence_ != VK_NULL_HANDLE && fn_->DestroyFence) fn_->DestroyFence(device_, probe_fence_, nullptr);
  for (Slot& slot : slots_) {
    if (slot.done != VK_NULL_HANDLE && fn_->DestroyFence) fn_->DestroyFence(device_, slot.done, nullptr);
  }
  if (command_pool_ != VK_NULL_HANDLE && fn_->DestroyCommandPool) {
    fn_->DestroyCommandPool(device_, command_pool_, nullptr);
  }
}

bool Context::SubmitProbeCommands(uint32_t write_query, uint32_t reset_query, int64_t& submitted_ns) {
  // A submission whose wait timed out still owns the command buffer and the queries.
  if (probe_pending_) {
    if (fn_->WaitForFences(device_, 1, &probe_fence_, VK_TRUE, 0) != VK_SUCCESS) return false;
    probe_pending_ = false;
  }
  fn_->ResetCommandBuffer(probe_cmd_, 0);
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  fn_->BeginCommandBuffer(probe_cmd_, &begin);
  fn_->CmdResetQueryPool(probe_cmd_, pool_, reset_query, 1);
  if (write_query != reset_query)
    fn_->CmdWriteTimestamp(probe_cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, write_query);
  fn_->EndCommandBuffer(probe_cmd_);
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &probe_cmd_;
  fn_->ResetFences(device_, 1, &probe_fence_);
  submitted_ns = RawNs();
  if (fn_->QueueSubmit(queue_, 1, &submit, probe_fence_) != VK_SUCCESS) return false;
  probe_pending_ = true;
  return true;
}

bool Context::WaitProbe() {
  if (fn_->WaitForFences(device_, 1, &probe_fence_, VK_TRUE, 1'000'000'000) != VK_SUCCESS) return false;
  probe_pending_ = false;
  return true;
}

bool Context::ResetProbeQueries() {
  int64_t submitted = 0;
  for (uint32_t i = 0; i < 2; ++i) {
    if (!SubmitProbeCommands(probe_query_ + i, probe_query_ + i, submitted) || !WaitProbe()) return false;
  }
  return true;
}

bool Context::RunProbe(Probe& probe) {
  if (!probe_queries_ready_) return false;
  // The two probe queries take turns: this probe writes one, which the previous probe
  // reset, and resets the other for the next. So the query written here reads as
  // unavailable until the GPU writes it, and the CPU can spin on it.
  const uint32_t write = probe_query_ + next_probe_;
  const uint32_t reset = probe_query_ + (next_probe_ ^ 1);
  if (!SubmitProbeCommands(write, reset, probe.before_ns)) return false;
  next_probe_ ^= 1;
  uint64_t result[2] = {0, 0};  // the value, then its availability
  probe.after_ns = 0;
  for (int64_t now = RawNs(); now - probe.before_ns < kProbeSpinNs; now = RawNs()) {
    const VkResult read =
        fn_->GetQueryPoolResults(device_, pool_, write, 1, sizeof(result), result, sizeof(result),
                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    if (read != VK_SUCCESS && read != VK_NOT_READY) return false;
    if (result[1] != 0) {
      probe.after_ns = RawNs();
      break;
    }
  }
  if (!WaitProbe()) return false;
  if (probe.after_ns == 0) {  // behind other work: the fence's return is the bound
    probe.after_ns = RawNs();
    if (fn_->GetQueryPoolResults(device_, pool_, write, 1, sizeof(result), result, sizeof(result),
                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT) !=
            VK_SUCCESS ||
        result[1] == 0) {
      probe_queries_ready_ = false;  // the turn-taking is lost: no more probes
      return false;
    }
  }
  probe.gpu_ticks = result[0] & valid_mask_;
  return true;
}

bool Context::CalibrateWithFence(uint64_t& gpu_ticks, int64_t& cpu_ns, uint32_t& uncertainty_ns) {
  Probe probe;
  if (!RunProbe(probe)) return false;
  gpu_ticks = probe.gpu_ticks;
  cpu_ns = probe.before_ns + (probe.after_ns - probe.before_ns) / 2;
  uncertainty_ns = uint32_t(std::min<int64_t>((probe.after_ns - probe.before_ns) / 2 + 1, UINT32_MAX));
  return true;
}

void Context::SendBrackets(uint32_t probes) {
  for (uint32_t i = 0; i < probes; ++i) {
    Probe probe;
    if (!RunProbe(probe)) return;
    gnomon_gpu_time_bracket(id_, probe.gpu_ticks, uint64_t(probe.before_ns), uint64_t(probe.after_ns),
                            GNOMON_CPU_TIME_MONOTONIC_RAW);
    ++stats_.brackets;
  }
}

bool Context::ReadPair(uint64_t& gpu_ticks, int64_t& cpu_ns, uint32_t& uncertainty_ns) {
  if (!calibrated_) return CalibrateWithFence(gpu_ticks, cpu_ns, uncertainty_ns);
  VkCalibratedTimestampInfoEXT infos[2] = {{VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT},
                                           {VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT}};
  infos[0].timeDomain = VK_TIME_DOMAIN_DEVICE_EXT;
  infos[1].timeDomain = VkTimeDomainEXT(host_domain_);
  uint64_t timestamps[2] = {};
  uint64_t deviation = 0;
  if (fn_->GetCalibratedTimestamps(device_, 2, infos, timestamps, &deviation) != VK_SUCCESS) return false;
  gpu_ticks = timestamps[0] & valid_mask_;
  cpu_ns = int64_t(timestamps[1]);
  uncertainty_ns = uint32_t(std::min<uint64_t>(deviation, UINT32_MAX));
  return true;
}

bool Context::BestPair(int tries, uint64_t& gpu_ticks, int64_t& cpu_ns, uint32_t& uncertainty_ns) {
  bool found = false;
  for (int i = 0; i < tries; ++i) {
    uint64_t gpu = 0;
    int64_t cpu = 0;
    uint32_t uncertainty = UINT32_MAX;
    if (!ReadPair(gpu, cpu, uncertainty)) continue;
    if (!found || uncertainty < uncertainty_ns) {
      gpu_ticks = gpu;
      cpu_ns = cpu;
      uncertainty_ns = uncertainty;
      found = true;
    }
  }
  return found;
}

void Context::Calibrate(int tries) {
  uint64_t gpu = 0;
  int64_t cpu = 0;
  uint32_t uncertainty = 0;
  if (!BestPair(tries, gpu, cpu, uncertainty)) return;
  calibration_.Send(gpu, cpu, uncertainty,
                    host_domain_ == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT ? GNOMON_CPU_TIME_MONOTONIC
                                                                       : GNOMON_CPU_TIME_MONOTONIC_RAW,
                    stats_);
}

bool Context::HarvestSlot(Slot& slot, uint32_t first_query) {
  if (fn_->GetFenceStatus(device_, slot.done) != VK_SUCCESS) return false;
  if (slot.taken > 0) {
    // Only the queries this frame took, each with its availability word.
    const VkResult result = fn_->GetQueryPoolResults(
        device_, pool_, first_query, slot.taken, size_t(slot.taken) * 2 * sizeof(uint64_t), results_.data(),
        2 * sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    if (result != VK_SUCCESS && result != VK_NOT_READY) return false;
    for (uint32_t i = 0; i < slot.taken; ++i) {
      if (results_[2 * i + 1] == 0) return false;  // not written yet: a later collect
    }
    if (slot.counted > 0 && !HarvestStatistics(slot, uint32_t(first_query / queries_per_slot_))) return false;
    for (uint32_t i = 0; i < slot.taken; ++i)
      gnomon_gpu_time(id_, slot.wire_ids[i], results_[2 * i] & valid_mask_);
    stats_.timestamps_read += slot.taken;
  }
  slot.state = SlotState::kIdle;
  slot.taken = 0;
  slot.counted = 0;
  ++stats_.frames_harvested;
  return true;
}

bool Context::HarvestStatistics(Slot& slot, uint32_t slot_index) {
  const uint32_t stride = statistics_count_ + 1;  // the values, then availability
  const VkResult result = fn_->GetQueryPoolResults(
      device_, statistics_pool_, slot_index * statistics_per_slot_, slot.counted,
      size_t(slot.counted) * stride * sizeof(uint64_t), statistics_results_.data(), stride * sizeof(uint64_t),
      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
  if (result != VK_SUCCESS && result != VK_NOT_READY) return false;
  for (uint32_t i = 0; i < slot.counted; ++i) {
    if (statistics_results_[size_t(i) * stride + statistics_count_] == 0) return false;
  }
  // Before the zones' times, so that the server still knows each zone by its begin query.
  for (uint32_t i = 0; i < slot.counted; ++i) {
    gnomon_counter_result(id_, counter_set_, GNOMON_COUNTER_TARGET_GPU_ZONE, slot.counted_zone_ids[i], 0,
                          &statistics_results_[size_t(i) * stride], uint16_t(statistics_count_));
  }
  stats_.counter_results_read += slot.counted;
  return true;
}

void Context::Collect() {
  if (!active_) return;
  // Slots are used in ring order, so the oldest frame sits just after the current one.
  // Harvest in that order and stop at the first frame the GPU has not finished.
  for (size_t n = 1; n <= slots_.size(); ++n) {
    const size_t index = (current_ + n) % slots_.size();
    Slot& slot = slots_[index];
    if (slot.state != SlotState::kSubmitted) continue;
    if (HarvestSlot(slot, uint32_t(index) * queries_per_slot_)) continue;
    if (frame_number_ - slot.submitted_frame < kLostFrameAge) break;
    slot.state = SlotState::kIdle;  // never executed: reclaimed unread
    slot.taken = 0;
    slot.counted = 0;
    ++stats_.frames_lost;
  }
  if (schedule_.IsDue()) {
    Calibrate(calibrated_ ? kCalibrationTries : 1);
    schedule_.Restart();
  }
}

void Context::BeginFrame(VkCommandBuffer cmd) {
  if (!active_) return;
  if (frame_open_) AbandonFrame();
  Collect();
  ++frame_number_;
  ++stats_.frames_begun;
  current_ = (current_ + 1) % slots_.size();
  Slot& slot = slots_[current_];
  frame_open_ = true;
  if (slot.state != SlotState::kIdle) {
    ++stats_.frames_untimed_ring_full;
    return;
  }
  const uint32_t first = uint32_t(current_) * queries_per_slot_;
  const uint32_t first_statistics = uint32_t(current_) * statistics_per_slot_;
  if (host_reset_) {
    fn_->ResetQueryPool(device_, pool_, first, queries_per_slot_);
    if (statistics_pool_)
      fn_->ResetQueryPool(device_, statistics_pool_, first_statistics, statistics_per_slot_);
  } else if (cmd != VK_NULL_HANDLE) {
    fn_->CmdResetQueryPool(cmd, pool_, first, queries_per_slot_);
    if (statistics_pool_)
      fn_->CmdResetQueryPool(cmd, statistics_pool_, first_statistics, statistics_per_slot_);
  } else {
    ++stats_.frames_untimed_ring_full;  // nowhere to record the reset: leave the slot alone
    return;
  }
  slot.state = SlotState::kRecording;
  slot.taken = 0;
  slot.counted = 0;
}

void Context::EndFrame() {
  if (!active_ || !frame_open_) return;
  frame_open_ = false;
  Slot& slot = slots_[current_];
  if (slot.state != SlotState::kRecording) return;
  if (slot.taken == 0) {
    slot.state = SlotState::kIdle;
    ++stats_.frames_harvested;
    return;
  }
  // A zone still open here is a misuse (zones close within their frame): its end
  // query is never written, so the frame is reclaimed unread kLostFrameAge frames on.
  open_zones_.clear();
  statistics_open_ = false;
  // An empty batch on the same queue signals once everything submitted before it is done.
  fn_->ResetFences(device_, 1, &slot.done);
  if (fn_->QueueSubmit(queue_, 0, nullptr, slot.done) != VK_SUCCESS) {
    slot.state = SlotState::kIdle;  // cannot know when it completes: drop it unread
    slot.taken = 0;
    slot.counted = 0;
    ++stats_.frames_lost;
    return;
  }
  slot.state = SlotState::kSubmitted;
  slot.submitted_frame = frame_number_;
}

void Context::AbandonFrame() {
  if (!active_ || !frame_open_) return;
  frame_open_ = false;
  open_zones_.clear();
  statistics_open_ = false;
  Slot& slot = slots_[current_];
  if (slot.state != SlotState::kRecording) return;
  slot.state = SlotState::kIdle;
  slot.taken = 0;
  slot.counted = 0;
  ++stats_.frames_abandoned;
}

bool Context::BeginZone(VkCommandBuffer cmd, gnomon_source_location* location, VkPipelineStageFlagBits stage,
                        bool counters) {
  if (!active_) return false;
  ++stats_.zones_recorded;
  Slot& slot = slots_[current_];
  if (!frame_open_ || slot.state != SlotState::kRecording || slot.taken + 2 > queries_per_slot_) {
    ++stats_.zones_untimed;
    return false;
  }
  const uint32_t first = uint32_t(current_) * queries_per_slot_;
  const uint32_t begin = slot.taken;
  const uint32_t end = slot.taken + 1;
  slot.taken += 2;
  slot.wire_ids[begin] = next_wire_id_++;
  slot.wire_ids[end] = next_wire_id_++;
  fn_->CmdWriteTimestamp(cmd, stage, pool_, first + begin);
  gnomon_gpu_zone_begin(id_, slot.wire_ids[begin], location);
  uint32_t statistics_query = UINT32_MAX;
  if (counters && statistics_pool_ != VK_NULL_HANDLE) {
    if (statistics_open_) {
      ++stats_.zones_uncounted_nested;
    } else if (slot.counted < statistics_per_slot_) {
      statistics_query = uint32_t(current_) * statistics_per_slot_ + slot.counted;
      slot.counted_zone_ids[slot.counted++] = slot.wire_ids[begin];
      fn_->CmdBeginQuery(cmd, statistics_pool_, statistics_query, 0);
      statistics_open_ = true;
      ++stats_.zones_counted;
    }
  }
  open_zones_.push_back({first + end, slot.wire_ids[end], statistics_query});
  return true;
}

void Context::EndZone(VkCommandBuffer cmd, VkPipelineStageFlagBits stage) {
  if (!active_ || open_zones_.empty()) return;
  const OpenZone zone = open_zones_.back();
  open_zones_.pop_back();
  if (zone.statistics_query != UINT32_MAX) {
    fn_->CmdEndQuery(cmd, statistics_pool_, zone.statistics_query);
    statistics_open_ = false;
  }
  fn_->CmdWriteTimestamp(cmd, stage, pool_, zone.end_query);
  gnomon_gpu_zone_end(id_, zone.end_wire_id);
}

}  // namespace gnomon::vulkan
