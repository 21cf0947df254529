#include "app.h"

#include <imgui_internal.h>  // FindWindowByName, for the layout of the last frame

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <utility>

#include "config_dir.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/protocol/settings.h"
#include "gnomon/server/process_timeline.h"
#include "gnomon/server/report.h"
#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

constexpr size_t kMaxRecentFiles = 8;

// HOST[:PORT] (or [V6]:PORT) when it does not name an existing file.
bool ParseAddress(const std::string& text, std::string& host, uint16_t& port) {
  std::error_code ec;
  if (text.empty() || std::filesystem::exists(text, ec)) return false;
  if (text.find('/') != std::string::npos || text.ends_with(".gnomon")) return false;
  const auto address = protocol::ParseHostPort(text, server::kDefaultPort);
  if (!address) return false;
  host = address->host;
  port = address->port;
  return true;
}

std::string SettingsFile() { return ConfigFile("viewer-settings"); }

constexpr const char* kWindowNames[] = {"statistics",      "find-zone",   "find-zone-self", "flame-graph",
                                        "frame-histogram", "compare",     "messages",       "gpu-clocks",
                                        "memory",          "samples",     "callstack",      "debug",
                                        "trace-info",      "annotations", "source",         "memory-tree",
                                        "symbol",          "cpu-data",    "memory-address", "memory-map"};

}  // namespace

std::string App::CheckWindowNames(const std::vector<std::string>& show) {
  for (const std::string& name : show) {
    const size_t eq = name.find('=');
    const std::string base = name.substr(0, eq);
    if (base == "messages" && eq != std::string::npos) {
      bool known = false;
      for (uint8_t severity = 0; severity <= 5; ++severity)
        known |= name.substr(eq + 1) == protocol::SeverityName(severity);
      if (!known)
        return "'" + name +
               "': messages=SEVERITY shows that severity and worse (trace, debug, info, warning, error, "
               "fatal)";
    }
    if (std::find(std::begin(kWindowNames), std::end(kWindowNames), base) == std::end(kWindowNames)) {
      std::string known;
      for (const char* k : kWindowNames) known += std::string(known.empty() ? "" : ", ") + k;
      return "'" + name + "' is not a window (" + known +
             "; find-zone=NAME searches for NAME, find-zone-self=NAME shows its self times, samples=flame "
             "shows the samples' flame graph, source=FILE:LINE a file's lines, memory-tree=POOL a pool's "
             "call tree, memory-map=POOL its blocks' addresses over time, memory-address=ADDRESS the blocks "
             "that held "
             "it, symbol=NAME a sampled function's "
             "code, "
             "cpu-data the threads' use of the CPUs)";
    }
  }
  return "";
}

App::App(const Options& options)
    : options_(options),
      timeline_window_({options.select_longest_zone, options.show_counters, options.range_begin_ns,
                        options.range_end_ns, options.keep_item_labels, options.zoom_to,
                        options.zoom_to_number, options.sort_lanes}) {
  if (options.keep_settings) LoadSettings();
  loaded_ = {workspace_.hidden_lanes, workspace_.zone_coloring};
  if (options.frame_target_fps > 0) workspace_.frame_target = FrameTarget::Fps(options.frame_target_fps);
  workspace_.hidden_lanes |= options.hide_lanes;
  if (options.library_threads) workspace_.hidden_lanes &= ~uint32_t(kLibraryLanes);
  if (options.zone_coloring) workspace_.zone_coloring = *options.zone_coloring;
  if (!options.frame_series.empty()) frame_times_window_.ShowSeriesLater(options.frame_series);
  source_window_.SetSourceMap(options.source_map);
  if (options.show_all_windows) {
    statistics_window_.open = clock_window_.open = messages_window_.open = debug_window_.open = true;
  }
  OpenWindows(options.show);
  started_ = {workspace_.hidden_lanes, workspace_.zone_coloring};  // --show cpu-data shows the CPU lanes
  workspace_.range = options.select_ns;
  if (!options.open.empty()) Open(options.open);
  if (!options.compare.empty())
    compare_window_.OpenOther(options.compare, options.max_expansion, options.memory_limit);
}

App::~App() {
  if (options_.keep_settings) SaveSettings();
  // The windows' computations read the session: they stop first.
  if (session_ != nullptr) session_->CancelReads();
  statistics_window_.Reset();
  timeline_window_.Reset();
  find_zone_window_.Reset();
  flame_graph_window_.Reset();
  compare_window_.Reset();
  memory_window_.Reset();
}

