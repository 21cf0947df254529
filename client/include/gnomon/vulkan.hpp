// Gnomon's Vulkan collector: GPU zones on a queue, timed by timestamp queries, placed
// on the CPU timeline through calibrated timestamps. Link gnomon::vulkan.
//
//   gnomon::vulkan::ContextOptions options;
//   options.calibrated_timestamps = true;  // the device was created with VK_EXT_ or
//                                          // VK_KHR_calibrated_timestamps enabled
//   auto gpu = gnomon::vulkan::Context::Create(vkGetInstanceProcAddr, instance, physical,
//                                              device, queue, queue_family, options);
//   per frame:
//     gpu->BeginFrame(cmd);                    // first command buffer of the frame
//     { GNOMON_VK_ZONE(*gpu, cmd, "Shadows"); vkCmdDispatch(...); }
//     vkQueueSubmit(...);
//     gpu->EndFrame();                         // or AbandonFrame() if nothing was submitted
//
// Every Vulkan function is resolved through the vkGetInstanceProcAddr you pass, so any
// loader (or none: a driver's own entry point, a layer) works.
//
// The timestamp ring follows these rules:
//  - Collecting never blocks: EndFrame() asks the queue to signal a fence of the slot's
//    own when the frame's work completes; BeginFrame()/Collect() read back only frames
//    whose fence has signalled; a frame that is not done stays for a later collect.
//  - Each frame owns a slot of queries. A frame whose slot is still in flight goes
//    untimed (counted in stats().frames_untimed_ring_full); live queries are never
//    reused, never overwritten.
//  - Only queries actually written are read back: a slot holds `taken` queries and
//    reads exactly those. An abandoned frame returns its slot without reading anything.
//  - Inert: when the queue family has no timestamps (timestampValidBits 0) or options
//    say so, Create() makes no Vulkan object and every call is a no-op.
//
// Calibration: with calibrated timestamps, vkGetCalibratedTimestamps* reads the device
// clock and CLOCK_MONOTONIC_RAW (else CLOCK_MONOTONIC) at once, best of five tries by
// maxDeviation, at creation and every recalibration_period (checked in Collect()). The
// host half goes to the server as it is, in its own clock domain. Without them, a
// fallback probes (below) once per period, a short block; half the bracket is the
// uncertainty.
//
// Probes: a submission of one timestamp write, the CPU clock read just before the
// submit and again as soon as the value is seen (the CPU spins on the query's
// availability for up to 2 ms, then waits on the fence). At creation and destruction the
// context sends options.bracket_probes of them as brackets (gnomon_gpu_time_bracket):
// the server narrows the absolute error bound with them where they are tighter than
// the driver's maxDeviation. Each blocks for about one submission's latency.
//
// Counters: with options.pipeline_statistics set (the device created with the
// pipelineStatisticsQuery feature), zones opened with GNOMON_VK_ZONE_COUNTERS also run a
// pipeline-statistics query (vertex, fragment and compute invocations, primitives...).
// The set is defined once per context (counter_set()), and each counted zone's values
// are read in the same harvest as its timestamps, from the same slot, after the same
// fence: never blocking, never before the frame's work is done. Vulkan forbids nested
// queries of one type in a command buffer: a counted zone inside another gets no
// counters (stats().zones_uncounted_nested); a counted zone must end in the command
// buffer it began in.
//
// Threads: one Context is used from one thread at a time (the one recording its zones).
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gnomon/client/gpu_collector.h"
#include "gnomon/gnomon.h"
#include "gnomon/gpu_counters.hpp"

