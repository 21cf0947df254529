// Flame graph: where time goes, by call path, for one thread or every thread merged, over
// the whole trace or the selected range. A box's width is its total time; hover says
// total, self and count; a click zooms into a box, a right-click (or "whole") goes back
// out. Built off the UI thread.
#pragma once

#include <cstdint>

#include "gnomon/viewer/background_job.h"
#include "gnomon/viewer/flame_graph.h"
#include "workspace.h"

namespace gnomon::viewer {

class FlameGraphWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);
  void Reset() {
    job_.Reset();
    focus_ = FlameGraph::kRoot;
  }
  bool is_busy() { return job_.is_busy(); }

 private:
  uint32_t thread_id_ = 0;  // 0: every thread
  bool limit_to_range_ = true;
  uint32_t focus_ = FlameGraph::kRoot;
  uint64_t focus_generation_ = 0;  // of the graph focus_ is a node of
  BackgroundJob<FlameQuery, FlameGraph> job_;
};

}  // namespace gnomon::viewer
