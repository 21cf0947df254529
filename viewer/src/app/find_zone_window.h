// Find zone: every occurrence of one source location, a histogram of their durations,
// and a list that jumps to each.
#pragma once

#include <cstdint>

#include "workspace.h"

namespace gnomon::viewer {

class FindZoneWindow {
 public:
  bool open = false;
  // Takes ws.find_request, if any, then draws.
  void Draw(const server::TraceModel& model, Workspace& ws);
  uint32_t location() const { return location_; }

 private:
  uint32_t location_ = 0;
  bool gpu_ = false;
};

}  // namespace gnomon::viewer