namespace gnomon::vulkan {

// Pipeline statistics as a counter source (counters.hpp), for work measured apart from
// a Context's zones: Begin(instance, cmd) and End(instance, cmd) record into the command
// buffer. End() also sets an event of the instance's own, so that Fetch() learns whether
// the GPU is done from vkGetEventStatus (never blocking) before it reads the query. The
// device must have been created with pipelineStatisticsQuery enabled.
std::unique_ptr<counters::Source> CreatePipelineStatisticsSource(
    PFN_vkGetInstanceProcAddr get_instance_proc_addr, VkInstance instance, VkDevice device,
    VkQueryPipelineStatisticFlags flags);

// The device's memory as memory pools, one per heap ("Vulkan heap 0 (device local),
// NVIDIA H200"), from VK_EXT_device_memory_report where the driver has it: every
// allocation and free of device memory, by the program or the driver itself, becomes
// an allocation of its heap's pool, so the GPU's memory in use is a lane of the viewer.
// Made before the device; chained into its creation; kept as long as the device:
//
//   gnomon::vulkan::DeviceMemoryReport memory(vkGetInstanceProcAddr, instance, physical);
//   if (memory.is_supported()) {
//     extensions.push_back(VK_EXT_DEVICE_MEMORY_REPORT_EXTENSION_NAME);
//     device_info.pNext = memory.Chain(device_info.pNext);   // the feature and the callback
//   }
//   vkCreateDevice(physical, &device_info, nullptr, &device);
//
// Where the driver lacks it, the constructor says so once (on stderr and as a warning in
// the trace) and is_supported() is false. A failed allocation is a warning message in
// the trace. The callback runs on whichever thread allocates (the driver's too).
class DeviceMemoryReport {
 public:
  DeviceMemoryReport(PFN_vkGetInstanceProcAddr get_instance_proc_addr, VkInstance instance,
                     VkPhysicalDevice physical_device);
  DeviceMemoryReport(const DeviceMemoryReport&) = delete;
  DeviceMemoryReport& operator=(const DeviceMemoryReport&) = delete;

  bool is_supported() const { return supported_; }
  // Puts the feature and the callback in front of `next`; returns what pNext becomes.
  const void* Chain(const void* next);
  // Events recorded so far (allocations and imports, frees and unimports).
  uint64_t allocations() const { return allocations_; }
  uint64_t frees() const { return frees_; }
  // The pool's name of a heap (as the trace shows it).
  const char* PoolName(uint32_t heap) const;
  // One event as the driver reports it (what the chained callback calls). A free names
  // no heap: it goes to the pool of its object's allocation.
  void Record(const VkDeviceMemoryReportCallbackDataEXT& event);

 private:
  static void VKAPI_PTR OnReport(const VkDeviceMemoryReportCallbackDataEXT* data, void* user);

  bool supported_ = false;
  std::vector<std::string> heap_pools_;  // by heap index
  std::string other_pool_;               // a heap index out of range
  std::string device_name_;
  VkPhysicalDeviceDeviceMemoryReportFeaturesEXT feature_{};
  VkDeviceDeviceMemoryReportCreateInfoEXT info_{};
  std::atomic<uint64_t> allocations_{0}, frees_{0};
  std::mutex heaps_mutex_;                          // the callback runs on any thread
  std::unordered_map<uint64_t, uint32_t> heap_of_;  // live memory object id -> heap
};

struct ContextOptions {
  const char* name = nullptr;        // shown for the context; default "<device name>"
  uint32_t frames_in_flight = 3;     // ring slots = frames_in_flight + 1
  uint32_t queries_per_frame = 512;  // two per zone
  std::chrono::milliseconds recalibration_period{500};
  bool calibrated_timestamps = false;  // VK_EXT/KHR_calibrated_timestamps enabled on the device
  bool host_query_reset = false;       // hostQueryReset enabled (Vulkan 1.2, or the EXT)
  bool enabled = true;                 // false: an inert context
  // Pipeline statistics for counted zones (0: none); needs pipelineStatisticsQuery.
  VkQueryPipelineStatisticFlags pipeline_statistics = 0;
  // Probes sent as brackets at creation and again at destruction (0: none).
  uint32_t bracket_probes = 8;
};

// The counts of client::GpuZoneStats, and the frame ring's.
struct ContextStats : client::GpuZoneStats {
  uint64_t frames_begun = 0;
  uint64_t frames_harvested = 0;
  uint64_t frames_untimed_ring_full = 0;  // the frame's slot was still in flight
  uint64_t frames_abandoned = 0;
  uint64_t frames_lost = 0;  // submitted but never executed; reclaimed unread
  uint64_t brackets = 0;     // probes sent as brackets
};

class Context {
 public:
  static std::unique_ptr<Context> Create(PFN_vkGetInstanceProcAddr get_instance_proc_addr,
                                         VkInstance instance, VkPhysicalDevice physical_device,
                                         VkDevice device, VkQueue queue, uint32_t queue_family,
                                         const ContextOptions& options = {});
  ~Context();  // the GPU must be done with this context's queries
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  bool is_active() const { return active_; }
  uint32_t id() const { return id_; }
  bool uses_calibrated_timestamps() const { return calibrated_; }
  const ContextStats& stats() const { return stats_; }
  // The pipeline-statistics counter set's id (0 when counters are off).
  uint32_t counter_set() const { return counter_set_; }

