// The viewer's user interface: every window, built each frame with Dear ImGui.
//
// App knows nothing of GLFW or OpenGL: main.cpp owns the window and the renderer and
// calls Frame() between ImGui::NewFrame() and ImGui::Render(), so the headless
// benchmark can build the very same frames without a GPU.
#pragma once

#include <imgui.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gnomon/server/statistics.h"
#include "gnomon/viewer/timeline.h"
#include "session.h"

namespace gnomon::viewer {

class App {
 public:
  struct Options {
    std::string open;            // a trace file, or HOST[:PORT]
    bool show_all_windows = false;
    bool select_longest_zone = false;  // for screenshots: fill the details window
    bool show_counters = false;        // a lane for every GPU counter; select a counted zone
    int64_t range_begin_ns = -1;       // for screenshots: the time range to show
    int64_t range_end_ns = -1;
    uint32_t max_expansion = server::kDefaultMaxExpansion;  // for trace files (LoadOptions)
  };
  explicit App(const Options& options);
  ~App();

  // Builds one frame of the whole interface for a display of width x height.
  void Frame(float width, float height);
  // Opens a trace file or connects, replacing what was shown.
  void Open(const std::string& target);
  // Shows an existing session, replacing what was shown.
  void Show(std::unique_ptr<Session> session);

  // The last frame's timeline, for tests: lanes and items, and where (0, 0) of the
  // timeline's coordinates was on the screen.
  const std::vector<Lane>& lanes() const { return timeline_.lanes(); }
  // A lane's title, as its title bar shows it.
  std::string LaneTitle(const Lane& lane) const;
  const std::vector<DrawItem>& items() const { return items_; }
  ImVec2 timeline_origin() const { return origin_; }
  bool has_session() const { return session_ != nullptr; }
  Session* session() { return session_.get(); }
  TimelineView& view() { return view_; }

 private:
  struct Selection {
    LaneKey lane;
    DrawItem::Kind kind;
    uint32_t index;
  };

  void MainMenu();
  void StartWindow(float width, float height);
  void TimelineWindow(const server::TraceModel& model);
  void DrawRuler(ImDrawList* draw, ImVec2 at, float width);
  void DrawItems(ImDrawList* draw);
  void HandleInput(const server::TraceModel& model, bool hovered);
  void CounterMenu();
  void Tooltip(const server::TraceModel& model, const Hit& hit);
  void StatisticsWindow(const server::TraceModel& model);
  void FindZoneWindow(const server::TraceModel& model);
  void DetailsWindow(const server::TraceModel& model);
  void ClockWindow(const server::TraceModel& model);
  void MessagesWindow(const server::TraceModel& model);
  void DebugWindow(const server::TraceModel& model);
  void JumpTo(int64_t begin_ns, int64_t end_ns);
  int64_t RelNs(const server::TraceModel& model, uint64_t tick) const;
  void LoadRecent();
  void SaveRecent(const std::string& address);

  std::unique_ptr<Session> session_;
  Timeline timeline_;
  TimelineView view_;
  std::map<LaneKey, LaneState> lane_states_;
  std::vector<DrawItem> items_;
  ImVec2 origin_{0, 0};
  bool fitted_ = false;
  bool follow_ = true;
  std::optional<Selection> selected_;
  std::optional<Hit> hovered_;

  bool show_statistics_ = false;
  bool show_find_zone_ = false;
  bool show_clock_ = false;
  bool show_messages_ = false;
  bool show_debug_ = false;
  bool select_longest_ = false;
  bool show_counters_ = false;
  // GPU statistics: counter columns (set id << 32 | index) and means per (location, column).
  static constexpr size_t kMaxCounterColumns = 16;
  std::vector<uint64_t> counter_columns_;
  std::map<std::pair<uint32_t, uint64_t>, double> counter_means_;
  // By set: each defined counter's index and "set: counter", for the menu.
  std::map<uint32_t, std::vector<std::pair<uint16_t, std::string>>> counter_names_;
  size_t counter_name_count_ = 0;
  int64_t range_begin_ns_ = -1;
  int64_t range_end_ns_ = -1;
  uint32_t max_expansion_ = server::kDefaultMaxExpansion;
  bool gpu_statistics_ = false;
  uint32_t find_location_ = 0;
  bool find_gpu_ = false;
  std::vector<server::ZoneStatistics> statistics_;
  uint64_t statistics_zone_count_ = UINT64_MAX;
  std::chrono::steady_clock::time_point statistics_time_;
  ImGuiTextFilter statistics_filter_;
  ImGuiTextFilter messages_filter_;

  char address_[256] = {};  // "127.0.0.1:<default port>" at first
  char path_[1024] = "";
  char save_path_[1024] = "capture.gnomon";
  std::string replace_path_;  // an existing file the next save to it replaces
  std::string status_line_;
  std::vector<std::string> recent_;
  std::string pending_recent_;  // an address to remember once its session receives data

  std::chrono::steady_clock::time_point rate_time_;
  uint64_t rate_bytes_ = 0;
  uint64_t rate_events_ = 0;
  double bytes_per_s_ = 0;
  double zones_per_s_ = 0;
};

}  // namespace gnomon::viewer
