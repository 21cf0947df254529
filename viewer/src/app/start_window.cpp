#include "start_window.h"

#include <imgui.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gnomon/protocol/settings.h"

namespace gnomon::viewer {
namespace {

constexpr size_t kMaxRecent = 8;

std::string RecentFile() {
  const char* config = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  std::filesystem::path dir = config && *config ? std::filesystem::path(config) / "gnomon"
                              : home && *home   ? std::filesystem::path(home) / ".config" / "gnomon"
                                                : std::filesystem::path();
  return dir.empty() ? "" : (dir / "recent-addresses").string();
}

}  // namespace

StartWindow::StartWindow() {
  std::snprintf(address_, sizeof(address_), "127.0.0.1:%u", unsigned{protocol::kDefaultPort});
  std::ifstream in(RecentFile());
  std::string line;
  while (std::getline(in, line) && recent_.size() < kMaxRecent) {
    if (!line.empty()) recent_.push_back(line);
  }
}

void StartWindow::SetAddress(const std::string& address) {
  std::snprintf(address_, sizeof(address_), "%s", address.c_str());
}

void StartWindow::Remember(const std::string& address) {
  std::erase(recent_, address);
  recent_.insert(recent_.begin(), address);
  if (recent_.size() > kMaxRecent) recent_.resize(kMaxRecent);
  const std::string file = RecentFile();
  if (file.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
  std::ofstream out(file);
  for (const std::string& r : recent_) out << r << "\n";
}

void StartWindow::Draw(float width, float height, const Session* failed,
                       const std::function<void(const std::string&)>& open) {
  ImGui::SetNextWindowPos(ImVec2(width * 0.5f, height * 0.4f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(520, 0));
  ImGui::Begin("Open a trace or connect to a program", nullptr,
               ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoMove);
  if (failed != nullptr) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 0.45f, 0.4f, 1));
    ImGui::TextWrapped("%s", failed->error().c_str());
    ImGui::PopStyleColor();
    ImGui::Separator();
  }
  ImGui::TextUnformatted("Program address (HOST:PORT)");
  ImGui::InputText("##address", address_, sizeof(address_));
  ImGui::SameLine();
  std::string chosen;
  if (ImGui::Button("Connect")) chosen = address_;
  if (!recent_.empty()) {
    ImGui::TextUnformatted("Recent:");
    for (const std::string& r : recent_) {
      ImGui::SameLine();
      if (ImGui::SmallButton(r.c_str())) {
        SetAddress(r);
        chosen = r;
        break;
      }
    }
  }
  ImGui::Separator();
  ImGui::TextUnformatted("Trace file (.gnomon)");
  ImGui::InputText("##path", path_, sizeof(path_));
  ImGui::SameLine();
  if (ImGui::Button("Open")) chosen = path_;
  ImGui::TextDisabled("or drop a .gnomon file onto this window");
  ImGui::End();
  if (!chosen.empty()) open(chosen);  // after End(): opening replaces the session
}

}  // namespace gnomon::viewer
