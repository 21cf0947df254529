#include "app.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/counter_values.h"
#include "gnomon/server/text.h"

namespace gnomon::viewer {
namespace {

constexpr uint32_t kBackground = IM_COL32(30, 31, 34, 255);
constexpr uint32_t kLaneTitle = IM_COL32(200, 200, 205, 255);
constexpr uint32_t kRulerText = IM_COL32(170, 170, 175, 255);
constexpr float kRulerHeight = 22;
constexpr size_t kMaxRecent = 8;

std::string RecentFile() {
  const char* config = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  std::filesystem::path dir = config && *config ? std::filesystem::path(config) / "gnomon"
                              : home && *home   ? std::filesystem::path(home) / ".config" / "gnomon"
                                                : std::filesystem::path();
  return dir.empty() ? "" : (dir / "recent-addresses").string();
}

// HOST[:PORT] when it does not name an existing file.
bool ParseAddress(const std::string& text, std::string& host, uint16_t& port) {
  std::error_code ec;
  if (text.empty() || std::filesystem::exists(text, ec)) return false;
  if (text.find('/') != std::string::npos || text.ends_with(".gnomon")) return false;
  const size_t colon = text.rfind(':');
  host = text.substr(0, colon);
  port = server::kDefaultPort;
  if (colon != std::string::npos) {
    const auto parsed = protocol::ParsePort(std::string_view(text).substr(colon + 1), protocol::PortZero::kRefused);
    if (!parsed) return false;
    port = *parsed;
  }
  return !host.empty();
}

}  // namespace

App::App(const Options& options)
    : show_statistics_(options.show_all_windows), show_clock_(options.show_all_windows),
      show_messages_(options.show_all_windows), show_debug_(options.show_all_windows),
      select_longest_(options.select_longest_zone), show_counters_(options.show_counters),
      range_begin_ns_(options.range_begin_ns),
      range_end_ns_(options.range_end_ns), max_expansion_(options.max_expansion) {
  std::snprintf(address_, sizeof(address_), "127.0.0.1:%u", unsigned{protocol::kDefaultPort});
  LoadRecent();
  rate_time_ = std::chrono::steady_clock::now();
  if (!options.open.empty()) Open(options.open);
}

App::~App() = default;

void App::Show(std::unique_ptr<Session> session) {
  timeline_ = Timeline();
  items_.clear();
  selected_.reset();
  hovered_.reset();
  fitted_ = false;
  follow_ = true;
  statistics_.clear();
  statistics_zone_count_ = UINT64_MAX;
  session_ = std::move(session);
  status_line_.clear();
}

void App::Open(const std::string& target) {
  std::string host;
  uint16_t port = 0;
  if (ParseAddress(target, host, port)) {
    Show(Session::Connect(host, port));
    pending_recent_ = host + ":" + std::to_string(port);  // remembered once data flows
    std::snprintf(address_, sizeof(address_), "%s", pending_recent_.c_str());
  } else {
    Show(Session::OpenFile(target, max_expansion_));
  }
}

std::string App::LaneTitle(const Lane& lane) const {
  std::string title;
  if (session_) session_->WithModel([&](const server::TraceModel& model) { title = timeline_.Title(model, lane); });
  return title;
}

void App::LoadRecent() {
  std::ifstream in(RecentFile());
  std::string line;
  while (std::getline(in, line) && recent_.size() < kMaxRecent) {
    if (!line.empty()) recent_.push_back(line);
  }
}

void App::SaveRecent(const std::string& address) {
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

int64_t App::RelNs(const server::TraceModel& model, uint64_t tick) const {
  return model.clock.TickToNs(tick) - model.clock.TickToNs(model.first_tick);
}

void App::JumpTo(int64_t begin_ns, int64_t end_ns) {
  const int64_t margin = std::max<int64_t>((end_ns - begin_ns) / 2, 100);
  view_.Fit(begin_ns - margin, end_ns + margin, view_.width_px());
  follow_ = false;
}

void App::Frame(float width, float height) {
  const auto now = std::chrono::steady_clock::now();
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(ImVec2(width, height));
  ImGui::Begin("Gnomon", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_MenuBar | ImGuiWindowFlags_NoBringToFrontOnFocus |
                   ImGuiWindowFlags_NoSavedSettings);
  MainMenu();
  if (!session_ || (session_->failed() && !session_->is_live())) {
    StartWindow(width, height);
    ImGui::End();
    return;
  }
  if (session_->failed() && session_->is_live()) {
    StartWindow(width, height);
    ImGui::End();
    return;
  }
  if (!pending_recent_.empty() && session_->bytes_received() > 0) {
    SaveRecent(pending_recent_);
    pending_recent_.clear();
  }
  session_->WithModel([&](const server::TraceModel& model) {
    timeline_.Sync(model);
    // Rates for the debug window, once a second.
    const double elapsed = std::chrono::duration<double>(now - rate_time_).count();
    if (elapsed >= 1.0) {
      bytes_per_s_ = double(session_->bytes_received() - rate_bytes_) / elapsed;
      zones_per_s_ = double(model.zone_count - rate_events_) / elapsed;
      rate_bytes_ = session_->bytes_received();
      rate_events_ = model.zone_count;
      rate_time_ = now;
    }
    ImGui::Text("%s  |  %s  |  %llu zones, %zu threads, %zu GPU contexts", session_->title().c_str(),
                session_->StateText().c_str(), static_cast<unsigned long long>(model.zone_count), model.threads.size(),
                model.gpu_contexts.size());
    if (session_->is_loading()) {
      ImGui::SameLine();
      ImGui::ProgressBar(session_->load_progress(), ImVec2(200, 0));
    }
    if (!session_->warning().empty()) ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "%s", session_->warning().c_str());
    if (!status_line_.empty()) ImGui::TextUnformatted(status_line_.c_str());
    TimelineWindow(model);
    ImGui::End();
    if (show_statistics_) StatisticsWindow(model);
    if (show_find_zone_) FindZoneWindow(model);
    if (selected_) DetailsWindow(model);
    if (show_clock_) ClockWindow(model);
    if (show_messages_) MessagesWindow(model);
    if (show_debug_) DebugWindow(model);
  });
}

void App::MainMenu() {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Close", nullptr, false, session_ != nullptr)) session_.reset();
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
          const server::Status saved = session_->SaveAs(save_path_, exists ? server::Overwrite::kYes : server::Overwrite::kNo);
          replace_path_.clear();
          status_line_ = saved.ok() ? std::string("saved ") + save_path_ : saved.message();
        }
      }
    }
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    ImGui::MenuItem("Statistics", nullptr, &show_statistics_);
    ImGui::MenuItem("Find zone", nullptr, &show_find_zone_);
    ImGui::MenuItem("Messages", nullptr, &show_messages_);
    ImGui::MenuItem("GPU clocks", nullptr, &show_clock_);
    ImGui::MenuItem("Debug", nullptr, &show_debug_);
    ImGui::Separator();
    if (ImGui::MenuItem("Fit whole trace", "H")) fitted_ = false;
    ImGui::MenuItem("Follow newest data", "F", &follow_);
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Lanes")) {
    if (session_) {
      // Only lanes the user changed have a state; the others are shown, expanded.
      session_->WithModel([&](const server::TraceModel& model) {
        auto item = [&](LaneKey key) {
          auto it = lane_states_.find(key);
          bool shown = it == lane_states_.end() || !it->second.hidden;
          if (ImGui::MenuItem(Timeline::Name(model, key).c_str(), nullptr, &shown)) lane_states_[key].hidden = !shown;
        };
        for (const auto& [id, gpu] : model.gpu_contexts) item({LaneKind::kGpu, id});
        for (const auto& thread : model.threads) item({LaneKind::kThread, thread.id});
        for (const auto& [id, plot] : model.plots) item({LaneKind::kPlot, id});
      });
    }
    if (ImGui::MenuItem("Show all")) {
      std::erase_if(lane_states_, [](const auto& entry) { return entry.first.kind != LaneKind::kCounter; });
      for (auto& [key, state] : lane_states_) state = LaneState{};
    }
    CounterMenu();
    ImGui::EndMenu();
  }
  ImGui::EndMenuBar();
}