void App::OpenWindows(const std::vector<std::string>& names, bool only) {
  if (only) {
    for (const SideWindow& w : SideWindows()) *w.open = false;
  }
  for (const std::string& name : names) {
    const size_t eq = name.find('=');
    const std::string base = name.substr(0, eq);
    for (const SideWindow& w : SideWindows()) {
      if (base == w.name) *w.open = true;
    }
    if ((base == "find-zone" || base == "find-zone-self") && eq != std::string::npos)
      find_zone_window_.SearchFor(name.substr(eq + 1));
    if (base == "find-zone-self") {
      find_zone_window_.open = true;
      find_zone_window_.ShowSelfTimes(true);
    }
    if (base == "samples") samples_window_.ShowFlameGraph(name.substr(eq + 1) == "flame");
    if (base == "symbol" && eq != std::string::npos) symbol_window_.Show(name.substr(eq + 1));
    if (base == "cpu-data") workspace_.hidden_lanes &= ~uint32_t(kCpuLanes);  // and the cores' lanes
    if (base == "memory-address" && eq != std::string::npos) {                // memory-address=ADDRESS
      memory_window_.open = true;
      memory_window_.ShowAddress(name.substr(eq + 1));
    }
    if (base == "memory-map") {  // memory-map[=POOL]
      memory_window_.open = true;
      memory_window_.ShowMap(eq == std::string::npos ? "" : name.substr(eq + 1));
    }
    if (base == "memory-tree") {  // memory-tree[=POOL]
      memory_window_.open = true;
      memory_window_.ShowTree(eq == std::string::npos ? "" : name.substr(eq + 1));
    }
    if (base == "source" && eq != std::string::npos) {  // source=FILE:LINE
      const std::string where = name.substr(eq + 1);
      const size_t colon = where.rfind(':');
      source_window_.Show(
          where.substr(0, colon),
          colon == std::string::npos ? 1 : uint32_t(std::strtoul(where.c_str() + colon + 1, nullptr, 10)));
    }
    if (base == "messages" && eq != std::string::npos) {
      for (uint8_t severity = 0; severity <= 5; ++severity) {
        if (name.substr(eq + 1) == protocol::SeverityName(severity)) messages_window_.ShowFrom(severity);
      }
    }
  }
}

void App::CompareWith(std::unique_ptr<Session> other) { compare_window_.CompareWith(std::move(other)); }

std::vector<App::SideWindow> App::SideWindows() {
  return {{"statistics", &statistics_window_.open},   {"find-zone", &find_zone_window_.open},
          {"flame-graph", &flame_graph_window_.open}, {"frame-histogram", &frame_times_window_.open},
          {"compare", &compare_window_.open},         {"messages", &messages_window_.open},
          {"gpu-clocks", &clock_window_.open},        {"memory", &memory_window_.open},
          {"samples", &samples_window_.open},         {"source", &source_window_.open},
          {"symbol", &symbol_window_.open},           {"cpu-data", &cpu_window_.open},
          {"callstack", &callstack_window_.open},     {"debug", &debug_window_.open},
          {"trace-info", &trace_info_window_.open},   {"annotations", &annotations_window_.open}};
}

void App::Show(std::unique_ptr<Session> session) {
  if (session_ != nullptr) session_->CancelReads();
  statistics_window_.Reset();
  details_window_.Reset();
  memory_window_.Reset();
  samples_window_.Reset();
  source_window_.Reset();
  symbol_window_.Reset();
  cpu_window_.Reset();
  workspace_.callstack.reset();
  workspace_.symbolizer = std::make_shared<server::Symbolizer>();
  find_zone_window_.Reset();
  flame_graph_window_.Reset();
  frame_times_window_.Reset();
  compare_window_.Reset();
  workspace_.groups.clear();  // they point into the session's models: before it goes
  workspace_.groups_built = false;
  workspace_.shown_title.clear();
  workspace_.shown_clock_bound_ns.reset();
  workspace_.timeline = Timeline();
  workspace_.selected.reset();
  workspace_.find_highlight.reset();
  workspace_.fitted = false;
  workspace_.synced_whole = false;
  workspace_.history = ViewHistory();
  workspace_.follow = true;
  workspace_.range = session == nullptr ? std::nullopt : options_.select_ns;
  timeline_window_.Reset();
  session_ = std::move(session);
  workspace_.session = session_.get();
  const std::string beside =
      session_ && !session_->path().empty() ? AnnotationsPathFor(session_->path()) : "";
  annotations_window_.Load(workspace_,
                           session_ && !options_.annotations.empty() ? options_.annotations : beside);
  status_line_.clear();
}

