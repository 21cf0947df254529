// The timeline's mouse and keys: zoom, pan, range selection, clicks, and navigation
// (zoom to a zone or the range, back and forward), and
// what hovering draws (the cursor line, every zone of the hovered one's location).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gnomon/server/text.h"
#include "timeline_window.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

// A view that had been still this long is remembered when the user starts to move it.
constexpr double kStillSeconds = 1.0;

// "12.345 ms" with as many decimals as a pixel of `ns_per_px` tells apart.
std::string TimeAt(int64_t ns, double ns_per_px) {
  const int decimals = std::clamp(int(std::ceil(-std::log10(std::max(ns_per_px, 1e-3) / 1e6))), 0, 6);
  char text[48];
  std::snprintf(text, sizeof(text), "%.*f ms", decimals, double(ns) / 1e6);
  return text;
}

}  // namespace

std::optional<Span> TimelineWindow::ZoneSpan(const server::TraceModel& model, const Workspace& ws,
                                             const Hit& hit) const {
  if (hit.kind == DrawItem::Kind::kGpuZone) {
    const Span span = ws.timeline.GpuSpan(hit.lane.id, hit.index);
    if (span.begin_ns == INT64_MIN) return std::nullopt;
    return span;
  }
  if (hit.kind == DrawItem::Kind::kOverviewZone || hit.kind == DrawItem::Kind::kMerged) {
    const server::OverviewRun* run = ws.timeline.OverviewRunAt(model, hit.lane.id, hit.row, hit.index);
    if (run == nullptr) return std::nullopt;
    return Span{Workspace::RelNs(model, run->begin_tick), Workspace::RelNs(model, run->end_tick)};
  }
  if (hit.kind != DrawItem::Kind::kZone) return std::nullopt;
  const auto thread = model.thread_index.find(hit.lane.id);
  if (thread == model.thread_index.end()) return std::nullopt;
  const server::ThreadTimeline& timeline = model.threads[thread->second];
  if (hit.index >= timeline.zones.size()) return std::nullopt;
  const server::Zone zone = timeline.zones[hit.index];
  const int64_t begin = Workspace::RelNs(model, zone.begin_tick);
  return Span{begin, zone.is_open() ? Workspace::RelNs(model, model.last_tick)
                                    : Workspace::RelNs(model, zone.end_tick)};
}

std::optional<uint32_t> TimelineWindow::LocationOf(const server::TraceModel& model, const LaneKey& lane,
                                                   DrawItem::Kind kind, uint32_t index) const {
  if (kind == DrawItem::Kind::kZone && lane.kind == LaneKind::kThread) {
    const auto thread = model.thread_index.find(lane.id);
    if (thread == model.thread_index.end() || index >= model.threads[thread->second].zones.size())
      return std::nullopt;
    return model.threads[thread->second].zones[index].source_location;
  }
  if (kind == DrawItem::Kind::kGpuZone && lane.kind == LaneKind::kGpu) {
    const auto context = model.gpu_contexts.find(lane.id);
    if (context == model.gpu_contexts.end() || index >= context->second.zones.size()) return std::nullopt;
    return context->second.zones[index].source_location;
  }
  return std::nullopt;
}

void TimelineWindow::DrawHover(ImDrawList* draw, ImDrawList* ruler_draw, const server::TraceModel& model,
                               Workspace& ws, float ruler_y) {
  size_t same = 0;
  // Every zone in view of the hovered zone's location, outlined.
  const std::optional<uint32_t> location =
      hovered_ ? LocationOf(model, hovered_->lane, hovered_->kind, hovered_->index) : std::nullopt;
  if (location) {
    for (const DrawItem& item : items_) {
      if (item.kind != hovered_->kind) continue;
      const LaneKey& lane = ws.timeline.lanes()[item.lane].key;
      if (LocationOf(model, lane, item.kind, item.index) != location) continue;
      draw->AddRect(ImVec2(origin_.x + item.x0 - 1, origin_.y + item.y0 - 1),
                    ImVec2(origin_.x + item.x1 + 1, origin_.y + item.y1 + 1), IM_COL32(235, 235, 255, 200), 0,
                    0, 1.0f);
      ++same;
    }
  }
  // The cursor line across every lane, and its time on the ruler.
  std::string cursor_time;
  float cursor_x = -1;
  if (pointer_x_) {
    cursor_x = origin_.x + *pointer_x_;
    draw->AddLine(ImVec2(cursor_x, area_min_.y), ImVec2(cursor_x, area_max_.y), IM_COL32(255, 255, 255, 90));
    cursor_time = TimeAt(ws.view.XToNs(*pointer_x_), ws.view.ns_per_px());
    const ImVec2 size = ImGui::CalcTextSize(cursor_time.c_str());
    const float x = std::min(cursor_x + 4, area_max_.x - size.x - 4);
    ruler_draw->AddRectFilled(ImVec2(x - 2, ruler_y), ImVec2(x + size.x + 2, ruler_y + size.y + 2),
                              IM_COL32(60, 62, 70, 255));
    ruler_draw->AddText(ImVec2(x, ruler_y + 1), IM_COL32(255, 255, 255, 255), cursor_time.c_str());
  }
  if (options_.keep_labels) {
    JsonReport report;
    report.Add("same_location_outlined", double(same))
        .Add("cursor_x", double(cursor_x))
        .Add("cursor_time", cursor_time)
        .Add("back", double(ws.history.back_count()))
        .Add("forward", double(ws.history.forward_count()));
    if (ws.selected) {
      report.Add("selected_index", double(ws.selected->index))
          .Add("selected_lane", double(ws.selected->lane.id))
          .Add("selected_kind", double(int(ws.selected->kind)));
    }
    ws.reports["timeline"] = report.str();
  }
}

