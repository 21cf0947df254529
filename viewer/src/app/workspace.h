// What the windows of the viewer share while one trace is shown: the session, the
// timeline and its view, the lanes' states, the selection, and the requests one window
// makes of another (show this zone, find that location).
//
// Each window is a small class of its own (its state, and Draw(model, workspace)); App
// owns them and the workspace, and builds the frame. A window never reaches into
// another: it changes the workspace, and the window concerned acts on it.
#pragma once

#include <imgui.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gnomon/server/samples.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/symbolizer.h"
#include "gnomon/server/trace_model.h"
#include "gnomon/viewer/annotations.h"
#include "gnomon/viewer/timeline.h"
#include "gnomon/viewer/timeline_view.h"
#include "gnomon/viewer/zone_search.h"
#include "session.h"

namespace gnomon::viewer {

struct Selection {
  LaneKey lane;
  DrawItem::Kind kind;
  uint32_t index;
};

// Another program of the file, drawn below the one shown as a group of lanes on the same
// time axis (read-only: the Program menu makes it the one shown).
struct ProcessGroup {
  const server::TraceModel* model = nullptr;
  uint32_t program = 0;  // its place in the file
  std::string title;     // "program 2: name (pid, host, rank); clock +/- bound"
  int64_t shift_ns = 0;  // its times (from its first event) + shift = the shown program's
  bool collapsed = false;
  Timeline timeline;
  std::vector<DrawItem> items;
  float header_y = 0;  // where its title row was drawn (lane coordinates)
};

struct Workspace {
  Session* session = nullptr;
  Timeline timeline;
  // The file's other programs, once loaded (several programs in one file), ordered by
  // host, rank and place; the shown program's own group title.
  std::vector<ProcessGroup> groups;
  bool groups_built = false;
  std::string shown_title;
  // With other programs: the shown program's clock bound on their common timeline, which
  // adds to where each of its zones is placed among them.
  std::optional<uint64_t> shown_clock_bound_ns;
  TimelineView view;
  ViewHistory history;  // the places the view visited (back and forward)
  // The user's annotations of this trace, where they are kept ("": in memory only), and
  // what went wrong reading or writing them.
  std::vector<Annotation> annotations;
  std::string annotations_path;
  std::string annotations_error;
  std::map<LaneKey, LaneState> lane_states;  // only the lanes the user changed
  std::optional<Selection> selected;
  bool fitted = false;  // the view was fitted to the trace (false: fit it next frame)
  // The timeline was last synced with the whole trace loaded: only then is a fit to it
  // final (a load that ends between a frame's sync and its drawing leaves the timeline's
  // origin as the sync saw it).
  bool synced_whole = false;
  bool follow = true;  // live: keep the newest data in view
  // Find zone's occurrences, outlined on the timeline while its window shows them; those
  // in the durations chosen on its histogram outlined more strongly.
  struct FindHighlight {
    std::shared_ptr<const ZoneOccurrences> occurrences;
    OccurrenceFilter strong;
  };
  std::optional<FindHighlight> find_highlight;
  FrameTarget frame_target;               // frames are graded against it, in every window
  uint32_t hidden_lanes = kLibraryLanes;  // LaneGroup bits (Lanes menu)
  ZoneColoring zone_coloring = ZoneColoring::kLocation;

  // The time range the user selected (trace-relative ns; right-drag or shift-drag on the
  // timeline), which windows may limit themselves to.
  std::optional<std::pair<int64_t, int64_t>> range;
  // What each window drew this frame, as JSON, by window (--layout-dump, window tests).
  std::map<std::string, std::string> reports;
  // Each open side window's tile below the timeline (App::TileSideWindows). Windows are
  // free: a tile is where one first appears (the settings may remember another place),
  // and where all go back to when the user asks for tiles (`retile`, the T key).
  struct Tile {
    float x, y, width, height;
  };
  std::map<std::string, Tile> tiles;
  bool retile = false;
  bool escape_taken = false;  // this frame's Esc closed a menu: it is not the timeline's
  // Puts the next window (`title`) in its tile, the first time it is shown or when
  // retiling; call right before ImGui::Begin.
  void Place(const char* title) const {
    auto it = tiles.find(title);
    if (it == tiles.end()) return;
    const ImGuiCond when = retile ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
    ImGui::SetNextWindowPos(ImVec2(it->second.x, it->second.y), when);
    ImGui::SetNextWindowSize(ImVec2(it->second.width, it->second.height), when);
  }