void App::Open(const std::string& target) {
  std::string host;
  uint16_t port = 0;
  if (ParseAddress(target, host, port)) {
    Show(
        Session::Connect(host, port, std::chrono::milliseconds(1500), options_.wait || start_window_.wait()));
    pending_recent_ = host + ":" + std::to_string(port);  // remembered once data flows
    start_window_.SetAddress(pending_recent_);
  } else {
    Show(Session::OpenFile(target, options_.max_expansion, 0, options_.memory_limit));
    RememberFile(target);
  }
}

void App::OpenLoading(const std::string& path, std::unique_ptr<Session> loading) {
  Show(std::move(loading));
  RememberFile(path);
}

bool App::is_busy() {
  const bool session_busy =
      session_ && (session_->is_loading() || (session_->is_live() && !session_->failed() &&
                                              session_->StateText().rfind("receiving", 0) == 0));
  return session_busy || statistics_window_.is_busy() || find_zone_window_.is_busy() ||
         flame_graph_window_.is_busy() || compare_window_.is_busy() || samples_window_.is_busy() ||
         source_window_.is_busy() || memory_window_.is_busy() || symbol_window_.is_busy() ||
         cpu_window_.is_busy() || timeline_window_.is_busy();
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
  workspace_.reports.clear();
  workspace_.tiles.clear();
  // Esc closes an open menu or popup first; only without one does it reach the timeline.
  workspace_.escape_taken = false;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape)) &&
      ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId)) {
    ImGui::ClosePopupToLevel(0, true);
    workspace_.escape_taken = true;
  }
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(ImVec2(width, height));
  ImGui::Begin("Gnomon", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_MenuBar |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoSavedSettings);
  MainMenu();
  if (std::exchange(close_requested_, false)) Show(nullptr);
  if (program_chosen_ && session_) {
    Show(
        Session::OpenFile(session_->path(), options_.max_expansion, *program_chosen_, options_.memory_limit));
    program_chosen_.reset();
  }
  SaveDialog();
  file_browser_.Draw(recent_files_);
  if (!session_ || session_->failed()) {
    start_window_.Draw(width, height, session_ ? session_.get() : nullptr,
                       [this](const std::string& target) { Open(target); });
    workspace_.reports["start"] = start_window_.Report();
    ImGui::End();
    return;
  }
  if (!pending_recent_.empty() && session_->bytes_received() > 0) {
    start_window_.Remember(pending_recent_);
    pending_recent_.clear();
  }
  bool any_side = workspace_.selected.has_value();
  for (const SideWindow& w : SideWindows()) any_side |= *w.open;
  session_->WithModel([&](const server::TraceModel& model) {
    // While a file loads, the lanes catch up four times a second: indexing zones takes
    // the model's lock, which the loader needs for every block.
    const auto now = std::chrono::steady_clock::now();
    const bool loading = session_->is_loading();
    if (!loading || now - last_sync_ >= std::chrono::milliseconds(250)) {
      workspace_.timeline.Sync(model, loading ? session_->load_progress() : 1.0);
      workspace_.synced_whole = !loading;
      last_sync_ = now;
    }
    if (!workspace_.groups_built && session_->others() != nullptr) BuildProcessGroups(model);
    debug_window_.Measure(model, *session_);
    std::string title = session_->title();
    if (session_->programs() > 1 && model.has_program_info) {
      title += ": program " + std::to_string(session_->program() + 1) + " of " +
               std::to_string(session_->programs()) + ", " + server::ProcessLabel(model) +
               "; the Program menu shows the others";
    }
    const auto threads = std::count_if(model.threads.begin(), model.threads.end(),
                                       [](const server::ThreadTimeline& t) { return !t.library; });
    ImGui::Text("%s  |  %s  |  %llu zones, %zu threads, %zu GPU contexts", title.c_str(),
                session_->StateText().c_str(), static_cast<unsigned long long>(model.zone_count),
                size_t(threads), model.gpu_contexts.size());
    if (!model.zones_held) {  // drawn from their overview: how fine it is
      ImGui::SameLine();
      ImGui::TextDisabled(
          "|  zones not held (--memory-limit): those under %s drawn merged",
          server::FormatDuration(model.clock.ns_per_tick() * double(model.overview_resolution)).c_str());
    }
    if (session_->is_live()) LiveControls();
    if (session_->is_loading()) {
      ImGui::SameLine();
      ImGui::ProgressBar(session_->load_progress(), ImVec2(Scaled(200), 0));
    }
    if (!session_->warning().empty())
      ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "%s", session_->warning().c_str());
    if (!status_line_.empty()) ImGui::TextUnformatted(status_line_.c_str());
    // The timeline takes the height above the panel of side windows.
    // (A window too small for both keeps the timeline's 160 px.)
    const float panel_top =
        any_side ? std::clamp(height * split_, 160.0f, std::max(160.0f, height - 120.0f)) : height;
    const float timeline_height =
        std::max(60.0f, panel_top - ImGui::GetCursorScreenPos().y - (any_side ? kSplitterHeight : 8));
    timeline_window_.Draw(model, workspace_, timeline_height);
    if (any_side) {
      Splitter(panel_top - kSplitterHeight, width, height);
      const bool stacked = TileSideWindows(panel_top, width, height);
      // Windows placed before they stacked would cover the strip: all go to the new tiles.
      if (stacked_ && *stacked_ != stacked) tile_requested_ = true;
      stacked_ = stacked;
      if (stacked) WindowStrip(panel_top);
    } else {
      open_titles_.clear();
    }
    ImGui::End();
    // T (or View > Tile the windows) puts every window back in its tile, as does moving
    // the splitter (the panel the tiles share changed).
    if (!ImGui::GetIO().WantTextInput && ImGui::IsKeyPressed('T')) tile_requested_ = true;
    if (!ImGui::GetIO().WantTextInput && ImGui::IsKeyPressed('A') && workspace_.range)
      annotations_window_.AskForName();
    if (ImGui::GetIO().KeyCtrl) {  // the interface scale, a quarter at a time
      if (ImGui::IsKeyPressed('=')) AskScale(scale_ + 0.25f);
      if (ImGui::IsKeyPressed('-')) AskScale(scale_ - 0.25f);
      if (ImGui::IsKeyPressed('0')) AskScale(monitor_scale_);
    }
    workspace_.retile = std::exchange(tile_requested_, false);
    if (statistics_window_.open) statistics_window_.Draw(model, workspace_);
    find_zone_window_.Draw(model, workspace_);
    if (flame_graph_window_.open) flame_graph_window_.Draw(model, workspace_);
    if (frame_times_window_.open) frame_times_window_.Draw(model, workspace_);
    if (compare_window_.open) compare_window_.Draw(model, workspace_);
    details_window_.Draw(model, workspace_);
    if (clock_window_.open) clock_window_.Draw(model, workspace_);
    if (messages_window_.open) messages_window_.Draw(model, workspace_);
    if (memory_window_.open) memory_window_.Draw(model, workspace_);
    if (samples_window_.open) samples_window_.Draw(model, workspace_);
    if (workspace_.show_source) {  // asked for by another window
      source_window_.Show(workspace_.show_source->first, workspace_.show_source->second);
      workspace_.show_source.reset();
    }
    if (source_window_.open) source_window_.Draw(model, workspace_);
    if (workspace_.show_symbol) {  // asked for by another window
      symbol_window_.Show(*workspace_.show_symbol);
      workspace_.show_symbol.reset();
    }
    if (symbol_window_.open) symbol_window_.Draw(model, workspace_);
    if (cpu_window_.open) cpu_window_.Draw(model, workspace_);
    if (workspace_.show_callstack) {
      callstack_window_.open = true;
      workspace_.show_callstack = false;
    }
    if (callstack_window_.open) callstack_window_.Draw(model, workspace_);
    if (debug_window_.open) debug_window_.Draw(model, *session_, workspace_);
    trace_info_window_.Draw(model, *session_, workspace_);
    if (!options_.annotate.empty() && !annotated_ && !session_->is_loading() && workspace_.range) {
      annotations_window_.Annotate(workspace_, options_.annotate, kAnnotationColors[0]);
      annotated_ = true;
    }
    annotations_window_.Draw(model, workspace_);
  });
}