void TimelineWindow::Moving(Workspace& ws) {
  const double now = ImGui::GetTime();
  if (now - last_move_s_ > kStillSeconds) ws.history.Leave(ws.view.place());
  last_move_s_ = now;
  ws.follow = false;
}

void TimelineWindow::HandleInput(const server::TraceModel& model, Workspace& ws, bool hovered) {
  ImGuiIO& io = ImGui::GetIO();
  hovered_.reset();
  pointer_x_.reset();
  if (hovered) {
    const float x = io.MousePos.x - origin_.x;
    const float y = io.MousePos.y - origin_.y;
    pointer_x_ = x;
    if (io.MouseWheel != 0) {
      if (io.KeyShift) {
        ImGui::SetScrollY(ImGui::GetScrollY() - io.MouseWheel * 40);
      } else {
        Moving(ws);
        ws.view.ZoomAt(x, std::pow(1.25, io.MouseWheel));
      }
    }
    // A range: dragged with the right button, or with the left one and shift held.
    const bool selecting_left = io.KeyShift && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f);
    const bool selecting_right = ImGui::IsMouseDragging(ImGuiMouseButton_Right, 2.0f);
    if (selecting_left || selecting_right) {
      const ImGuiMouseButton button = selecting_right ? ImGuiMouseButton_Right : ImGuiMouseButton_Left;
      if (!range_anchor_ns_) range_anchor_ns_ = ws.view.XToNs(io.MouseClickedPos[button].x - origin_.x);
      const int64_t here = ws.view.XToNs(x);
      ws.range = std::make_pair(std::min(*range_anchor_ns_, here), std::max(*range_anchor_ns_, here));
    } else if (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f) && !dragged_lane_) {
      Moving(ws);
      ws.view.Pan(io.MouseDelta.x);
      if (io.MouseDelta.y != 0) ImGui::SetScrollY(ImGui::GetScrollY() - io.MouseDelta.y);
    }
    if (!ImGui::IsMouseDown(ImGuiMouseButton_Left) && !ImGui::IsMouseDown(ImGuiMouseButton_Right)) {
      range_anchor_ns_.reset();
    }
    // A right click without a drag clears the range.
    if (ImGui::IsMouseReleased(ImGuiMouseButton_Right) &&
        ImGui::GetMouseDragDelta(ImGuiMouseButton_Right).x == 0) {
      ws.range.reset();
    }
    hovered_ = ws.timeline.HitTest(model, ws.view, x, y);
    if (hovered_) {
      Tooltip(model, ws, *hovered_);
    } else {
      GroupTooltip(ws, x, y);
    }
    if (ImGui::IsMouseReleased(ImGuiMouseButton_Left) &&
        ImGui::GetMouseDragDelta(ImGuiMouseButton_Left).x == 0 && !io.KeyShift) {
      if (hovered_ && hovered_->kind == DrawItem::Kind::kFrame) {
        if (const auto frame = ws.timeline.FrameSpan(model, FrameSeriesOf(*hovered_), hovered_->index))
          ws.JumpTo(frame->begin_ns, frame->end_ns);
      } else if (hovered_ && hovered_->kind == DrawItem::Kind::kCounter) {
        // A counter bar stands for the GPU zone it measured.
        const auto set = model.counter_sets.find(CounterLaneSet(hovered_->lane.id));
        if (set != model.counter_sets.end()) {
          ws.selected =
              Selection{{LaneKind::kGpu, set->second.context_id}, DrawItem::Kind::kGpuZone, hovered_->index};
        }
      } else if (hovered_ && hovered_->kind == DrawItem::Kind::kSample) {
        // A sample's tick shows its stack.
        const auto& thread = model.threads[model.thread_index.at(hovered_->lane.id)];
        const Timeline::SampleTicks* ticks = ws.timeline.ThreadSamples(thread.os_thread_id);
        if (ticks != nullptr && hovered_->index < ticks->samples.size()) {
          const server::Sample& sample = model.samples[ticks->samples[hovered_->index]];
          ws.callstack = Workspace::ShownCallstack{
              sample.callstack, "sample of " + Timeline::Name(model, hovered_->lane), true};
          ws.show_callstack = true;
        }
      } else if (hovered_ && (hovered_->kind == DrawItem::Kind::kOverviewZone ||
                              hovered_->kind == DrawItem::Kind::kMerged)) {
        // A zone not held cannot be selected: a click zooms to it, or to the zones merged.
        if (const std::optional<Span> span = ZoneSpan(model, ws, *hovered_))
          ws.JumpTo(span->begin_ns, span->end_ns, kZoneMargin);
      } else if (hovered_ && hovered_->kind != DrawItem::Kind::kRunning &&
                 hovered_->kind != DrawItem::Kind::kNotRunning) {
        ws.selected = Selection{hovered_->lane, hovered_->kind, hovered_->index};
      }
    }
    // A double-clicked zone fills the view.
    if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left) && hovered_) {
      if (const std::optional<Span> span = ZoneSpan(model, ws, *hovered_)) {
        ws.JumpTo(span->begin_ns, span->end_ns, kZoneMargin);
      }
    }
    // The mouse's back and forward buttons.
    if (ImGui::IsMouseClicked(3)) ws.GoBack(true);
    if (ImGui::IsMouseClicked(4)) ws.GoBack(false);
  }
  if (!io.WantTextInput) HandleKeys(ws);
}

