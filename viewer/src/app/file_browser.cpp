#include "file_browser.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace gnomon::viewer {

void FileBrowser::Open(const std::string& title, std::function<void(const std::string&)> chosen) {
  title_ = title;
  chosen_ = std::move(chosen);
  opening_ = true;
  std::error_code ec;
  if (folder_.empty()) folder_ = std::filesystem::current_path(ec).string();
  List();
}

void FileBrowser::List() {
  folders_.clear();
  files_.clear();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code type_error;
    if (entry.is_directory(type_error)) {
      folders_.push_back(name);
    } else if (entry.path().extension() == ".gnomon") {
      files_.push_back(name);
    }
  }
  std::sort(folders_.begin(), folders_.end());
  std::sort(files_.begin(), files_.end());
}

void FileBrowser::Draw(const std::vector<std::string>& recent) {
  if (title_.empty()) return;
  if (opening_) {
    ImGui::OpenPopup(title_.c_str());
    opening_ = false;
  }
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowSize(ImVec2(std::min(640.0f, display.x - 40), std::min(480.0f, display.y - 40)),
                           ImGuiCond_Appearing);
  ImGui::SetNextWindowPos(ImVec2(display.x / 2, display.y / 2), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  if (!ImGui::BeginPopupModal(title_.c_str(), nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
  std::string picked;
  if (!recent.empty()) {
    ImGui::TextUnformatted("Recent");
    for (const std::string& r : recent) {
      if (ImGui::Selectable(r.c_str())) picked = r;
    }
    ImGui::Separator();
  }
  ImGui::Text("%s", folder_.c_str());
  ImGui::BeginChild("entries", ImVec2(0, -ImGui::GetFrameHeightWithSpacing() * 2), true);
  if (ImGui::Selectable("../")) {
    folder_ = std::filesystem::path(folder_).parent_path().string();
    List();
  }
  std::string enter;
  for (const std::string& f : folders_) {
    if (ImGui::Selectable((f + "/").c_str())) enter = f;
  }
  for (const std::string& f : files_) {
    if (ImGui::Selectable(f.c_str(), false, ImGuiSelectableFlags_AllowDoubleClick)) {
      std::snprintf(path_, sizeof(path_), "%s", (std::filesystem::path(folder_) / f).string().c_str());
      if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) picked = path_;
    }
  }
  if (folders_.empty() && files_.empty()) ImGui::TextDisabled("no folders or .gnomon files here");
  ImGui::EndChild();
  if (!enter.empty()) {
    folder_ = (std::filesystem::path(folder_) / enter).string();
    List();
  }
  ImGui::SetNextItemWidth(-160);
  ImGui::InputTextWithHint("##path", "a path to a .gnomon file", path_, sizeof(path_));
  ImGui::SameLine();
  if (ImGui::Button("Open") && path_[0] != '\0') picked = path_;
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) {
    ImGui::CloseCurrentPopup();
    title_.clear();
  }
  if (!picked.empty()) {
    ImGui::CloseCurrentPopup();
    title_.clear();
  }
  ImGui::EndPopup();
  if (!picked.empty() && chosen_) chosen_(picked);
}

}  // namespace gnomon::viewer