App::ScreenRect App::timeline_rect() const {
  const auto [min, max] = timeline_window_.area();
  return {"timeline", min.x, min.y, max.x, max.y};
}

std::vector<App::ScreenRect> App::side_window_rects() const {
  std::vector<ScreenRect> rects;
  for (const auto& [title, tile] : workspace_.tiles) {
    if (const ImGuiWindow* w = ImGui::FindWindowByName(title.c_str()); w != nullptr && w->Active) {
      rects.push_back({title, w->Pos.x, w->Pos.y, w->Pos.x + w->Size.x, w->Pos.y + w->Size.y});
    }
  }
  return rects;
}

void App::MainMenu() {
  if (!ImGui::BeginMenuBar()) return;
  FileMenu();
  if (ImGui::BeginMenu("View")) {
    ImGui::MenuItem("Statistics", nullptr, &statistics_window_.open);
    ImGui::MenuItem("Find zone", nullptr, &find_zone_window_.open);
    ImGui::MenuItem("Flame graph", nullptr, &flame_graph_window_.open);
    ImGui::MenuItem("Frame times", nullptr, &frame_times_window_.open);
    ImGui::MenuItem("Compare", nullptr, &compare_window_.open);
    ImGui::MenuItem("Messages", nullptr, &messages_window_.open);
    ImGui::MenuItem("GPU clocks", nullptr, &clock_window_.open);
    ImGui::MenuItem("Memory", nullptr, &memory_window_.open);
    ImGui::MenuItem("Samples", nullptr, &samples_window_.open);
    ImGui::MenuItem("Source", nullptr, &source_window_.open);
    ImGui::MenuItem("Symbol", nullptr, &symbol_window_.open);
    ImGui::MenuItem("CPU data", nullptr, &cpu_window_.open);
    ImGui::MenuItem("Call stack", nullptr, &callstack_window_.open);
    ImGui::MenuItem("Debug", nullptr, &debug_window_.open);
    ImGui::MenuItem("Trace info", nullptr, &trace_info_window_.open);
    ImGui::MenuItem("Annotations", nullptr, &annotations_window_.open);
    if (ImGui::MenuItem("Annotate the selected range", "A", false, workspace_.range.has_value()))
      annotations_window_.AskForName();
    ImGui::Separator();
    if (ImGui::MenuItem("Tile the windows", "T")) tile_requested_ = true;
    if (ImGui::BeginMenu("Interface scale")) {
      for (const float s : {1.0f, 1.25f, 1.5f, 2.0f, 2.5f, 3.0f}) {
        char label[16];
        std::snprintf(label, sizeof label, "%.0f %%", s * 100);
        if (ImGui::MenuItem(label, nullptr, std::fabs(scale_ - s) < 0.01f)) AskScale(s);
      }
      ImGui::Separator();
      if (ImGui::MenuItem("Larger", "Ctrl+=")) AskScale(scale_ + 0.25f);
      if (ImGui::MenuItem("Smaller", "Ctrl+-")) AskScale(scale_ - 0.25f);
      if (ImGui::MenuItem("The monitor's", "Ctrl+0")) AskScale(monitor_scale_);
      ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Bring to front")) {  // a window under others, found by name
      for (const std::string& title : open_titles_) {
        if (ImGui::MenuItem(title.c_str())) ImGui::SetWindowFocus(title.c_str());
      }
      ImGui::EndMenu();
    }
    if (ImGui::MenuItem("Fit whole trace", "H")) {
      workspace_.history.Leave(workspace_.view.place());
      workspace_.fitted = false;
    }
    if (ImGui::MenuItem("Zoom to the selected range", "Z", false, workspace_.range.has_value()))
      workspace_.JumpTo(workspace_.range->first, workspace_.range->second, 0);
    if (ImGui::MenuItem("Back", "Backspace", false, workspace_.history.back_count() > 0))
      workspace_.GoBack(true);
    if (ImGui::MenuItem("Forward", "Shift+Backspace", false, workspace_.history.forward_count() > 0))
      workspace_.GoBack(false);
    ImGui::MenuItem("Follow newest data", "F", &workspace_.follow);
    FrameTargetMenu();
    if (ImGui::MenuItem("Clear the selected range", "Esc", false, workspace_.range.has_value()))
      workspace_.range.reset();
    ImGui::EndMenu();
  }
  LanesMenu();
  ProgramMenu();
  if (workspace_.range) {
    ImGui::TextDisabled(
        "  selected: %s",
        server::FormatDuration(double(workspace_.range->second - workspace_.range->first)).c_str());
  }
  ImGui::EndMenuBar();
}

