// The viewer's user interface: the main window (menu, status, timeline) and the side
// windows, built each frame with Dear ImGui.
//
// App knows nothing of GLFW or OpenGL: viewer_main.cpp owns the window and the renderer
// and calls Frame() between ImGui::NewFrame() and ImGui::Render(), so the headless
// benchmark can build the very same frames without a GPU. Each window is a class of
// its own with its own state (one file each); what they share is the Workspace.
//
// Side windows never cover the timeline: they are tiled in a panel below it, whose
// height a splitter sets. Which windows are open, the splitter and the recent files are
// kept between runs (in $XDG_CONFIG_HOME/gnomon, unless Options::keep_settings is off).
#pragma once

#include <imgui.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "annotations_window.h"
#include "callstack_window.h"
#include "clock_window.h"
#include "compare_window.h"
#include "cpu_window.h"
#include "debug_window.h"
#include "details_window.h"
#include "file_browser.h"
#include "find_zone_window.h"
#include "flame_graph_window.h"
#include "frame_times_window.h"
#include "memory_window.h"
#include "messages_window.h"
#include "samples_window.h"
#include "session.h"
#include "source_window.h"
#include "start_window.h"
#include "statistics_window.h"
#include "symbol_window.h"
#include "timeline_window.h"
#include "trace_info_window.h"
#include "workspace.h"

namespace gnomon::viewer {

class App {
 public:
  struct Options {
    std::string open;     // a trace file, or HOST[:PORT]
    std::string compare;  // a second trace file to compare with
    bool show_all_windows = false;
    // Windows to open: statistics, find-zone=NAME, flame-graph, frame-histogram,
    // gpu-clocks, messages, memory, samples, callstack, compare, debug. An unknown one is an error (see
    // ShowWindows).
    std::vector<std::string> show;
    std::optional<std::pair<int64_t, int64_t>> select_ns;  // a selected range, trace-relative
    bool select_longest_zone = false;                      // for screenshots: fill the details window
    bool show_counters = false;   // a lane for every GPU counter; select a counted zone
    int64_t range_begin_ns = -1;  // for screenshots: the time range to show
    int64_t range_end_ns = -1;
    uint32_t max_expansion = tracefile::kDefaultMaxExpansion;  // for trace files (LoadOptions)
    uint64_t memory_limit = UINT64_MAX;                        // for trace files' zones (Session::OpenFile)
    bool wait = false;                          // an address where nothing listens yet: keep trying
    bool library_threads = false;               // lanes for the library's own threads too
    uint32_t hide_lanes = 0;                    // LaneGroup bits hidden besides the settings'
    std::optional<ZoneColoring> zone_coloring;  // else the settings'
    std::optional<LaneSort> sort_lanes;         // once loaded
    double frame_target_fps = 0;                // frames are graded against it (0: the settings', else 60)
    std::string frame_series;                   // the series Frame times shows ("": the main one)
    std::string annotations;                    // where annotations are kept ("": beside the trace file)
    std::vector<std::pair<std::string, std::string>> source_map;  // where sources are now (OLD, NEW)
    std::string annotate;  // once loaded, name the selected range so (scripted runs)
    std::string zoom_to;   // once loaded, zoom to the zone_to_number-th zone of this name
    size_t zoom_to_number = 1;
    bool keep_settings = true;      // read and write the settings file
    bool keep_item_labels = false;  // for tests: ItemLabels()
  };
  explicit App(const Options& options);
  ~App();

  // "" when every name of `show` is a window, else what is wrong.
  static std::string CheckWindowNames(const std::vector<std::string>& show);

  // Builds one frame of the whole interface for a display of width x height.
  void Frame(float width, float height);
  // Opens a trace file or connects, replacing what was shown.
  void Open(const std::string& target);
  // Shows a trace file whose loading already started (Session::OpenFile), replacing
  // what was shown, and remembers it among the recent files.
  void OpenLoading(const std::string& path, std::unique_ptr<Session> loading);
  // Shows an existing session, replacing what was shown.
  void Show(std::unique_ptr<Session> session);
  // Opens the side windows named as --show names them (with `only`, closes the others).
  void OpenWindows(const std::vector<std::string>& names, bool only = false);
  // Compares the trace shown with `other` (the compare window).
  void CompareWith(std::unique_ptr<Session> other);
  // Something still changes without input: a file or a comparison loads, a live capture
  // receives, a window computes. The main loop then keeps drawing; otherwise it waits.
  bool is_busy();
  // The interface scale asked for since the last call (View > Interface scale, Ctrl + =,
  // Ctrl + -, Ctrl + 0), which the main loop applies between frames; none when unchanged.
  std::optional<float> TakeScaleRequest() { return std::exchange(scale_request_, std::nullopt); }
  void SetScale(float scale, float monitor_scale) {
    scale_ = scale;
    monitor_scale_ = monitor_scale;
  }
  float scale() const { return scale_; }

