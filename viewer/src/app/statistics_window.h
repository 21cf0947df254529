// Statistics: per-source-location counts and times of CPU or GPU zones (with GPU
// counters' means as columns), sortable and filtered by name; a row opens Find zone.
// Recomputed when the trace grew, at most once a second while live.
#pragma once

#include <imgui.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "gnomon/server/statistics.h"
#include "workspace.h"

namespace gnomon::viewer {

class StatisticsWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);
  void Reset();

 private:
  void Recompute(const server::TraceModel& model, bool gpu);

  static constexpr size_t kMaxCounterColumns = 16;
  bool gpu_ = false;
  std::vector<server::ZoneStatistics> statistics_;
  uint64_t zone_count_ = UINT64_MAX;  // of the model they were computed from
  std::chrono::steady_clock::time_point time_;
  // GPU zones: counter columns (set id << 32 | index) and means per (location, column).
  std::vector<uint64_t> counter_columns_;
  std::map<std::pair<uint32_t, uint64_t>, double> counter_means_;
  ImGuiTextFilter filter_;
};

}  // namespace gnomon::viewer
