// Find zone: search source locations by name (substring, any case), then every
// occurrence of the one chosen: count, mean, median, p90, p99; a duration histogram
// (log or linear) whose dragged range filters the list; the list sorted by start,
// duration or thread, or grouped by thread or by parent; a row jumps to its zone.
// Occurrences are found once per location (and range), off the UI thread.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gnomon/viewer/background_job.h"
#include "gnomon/viewer/zone_search.h"
#include "workspace.h"

namespace gnomon::viewer {

class FindZoneWindow {
 public:
  bool open = false;
  // Takes ws.find_request, if any, then draws.
  void Draw(const server::TraceModel& model, Workspace& ws);
  // Looks for the first location whose name contains `text` (--show find-zone=NAME).
  void SearchFor(const std::string& text);
  // Shows self times (each zone less its children) instead of durations.
  void ShowSelfTimes(bool self) { self_ = self; }
  void Reset();
  bool is_busy() { return job_.is_busy(); }

 private:
  void DrawSearch(const server::TraceModel& model);
  void DrawOccurrences(const server::TraceModel& model, Workspace& ws, const ZoneOccurrences& found);

  char search_[256] = "";
  std::string searched_;           // the text results_ are for
  size_t searched_locations_ = 0;  // the model's location count then
  std::vector<LocationMatch> results_;
  bool pick_first_result_ = false;
  ZoneQuery query_;
  bool has_query_ = false;
  bool try_other_kind_ = false;  // the kind came from a search: try the other if none
  bool limit_to_range_ = true;
  static constexpr uint32_t kMeanColor = IM_COL32(255, 110, 150, 255);
  static constexpr uint32_t kMedianColor = IM_COL32(80, 220, 230, 255);
  // What DrawHistogramAxis drew: the markers' x and the axis labels (as a JSON array).
  struct HistogramAxis {
    float mean_x = 0, median_x = 0;
    std::string labels_json;
  };
  HistogramAxis DrawHistogramAxis(const DurationHistogram& histogram, const DurationSpread& spread);
  HistogramScale scale_ = HistogramScale::kLog;
  bool self_ = false;  // the spread, histogram and choice are of self times, not durations
  std::optional<std::pair<size_t, size_t>> bins_;  // the histogram's selected bins
  OccurrenceOrder order_ = OccurrenceOrder::kStart;
  int grouping_ = 0;  // 0: none, 1: by thread, 2: by parent
  // Shared: the timeline outlines what the window shows (Workspace::find_highlight).
  BackgroundJob<ZoneQuery, std::shared_ptr<const ZoneOccurrences>> job_;
  // What the list shows, derived from the result when something changed.
  std::vector<uint32_t> rows_;
  std::vector<OccurrenceGroup> groups_;
  uint64_t rows_generation_ = UINT64_MAX;
  OccurrenceFilter rows_filter_;
  OccurrenceOrder rows_order_ = OccurrenceOrder::kStart;
  int rows_grouping_ = -1;
};

}  // namespace gnomon::viewer