  // The last frame's timeline, for tests: lanes and items, and where (0, 0) of the
  // timeline's coordinates was on the screen.
  const std::vector<Lane>& lanes() const { return workspace_.timeline.lanes(); }
  // A lane's title, as its title bar shows it.
  std::string LaneTitle(const Lane& lane) const;
  const std::vector<DrawItem>& items() const { return timeline_window_.items(); }
  // Their labels ("" for none), as the frame drew them (Options::keep_item_labels).
  const std::vector<std::string>& ItemLabels() const { return timeline_window_.labels(); }
  ImVec2 timeline_origin() const { return timeline_window_.origin(); }
  // Where the timeline and each open side window were on the screen in the last frame.
  struct ScreenRect {
    std::string title;
    float x0, y0, x1, y1;
  };
  ScreenRect timeline_rect() const;
  std::vector<ScreenRect> side_window_rects() const;
  // What each side window drew in the last frame, as JSON by window name.
  const std::map<std::string, std::string>& window_reports() const { return workspace_.reports; }
  bool has_session() const { return session_ != nullptr; }
  Session* session() { return session_.get(); }
  TimelineView& view() { return workspace_.view; }
  // The other programs' groups of lanes, as the last frame drew them.
  const std::vector<ProcessGroup>& groups() const { return workspace_.groups; }
  // The shown program's clock bound among the others (its zones' tooltips add it).
  std::optional<uint64_t> shown_clock_bound_ns() const { return workspace_.shown_clock_bound_ns; }
  std::string GroupLaneTitle(const ProcessGroup& group, const Lane& lane) const {
    return group.timeline.Title(*group.model, lane);
  }

 private:
  struct SideWindow {
    const char* name;  // for --show and the settings
    bool* open;
  };
  std::vector<SideWindow> SideWindows();
  void MainMenu();
  void FileMenu();
  void FrameTargetMenu();  // View > Frame target
  void LanesMenu();
  // Which program of a file of several is shown (a capture of several programs, a
  // merged trace); the choice is made in the menu and acted on after it.
  void ProgramMenu();
  // The file's other programs as groups of lanes under the shown one's, placed on its
  // time axis by their clocks (ProcessTimeline), once the file has loaded.
  void BuildProcessGroups(const server::TraceModel& shown);
  void SaveDialog();
  // Places the open side windows in the panel below the timeline; true when there are
  // more than fit side by side, stacked in decks below a strip of their names.
  bool TileSideWindows(float top, float width, float height);
  // The strip of the open windows' names, a tab each: the tab of the window in front is
  // selected, and a click on another brings its window to the front.
  void WindowStrip(float top);
  float WindowStripHeight() const;
  std::string strip_front_;      // the window in front last frame
  std::optional<bool> stacked_;  // whether the windows stacked last frame (none: no frame yet)
  // The lanes hidden and the colouring as the settings had them, and as this run
  // started (the command line's changes made): SaveSettings keeps only the user's.
  struct LaneLook {
    uint32_t hidden_lanes;
    ZoneColoring zone_coloring;
  };
  LaneLook loaded_{}, started_{};
  void Splitter(float y, float width, float height);
  void LoadSettings();
  void SaveSettings();
  void RememberFile(const std::string& path);

  Options options_;
  std::unique_ptr<Session> session_;
  Workspace workspace_;
  TimelineWindow timeline_window_;
  StartWindow start_window_;
  StatisticsWindow statistics_window_;
  FindZoneWindow find_zone_window_;
  FlameGraphWindow flame_graph_window_;
  FrameTimesWindow frame_times_window_;
  CompareWindow compare_window_;
  DetailsWindow details_window_;
  ClockWindow clock_window_;
  MessagesWindow messages_window_;
  MemoryWindow memory_window_;
  SamplesWindow samples_window_;
  SourceWindow source_window_;
  SymbolWindow symbol_window_;
  CpuWindow cpu_window_;
  CallstackWindow callstack_window_;
  DebugWindow debug_window_;
  TraceInfoWindow trace_info_window_;
  AnnotationsWindow annotations_window_;
  bool annotated_ = false;  // Options::annotate was done
  float scale_ = 1, monitor_scale_ = 1;
  bool close_requested_ = false;  // discard: the session closes at the next frame's start
  std::optional<float> scale_request_;
  void AskScale(float scale);
  // A live capture's rate, and its stop and discard buttons, on the status line.
  void LiveControls();
  FileBrowser file_browser_;

  float split_ = 0.55f;                   // the timeline's share of the height when side windows are open
  bool tile_requested_ = false;           // put every side window back in its tile next frame
  std::vector<std::string> open_titles_;  // the side windows open in the last frame
  // The smallest tile (px at scale 1): below it, windows stack rather than shrink.
  static constexpr float kMinTileWidth = 360, kMinTileHeight = 220;
  static constexpr float kSplitterHeight = 6;  // the bar between the timeline and the panel
  std::vector<std::string> recent_files_;
  char save_path_[1024] = "capture.gnomon";
  std::string confirm_replace_;  // a path the user is asked about replacing
  std::string status_line_;
  std::optional<uint32_t> program_chosen_;           // in the menu this frame: shown from the next
  std::string pending_recent_;                       // an address to remember once its session receives data
  std::chrono::steady_clock::time_point last_sync_;  // of the timeline with the model
};

}  // namespace gnomon::viewer