void App::StartWindow(float width, float height) {
  ImGui::SetNextWindowPos(ImVec2(width * 0.5f, height * 0.4f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(520, 0));
  ImGui::Begin("Open a trace or connect to a program", nullptr,
               ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoMove);
  if (session_ && session_->failed()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 0.45f, 0.4f, 1));
    ImGui::TextWrapped("%s", session_->error().c_str());
    ImGui::PopStyleColor();
    ImGui::Separator();
  }
  ImGui::TextUnformatted("Program address (HOST:PORT)");
  ImGui::InputText("##address", address_, sizeof(address_));
  ImGui::SameLine();
  if (ImGui::Button("Connect")) Open(address_);
  if (!recent_.empty()) {
    ImGui::TextUnformatted("Recent:");
    for (const std::string& r : recent_) {
      ImGui::SameLine();
      if (ImGui::SmallButton(r.c_str())) {
        std::snprintf(address_, sizeof(address_), "%s", r.c_str());
        Open(r);
        break;
      }
    }
  }
  ImGui::Separator();
  ImGui::TextUnformatted("Trace file (.gnomon)");
  ImGui::InputText("##path", path_, sizeof(path_));
  ImGui::SameLine();
  if (ImGui::Button("Open")) Open(path_);
  ImGui::TextDisabled("or drop a .gnomon file onto this window");
  ImGui::End();
}

