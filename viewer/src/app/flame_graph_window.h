// Flame graph: where time goes, by call path, for one thread or every thread merged, over
// the whole trace or the selected range. A box's width is its total time; hover says
// total, self and count; a click zooms into a box, a right-click (or "whole") goes back
// out. Built off the UI thread; for a trace whose zones are not held, from the file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gnomon/viewer/background_job.h"
#include "gnomon/viewer/flame_graph.h"
#include "workspace.h"

namespace gnomon::viewer {

// Draws laid-out flame boxes in the rest of the window, a row per level, each with its
// name where it fits; returns the box under the mouse, or nullptr. `json` gets the
// boxes as drawn (x0, x1, y0, row and `weight_key`: the weight), for the window tests.
struct FlameCanvas {
  std::function<std::string(uint32_t node)> name;
  std::function<uint32_t(uint32_t node)> color;
  std::function<double(uint32_t node)> weight;
  const char* weight_key = "weight";
};
const FlameBox* DrawFlameBoxes(const std::vector<FlameBox>& boxes, float width, const FlameCanvas& canvas,
                               std::string& json);

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
  struct Built {
    FlameGraph graph;
    bool from_file = false;
    std::string error;  // reading the file failed
    std::string note;   // what the file's damage left out
  };
  BackgroundJob<FlameQuery, Built> job_;
};

}  // namespace gnomon::viewer
