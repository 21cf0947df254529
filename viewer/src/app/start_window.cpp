#include "start_window.h"

#include <imgui.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config_dir.h"
#include "gnomon/protocol/settings.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

constexpr size_t kMaxRecent = 8;
constexpr auto kScanPeriod = std::chrono::seconds(1);

std::string RecentFile() { return ConfigFile("recent-addresses"); }

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
  ImGui::SetNextWindowSize(ImVec2(Scaled(640), 0));
  ImGui::Begin("Open a trace or connect to a program", nullptr,
               ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoMove);
  if (failed != nullptr) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 0.45f, 0.4f, 1));
    ImGui::TextWrapped("%s", failed->error().c_str());
    ImGui::PopStyleColor();
    ImGui::Separator();
  }
  std::string chosen;
  DrawPrograms(chosen);
  ImGui::Separator();
  ImGui::TextUnformatted("Program address (HOST:PORT)");
  ImGui::InputText("##address", address_, sizeof(address_));
  ImGui::SameLine();
  if (ImGui::Button("Connect")) chosen = address_;
  ImGui::SameLine();
  ImGui::Checkbox("keep trying until a program listens", &wait_);
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

void StartWindow::DrawPrograms(std::string& chosen) {
  const auto now = std::chrono::steady_clock::now();
  if (listener_) listener_->Poll();
  if (now >= next_scan_) {  // the idle viewer wakes each second, so the list stays fresh
    problem_.clear();
    auto local = server::ListLocalPrograms(&problem_);
    programs_ = listener_ ? server::MergePrograms(std::move(local), listener_->programs()) : std::move(local);
    next_scan_ = now + kScanPeriod;
  }
  ImGui::TextUnformatted("Running programs");
  ImGui::SameLine();
  if (ImGui::Checkbox("also on the LAN", &lan_)) {
    listener_ = lan_ ? std::make_unique<server::AnnouncementListener>() : nullptr;
    next_scan_ = now;
  }
  if (listener_ && !listener_->error().empty()) ImGui::TextDisabled("%s", listener_->error().c_str());
  if (!problem_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 0.8f, 0.3f, 1));
    ImGui::TextWrapped("%s", problem_.c_str());
    ImGui::PopStyleColor();
  }
  if (programs_.empty()) {
    ImGui::TextDisabled(lan_ ? "none running here or announcing on the LAN (GNOMON_ANNOUNCE=lan)"
                             : "none running here; a profiled program appears here while it runs");
    return;
  }
  const ImGuiTableFlags flags =
      ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY;
  const float rows_height =
      ImGui::GetTextLineHeightWithSpacing() * float(std::min<size_t>(programs_.size(), 6) + 1);
  if (!ImGui::BeginTable("programs", 5, flags, ImVec2(0, rows_height + 4))) return;
  auto width_of = [](const char* text) { return ImGui::CalcTextSize(text).x; };
  ImGui::TableSetupColumn("program", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("pid", ImGuiTableColumnFlags_WidthFixed, width_of("0000000"));
  ImGui::TableSetupColumn("address", ImGuiTableColumnFlags_WidthFixed, width_of("255.255.255.255:65535"));
  ImGui::TableSetupColumn("started", ImGuiTableColumnFlags_WidthFixed, width_of("00:00:00"));
  ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, width_of("Connect (busy)"));
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < programs_.size(); ++i) {
    const server::RunningProgram& p = programs_[i];
    ImGui::PushID(int(i));
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    TextCell(p.announcement.name +
             (p.is_local || p.announcement.host.empty() ? "" : " @ " + p.announcement.host));
    ImGui::TableNextColumn();
    ImGui::Text("%u", unsigned{p.announcement.pid});
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(p.connect_address.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(server::StartedAt(p.announcement).c_str());
    ImGui::TableNextColumn();
    if (ImGui::SmallButton(p.announcement.connected ? "Connect (busy)" : "Connect"))
      chosen = p.connect_address;
    if (p.announcement.connected && ImGui::IsItemHovered()) {
      ImGui::SetTooltip("a server is connected to it already: it answers busy until that one leaves");
    }
    ImGui::PopID();
  }
  ImGui::EndTable();
}

std::string StartWindow::Report() const {
  std::string programs = "[";
  for (const server::RunningProgram& p : programs_) {
    if (programs.size() > 1) programs += ",";
    programs += JsonReport()
                    .Add("name", p.announcement.name)
                    .Add("pid", double(p.announcement.pid))
                    .Add("address", p.connect_address)
                    .Add("connected", p.announcement.connected ? 1.0 : 0.0)
                    .str();
  }
  return JsonReport().AddRaw("programs", programs + "]").str();
}

}  // namespace gnomon::viewer
