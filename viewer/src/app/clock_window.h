// GPU clocks: the CPU timer's fit, and for each GPU context its drift, samples,
// uncertainty and the residuals of its calibrations.
#pragma once

#include "workspace.h"

namespace gnomon::viewer {

class ClockWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);
};

}  // namespace gnomon::viewer