  // Harvests finished frames, then takes the next slot for a new frame, recording its
  // query reset into `cmd` (which must run before the frame's zones) unless host query
  // reset is enabled, in which case `cmd` may be VK_NULL_HANDLE.
  void BeginFrame(VkCommandBuffer cmd);
  // The frame's command buffers were submitted (to this context's queue). Submits an
  // empty batch with the slot's own fence, so that a later collect knows, from
  // vkGetFenceStatus, when the frame's work is done: no driver is ever asked to wait.
  void EndFrame();
  // The frame was refused before submission: its slot goes straight back, unread.
  void AbandonFrame();
  // Harvests finished frames and recalibrates when due; never blocks on the GPU (the
  // fallback calibration waits for one tiny submission).
  void Collect();

  // Opens a GPU zone on `cmd`, with counters when asked and possible; false when it
  // could not be timed (call EndZone only on true). ScopedZone / GNOMON_VK_ZONE do this.
  bool BeginZone(VkCommandBuffer cmd, gnomon_source_location* location,
                 VkPipelineStageFlagBits stage = VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, bool counters = false);
  bool BeginZone(VkCommandBuffer cmd, gnomon_source_location* location, bool counters) {
    return BeginZone(cmd, location, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, counters);
  }
  void EndZone(VkCommandBuffer cmd, VkPipelineStageFlagBits stage = VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);

 private:
  struct Functions;
  enum class SlotState { kIdle, kRecording, kSubmitted };
  struct Slot {
    SlotState state = SlotState::kIdle;
    uint32_t taken = 0;
    uint64_t submitted_frame = 0;
    VkFence done = VK_NULL_HANDLE;           // the slot's own: signals when its frame's work completed
    std::vector<uint32_t> wire_ids;          // per query of the slot, the id the server knows it by
    uint32_t counted = 0;                    // pipeline-statistics queries taken
    std::vector<uint32_t> counted_zone_ids;  // per such query, its zone's begin wire id
  };

