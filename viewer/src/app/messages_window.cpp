#include "messages_window.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/text.h"
#include "gnomon/viewer/timeline.h"
#include "widgets.h"

namespace gnomon::viewer {
void MessagesWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("Messages");
  if (!ImGui::Begin("Messages", &open)) {
    ImGui::End();
    return;
  }
  filter_.Draw("filter", 200);
  if (ImGui::BeginTable("messages", 4,
                        ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupColumn("Time");
    ImGui::TableSetupColumn("Severity");
    ImGui::TableSetupColumn("Thread");
    ImGui::TableSetupColumn("Text", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    if (rows_filter_ != filter_.InputBuf || rows_messages_ != model.messages.size()) {
      rows_.clear();
      for (size_t i = 0; i < model.messages.size(); ++i) {
        if (filter_.PassFilter(model.messages[i].text.c_str())) rows_.push_back(uint32_t(i));
      }
      rows_filter_ = filter_.InputBuf;
      rows_messages_ = model.messages.size();
    }
    ImGuiListClipper clipper;
    clipper.Begin(int(rows_.size()));
    while (clipper.Step()) {
      for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
        const size_t i = rows_[size_t(row)];
        const server::LogMessage& m = model.messages[i];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::PushID(int(i));
        const int64_t t = Workspace::RelNs(model, m.tick);
        if (ImGui::Selectable(FormatTime(t).c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) {
          ws.JumpTo(t - 1'000'000, t + 1'000'000);
        }
        ImGui::PopID();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(protocol::SeverityName(m.severity));
        ImGui::TableNextColumn();
        TextCell(Timeline::Name(model, {LaneKind::kThread, m.thread_id}));
        ImGui::TableNextColumn();
        TextCell(m.text);
      }
    }
    ImGui::EndTable();
  }
  std::string threads = "[";
  for (size_t r = 0; r < std::min<size_t>(rows_.size(), 20); ++r) {
    if (threads.size() > 1) threads += ",";
    threads +=
        server::JsonQuote(Timeline::Name(model, {LaneKind::kThread, model.messages[rows_[r]].thread_id}));
  }
  ws.reports["messages"] =
      JsonReport().Add("rows", double(rows_.size())).AddRaw("threads", threads + "]").str();
  ImGui::End();
}

}  // namespace gnomon::viewer
