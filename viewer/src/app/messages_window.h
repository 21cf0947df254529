// Messages: the program's log messages, filtered by text; a row jumps to its time.
#pragma once

#include <imgui.h>

#include "workspace.h"

namespace gnomon::viewer {

class MessagesWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);

 private:
  ImGuiTextFilter filter_;
};

}  // namespace gnomon::viewer
