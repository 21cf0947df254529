// What every GPU collector (Vulkan, OpenGL, CUDA) is built from: the calibration of its
// contexts, the zone that closes at the end of a scope, and the counts every collector
// keeps. Each collector adds only what its API needs.
//
//   CalibrationChannel channel(context_id, first_pair_cpu_ns);
//   if (channel.Send(gpu_ticks, cpu_ns, uncertainty_ns, GNOMON_CPU_TIME_MONOTONIC_RAW)) ...
//
//   CalibrationSchedule schedule(std::chrono::seconds(1));
//   if (schedule.IsDue()) { Calibrate(); schedule.Restart(); }   // once a frame, say
//
//   using ScopedZone = ScopedGpuZone<Context, VkCommandBuffer>;   // Begin/EndZone(cmd, ...)
#pragma once

#include <chrono>
#include <cstdint>
#include <tuple>

#include "gnomon/gnomon.h"

namespace gnomon::client {

// Counts every GPU collector keeps; each one's stats add their own.
struct GpuZoneStats {
  uint64_t zones_recorded = 0;
  uint64_t zones_untimed = 0;  // no query was free for the zone
  uint64_t timestamps_read = 0;
  uint64_t calibrations = 0;
  uint32_t last_calibration_uncertainty_ns = 0;
  uint64_t zones_counted = 0;           // zones with a counter instance
  uint64_t zones_uncounted_nested = 0;  // asked for counters inside a counted zone
  uint64_t counter_results_read = 0;
};

// Sends one GPU context's calibration pairs, each with the CPU time since the previous
// one. A pair that is not after the previous one in CPU time is not sent (the server
// would reject it).
class CalibrationChannel {
 public:
  CalibrationChannel() = default;
  // `first_cpu_ns`: the CPU time of the pair the context's definition carried.
  CalibrationChannel(uint32_t context, int64_t first_cpu_ns)
      : context_(context), last_cpu_ns_(first_cpu_ns) {}

  // Sends the pair; false when it was not after the previous one.
  bool Send(uint64_t gpu_ticks, int64_t cpu_ns, uint32_t uncertainty_ns, gnomon_cpu_time_domain domain) {
    if (cpu_ns <= last_cpu_ns_) return false;
    gnomon_gpu_calibration_data data{};
    data.context = context_;
    data.gpu_ticks = gpu_ticks;
    data.cpu_time = uint64_t(cpu_ns);
    data.cpu_delta_ns = cpu_ns - last_cpu_ns_;
    data.uncertainty_ns = uncertainty_ns;
    data.cpu_domain = domain;
    gnomon_gpu_calibration(&data);
    last_cpu_ns_ = cpu_ns;
    return true;
  }
  // The same, counted in `stats` when sent.
  bool Send(uint64_t gpu_ticks, int64_t cpu_ns, uint32_t uncertainty_ns, gnomon_cpu_time_domain domain,
            GpuZoneStats& stats) {
    if (!Send(gpu_ticks, cpu_ns, uncertainty_ns, domain)) return false;
    ++stats.calibrations;
    stats.last_calibration_uncertainty_ns = uncertainty_ns;
    return true;
  }
  uint32_t context() const { return context_; }

 private:
  uint32_t context_ = 0;
  int64_t last_cpu_ns_ = 0;
};

// When a collector calibrates next: every `period`, checked where it already does work
// (a frame's harvest), so that no timer thread is needed.
class CalibrationSchedule {
 public:
  using Clock = std::chrono::steady_clock;
  explicit CalibrationSchedule(std::chrono::milliseconds period = std::chrono::seconds(1))
      : period_(period), next_(Clock::now() + period) {}
  bool IsDue() const { return Clock::now() >= next_; }
  void Restart() { next_ = Clock::now() + period_; }

 private:
  std::chrono::milliseconds period_;
  Clock::time_point next_;
};

// Closes the zone a GPU context opened, at the end of the scope. `Context` has
// `bool BeginZone(Args..., gnomon_source_location*, bool counters)`, true when it opened
// one, and `void EndZone(Args...)`; Args are what the API records into (a Vulkan
// command buffer; nothing for OpenGL).
template <typename Context, typename... Args>
class ScopedGpuZone {
 public:
  ScopedGpuZone(Context& context, Args... args, gnomon_source_location* location, bool counters = false)
      : context_(context), args_(args...), is_open_(context.BeginZone(args..., location, counters)) {}
  ~ScopedGpuZone() {
    if (is_open_) std::apply([this](Args... args) { context_.EndZone(args...); }, args_);
  }
  ScopedGpuZone(const ScopedGpuZone&) = delete;
  ScopedGpuZone& operator=(const ScopedGpuZone&) = delete;

 private:
  Context& context_;
  std::tuple<Args...> args_;
  bool is_open_;
};

}  // namespace gnomon::client
