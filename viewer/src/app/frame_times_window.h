// Frame times: a histogram of a frame series' frame times (the main one, or the one
// chosen) with p50, p90, p99 and the longest, and a graph of every frame in order, each
// bar graded against the frame target (Workspace::frame_target: within it green,
// within twice it yellow, longer red; lines at both); a click on the graph jumps to
// that frame.
#pragma once

#include <cstdint>
#include <string>

#include "gnomon/viewer/frame_times.h"
#include "workspace.h"

namespace gnomon::viewer {

class FrameTimesWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);
  void Reset() {
    frames_seen_ = SIZE_MAX;
    series_ = 0;  // another trace: its main series
  }
  // Shows the series of this name ("" or "main": the main series); false if none has it.
  bool ShowSeries(const server::TraceModel& model, const std::string& name);
  // The series to show once a trace is there (--frame-series).
  void ShowSeriesLater(std::string name) { wanted_series_ = std::move(name); }

 private:
  FrameTimes times_;
  uint32_t series_ = 0;            // the series shown, by name id
  size_t frames_seen_ = SIZE_MAX;  // its frames when times_ was computed
  std::string wanted_series_;
};

}  // namespace gnomon::viewer