  // The Source window is asked to show this file (a path, or its end) at this line.
  std::optional<std::pair<std::string, uint32_t>> show_source;
  // A sampled function whose code another window asked the Symbol window to show.
  std::optional<std::string> show_symbol;

  // Find zone is asked to show this source location (CPU or GPU zones).
  struct FindRequest {
    uint32_t location = 0;
    bool gpu = false;
  };
  std::optional<FindRequest> find_request;

  // The call stack the Call stack window shows (TraceModel::callstacks), and of what:
  // the zone selected, an allocation picked in the Memory window, a sample clicked on
  // the timeline. A window that sets it also sets show_callstack, to open the Call stack
  // window.
  struct ShownCallstack {
    uint32_t id = 0;
    std::string of;
    bool sampled = false;  // a sample's: its first frame is where the thread was, not a return address
  };
  std::optional<ShownCallstack> callstack;
  bool show_callstack = false;
  // Frames symbolized for the windows on the UI thread (one per trace shown).
  std::shared_ptr<server::Symbolizer> symbolizer = std::make_shared<server::Symbolizer>();
  // A frame of a stack, symbolized: a return address but for a sample's first frame.
  const server::SymbolizedFrame& Frame(const server::TraceModel& model, uint64_t address,
                                       bool is_return_address) {
    symbolizer->Update(model.modules);
    return symbolizer->Resolve(address, is_return_address);
  }

  // Shows [begin_ns, end_ns] (trace-relative) with `margin` of its length on each side
  // (at least 100 ns; none for 0), and stops following. The place left is remembered:
  // Back returns to it.
  void JumpTo(int64_t begin_ns, int64_t end_ns, double margin = 0.5) {
    history.Leave(view.place());
    const int64_t length = std::max<int64_t>(end_ns - begin_ns, 1);
    const int64_t pad = margin > 0 ? std::max<int64_t>(int64_t(double(length) * margin), 100) : 0;
    view.Fit(begin_ns - pad, begin_ns + length + pad, view.width_px());
    follow = false;
  }
  // Back (or forward) to the place the view visited before it; false when there is none.
  bool GoBack(bool back) {
    const ViewPlace here = view.place();
    const std::optional<ViewPlace> place = back ? history.Back(here) : history.Forward(here);
    if (!place) return false;
    view.GoTo(*place);
    follow = false;
    return true;
  }
  // Nanoseconds of `tick` since the trace's first event.
  static int64_t RelNs(const server::TraceModel& model, uint64_t tick) {
    return model.clock.TickToNs(tick) - model.clock.TickToNs(model.first_tick);
  }
  // The ticks of a trace-relative range, for the server's statistics.
  static server::TickRange TicksOf(const server::TraceModel& model, std::pair<int64_t, int64_t> range_ns) {
    const int64_t origin = model.clock.TickToNs(model.first_tick);
    return {model.clock.NsToTick(origin + range_ns.first), model.clock.NsToTick(origin + range_ns.second)};
  }
  // Limits a samples window's filter to the selected range, when one is selected and the
  // window's "selected range only" is ticked.
  void LimitToRange(const server::TraceModel& model, bool limit, server::SampleFilter& filter) const {
    if (!limit || !range) return;
    const server::TickRange ticks = TicksOf(model, *range);
    filter.begin_tick = ticks.begin_tick;
    filter.end_tick = ticks.end_tick;
  }
};

}  // namespace gnomon::viewer
