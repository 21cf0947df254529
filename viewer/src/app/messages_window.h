// Messages: the program's log messages, filtered by text, by least severity, by thread
// and to the selected range; a row jumps to its time. The rows passing the filters are
// found again only when a filter or the messages change, and only those on screen are
// drawn, so a million messages cost no more than ten.
#pragma once

#include <imgui.h>

#include <string>
#include <vector>

#include "gnomon/viewer/message_list.h"
#include "workspace.h"

namespace gnomon::viewer {

class MessagesWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);
  // Keeps only messages of this severity and worse (protocol::Severity).
  void ShowFrom(uint8_t severity) { query_.min_severity = severity; }

 private:
  ImGuiTextFilter filter_;
  std::vector<uint32_t> rows_;  // indexes of the messages passing filter_
  std::string rows_filter_;
  size_t rows_messages_ = SIZE_MAX;
  MessageQuery query_, rows_query_;
  bool limit_to_range_ = false;
};

}  // namespace gnomon::viewer
