// Messages: the program's log messages, filtered by text; a row jumps to its time. The
// rows passing the filter are found again only when the filter or the messages change,
// and only those on screen are drawn, so a million messages cost no more than ten.
#pragma once

#include <imgui.h>

#include <string>
#include <vector>

#include "workspace.h"

namespace gnomon::viewer {

class MessagesWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);

 private:
  ImGuiTextFilter filter_;
  std::vector<uint32_t> rows_;  // indexes of the messages passing filter_
  std::string rows_filter_;
  size_t rows_messages_ = SIZE_MAX;
};

}  // namespace gnomon::viewer