  Context() = default;
  void Calibrate(int tries);
  // One (GPU ticks, CPU ns) pair, from calibrated timestamps or the fence bracket.
  bool ReadPair(uint64_t& gpu_ticks, int64_t& cpu_ns, uint32_t& uncertainty_ns);
  // The pair with the smallest uncertainty of `tries`.
  bool BestPair(int tries, uint64_t& gpu_ticks, int64_t& cpu_ns, uint32_t& uncertainty_ns);
  bool CalibrateWithFence(uint64_t& gpu_ticks, int64_t& cpu_ns, uint32_t& uncertainty_ns);
  // A timestamp the GPU wrote between two CPU clock reads (CLOCK_MONOTONIC_RAW ns).
  struct Probe {
    int64_t before_ns = 0;
    uint64_t gpu_ticks = 0;
    int64_t after_ns = 0;
  };
  bool RunProbe(Probe& probe);
  // Records and submits the probe command buffer: reset `reset_query`, then write
  // `write_query` (unless they are the same). `submitted_ns`: read just before the submit.
  bool SubmitProbeCommands(uint32_t write_query, uint32_t reset_query, int64_t& submitted_ns);
  bool WaitProbe();
  bool ResetProbeQueries();
  void SendBrackets(uint32_t probes);
  bool HarvestSlot(Slot& slot, uint32_t first_query);
  // Reads a harvested slot's pipeline statistics and sends them; false when not all ready.
  bool HarvestStatistics(Slot& slot, uint32_t slot_index);
  void CreateStatistics(VkQueryPipelineStatisticFlags flags);

  std::unique_ptr<Functions> fn_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer probe_cmd_ = VK_NULL_HANDLE;
  VkFence probe_fence_ = VK_NULL_HANDLE;
  bool probe_pending_ = false;        // submitted, its fence not yet seen signalled
  uint32_t probe_query_ = 0;          // the first of the two probe queries in pool_
  uint32_t next_probe_ = 0;           // which of them the next probe writes
  bool probe_queries_ready_ = false;  // both were reset once
  uint32_t bracket_probes_ = 0;
  bool active_ = false;
  bool calibrated_ = false;
  bool host_reset_ = false;
  int host_domain_ = 0;  // VkTimeDomainEXT of the host half
  uint32_t id_ = 0;
  uint32_t queries_per_slot_ = 0;
  uint64_t valid_mask_ = ~uint64_t{0};
  std::vector<Slot> slots_;
  size_t current_ = 0;
  bool frame_open_ = false;
  uint64_t frame_number_ = 0;
  uint32_t next_wire_id_ = 1;
  struct OpenZone {
    uint32_t end_query;  // pool index of the zone's end timestamp
    uint32_t end_wire_id;
    uint32_t statistics_query;  // pool index in statistics_pool_, or UINT32_MAX
  };
  std::vector<OpenZone> open_zones_;
  std::vector<uint64_t> results_;
  VkQueryPool statistics_pool_ = VK_NULL_HANDLE;
  uint32_t statistics_per_slot_ = 0;
  uint32_t statistics_count_ = 0;  // counters per query
  uint32_t counter_set_ = 0;
  bool statistics_open_ = false;  // a counted zone is open
  std::vector<uint64_t> statistics_results_;
  client::CalibrationChannel calibration_;
  client::CalibrationSchedule schedule_;
  ContextStats stats_;
};

// Times the commands recorded into `cmd` during its lifetime:
// ScopedZone(context, cmd, location, counters = false).
using ScopedZone = client::ScopedGpuZone<Context, VkCommandBuffer>;

}  // namespace gnomon::vulkan

#ifndef GNOMON_DISABLE
#define GNOMON_VK_ZONE(context, cmd, zone_name)                          \
  ::gnomon::vulkan::ScopedZone GNOMON_CONCAT(gnomon_vk_zone_, __LINE__)( \
      (context), (cmd), GNOMON_STATIC_LOCATION(zone_name, GNOMON_NO_COLOR))
// The same, with the context's pipeline statistics measured over the zone.
#define GNOMON_VK_ZONE_COUNTERS(context, cmd, zone_name)                 \
  ::gnomon::vulkan::ScopedZone GNOMON_CONCAT(gnomon_vk_zone_, __LINE__)( \
      (context), (cmd), GNOMON_STATIC_LOCATION(zone_name, GNOMON_NO_COLOR), true)
#else
#define GNOMON_VK_ZONE(context, cmd, zone_name) static_cast<void>(0)
#define GNOMON_VK_ZONE_COUNTERS(context, cmd, zone_name) static_cast<void>(0)
#endif