void App::DrawRuler(ImDrawList* draw, ImVec2 at, float width) {
  const RulerStep step = ChooseRulerStep(view_.ns_per_px(), 90);
  draw->AddRectFilled(at, ImVec2(at.x + width, at.y + kRulerHeight), IM_COL32(40, 41, 45, 255));
  const int64_t first = (view_.begin_ns() / step.step_ns) * step.step_ns;
  for (int64_t t = first; t <= view_.end_ns(); t += step.step_ns) {
    const float x = at.x + float(view_.NsToX(t));
    if (x < at.x) continue;
    draw->AddLine(ImVec2(x, at.y + kRulerHeight - 6), ImVec2(x, at.y + kRulerHeight), kRulerText);
    // The label's unit follows the time's size; decimals follow the step.
    const double magnitude = std::max(std::fabs(double(t)), double(step.step_ns));
    const double unit_ns = magnitude >= 1e9 ? 1e9 : magnitude >= 1e6 ? 1e6 : magnitude >= 1e3 ? 1e3 : 1.0;
    const char* unit = unit_ns == 1e9 ? "s" : unit_ns == 1e6 ? "ms" : unit_ns == 1e3 ? "us" : "ns";
    const int decimals = std::max(0, int(std::ceil(std::log10(unit_ns / double(step.step_ns)) - 1e-9)));
    char label[48];
    std::snprintf(label, sizeof(label), "%.*f %s", decimals, double(t) / unit_ns, unit);
    draw->AddText(ImVec2(x + 3, at.y + 3), kRulerText, label);
  }
}