void App::AskScale(float scale) {
  scale = std::clamp(scale, 0.5f, 4.0f);
  if (std::fabs(scale - scale_) > 0.001f) scale_request_ = scale;
}

void App::FrameTargetMenu() {
  FrameTarget& target = workspace_.frame_target;
  char label[64];
  std::snprintf(label, sizeof label, "Frame target (%.0f FPS)", target.fps());
  if (!ImGui::BeginMenu(label)) return;
  for (const double fps : {30.0, 60.0, 90.0, 120.0, 144.0, 240.0}) {
    char item[32];
    std::snprintf(item, sizeof item, "%.0f FPS", fps);
    if (ImGui::MenuItem(item, nullptr, std::llround(target.fps()) == std::llround(fps)))
      target = FrameTarget::Fps(fps);
  }
  float fps = float(target.fps());
  ImGui::SetNextItemWidth(Scaled(120));
  if (ImGui::InputFloat("FPS", &fps, 0, 0, "%.1f", ImGuiInputTextFlags_EnterReturnsTrue) && fps > 0)
    target = FrameTarget::Fps(fps);
  ImGui::TextDisabled("within it green, within twice it yellow, longer red");
  ImGui::EndMenu();
}

void App::FileMenu() {
  if (!ImGui::BeginMenu("File")) return;
  if (ImGui::MenuItem("Open...", "Ctrl+O")) {
    file_browser_.Open("Open a trace", [this](const std::string& path) { Open(path); });
  }
  if (ImGui::MenuItem("Compare with...", nullptr, false, session_ != nullptr)) {
    file_browser_.Open("Compare with a trace", [this](const std::string& path) {
      compare_window_.OpenOther(path, options_.max_expansion, options_.memory_limit);
      RememberFile(path);
    });
  }
  if (session_) {
    ImGui::Separator();
    ImGui::InputText("##save", save_path_, sizeof(save_path_));
    ImGui::SameLine();
    if (ImGui::Button("Save trace as")) {
      const bool exists = !tracefile::CheckOutputPath(save_path_, tracefile::Overwrite::kNo).ok() &&
                          tracefile::CheckOutputPath(save_path_, tracefile::Overwrite::kYes).ok();
      if (exists) {
        confirm_replace_ = save_path_;  // asked in a modal: replace, or not
      } else {
        const server::Status saved = session_->SaveAs(save_path_, tracefile::Overwrite::kNo);
        std::error_code ec;
        status_line_ =
            saved.ok() ? "saved " + std::filesystem::absolute(save_path_, ec).string() : saved.message();
      }
    }
  }
  ImGui::Separator();
  const bool receiving = session_ && session_->is_receiving();
  if (ImGui::MenuItem("Stop the capture", nullptr, false, receiving)) session_->StopCapture();
  if (ImGui::MenuItem(session_ && session_->is_live() ? "Close (discards what was not saved)" : "Close",
                      nullptr, false, session_ != nullptr)) {
    Show(nullptr);
  }
  ImGui::EndMenu();
}

