// Zone details: the selected CPU or GPU zone, with its GPU counters when it has some.
// Open while something is selected; closing it clears the selection.
#pragma once

#include "workspace.h"

namespace gnomon::viewer {

class DetailsWindow {
 public:
  void Draw(const server::TraceModel& model, Workspace& ws);
};

}  // namespace gnomon::viewer
