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
    for (size_t i = 0; i < model.messages.size(); ++i) {
      const server::LogMessage& m = model.messages[i];
      if (!filter_.PassFilter(m.text.c_str())) continue;
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
      ImGui::TextUnformatted(m.text.c_str());
    }
    ImGui::EndTable();
  }
  ImGui::End();
}

}  // namespace gnomon::viewer