void App::LiveControls() {
  // A live capture's rate, and stop and discard a click away (the File menu has both).
  JsonReport report;
  ImGui::SameLine();
  ImGui::TextDisabled("%s/s, %.0f zones/s",
                      server::FormatBytes(uint64_t(debug_window_.bytes_per_s())).c_str(),
                      debug_window_.zones_per_s());
  report.Add("bytes_per_s", debug_window_.bytes_per_s()).Add("state", session_->StateText());
  // At a fixed place on the right, whatever the state's text, so a hand (or a script) finds them.
  ImGui::SameLine(std::max(ImGui::GetCursorPosX(), ImGui::GetWindowContentRegionMax().x - Scaled(130)));
  bool first = true;
  auto button = [&](const char* label, const char* key) {
    if (!std::exchange(first, false)) ImGui::SameLine();
    const bool clicked = ImGui::SmallButton(label);
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    report.Add(key, std::to_string((a.x + b.x) / 2) + "," + std::to_string((a.y + b.y) / 2));
    return clicked;
  };
  const bool stop = session_->is_receiving() && button("stop", "stop_at");
  const bool discard = button("discard", "discard_at");
  workspace_.reports["live"] = report.str();
  if (stop) session_->StopCapture();
  if (discard) close_requested_ = true;  // not here: the session's model is held for this frame
}

