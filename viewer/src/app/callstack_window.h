// Call stack: the frames of the stack recorded with the selected zone
// (GNOMON_CALLSTACK_DEPTH, GNOMON_ZONE_CALLSTACK) or with an allocation picked in the
// Memory window, innermost first: function, source file and line, module.
#pragma once

#include "workspace.h"

namespace gnomon::viewer {

class CallstackWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);
};

// One line about a stack for other windows: its innermost frame outside the
// allocator ("in Render() (demo.cpp:182)"), or "" without a stack.
std::string CallstackSummary(const server::TraceModel& model, Workspace& ws, uint32_t id);

}  // namespace gnomon::viewer