void App::DrawItems(ImDrawList* draw) {
  const ImVec2 o = origin_;
  for (const DrawItem& item : items_) {
    const ImVec2 a(o.x + item.x0, o.y + item.y0);
    const ImVec2 b(o.x + item.x1, o.y + item.y1);
    switch (item.kind) {
      case DrawItem::Kind::kPlot:
        draw->AddLine(a, b, item.color, 1.5f);
        break;
      case DrawItem::Kind::kMessage:
        draw->AddTriangleFilled(ImVec2(a.x, a.y), ImVec2(b.x, a.y), ImVec2((a.x + b.x) / 2, b.y), item.color);
        break;
      default: {
        draw->AddRectFilled(a, b, item.color);
        if (item.kind == DrawItem::Kind::kGpuZone) draw->AddRect(a, b, IM_COL32(255, 255, 255, 90));
        const bool is_selected = selected_ && selected_->index == item.index && item.lane < timeline_.lanes().size() &&
                                 selected_->lane == timeline_.lanes()[item.lane].key;
        if (is_selected) draw->AddRect(a, b, IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
        if (item.label != nullptr && b.x - a.x > 24) {
          const float clip_left = std::max(a.x, o.x);
          draw->PushClipRect(ImVec2(clip_left, a.y), b, true);
          draw->AddText(ImVec2(clip_left + 3, a.y + 2), IM_COL32(15, 15, 18, 255), item.label->c_str());
          draw->PopClipRect();
        }
        break;
      }
    }
  }
}

void App::TimelineWindow(const server::TraceModel& model) {
  ImDrawList* parent_draw = ImGui::GetWindowDrawList();
  const ImVec2 ruler_at = ImGui::GetCursorScreenPos();
  const float timeline_width = ImGui::GetContentRegionAvail().x;
  view_.SetWidth(timeline_width);
  const int64_t end_ns = timeline_.TraceEndNs(model);
  if (!fitted_ && model.first_tick != server::kOpenZone) {
    if (range_end_ns_ > range_begin_ns_) {
      view_.Fit(range_begin_ns_, range_end_ns_, timeline_width);
    } else {
      view_.Fit(0, std::max<int64_t>(end_ns, 1000), timeline_width);
    }
    fitted_ = !session_->is_loading() && !(session_->is_live() && follow_);
  } else if (session_->is_live() && follow_ && end_ns > view_.end_ns()) {
    view_.Follow(end_ns);
  }
  DrawRuler(parent_draw, ruler_at, timeline_width);
  ImGui::Dummy(ImVec2(timeline_width, kRulerHeight));

  size_t defined_counters = 0;  // counters are defined one by one, after their set
  for (const auto& [id, set] : model.counter_sets) defined_counters += set.counters.size();
  if (counter_names_.size() != model.counter_sets.size() || defined_counters != counter_name_count_) {
    counter_names_.clear();
    counter_name_count_ = defined_counters;
    for (const auto& [id, set] : model.counter_sets) {
      for (const server::CounterInfo& counter : set.counters) {
        counter_names_[id].emplace_back(counter.index, set.name + ": " + counter.name);
      }
    }
  }
  if (show_counters_) {
    for (const auto& [id, set] : model.counter_sets) {
      for (const server::CounterInfo& counter : set.counters) {
        lane_states_.try_emplace({LaneKind::kCounter, CounterLaneId(id, counter.index)});
      }
    }
  }

  ImGui::BeginChild("timeline", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollWithMouse | ImGuiWindowFlags_NoMove);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  origin_ = ImGui::GetCursorScreenPos();
  const ImVec2 area_min = ImGui::GetWindowPos();
  const ImVec2 area_max(area_min.x + ImGui::GetWindowWidth(), area_min.y + ImGui::GetWindowHeight());
  draw->AddRectFilled(area_min, area_max, kBackground);
  timeline_.Layout(model, lane_states_, 0);
  const float visible_top = area_min.y - origin_.y;  // the lanes the scrolled child shows
  const float visible_bottom = area_max.y - origin_.y;
  timeline_.BuildItems(model, view_, items_, visible_top, visible_bottom);

  if (select_longest_ && show_counters_ && !selected_) {
    // For screenshots: select the first GPU zone with counters that starts in view.
    for (const auto& [id, context] : model.gpu_contexts) {
      for (const server::CounterSample& sample : context.counter_samples) {
        if (sample.target != uint8_t(protocol::CounterTarget::kGpuZone)) continue;
        const Span span = timeline_.GpuSpan(id, sample.target_index);
        if (span.begin_ns >= view_.begin_ns() && span.begin_ns <= view_.end_ns()) {
          selected_ = Selection{{LaneKind::kGpu, id}, DrawItem::Kind::kGpuZone, sample.target_index};
          break;
        }
      }
      if (selected_) break;
    }
  }
  if (select_longest_ && !selected_) {
    // For screenshots: select the longest CPU zone of the first thread that has one.
    for (const auto& thread : model.threads) {
      int64_t longest = -1;
      for (size_t i = 0; i < thread.zones.size(); ++i) {
        const auto& z = thread.zones[i];
        if (!z.is_open() && model.DurationNs(z.begin_tick, z.end_tick) > longest) {
          longest = model.DurationNs(z.begin_tick, z.end_tick);
          selected_ = Selection{{LaneKind::kThread, thread.id}, DrawItem::Kind::kZone, uint32_t(i)};
        }
      }
      if (selected_) break;
    }
  }

  // Lane titles: click to collapse, right-click to hide.
  for (const Lane& lane : timeline_.lanes()) {
    if (!timeline_.IsLaneVisible(lane, visible_top, visible_bottom)) continue;
    const float title_y = lane.y - timeline_.metrics().title_height;
    ImGui::SetCursorScreenPos(ImVec2(origin_.x, origin_.y + title_y));
    auto state = lane_states_.find(lane.key);
    const bool collapsed = state != lane_states_.end() && state->second.collapsed;
    ImGui::PushID(int(lane.key.kind) * 1000003 + int(lane.key.id));
    const std::string label = std::string(collapsed ? "> " : "v ") + timeline_.Title(model, lane);
    ImGui::PushStyleColor(ImGuiCol_Text, kLaneTitle);
    if (ImGui::Selectable(label.c_str(), false, 0, ImVec2(ImGui::CalcTextSize(label.c_str()).x, 0))) {
      lane_states_[lane.key].collapsed = !collapsed;
    }
    if (ImGui::IsItemClicked(ImGuiMouseButton_Right)) lane_states_[lane.key].hidden = true;
    ImGui::PopStyleColor();
    ImGui::PopID();
  }
  DrawItems(draw);

  // The area the lanes take, so that the child scrolls.
  ImGui::SetCursorScreenPos(origin_);
  ImGui::InvisibleButton("lanes", ImVec2(std::max(1.0f, timeline_width - 16), std::max(1.0f, timeline_.total_height())),
                         ImGuiButtonFlags_MouseButtonLeft);
  const bool hovered = ImGui::IsItemHovered() || ImGui::IsWindowHovered();
  HandleInput(model, hovered);
  ImGui::EndChild();
}

void App::HandleInput(const server::TraceModel& model, bool hovered) {
  ImGuiIO& io = ImGui::GetIO();
  hovered_.reset();
  if (hovered) {
    const float x = io.MousePos.x - origin_.x;
    const float y = io.MousePos.y - origin_.y;
    if (io.MouseWheel != 0) {
      if (io.KeyShift) {
        ImGui::SetScrollY(ImGui::GetScrollY() - io.MouseWheel * 40);
      } else {
        view_.ZoomAt(x, std::pow(1.25, io.MouseWheel));
        follow_ = false;
      }
    }
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f)) {
      view_.Pan(io.MouseDelta.x);
      if (io.MouseDelta.y != 0) ImGui::SetScrollY(ImGui::GetScrollY() - io.MouseDelta.y);
      follow_ = false;
    }
    hovered_ = timeline_.HitTest(model, view_, x, y);
    if (hovered_) Tooltip(model, *hovered_);
    if (ImGui::IsMouseReleased(ImGuiMouseButton_Left) && ImGui::GetMouseDragDelta(ImGuiMouseButton_Left).x == 0) {
      if (hovered_ && hovered_->kind == DrawItem::Kind::kFrame) {
        const auto& marks = model.frames.begin()->second.marks;
        JumpTo(RelNs(model, marks[hovered_->index - 1]), RelNs(model, marks[hovered_->index]));
      } else if (hovered_ && hovered_->kind == DrawItem::Kind::kCounter) {
        // A counter bar stands for the GPU zone it measured.
        const auto set = model.counter_sets.find(CounterLaneSet(hovered_->lane.id));
        if (set != model.counter_sets.end()) {
          selected_ = Selection{{LaneKind::kGpu, set->second.context_id}, DrawItem::Kind::kGpuZone, hovered_->index};
        }
      } else if (hovered_) {
        selected_ = Selection{hovered_->lane, hovered_->kind, hovered_->index};
      }
    }
  }
  if (!io.WantTextInput) {
    const float step = float(view_.width_px()) * 0.1f;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) view_.Pan(step), follow_ = false;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) view_.Pan(-step), follow_ = false;
    if (ImGui::IsKeyPressed('=') || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_UpArrow))) {
      view_.ZoomAt(view_.width_px() / 2, 1.5), follow_ = false;
    }
    if (ImGui::IsKeyPressed('-') || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_DownArrow))) {
      view_.ZoomAt(view_.width_px() / 2, 1 / 1.5), follow_ = false;
    }
    if (ImGui::IsKeyPressed('H')) fitted_ = false;
    if (ImGui::IsKeyPressed('F')) follow_ = !follow_;
  }
}

