// Trace info: what the trace is and where it came from. The program (pid, host, rank),
// when it started and for how long it ran, the machine and the Gnomon settings it ran
// with, its timer and clocks (the CPU fit, the capture's clock against it, each GPU
// context's calibrations), what it dropped and how its stream ended, and the file.
#pragma once

#include "workspace.h"

namespace gnomon::viewer {

class TraceInfoWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, const Session& session, Workspace& ws);
};

}  // namespace gnomon::viewer
