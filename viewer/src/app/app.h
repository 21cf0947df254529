// The viewer's user interface: the main window (menu, status, timeline) and the side
// windows, built each frame with Dear ImGui.
//
// App knows nothing of GLFW or OpenGL: viewer_main.cpp owns the window and the renderer
// and calls Frame() between ImGui::NewFrame() and ImGui::Render(), so the headless
// benchmark can build the very same frames without a GPU. Each window is a class of
// its own with its own state (one file each); what they share is the Workspace.
#pragma once

#include <imgui.h>

#include <memory>
#include <string>
#include <vector>

#include "clock_window.h"
#include "debug_window.h"
#include "details_window.h"
#include "find_zone_window.h"
#include "messages_window.h"
#include "session.h"
#include "start_window.h"
#include "statistics_window.h"
#include "timeline_window.h"
#include "workspace.h"

namespace gnomon::viewer {

class App {
 public:
  struct Options {
    std::string open;  // a trace file, or HOST[:PORT]
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
  const std::vector<Lane>& lanes() const { return workspace_.timeline.lanes(); }
  // A lane's title, as its title bar shows it.
  std::string LaneTitle(const Lane& lane) const;
  const std::vector<DrawItem>& items() const { return timeline_window_.items(); }
  ImVec2 timeline_origin() const { return timeline_window_.origin(); }
  bool has_session() const { return session_ != nullptr; }
  Session* session() { return session_.get(); }
  TimelineView& view() { return workspace_.view; }

 private:
  void MainMenu();
  void FileMenu();
  void LanesMenu();

  uint32_t max_expansion_;
  std::unique_ptr<Session> session_;
  Workspace workspace_;
  TimelineWindow timeline_window_;
  StartWindow start_window_;
  StatisticsWindow statistics_window_;
  FindZoneWindow find_zone_window_;
  DetailsWindow details_window_;
  ClockWindow clock_window_;
  MessagesWindow messages_window_;
  DebugWindow debug_window_;

  char save_path_[1024] = "capture.gnomon";
  std::string replace_path_;  // an existing file the next save to it replaces
  std::string status_line_;
  std::string pending_recent_;  // an address to remember once its session receives data
};

}  // namespace gnomon::viewer
