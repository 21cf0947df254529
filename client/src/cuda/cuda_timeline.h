// The CUDA collector's logic, apart from CUPTI: which GPU context (lane) a launch goes
// to, how a launch and its activity record meet, how CUPTI's clock is calibrated, and
// the budget of activity buffers. No CUDA header is needed, so all of it is tested on
// machines without a GPU; cupti_collector.cpp feeds it from CUPTI's callbacks.
//
// The model, per CUDA operation (kernel, memcpy, memset):
//  - On the launching thread, at the API call's entry, OnLaunchBegin() opens a GPU zone
//    on the lane of (device, stream) with gnomon_gpu_zone_begin(): the zone is linked to
//    that thread and to the CPU time of the call. OnLaunchEnd(), at the call's exit,
//    closes it. The zone's queries are named after CUPTI's correlation id.
//  - Later, on whatever thread CUPTI hands back a buffer, OnActivity() sends the
//    record's start and end as the GPU times of those two queries.
//  - Each lane is a Gnomon GPU context of period 1 ns and 64 valid bits in CUPTI's
//    timestamp domain; every lane is calibrated from the same bracketed reads.
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gnomon/client/gpu_collector.h"
#include "gnomon/gnomon.h"

namespace gnomon::cuda {

// CPU clock, GPU clock, CPU clock: one bracketed read of CUPTI's timestamp.
struct BracketRead {
  int64_t cpu_before_ns = 0;  // CLOCK_MONOTONIC_RAW
  uint64_t gpu_ns = 0;        // CUPTI timestamp
  int64_t cpu_after_ns = 0;
};

struct Calibration {
  uint64_t gpu_ns = 0;
  int64_t cpu_ns = 0;           // the bracket's middle
  uint32_t uncertainty_ns = 0;  // half the bracket, rounded up
};

// The narrowest bracket of `reads` (the one least disturbed by preemption); false when
// none is usable (empty, or every bracket runs backwards).
bool PickBestBracket(std::span<const BracketRead> reads, Calibration& best);

enum class ActivityKind : uint8_t { kKernel, kMemcpy, kMemset };

// One CUPTI activity record, reduced to what the timeline needs.
struct ActivityRecord {
  ActivityKind kind = ActivityKind::kKernel;
  uint32_t correlation_id = 0;
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t start_ns = 0;  // CUPTI timestamps
  uint64_t end_ns = 0;
};

struct TimelineStats {
  uint64_t launches = 0;            // zones opened on launching threads
  uint64_t records = 0;             // activity records received
  uint64_t records_linked = 0;      // ... matched to their launch and timed
  uint64_t records_unlinked = 0;    // ... whose launch was not seen (an API not traced)
  uint64_t records_invalid = 0;     // ... with an end before the start, or no time
  uint64_t records_dropped = 0;     // lost inside CUPTI (no buffer, buffer full)
  uint64_t buffers_refused = 0;     // buffer requests beyond the budget
  uint64_t launches_forgotten = 0;  // launches whose record never came, past the bound
  uint64_t calibrations = 0;
  uint32_t last_uncertainty_ns = 0;
  uint32_t lanes = 0;
};

class Timeline {
 public:
  // Reads the clocks once; called `reads_per_calibration` times per calibration.
  using ClockReader = std::function<BracketRead()>;
  // A device's name for the lane label ("NVIDIA H200").
  using DeviceNamer = std::function<std::string(uint32_t device)>;

  Timeline(ClockReader read_clocks, DeviceNamer name_device, uint32_t reads_per_calibration = 16);

  // The GPU context of (device, stream), created (and calibrated) on first use.
  uint32_t Lane(uint32_t device, uint32_t stream);

  // On the launching thread, at the call's entry and exit. `name` is what the zone is
  // called (a demangled kernel name, "memcpy HtoD", ...); `api` the call's name.
  void OnLaunchBegin(uint32_t correlation_id, uint32_t device, uint32_t stream, const char* name,
                     const char* api);
  void OnLaunchEnd(uint32_t correlation_id);

  // A finished record; records of launches never seen are counted, not invented.
  void OnActivity(const ActivityRecord& record);
  void CountDropped(uint64_t records) {
    std::lock_guard lock(mutex_);
    stats_.records_dropped += records;
  }
  void CountRefusedBuffer() {
    std::lock_guard lock(mutex_);
    ++stats_.buffers_refused;
  }

  // One calibration of every lane from the best of reads_per_calibration brackets.
  void Calibrate();

  TimelineStats stats() const;

  // Launches awaiting their record beyond this are forgotten (their record was lost).
  static constexpr size_t kMaxPendingLaunches = 1u << 20;

 private:
  struct LaneState {
    uint32_t context = 0;
    client::CalibrationChannel calibration;
  };
  // A launch seen on its thread; forgotten once both its call returned and its record
  // came (in either order: a flush may hand the record over before the call returns).
  struct PendingLaunch {
    uint32_t context = 0;
    bool ended = false;
    bool timed = false;
  };
  // Query ids of a zone: both from its correlation id.
  static uint32_t BeginQuery(uint32_t correlation_id) { return correlation_id * 2u; }
  static uint32_t EndQuery(uint32_t correlation_id) { return correlation_id * 2u + 1u; }

  bool ReadCalibration(Calibration& calibration);  // mutex_ held
  uint32_t LaneLocked(uint32_t device, uint32_t stream);
  gnomon_source_location* LocationLocked(const char* name, const char* api);

  ClockReader read_clocks_;
  DeviceNamer name_device_;
  uint32_t reads_per_calibration_;
  mutable std::mutex mutex_;
  std::map<std::pair<uint32_t, uint32_t>, LaneState> lanes_;
  std::unordered_map<uint32_t, PendingLaunch> pending_;  // by correlation id
  // Source locations live as long as the timeline: the profiler keeps their addresses.
  std::unordered_map<std::string, std::unique_ptr<gnomon_source_location>> locations_;
  std::deque<std::string> names_;
  std::vector<BracketRead> reads_;
  TimelineStats stats_;
};

// Activity buffers handed to CUPTI, at most `max_buffers` at a time: past the budget a
// request gets none, and CUPTI counts the records it could not store.
class BufferPool {
 public:
  BufferPool(size_t buffer_bytes, size_t max_buffers);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of buffer_bytes() aligned to 8 bytes, or nullptr past the budget.
  uint8_t* Acquire();
  void Release(uint8_t* buffer);
  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t outstanding() const;

 private:
  size_t buffer_bytes_;
  size_t max_buffers_;
  mutable std::mutex mutex_;
  size_t outstanding_ = 0;
  std::vector<uint8_t*> free_;
};

}  // namespace gnomon::cuda
