// Frame times: a histogram of the main series' frame times with p50, p90, p99 and the
// longest, and a graph of every frame in order, each bar coloured by the target it met
// (1/60 s green, 1/30 s yellow, longer red; lines at both); a click on the graph jumps to
// that frame.
#pragma once

#include <cstdint>

#include "gnomon/viewer/frame_times.h"
#include "workspace.h"

namespace gnomon::viewer {

class FrameTimesWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);
  void Reset() { frames_seen_ = SIZE_MAX; }

 private:
  FrameTimes times_;
  size_t frames_seen_ = SIZE_MAX;  // marks of the main series when times_ was computed
};

}  // namespace gnomon::viewer