void App::SaveDialog() {
  if (confirm_replace_.empty()) return;
  ImGui::OpenPopup("Replace file?");
  if (!ImGui::BeginPopupModal("Replace file?", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  ImGui::Text("%s exists. Replace it with this trace?", confirm_replace_.c_str());
  if (ImGui::Button("Replace")) {
    const server::Status saved = session_ ? session_->SaveAs(confirm_replace_, tracefile::Overwrite::kYes)
                                          : server::Status::Error("nothing to save");
    std::error_code ec;
    status_line_ =
        saved.ok() ? "saved " + std::filesystem::absolute(confirm_replace_, ec).string() : saved.message();
    confirm_replace_.clear();
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) {
    status_line_ = "not saved: " + confirm_replace_ + " kept as it was";
    confirm_replace_.clear();
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

void App::BuildProcessGroups(const server::TraceModel& shown) {
  workspace_.groups_built = true;
  const server::TraceSet& others = *session_->others();
  if (others.processes.empty()) return;
  std::vector<const server::TraceModel*> models{&shown};
  for (const server::TraceProcess& process : others.processes) models.push_back(&process.model);
  const std::vector<server::ProcessTimeline> timelines = server::ProcessTimeline::Of(models);
  auto describe = [&](size_t i, uint32_t program) {
    std::string title = "program " + std::to_string(program + 1) + ": " + server::ProcessLabel(*models[i]);
    const std::optional<server::HostClockSummary> clock = timelines[i].Summary();
    if (!timelines[i].aligned()) {
      title += "; not placed (no clock exchanges, or its capture read no reference): from its first event";
    } else if (clock) {
      title += "; clock +/- " + server::FormatDuration(double(clock->uncertainty_ns));
    }
    return title;
  };
  workspace_.shown_title = describe(0, session_->program());
  if (const auto clock = timelines[0].Summary(); clock && timelines[0].aligned()) {
    workspace_.shown_clock_bound_ns = clock->uncertainty_ns;
  }
  // Each program's times go on the shown one's axis by the difference of where their
  // first events land on the trace's timeline (its clock's drift over the trace is not
  // followed here; the report and the exports follow it).
  const bool shown_placed = timelines[0].aligned() && shown.first_tick != server::kOpenZone;
  uint32_t program = 0;
  for (size_t k = 0; k < others.processes.size(); ++k, ++program) {
    if (program == session_->program()) ++program;
    const server::TraceModel& model = *models[k + 1];
    ProcessGroup& group = workspace_.groups.emplace_back();
    group.model = &model;
    group.program = program;
    group.title = describe(k + 1, program);
    if (shown_placed && timelines[k + 1].aligned() && model.first_tick != server::kOpenZone) {
      group.shift_ns = timelines[k + 1].Tick(model.first_tick) - timelines[0].Tick(shown.first_tick);
    }
    group.collapsed = others.processes.size() > 7;  // many: each opened when wanted
    group.timeline.Sync(model);
  }
  // By host, then rank, then place in the file.
  std::stable_sort(workspace_.groups.begin(), workspace_.groups.end(),
                   [](const ProcessGroup& a, const ProcessGroup& b) {
                     return std::tie(a.model->program.host, a.model->program.rank, a.program) <
                            std::tie(b.model->program.host, b.model->program.rank, b.program);
                   });
}

void App::ProgramMenu() {
  if (!session_ || session_->path().empty() || session_->programs() < 2) return;
  const uint32_t count = session_->programs(), current = session_->program();
  if (!ImGui::BeginMenu("Program")) return;
  constexpr uint32_t kListed = 64;  // beyond, Previous and Next step through them
  if (ImGui::MenuItem("Previous", nullptr, false, current > 0)) program_chosen_ = current - 1;
  if (ImGui::MenuItem("Next", nullptr, false, current + 1 < count)) program_chosen_ = current + 1;
  ImGui::Separator();
  for (uint32_t i = 0; i < std::min(count, kListed); ++i) {
    const std::string label = "Program " + std::to_string(i + 1) + " of " + std::to_string(count);
    if (ImGui::MenuItem(label.c_str(), nullptr, i == current) && i != current) program_chosen_ = i;
  }
  if (count > kListed) ImGui::TextDisabled("%u more: Next steps through them", count - kListed);
  ImGui::EndMenu();
}

void App::LanesMenu() {
  if (!ImGui::BeginMenu("Lanes")) return;
  std::map<LaneKey, LaneState>& states = workspace_.lane_states;
  uint32_t& hidden = workspace_.hidden_lanes;
  auto shows = [&](uint32_t group) { return (hidden & group) == 0; };
  if (session_) {
    // Only lanes the user changed have a state; the others are shown, expanded.
    session_->WithModel([&](const server::TraceModel& model) {
      // Whole groups first: a checked one is shown.
      const size_t library = size_t(std::count_if(model.threads.begin(), model.threads.end(),
                                                  [](const server::ThreadTimeline& t) { return t.library; }));
      const size_t counts[] = {library,
                               model.gpu_contexts.size(),
                               model.plots.size(),
                               model.memory_pools.size(),
                               model.locks.size(),
                               workspace_.timeline.cpu_count()};  // as kLaneGroupNames has them
      static_assert(sizeof(counts) / sizeof(counts[0]) == std::size(kLaneGroupNames));
      for (size_t g = 0; g < std::size(kLaneGroupNames); ++g) {
        if (counts[g] == 0) continue;
        const LaneGroupName& group = kLaneGroupNames[g];
        bool shown = shows(group.group);
        const std::string label = std::string(group.label) + " (" + std::to_string(counts[g]) + ")";
        if (ImGui::MenuItem(label.c_str(), nullptr, &shown)) hidden ^= group.group;
      }
      ImGui::Separator();
      auto item = [&](LaneKey key) {
        auto it = states.find(key);
        bool shown = it == states.end() || !it->second.hidden;
        if (ImGui::MenuItem(Timeline::Name(model, key).c_str(), nullptr, &shown)) states[key].hidden = !shown;
      };
      if (ImGui::BeginMenu("Each lane")) {
        if (shows(kGpuLanes))
          for (const auto& [id, gpu] : model.gpu_contexts) item({LaneKind::kGpu, id});
        for (const auto& thread : model.threads) {
          if (!thread.library || shows(kLibraryLanes)) item({LaneKind::kThread, thread.id});
        }
        if (shows(kPlotLanes))
          for (const auto& [id, plot] : model.plots) item({LaneKind::kPlot, id});
        if (shows(kMemoryLanes))
          for (const auto& [id, pool] : model.memory_pools) item({LaneKind::kMemory, id});
        if (shows(kLockLanes))
          for (const auto& [id, lock] : model.locks) item({LaneKind::kLock, id});
        ImGui::EndMenu();
      }
      if (ImGui::MenuItem("Sort by name")) workspace_.timeline.SortLanes(model, LaneSort::kName);
      if (ImGui::MenuItem("Sort busiest first")) workspace_.timeline.SortLanes(model, LaneSort::kBusiest);
    });
  }
  if (ImGui::MenuItem("Default order", nullptr, false, !workspace_.timeline.lane_order().empty())) {
    workspace_.timeline.SetLaneOrder({});
  }
  if (ImGui::MenuItem("Show all")) {
    std::erase_if(states, [](const auto& entry) { return entry.first.kind != LaneKind::kCounter; });
    for (auto& [key, state] : states) state = LaneState{};
    hidden &= kLibraryLanes;  // the library's threads stay as they were
  }
  ImGui::Separator();
  if (ImGui::BeginMenu("Colour zones by")) {
    for (const ZoneColoringName& c : kZoneColorings) {
      if (ImGui::MenuItem(c.label, nullptr, workspace_.zone_coloring == c.coloring))
        workspace_.zone_coloring = c.coloring;
    }
    ImGui::EndMenu();
  }
  timeline_window_.CounterMenu(workspace_);
  ImGui::EndMenu();
}

void App::RememberFile(const std::string& path) {
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(path, ec).string();
  std::erase(recent_files_, absolute);
  recent_files_.insert(recent_files_.begin(), absolute);
  if (recent_files_.size() > kMaxRecentFiles) recent_files_.resize(kMaxRecentFiles);
}

void App::LoadSettings() {
  std::ifstream in(SettingsFile());
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, value;
    fields >> key;
    std::getline(fields >> std::ws, value);
    if (key == "window") {
      for (const SideWindow& w : SideWindows()) {
        if (value == w.name) *w.open = true;
      }
    } else if (key == "frame-target-fps") {
      const double fps = std::strtod(value.c_str(), nullptr);
      if (fps > 0) workspace_.frame_target = FrameTarget::Fps(fps);
    } else if (key == "hidden-lanes") {
      workspace_.hidden_lanes = uint32_t(std::strtoul(value.c_str(), nullptr, 10)) & kAllLaneGroups;
    } else if (key == "zone-colors") {
      for (const ZoneColoringName& c : kZoneColorings) {
        if (value == c.name) workspace_.zone_coloring = c.coloring;
      }
    } else if (key == "split") {
      split_ = std::clamp(std::strtof(value.c_str(), nullptr), 0.2f, 0.85f);
    } else if (key == "recent-file" && recent_files_.size() < kMaxRecentFiles) {
      recent_files_.push_back(value);
    }
  }
}

void App::SaveSettings() {
  const std::string file = SettingsFile();
  if (file.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
  std::ofstream out(file);
  for (const SideWindow& w : SideWindows()) {
    if (*w.open) out << "window " << w.name << "\n";
  }
  out << "split " << split_ << "\n";
  out << "frame-target-fps " << workspace_.frame_target.fps() << "\n";
  // What the command line asked for only this run is not kept: unchanged since, the
  // settings' own values are written back.
  const uint32_t hidden =
      workspace_.hidden_lanes == started_.hidden_lanes ? loaded_.hidden_lanes : workspace_.hidden_lanes;
  const ZoneColoring coloring =
      workspace_.zone_coloring == started_.zone_coloring ? loaded_.zone_coloring : workspace_.zone_coloring;
  out << "hidden-lanes " << hidden << "\n";
  for (const ZoneColoringName& c : kZoneColorings) {
    if (c.coloring == coloring) out << "zone-colors " << c.name << "\n";
  }
  for (const std::string& path : recent_files_) out << "recent-file " << path << "\n";
}

}  // namespace gnomon::viewer
