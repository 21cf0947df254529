#include "cuda_timeline.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace gnomon::cuda {

bool PickBestBracket(std::span<const BracketRead> reads, Calibration& best) {
  const BracketRead* narrowest = nullptr;
  for (const BracketRead& read : reads) {
    if (read.cpu_after_ns < read.cpu_before_ns) continue;
    if (narrowest == nullptr ||
        read.cpu_after_ns - read.cpu_before_ns < narrowest->cpu_after_ns - narrowest->cpu_before_ns) {
      narrowest = &read;
    }
  }
  if (narrowest == nullptr) return false;
  const int64_t width = narrowest->cpu_after_ns - narrowest->cpu_before_ns;
  best.gpu_ns = narrowest->gpu_ns;
  best.cpu_ns = narrowest->cpu_before_ns + width / 2;
  best.uncertainty_ns = uint32_t(std::min<int64_t>((width + 1) / 2, UINT32_MAX));
  return true;
}

Timeline::Timeline(ClockReader read_clocks, DeviceNamer name_device, uint32_t reads_per_calibration)
    : read_clocks_(std::move(read_clocks)),
      name_device_(std::move(name_device)),
      reads_per_calibration_(std::max<uint32_t>(reads_per_calibration, 1)) {}

bool Timeline::ReadCalibration(Calibration& calibration) {
  reads_.clear();
  for (uint32_t i = 0; i < reads_per_calibration_; ++i) reads_.push_back(read_clocks_());
  return PickBestBracket(reads_, calibration);
}

uint32_t Timeline::Lane(uint32_t device, uint32_t stream) {
  std::lock_guard lock(mutex_);
  return LaneLocked(device, stream);
}

uint32_t Timeline::LaneLocked(uint32_t device, uint32_t stream) {
  auto [it, inserted] = lanes_.try_emplace({device, stream});
  if (!inserted) return it->second.context;
  Calibration pair;
  if (!ReadCalibration(pair)) pair = {};
  const std::string device_name = name_device_(device);
  gnomon_gpu_context_info info{};
  info.api = GNOMON_GPU_API_CUDA;
  info.device_name = device_name.c_str();
  info.period_numerator_ns = 1;
  info.period_denominator = 1;
  info.valid_bits = 64;
  info.flags = GNOMON_GPU_CONTEXT_CALIBRATED;
  info.gpu_ticks = pair.gpu_ns;
  info.cpu_time = uint64_t(pair.cpu_ns);
  info.cpu_domain = GNOMON_CPU_TIME_MONOTONIC_RAW;
  info.uncertainty_ns = pair.uncertainty_ns;
  it->second.context = gnomon_gpu_context_create(&info);
  it->second.calibration = client::CalibrationChannel(it->second.context, pair.cpu_ns);
  const std::string label =
      "CUDA " + std::to_string(device) + " " + device_name + " · stream " + std::to_string(stream);
  gnomon_gpu_context_name(it->second.context, label.data(), label.size());
  stats_.lanes = uint32_t(lanes_.size());
  return it->second.context;
}

gnomon_source_location* Timeline::LocationLocked(const char* name, const char* api) {
  std::string key = name ? name : "";
  key += '\0';
  key += api ? api : "";
  auto& location = locations_[key];
  if (!location) {
    const std::string& stored_name = names_.emplace_back(name ? name : "");
    const std::string& stored_api = names_.emplace_back(api ? api : "");
    location = std::make_unique<gnomon_source_location>(
        gnomon_source_location{stored_name.c_str(), stored_api.c_str(), "", 0, GNOMON_NO_COLOR, 0});
  }
  return location.get();
}

void Timeline::OnLaunchBegin(uint32_t correlation_id, uint32_t device, uint32_t stream, const char* name,
                             const char* api) {
  uint32_t context = 0;
  gnomon_source_location* location = nullptr;
  {
    std::lock_guard lock(mutex_);
    context = LaneLocked(device, stream);
    location = LocationLocked(name, api);
    if (pending_.size() >= kMaxPendingLaunches) {
      stats_.launches_forgotten += pending_.size();
      pending_.clear();
    }
    pending_[correlation_id] = PendingLaunch{context, false, false};
    ++stats_.launches;
  }
  gnomon_gpu_zone_begin(context, BeginQuery(correlation_id), location);
}

void Timeline::OnLaunchEnd(uint32_t correlation_id) {
  uint32_t context = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(correlation_id);
    if (it == pending_.end() || it->second.ended) return;
    context = it->second.context;
    it->second.ended = true;
    if (it->second.timed) pending_.erase(it);
  }
  gnomon_gpu_zone_end(context, EndQuery(correlation_id));
}

void Timeline::OnActivity(const ActivityRecord& record) {
  uint32_t context = 0;
  {
    std::lock_guard lock(mutex_);
    ++stats_.records;
    auto it = pending_.find(record.correlation_id);
    if (it == pending_.end() || it->second.timed) {
      ++stats_.records_unlinked;
      return;
    }
    if (record.start_ns == 0 || record.end_ns < record.start_ns) {
      // A record without real times: the zone stays untimed rather than invented.
      ++stats_.records_invalid;
      it->second.timed = true;
      if (it->second.ended) pending_.erase(it);
      return;
    }
    context = it->second.context;
    it->second.timed = true;
    if (it->second.ended) pending_.erase(it);
    ++stats_.records_linked;
  }
  gnomon_gpu_time(context, BeginQuery(record.correlation_id), record.start_ns);
  gnomon_gpu_time(context, EndQuery(record.correlation_id), record.end_ns);
}

void Timeline::Calibrate() {
  std::lock_guard lock(mutex_);
  if (lanes_.empty()) return;
  Calibration pair;
  if (!ReadCalibration(pair)) return;
  for (auto& [key, lane] : lanes_) {
    lane.calibration.Send(pair.gpu_ns, pair.cpu_ns, pair.uncertainty_ns, GNOMON_CPU_TIME_MONOTONIC_RAW);
  }
  ++stats_.calibrations;
  stats_.last_uncertainty_ns = pair.uncertainty_ns;
}

TimelineStats Timeline::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

BufferPool::BufferPool(size_t buffer_bytes, size_t max_buffers)
    : buffer_bytes_((std::max<size_t>(buffer_bytes, 1024) + 7) / 8 * 8), max_buffers_(max_buffers) {}

BufferPool::~BufferPool() {
  for (uint8_t* buffer : free_) std::free(buffer);
}

uint8_t* BufferPool::Acquire() {
  std::lock_guard lock(mutex_);
  if (outstanding_ >= max_buffers_) return nullptr;
  uint8_t* buffer = nullptr;
  if (!free_.empty()) {
    buffer = free_.back();
    free_.pop_back();
  } else {
    buffer = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes_));
    if (buffer == nullptr) return nullptr;
  }
  ++outstanding_;
  return buffer;
}

void BufferPool::Release(uint8_t* buffer) {
  if (buffer == nullptr) return;
  std::lock_guard lock(mutex_);
  free_.push_back(buffer);
  if (outstanding_ > 0) --outstanding_;
}

size_t BufferPool::outstanding() const {
  std::lock_guard lock(mutex_);
  return outstanding_;
}

}  // namespace gnomon::cuda