void TimelineWindow::DragLane(ImDrawList* draw, const server::TraceModel& model, Workspace& ws) {
  if (!dragged_lane_) return;
  const std::vector<Lane>& lanes = ws.timeline.lanes();
  const TimelineMetrics& metrics = ws.timeline.metrics();
  const float y = ImGui::GetIO().MousePos.y - origin_.y;
  // The lane under the mouse (the last one below them all), and which half of it.
  const Lane* target = nullptr;
  bool after = false;
  for (const Lane& lane : lanes) {
    const float top = lane.y - metrics.title_height, bottom = lane.y + lane.height + metrics.lane_gap;
    if (y < bottom || &lane == &lanes.back()) {
      target = &lane;
      after = y > (top + bottom) / 2;
      break;
    }
  }
  if (target != nullptr) {
    const float at = origin_.y + (after ? target->y + target->height + metrics.lane_gap / 2
                                        : target->y - metrics.title_height - metrics.lane_gap / 2);
    draw->AddLine(ImVec2(origin_.x, at), ImVec2(area_max_.x, at), IM_COL32(255, 200, 60, 255), 2.0f);
    const std::string name = Timeline::Name(model, *dragged_lane_);
    draw->AddText(ImVec2(ImGui::GetIO().MousePos.x + 12, at - ImGui::GetFontSize() - 2),
                  IM_COL32(255, 200, 60, 255), name.c_str());
  }
  if (!ImGui::IsMouseDown(ImGuiMouseButton_Left)) {
    if (target != nullptr) ws.timeline.MoveLane(*dragged_lane_, target->key, after);
    dragged_lane_.reset();
  }
}

void TimelineWindow::HandleKeys(Workspace& ws) {
  const ImGuiIO& io = ImGui::GetIO();
  auto pressed = [](int key) { return ImGui::IsKeyPressed(key); };
  const int left = ImGui::GetKeyIndex(ImGuiKey_LeftArrow), right = ImGui::GetKeyIndex(ImGuiKey_RightArrow);
  // Back and forward: Alt+left/right, or Backspace and Shift+Backspace.
  if (io.KeyAlt && (pressed(left) || pressed(right))) {
    ws.GoBack(pressed(left));
    return;
  }
  if (pressed(ImGui::GetKeyIndex(ImGuiKey_Backspace))) {
    ws.GoBack(!io.KeyShift);
    return;
  }
  const float step = float(ws.view.width_px()) * 0.1f;
  if (pressed(left)) Moving(ws), ws.view.Pan(step);
  if (pressed(right)) Moving(ws), ws.view.Pan(-step);
  if ((pressed('=') && !io.KeyCtrl) || pressed(ImGui::GetKeyIndex(ImGuiKey_UpArrow))) {
    Moving(ws), ws.view.ZoomAt(ws.view.width_px() / 2, 1.5);
  }
  if ((pressed('-') && !io.KeyCtrl) || pressed(ImGui::GetKeyIndex(ImGuiKey_DownArrow))) {
    Moving(ws), ws.view.ZoomAt(ws.view.width_px() / 2, 1 / 1.5);
  }
  if (pressed('H')) {
    ws.history.Leave(ws.view.place());
    ws.fitted = false;
  }
  if (pressed('F')) ws.follow = !ws.follow;
  if (pressed('Z') && ws.range) ws.JumpTo(ws.range->first, ws.range->second, 0);
  if (pressed(ImGui::GetKeyIndex(ImGuiKey_Escape)) && !ws.escape_taken) ws.range.reset();
}

}  // namespace gnomon::viewer