void App::CounterMenu() {
  if (counter_names_.empty() || !ImGui::BeginMenu("Counters")) return;
  for (const auto& [set, names] : counter_names_) {
    for (const auto& [index, name] : names) {
      const LaneKey key{LaneKind::kCounter, CounterLaneId(set, index)};
      auto it = lane_states_.find(key);
      bool shown = it != lane_states_.end() && !it->second.hidden;
      if (ImGui::MenuItem(name.c_str(), nullptr, &shown)) {
        if (shown) {
          lane_states_[key] = LaneState{};
        } else {
          lane_states_.erase(key);
        }
      }
    }
  }
  ImGui::EndMenu();
}

void App::Tooltip(const server::TraceModel& model, const Hit& hit) {
  ImGui::BeginTooltip();
  if (hit.kind == DrawItem::Kind::kCounter) {
    const auto set = model.counter_sets.find(CounterLaneSet(hit.lane.id));
    const uint32_t counter = CounterLaneIndex(hit.lane.id);
    if (set != model.counter_sets.end() && model.gpu_contexts.contains(set->second.context_id)) {
      const auto& context = model.gpu_contexts.at(set->second.context_id);
      if (const server::CounterSample* sample = server::FindZoneCounters(context, hit.index)) {
        const std::string unit = server::CounterUnit(set->second, counter);
        ImGui::Text("%s: %.6g%s%s", set->second.CounterName(counter).c_str(),
                    server::NormalizedCounterValue(model, context, *sample, counter), unit.empty() ? "" : " ",
                    unit.c_str());
        ImGui::TextDisabled("over %s (click for its details)",
                            model.Location(context.zones[hit.index].source_location).name.c_str());
      }
    }
  }
  if (hit.kind == DrawItem::Kind::kZone) {
    const auto& thread = model.threads[model.thread_index.at(hit.lane.id)];
    const server::Zone& z = thread.zones[hit.index];
    const auto& location = model.Location(z.source_location);
    ImGui::TextUnformatted(model.ZoneName(thread, hit.index).c_str());
    ImGui::Text("%s", z.is_open() ? "unfinished" : server::FormatDuration(double(model.DurationNs(z.begin_tick, z.end_tick))).c_str());
    ImGui::TextDisabled("%s:%u  %s", location.file.c_str(), location.line, location.function.c_str());
  } else if (hit.kind == DrawItem::Kind::kGpuZone) {
    const auto& context = model.gpu_contexts.at(hit.lane.id);
    const server::GpuZone& z = context.zones[hit.index];
    const auto mapped = model.MapGpuZone(context, z);
    ImGui::TextUnformatted(model.Location(z.source_location).name.c_str());
    ImGui::Text("GPU %s, placed +/- %s", server::FormatDuration(double(mapped.end_ns - mapped.begin_ns)).c_str(),
                server::FormatDuration(double(mapped.uncertainty_ns)).c_str());
    ImGui::Text("CPU record -> GPU start: %s",
                server::FormatDuration(double(mapped.begin_ns - model.clock.TickToNs(z.cpu_begin_tick))).c_str());
    // The link to the CPU thread that recorded it.
    for (const Lane& lane : timeline_.lanes()) {
      if (lane.key.kind != LaneKind::kThread || lane.key.id != z.thread_id) continue;
      const Span gpu = timeline_.GpuSpan(hit.lane.id, hit.index);
      const float cpu_x = origin_.x + float(view_.NsToX(RelNs(model, z.cpu_begin_tick)));
      const float gpu_x = origin_.x + float(view_.NsToX(gpu.begin_ns));
      float gpu_y = origin_.y;
      for (const Lane& g : timeline_.lanes()) {
        if (g.key == hit.lane) gpu_y += g.y + timeline_.metrics().row_height * (float(z.depth) + 0.5f);
      }
      ImGui::GetForegroundDrawList()->AddLine(ImVec2(cpu_x, origin_.y + lane.y), ImVec2(gpu_x, gpu_y),
                                              IM_COL32(255, 220, 80, 255), 2.0f);
    }
  } else if (hit.kind == DrawItem::Kind::kFrame) {
    const auto& marks = model.frames.begin()->second.marks;
    ImGui::Text("Frame %u: %s (click to zoom)", hit.index,
                server::FormatDuration(double(model.DurationNs(marks[hit.index - 1], marks[hit.index]))).c_str());
    // On a counter lane: the frame's value of that counter.
    const auto set = model.counter_sets.find(CounterLaneSet(hit.lane.id));
    if (hit.lane.kind == LaneKind::kCounter && set != model.counter_sets.end() &&
        model.gpu_contexts.contains(set->second.context_id)) {
      const auto& context = model.gpu_contexts.at(set->second.context_id);
      const uint32_t counter = CounterLaneIndex(hit.lane.id);
      for (const server::CounterSample& sample : context.counter_samples) {
        if (sample.set_id != set->first || sample.target != uint8_t(protocol::CounterTarget::kFrame) ||
            sample.target_index + 1 != hit.index) {
          continue;
        }
        const std::string unit = server::CounterUnit(set->second, counter);
        ImGui::Text("%s: %.6g%s%s", set->second.CounterName(counter).c_str(),
                    server::NormalizedCounterValue(model, context, sample, counter), unit.empty() ? "" : " ",
                    unit.c_str());
        break;
      }
    }
  }
  ImGui::EndTooltip();
}

}  // namespace gnomon::viewer
