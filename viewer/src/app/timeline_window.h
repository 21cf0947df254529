// The main window's timeline: the ruler, the lanes with their titles, the items, the
// tooltip of what is under the cursor, and the mouse and keys that move the view.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gnomon/server/zone_window.h"
#include "gnomon/viewer/background_job.h"
#include "workspace.h"

namespace gnomon::viewer {

// The frame series a frame bar belongs to: its strip's, or, on a counter lane (values
// counted per frame), the main series.
inline uint32_t FrameSeriesOf(const Hit& hit) { return hit.lane.kind == LaneKind::kFrames ? hit.lane.id : 0; }

class TimelineWindow {
 public:
  struct Options {
    bool select_longest_zone = false;  // for screenshots: fill the details window
    bool show_counters = false;        // a lane for every GPU counter; select a counted zone
    int64_t range_begin_ns = -1;       // for screenshots: the time range to show
    int64_t range_end_ns = -1;
    bool keep_labels = false;  // for --layout: each item's label copied as the frame draws it
    std::string zoom_to;       // once loaded: select the zoom_to_number-th zone of this name, and zoom to it
    size_t zoom_to_number = 1;
    std::optional<LaneSort> sort_lanes;  // once loaded: sort the lanes so
  };
  // A zone zoomed to (double-click, --zoom-to) fills the view but for this share of its
  // length on each side.
  static constexpr double kZoneMargin = 0.05;
  explicit TimelineWindow(const Options& options) : options_(options) {}

  // Draws into the current ImGui window: the ruler, then the lanes in `height` pixels
  // (0: what is left of the window).
  void Draw(const server::TraceModel& model, Workspace& ws, float height = 0);
  // The Lanes > Counters menu (inside an open menu).
  void CounterMenu(Workspace& ws);
  // Forgets what belonged to the previous trace.
  void Reset();
  // Zones are read from the file for the view (RequestZoneWindow).
  bool is_busy() { return window_job_.is_busy(); }

  const std::vector<DrawItem>& items() const { return items_; }
  // With Options::keep_labels, the last frame's items' labels ("" for none), one per item.
  // An item's own label points into the model, which a live capture may have grown since.
  const std::vector<std::string>& labels() const { return labels_; }
  ImVec2 origin() const { return origin_; }
  // The screen rectangle the timeline took in the last frame (its ruler and lanes).
  std::pair<ImVec2, ImVec2> area() const { return {area_min_, area_max_}; }

 private:
  void DrawRuler(ImDrawList* draw, const TimelineView& view, ImVec2 at, float width);
  // Paints `items` of `timeline`'s lanes; the selected one (of the shown program) outlined.
  void DrawItems(ImDrawList* draw, const server::TraceModel& model, const Timeline& timeline,
                 const std::vector<DrawItem>& items, const Selection* selected, float right) const;
  // The zone's label: its name and duration when they fit, else as much of the name as fits.
  std::string Label(const server::TraceModel& model, const Timeline& timeline, const DrawItem& item,
                    float width) const;
  // The other programs of the file below the shown one's lanes, from `top` (lane
  // coordinates); returns where they end.
  float DrawGroups(ImDrawList* draw, Workspace& ws, float top, float visible_top, float visible_bottom);
  // What is under (x, y) in another program's lanes, as a tooltip; false when nothing.
  bool GroupTooltip(const Workspace& ws, float x, float y) const;
  void DrawPlotAxes(ImDrawList* draw, const server::TraceModel& model, const Workspace& ws, float visible_top,
                    float visible_bottom);
  void DrawRange(ImDrawList* draw, const Workspace& ws, ImVec2 area_min, ImVec2 area_max);
  // The annotations in view, each a tinted band with its name along the top.
  void DrawAnnotations(ImDrawList* draw, Workspace& ws, ImVec2 area_min, ImVec2 area_max);
  void SelectForScreenshot(const server::TraceModel& model, Workspace& ws);
  // The frame strips' bars drawn this frame, as JSON (for --layout-dump): series, frame
  // number, start and duration (ns), screen x, height (px) and colour of each.
  std::string FrameStripReport(const server::TraceModel& model, const Workspace& ws) const;
  // A lane's title dragged: where it would go, marked; on release, the lane moved there.
  void DragLane(ImDrawList* draw, const server::TraceModel& model, Workspace& ws);
  static constexpr float kLaneDragPx = 4;  // a press that moves less is a click
  // Find zone's occurrences in view, outlined (Workspace::find_highlight).
  void DrawFindOutlines(ImDrawList* draw, Workspace& ws);
  std::vector<Outline> outlines_;
  void Tooltip(const server::TraceModel& model, const Workspace& ws, const Hit& hit);

  // Mouse and keys (timeline_input.cpp).
  void HandleInput(const server::TraceModel& model, Workspace& ws, bool hovered);
  void HandleKeys(Workspace& ws);
  // Before the user moves the view: remembers where it was if it had been still.
  void Moving(Workspace& ws);
  // A CPU or GPU zone's times (trace-relative); none for other items.
  std::optional<Span> ZoneSpan(const server::TraceModel& model, const Workspace& ws, const Hit& hit) const;
  // A CPU or GPU zone's source location; none for other items.
  std::optional<uint32_t> LocationOf(const server::TraceModel& model, const LaneKey& lane,
                                     DrawItem::Kind kind, uint32_t index) const;
  // What hovering shows: every zone in view of the hovered zone's location outlined, the
  // cursor line across the lanes and its time on the ruler (at ruler_y, on ruler_draw).
  void DrawHover(ImDrawList* draw, ImDrawList* ruler_draw, const server::TraceModel& model, Workspace& ws,
                 float ruler_y);

  // A trace whose zones are not held, zoomed in past its overview: the zones of the view
  // and a view's width on each side (the view alone when that is too much), read from the
  // file and indexed off the UI thread (Session::ReadZoneWindow), handed to the timeline
  // when read; a read that fails leaves what the timeline had.
  void RequestZoneWindow(const server::TraceModel& model, Workspace& ws);
  struct WindowKey {
    uint64_t begin_tick = 0;
    uint64_t end_tick = 0;
    friend bool operator==(const WindowKey&, const WindowKey&) = default;
  };
  BackgroundJob<WindowKey, std::shared_ptr<const Timeline::IndexedZoneWindow>> window_job_;
  uint64_t window_generation_ = 0;  // of the job's result the timeline has

  Options options_;
  std::vector<DrawItem> items_;
  std::vector<std::string> labels_;  // items_' labels, with Options::keep_labels
  ImVec2 origin_{0, 0};
  ImVec2 area_min_{0, 0}, area_max_{0, 0};
  std::optional<Hit> hovered_;
  std::optional<float> pointer_x_;          // the mouse over the lanes (lane coordinates)
  double last_move_s_ = -1e9;               // when the user last moved the view (ImGui time)
  bool zoomed_to_ = false;                  // Options::zoom_to was done
  bool sorted_ = false;                     // Options::sort_lanes was done
  std::optional<LaneKey> dragged_lane_;     // a lane's title being dragged to move it
  std::optional<int64_t> range_anchor_ns_;  // where a range selection's drag started
  // By set: each defined counter's index and "set: counter", for the menu.
  std::map<uint32_t, std::vector<std::pair<uint16_t, std::string>>> counter_names_;
  size_t counter_name_count_ = 0;
};

}  // namespace gnomon::viewer
