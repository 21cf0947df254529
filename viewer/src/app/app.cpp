#include "app.h"

#include <cstdio>
#include <filesystem>

#include "gnomon/protocol/settings.h"

namespace gnomon::viewer {
namespace {

// HOST[:PORT] when it does not name an existing file.
bool ParseAddress(const std::string& text, std::string& host, uint16_t& port) {
  std::error_code ec;
  if (text.empty() || std::filesystem::exists(text, ec)) return false;
  if (text.find('/') != std::string::npos || text.ends_with(".gnomon")) return false;
  const size_t colon = text.rfind(':');
  host = text.substr(0, colon);
  port = server::kDefaultPort;
  if (colon != std::string::npos) {
    const auto parsed =
        protocol::ParsePort(std::string_view(text).substr(colon + 1), protocol::PortZero::kRefused);
    if (!parsed) return false;
    port = *parsed;
  }
  return !host.empty();
}

}  // namespace

App::App(const Options& options)
    : max_expansion_(options.max_expansion),
      timeline_window_({options.select_longest_zone, options.show_counters, options.range_begin_ns,
                        options.range_end_ns}) {
  statistics_window_.open = clock_window_.open = messages_window_.open = debug_window_.open =
      options.show_all_windows;
  if (!options.open.empty()) Open(options.open);
}

App::~App() = default;

void App::Show(std::unique_ptr<Session> session) {
  workspace_.timeline = Timeline();
  workspace_.selected.reset();
  workspace_.fitted = false;
  workspace_.follow = true;
  timeline_window_.Reset();
  statistics_window_.Reset();
  session_ = std::move(session);
  workspace_.session = session_.get();
  status_line_.clear();
}

void App::Open(const std::string& target) {
  std::string host;
  uint16_t port = 0;
  if (ParseAddress(target, host, port)) {
    Show(Session::Connect(host, port));
    pending_recent_ = host + ":" + std::to_string(port);  // remembered once data flows
    start_window_.SetAddress(pending_recent_);
  } else {
    Show(Session::OpenFile(target, max_expansion_));
  }
}

std::string App::LaneTitle(const Lane& lane) const {
  std::string title;
  if (session_) {
    session_->WithModel(
        [&](const server::TraceModel& model) { title = workspace_.timeline.Title(model, lane); });
  }
  return title;
}

void App::Frame(float width, float height) {
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(ImVec2(width, height));
  ImGui::Begin("Gnomon", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_MenuBar |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoSavedSettings);
  MainMenu();
  if (!session_ || session_->failed()) {
    start_window_.Draw(width, height, session_ ? session_.get() : nullptr,
                       [this](const std::string& target) { Open(target); });
    ImGui::End();
    return;
  }
  if (!pending_recent_.empty() && session_->bytes_received() > 0) {
    start_window_.Remember(pending_recent_);
    pending_recent_.clear();
  }
  session_->WithModel([&](const server::TraceModel& model) {
    workspace_.timeline.Sync(model);
    debug_window_.Measure(model, *session_);
    ImGui::Text("%s  |  %s  |  %llu zones, %zu threads, %zu GPU contexts", session_->title().c_str(),
                session_->StateText().c_str(), static_cast<unsigned long long>(model.zone_count),
                model.threads.size(), model.gpu_contexts.size());
    if (session_->is_loading()) {
      ImGui::SameLine();
      ImGui::ProgressBar(session_->load_progress(), ImVec2(200, 0));
    }
    if (!session_->warning().empty())
      ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "%s", session_->warning().c_str());
    if (!status_line_.empty()) ImGui::TextUnformatted(status_line_.c_str());
    timeline_window_.Draw(model, workspace_);
    ImGui::End();
    if (statistics_window_.open) statistics_window_.Draw(model, workspace_);
    find_zone_window_.Draw(model, workspace_);
    details_window_.Draw(model, workspace_);
    if (clock_window_.open) clock_window_.Draw(model);
    if (messages_window_.open) messages_window_.Draw(model, workspace_);
    if (debug_window_.open) debug_window_.Draw(model, *session_);
  });
}

void App::MainMenu() {
  if (!ImGui::BeginMenuBar()) return;
  FileMenu();
  if (ImGui::BeginMenu("View")) {
    ImGui::MenuItem("Statistics", nullptr, &statistics_window_.open);
    ImGui::MenuItem("Find zone", nullptr, &find_zone_window_.open);
    ImGui::MenuItem("Messages", nullptr, &messages_window_.open);
    ImGui::MenuItem("GPU clocks", nullptr, &clock_window_.open);
    ImGui::MenuItem("Debug", nullptr, &debug_window_.open);
    ImGui::Separator();
    if (ImGui::MenuItem("Fit whole trace", "H")) workspace_.fitted = false;
    ImGui::MenuItem("Follow newest data", "F", &workspace_.follow);
    ImGui::EndMenu();
  }
  LanesMenu();
  ImGui::EndMenuBar();
}

void App::FileMenu() {
  if (!ImGui::BeginMenu("File")) return;
  if (ImGui::MenuItem("Close", nullptr, false, session_ != nullptr)) Show(nullptr);
  if (session_) {
    ImGui::InputText("##save", save_path_, sizeof(save_path_));
    ImGui::SameLine();
    if (ImGui::Button("Save trace as")) {
      // A regular file there is replaced only by a second press on the same path.
      const bool exists = !server::CheckOutputPath(save_path_, server::Overwrite::kNo).ok() &&
                          server::CheckOutputPath(save_path_, server::Overwrite::kYes).ok();
      if (exists && replace_path_ != save_path_) {
        replace_path_ = save_path_;
        status_line_ = std::string(save_path_) + " exists: press \"Save trace as\" again to replace it";
      } else {
        const server::Status saved =
            session_->SaveAs(save_path_, exists ? server::Overwrite::kYes : server::Overwrite::kNo);
        replace_path_.clear();
        status_line_ = saved.ok() ? std::string("saved ") + save_path_ : saved.message();
      }
    }
  }
  ImGui::EndMenu();
}

void App::LanesMenu() {
  if (!ImGui::BeginMenu("Lanes")) return;
  std::map<LaneKey, LaneState>& states = workspace_.lane_states;
  if (session_) {
    // Only lanes the user changed have a state; the others are shown, expanded.
    session_->WithModel([&](const server::TraceModel& model) {
      auto item = [&](LaneKey key) {
        auto it = states.find(key);
        bool shown = it == states.end() || !it->second.hidden;
        if (ImGui::MenuItem(Timeline::Name(model, key).c_str(), nullptr, &shown)) states[key].hidden = !shown;
      };
      for (const auto& [id, gpu] : model.gpu_contexts) item({LaneKind::kGpu, id});
      for (const auto& thread : model.threads) item({LaneKind::kThread, thread.id});
      for (const auto& [id, plot] : model.plots) item({LaneKind::kPlot, id});
    });
  }
  if (ImGui::MenuItem("Show all")) {
    std::erase_if(states, [](const auto& entry) { return entry.first.kind != LaneKind::kCounter; });
    for (auto& [key, state] : states) state = LaneState{};
  }
  timeline_window_.CounterMenu(workspace_);
  ImGui::EndMenu();
}

}  // namespace gnomon::viewer
