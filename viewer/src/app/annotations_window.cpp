#include "annotations_window.h"

#include <imgui.h>

#include <cstdio>
#include <iterator>

#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {

void AnnotationsWindow::Load(Workspace& ws, const std::string& path) {
  ws.annotations.clear();
  ws.annotations_path = path;
  ws.annotations_error.clear();
  if (!path.empty() && !LoadAnnotations(path, ws.annotations, ws.annotations_error)) ws.annotations.clear();
  if (!ws.annotations.empty()) open = true;
}

void AnnotationsWindow::Save(Workspace& ws) {
  if (ws.annotations_path.empty()) return;
  ws.annotations_error = SaveAnnotations(ws.annotations_path, ws.annotations);
}

void AnnotationsWindow::Annotate(Workspace& ws, const std::string& text, uint32_t color) {
  if (!ws.range) return;
  ws.annotations.push_back({ws.range->first, ws.range->second, color, server::ValidUtf8(text)});
  Save(ws);
  open = true;
}

void AnnotationsWindow::NameDialog(Workspace& ws) {
  if (std::exchange(asking_, false) && ws.range) {
    text_[0] = '\0';
    ImGui::OpenPopup("Annotate");
  }
  if (!ImGui::BeginPopupModal("Annotate", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  if (ws.range) {
    ImGui::Text("%s .. %s", FormatTime(ws.range->first).c_str(), FormatTime(ws.range->second).c_str());
  }
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
  const bool entered = ImGui::InputText("name", text_, sizeof(text_), ImGuiInputTextFlags_EnterReturnsTrue);
  for (int i = 0; i < int(std::size(kAnnotationColors)); ++i) {
    if (i > 0) ImGui::SameLine();
    ImGui::PushID(i);
    const ImVec4 c = ImGui::ColorConvertU32ToFloat4(kAnnotationColors[i]);
    if (ImGui::ColorButton("##color", c, ImGuiColorEditFlags_NoTooltip, ImVec2(Scaled(22), Scaled(22))))
      color_ = i;
    if (i == color_) {
      ImGui::GetWindowDrawList()->AddRect(ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), IM_COL32_WHITE, 0,
                                          0, 2);
    }
    ImGui::PopID();
  }
  if (entered || ImGui::Button("Add")) {
    Annotate(ws, text_, kAnnotationColors[color_]);
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

void AnnotationsWindow::Draw(const server::TraceModel&, Workspace& ws) {
  NameDialog(ws);
  JsonReport report;
  report.Add("count", double(ws.annotations.size()))
      .Add("path", ws.annotations_path)
      .Add("error", ws.annotations_error);
  ws.reports["annotations"] = report.str();
  if (!open) return;
  ws.Place("Annotations");
  if (!ImGui::Begin("Annotations", &open)) {
    ImGui::End();
    return;
  }
  if (!ws.annotations_error.empty())
    ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", ws.annotations_error.c_str());
  ImGui::TextDisabled(ws.annotations_path.empty()
                          ? "kept while the viewer runs (a live capture: save the trace)"
                          : "kept in %s",
                      ws.annotations_path.c_str());
  if (ws.annotations.empty()) ImGui::TextDisabled("select a range (right-drag), then press A to name it");
  int remove = -1;
  for (size_t i = 0; i < ws.annotations.size(); ++i) {
    const Annotation& a = ws.annotations[i];
    ImGui::PushID(int(i));
    ImGui::ColorButton("##c", ImGui::ColorConvertU32ToFloat4(a.color), ImGuiColorEditFlags_NoTooltip);
    ImGui::SameLine();
    if (ImGui::SmallButton("x")) remove = int(i);
    ImGui::SameLine();
    const std::string label = FormatTime(a.begin_ns) + " .. " + FormatTime(a.end_ns) + "  " + a.text;
    if (ImGui::Selectable(label.c_str())) ws.JumpTo(a.begin_ns, std::max(a.end_ns, a.begin_ns + 1), 0.1);
    ImGui::PopID();
  }
  if (remove >= 0) {
    ws.annotations.erase(ws.annotations.begin() + remove);
    Save(ws);
  }
  ImGui::End();
}

}  // namespace gnomon::viewer
