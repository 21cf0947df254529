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
  filter_.Draw("filter", Scaled(200));
  ImGui::SameLine();
  ImGui::SetNextItemWidth(Scaled(150));
  static constexpr const char* kLeast[] = {"every severity",    "debug and worse", "info and worse",
                                           "warning and worse", "error and worse", "fatal"};
  int least = std::min<int>(query_.min_severity, 5);
  if (ImGui::Combo("##severity", &least, kLeast, 6)) query_.min_severity = uint8_t(least);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(Scaled(160));
  const std::string thread_label = query_.thread ? Timeline::Name(model, {LaneKind::kThread, *query_.thread})
                                                 : std::string("every thread");
  if (ImGui::BeginCombo("##thread", thread_label.c_str())) {
    if (ImGui::Selectable("every thread", !query_.thread)) query_.thread.reset();
    for (uint32_t thread : MessageThreads(model)) {
      if (ImGui::Selectable(Timeline::Name(model, {LaneKind::kThread, thread}).c_str(),
                            query_.thread == thread))
        query_.thread = thread;
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::Checkbox("selected range only", &limit_to_range_);
  query_.range_ns = limit_to_range_ ? ws.range : std::nullopt;
  if (ImGui::BeginTable("messages", 4,
                        ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupColumn("Time");
    ImGui::TableSetupColumn("Severity");
    ImGui::TableSetupColumn("Thread");
    ImGui::TableSetupColumn("Text", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    if (rows_filter_ != filter_.InputBuf || rows_messages_ != model.messages.size() ||
        query_.min_severity != rows_query_.min_severity || query_.thread != rows_query_.thread ||
        query_.range_ns != rows_query_.range_ns) {
      rows_ = SelectMessages(model, query_,
                             [this](const std::string& text) { return filter_.PassFilter(text.c_str()); });
      rows_filter_ = filter_.InputBuf;
      rows_messages_ = model.messages.size();
      rows_query_ = query_;
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
