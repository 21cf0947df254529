// Statistics: per-source-location counts and times of CPU or GPU zones, each total's
// share of the range and the threads the location ran on (with GPU counters' means as
// columns), sortable, filtered by name, limited to the selected range when asked, and
// copied as CSV in the order shown; a row opens Find zone. Computed off the UI thread (BackgroundJob),
// again when the trace grew, at most once a second while live.
#pragma once

#include <imgui.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gnomon/server/statistics.h"
#include "gnomon/viewer/background_job.h"
#include "session.h"
#include "workspace.h"

namespace gnomon::viewer {

class StatisticsWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);
  void Reset() { job_.Reset(); }
  bool is_busy() { return job_.is_busy(); }

 private:
  struct Key {
    bool gpu = false;
    std::optional<std::pair<int64_t, int64_t>> range;
    uint64_t zone_count = 0;  // of the model the request saw
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct Result {
    std::vector<server::ZoneStatistics> rows;
    // GPU zones: counter columns (set id << 32 | index) and means per (location, column).
    std::vector<uint64_t> counter_columns;
    std::map<std::pair<uint32_t, uint64_t>, double> counter_means;
    std::vector<uint32_t> threads;  // by source location: the threads it ran on (recorded from, for GPU)
    int64_t range_ns = 0;           // the length shares are of: the selected range, or the trace
    // The zones are not held: CPU rows read from the file (the whole trace; no threads
    // per location), or why that failed.
    bool from_file = false;
    std::string error;
    std::string note;  // read from the file: what was left out (a damaged block), or ""
  };
  // The CPU rows of a trace whose zones are not held (Session::StreamStatistics).
  static Result ComputeFromFile(Session& session);
  // The rows shown, as CSV (a header, then one line a row, times in ns).
  static std::string Csv(const server::TraceModel& model, const Result& result,
                         const std::vector<uint32_t>& rows);
  static Result Compute(const server::TraceModel& model, const Key& key);

  // A total's share of the range's length, in percent (over 100 when threads overlap).
  static double Share(const Result& result, const server::ZoneStatistics& s);
  static constexpr size_t kMaxCounterColumns = 16;
  static constexpr int kFixedColumns = 11;  // before the counters
  bool gpu_ = false;
  bool limit_to_range_ = true;
  uint64_t requested_zones_ = 0;
  std::chrono::steady_clock::time_point requested_at_;
  BackgroundJob<Key, Result> job_;
  std::vector<uint32_t> order_;     // rows of the result, sorted as the table says
  uint64_t sorted_generation_ = 0;  // of the result order_ was sorted for
  ImGuiTextFilter filter_;
};

}  // namespace gnomon::viewer
