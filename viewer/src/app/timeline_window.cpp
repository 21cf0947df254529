#include "timeline_window.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/counter_values.h"
#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

constexpr uint32_t kBackground = IM_COL32(30, 31, 34, 255);
constexpr uint32_t kLaneTitle = IM_COL32(200, 200, 205, 255);
constexpr uint32_t kRulerText = IM_COL32(170, 170, 175, 255);
constexpr uint32_t kGroupBar = IM_COL32(52, 56, 66, 255);
constexpr uint32_t kGroupText = IM_COL32(215, 220, 235, 255);

// What `view` shows, in another program's own times.
TimelineView GroupView(const TimelineView& view, const ProcessGroup& group) {
  TimelineView moved = view;
  moved.Fit(view.begin_ns() - group.shift_ns, view.end_ns() - group.shift_ns, view.width_px());
  return moved;
}

// A run of a thread's overview (its zones not held): the zone, or the zones merged.
void OverviewTooltip(const server::TraceModel& model, const Timeline& timeline, const Hit& hit) {
  const server::OverviewRun* run = timeline.OverviewRunAt(model, hit.lane.id, hit.row, hit.index);
  if (run == nullptr) return;
  const std::string length = server::FormatDuration(double(model.DurationNs(run->begin_tick, run->end_tick)));
  if (run->count == 1) {
    const server::SourceLocation& location = model.Location(run->location);
    ImGui::TextUnformatted(location.name.c_str());
    ImGui::TextUnformatted(length.c_str());
    ImGui::TextDisabled("%s:%u  %s", location.file.c_str(), location.line, location.function.c_str());
  } else {
    ImGui::Text("%u zones over %s", run->count, length.c_str());
    if (run->location != server::kMixedLocations)
      ImGui::Text("each %s", model.Location(run->location).name.c_str());
  }
  if ((hit.row & Timeline::kWindowRow) != 0) {
    ImGui::TextDisabled("read from the file: this trace's zones are not held (--memory-limit)");
    return;
  }
  ImGui::TextDisabled(
      "zones shorter than %s are merged: this trace's zones are not held (--memory-limit)",
      server::FormatDuration(model.clock.ns_per_tick() * double(model.overview_resolution)).c_str());
}

}  // namespace

void TimelineWindow::DrawFindOutlines(ImDrawList* draw, Workspace& ws) {
  outlines_.clear();
  if (ws.find_highlight && ws.find_highlight->occurrences) {
    OutlineOccurrences(ws.timeline, ws.view, *ws.find_highlight->occurrences, ws.find_highlight->strong,
                       outlines_);
  }
  uint64_t outlined = 0, strong = 0;
  for (const Outline& o : outlines_) {
    const ImVec2 a(origin_.x + o.x0 - 1, origin_.y + o.y0 - 1), b(origin_.x + o.x1 + 1, origin_.y + o.y1 + 1);
    draw->AddRect(a, b, o.strong ? IM_COL32(255, 230, 90, 255) : IM_COL32(255, 255, 255, 150), 0, 0,
                  o.strong ? 2.0f : 1.0f);
    outlined += o.count;
    strong += o.strong;
  }
  if (options_.keep_labels && ws.find_highlight) {
    ws.reports["find-outlines"] = JsonReport()
                                      .Add("outlined", double(outlined))
                                      .Add("rectangles", double(outlines_.size()))
                                      .Add("strong_rectangles", double(strong))
                                      .str();
  }
}

std::string TimelineWindow::FrameStripReport(const server::TraceModel& model, const Workspace& ws) const {
  std::string bars = "[";
  for (const DrawItem& item : items_) {
    const Lane& lane = ws.timeline.lanes()[item.lane];
    if (item.kind != DrawItem::Kind::kFrame || lane.key.kind != LaneKind::kFrames) continue;
    const auto frame = ws.timeline.FrameSpan(model, lane.key.id, item.index);
    if (!frame) continue;
    bars += (bars.size() > 1 ? "," : "") + JsonReport()
                                               .Add("series", model.FrameSeriesName(lane.key.id))
                                               .Add("frame", double(item.index))
                                               .Add("start_ns", double(frame->begin_ns))
                                               .Add("duration_ns", double(frame->end_ns - frame->begin_ns))
                                               .Add("x0", double(origin_.x + item.x0))
                                               .Add("x1", double(origin_.x + item.x1))
                                               .Add("y1", double(origin_.y + item.y1))
                                               .Add("height_px", double(item.y1 - item.y0))
                                               .Add("color", double(item.color))
                                               .str();
  }
  return JsonReport().Add("target_ns", double(ws.frame_target.ns)).AddRaw("bars", bars + "]").str();
}

void TimelineWindow::Reset() {
  window_job_.Reset();
  window_generation_ = window_job_.result_generation();
  items_.clear();
  labels_.clear();
  hovered_.reset();
}

void TimelineWindow::RequestZoneWindow(const server::TraceModel& model, Workspace& ws) {
  if (model.zones_held || ws.session == nullptr || ws.session->is_loading()) return;
  if (ws.timeline.NeedsZoneWindow(model, ws.view)) {
    const auto [begin, end] = ws.timeline.ViewTicks(model, ws.view);
    const uint64_t width = end - begin;
    WindowKey key{begin - std::min(begin, width), end + std::min(width, UINT64_MAX - end)};
    // The view with its sides failed (too many zones): the view alone.
    const auto* failed = window_job_.result();
    if (failed != nullptr && *failed == nullptr && window_job_.result_key() != nullptr &&
        *window_job_.result_key() == key)
      key = {begin, end};
    Session* session = ws.session;
    window_job_.Request(key, [session, key]() -> std::shared_ptr<const Timeline::IndexedZoneWindow> {
      auto window = session->ReadZoneWindow(key.begin_tick, key.end_tick);
      if (!window.ok()) return nullptr;  // too wide for its memory, or cancelled
      return Timeline::IndexZoneWindow(std::move(window.value()));
    });
  }
  if (window_job_.result_generation() != window_generation_) {
    window_generation_ = window_job_.result_generation();
    const auto* window = window_job_.result();
    if (window != nullptr && *window != nullptr) ws.timeline.SetZoneWindow(*window);
  }
}

void TimelineWindow::DrawRuler(ImDrawList* draw, const TimelineView& view, ImVec2 at, float width) {
  const float ruler_height = ImGui::GetFontSize() + 8;
  const RulerStep step = ChooseRulerStep(view.ns_per_px(), 90);
  draw->AddRectFilled(at, ImVec2(at.x + width, at.y + ruler_height), IM_COL32(40, 41, 45, 255));
  const int64_t first = (view.begin_ns() / step.step_ns) * step.step_ns;
  for (int64_t t = first; t <= view.end_ns(); t += step.step_ns) {
    const float x = at.x + float(view.NsToX(t));
    if (x < at.x) continue;
    draw->AddLine(ImVec2(x, at.y + ruler_height - 6), ImVec2(x, at.y + ruler_height), kRulerText);
    // The label's unit follows the time's size; decimals follow the step.
    const double magnitude = std::max(std::fabs(double(t)), double(step.step_ns));
    const double unit_ns = magnitude >= 1e9 ? 1e9 : magnitude >= 1e6 ? 1e6 : magnitude >= 1e3 ? 1e3 : 1.0;
    const char* unit = unit_ns == 1e9 ? "s" : unit_ns == 1e6 ? "ms" : unit_ns == 1e3 ? "us" : "ns";
    const int decimals = std::max(0, int(std::ceil(std::log10(unit_ns / double(step.step_ns)) - 1e-9)));
    char label[48];
    std::snprintf(label, sizeof(label), "%.*f %s", decimals, double(t) / unit_ns, unit);
    // Right of its tick, or left of it where the ruler ends sooner.
    const float label_width = ImGui::CalcTextSize(label).x;
    const float label_x = x + 3 + label_width <= at.x + width ? x + 3 : x - 3 - label_width;
    draw->AddText(ImVec2(label_x, at.y + 3), kRulerText, label);
  }
}

std::string TimelineWindow::Label(const server::TraceModel& model, const Timeline& timeline,
                                  const DrawItem& item, float width) const {
  const std::string& name = *item.label;
  int64_t duration = -1;
  if (item.lane < timeline.lanes().size()) {
    const LaneKey& key = timeline.lanes()[item.lane].key;
    if (item.kind == DrawItem::Kind::kOverviewZone) {
      if (const server::OverviewRun* run = timeline.OverviewRunAt(model, key.id, item.row, item.index))
        duration = model.DurationNs(run->begin_tick, run->end_tick);
    } else if (item.kind == DrawItem::Kind::kZone) {
      auto it = model.thread_index.find(key.id);
      if (it != model.thread_index.end() && item.index < model.threads[it->second].zones.size()) {
        const server::Zone z = model.threads[it->second].zones[item.index];
        if (!z.is_open()) duration = model.DurationNs(z.begin_tick, z.end_tick);
      }
    } else if (item.kind == DrawItem::Kind::kGpuZone) {
      const Span span = timeline.GpuSpan(key.id, item.index);
      if (span.begin_ns != INT64_MIN) duration = span.end_ns - span.begin_ns;
    } else if (item.kind == DrawItem::Kind::kLockHold || item.kind == DrawItem::Kind::kLockWait) {
      const Span span = timeline.LockSpan(key.id, item.index, item.kind == DrawItem::Kind::kLockWait);
      if (span.begin_ns != INT64_MIN) duration = span.end_ns - span.begin_ns;
    }
  }
  if (duration >= 0) {
    const std::string with_duration = name + "  " + server::FormatDuration(double(duration));
    if (ImGui::CalcTextSize(with_duration.c_str()).x <= width) return with_duration;
  }
  return FitText(name, width);
}

void TimelineWindow::DrawItems(ImDrawList* draw, const server::TraceModel& model, const Timeline& timeline,
                               const std::vector<DrawItem>& items, const Selection* selected,
                               float right) const {
  const ImVec2 o = origin_;
  for (const DrawItem& item : items) {
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
        const bool is_selected = selected != nullptr && item.kind != DrawItem::Kind::kSample &&
                                 selected->index == item.index && item.lane < timeline.lanes().size() &&
                                 selected->lane == timeline.lanes()[item.lane].key;
        if (is_selected) draw->AddRect(a, b, IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
        if (item.label != nullptr && b.x - a.x > 24) {
          const float clip_left = std::max(a.x, o.x);
          const float clip_right = std::min(b.x, o.x + right);
          const std::string label = Label(model, timeline, item, clip_right - clip_left - 6);
          if (!label.empty()) {
            draw->PushClipRect(ImVec2(clip_left, a.y), b, true);
            draw->AddText(ImVec2(clip_left + 3, a.y + 2), IM_COL32(15, 15, 18, 255), label.c_str());
            draw->PopClipRect();
          }
        }
        break;
      }
    }
  }
}

void TimelineWindow::Draw(const server::TraceModel& model, Workspace& ws, float height) {
  ws.timeline.SetFontSize(ImGui::GetFontSize());
  ImDrawList* parent_draw = ImGui::GetWindowDrawList();
  const ImVec2 ruler_at = ImGui::GetCursorScreenPos();
  const float timeline_width = ImGui::GetContentRegionAvail().x;
  ws.view.SetWidth(timeline_width);
  const int64_t end_ns = ws.timeline.TraceEndNs(model);
  ws.view.SetExtent(0, std::max<int64_t>(end_ns, 1000));
  if (!ws.fitted && model.first_tick != server::kOpenZone) {
    if (options_.range_end_ns > options_.range_begin_ns) {
      ws.view.Fit(options_.range_begin_ns, options_.range_end_ns, timeline_width);
    } else {
      ws.view.Fit(0, std::max<int64_t>(end_ns, 1000), timeline_width);
    }
    ws.fitted = ws.synced_whole && !(ws.session->is_live() && ws.follow);
  } else if (ws.session->is_live() && ws.follow && end_ns > ws.view.end_ns()) {
    ws.view.Follow(end_ns);
  }
  DrawRuler(parent_draw, ws.view, ruler_at, timeline_width);
  ImGui::Dummy(ImVec2(timeline_width, ImGui::GetFontSize() + 8));

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
  if (options_.show_counters) {
    for (const auto& [id, set] : model.counter_sets) {
      for (const server::CounterInfo& counter : set.counters) {
        ws.lane_states.try_emplace({LaneKind::kCounter, CounterLaneId(id, counter.index)});
      }
    }
  }

  // `height` is the ruler's and the lanes' together.
  const float lanes_height =
      height > 0 ? std::max(1.0f, height - (ImGui::GetCursorScreenPos().y - ruler_at.y)) : 0;
  ImGui::BeginChild("timeline", ImVec2(0, lanes_height), false,
                    ImGuiWindowFlags_NoScrollWithMouse | ImGuiWindowFlags_NoMove);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  origin_ = ImGui::GetCursorScreenPos();
  const ImVec2 area_min = ImGui::GetWindowPos();
  const ImVec2 area_max(area_min.x + ImGui::GetWindowWidth(), area_min.y + ImGui::GetWindowHeight());
  area_min_ = ImVec2(area_min.x, ruler_at.y);
  area_max_ = area_max;
  draw->AddRectFilled(area_min, area_max, kBackground);
  // With other programs below, the shown one's lanes start under a title row of its own.
  const float group_title = ws.groups.empty() ? 0 : ws.timeline.metrics().title_height + 4;
  ws.timeline.HideLaneGroups(ws.hidden_lanes);
  ws.timeline.SetZoneColoring(ws.zone_coloring);
  ws.timeline.SetFrameTarget(ws.frame_target);
  ws.timeline.Layout(model, ws.lane_states, group_title);
  // Sorted once the file has loaded; a live capture's, once it has lanes.
  if (options_.sort_lanes && !sorted_ && !ws.session->is_loading() && !ws.timeline.lanes().empty()) {
    sorted_ = true;
    ws.timeline.SortLanes(model, *options_.sort_lanes);
    ws.timeline.Layout(model, ws.lane_states, group_title);
  }
  const float visible_top = area_min.y - origin_.y;  // the lanes the scrolled child shows
  const float visible_bottom = area_max.y - origin_.y;
  RequestZoneWindow(model, ws);
  ws.timeline.BuildItems(model, ws.view, items_, visible_top, visible_bottom);
  if (options_.keep_labels) {
    labels_.clear();
    for (const DrawItem& item : items_)
      labels_.push_back(item.label != nullptr ? *item.label : std::string());
    ws.reports["frame-strips"] = FrameStripReport(model, ws);
  }
  if (!ws.groups.empty()) {
    draw->AddRectFilled(origin_, ImVec2(origin_.x + timeline_width, origin_.y + group_title - 2), kGroupBar);
    draw->AddText(ImVec2(origin_.x + 4, origin_.y + 1), kGroupText, ws.shown_title.c_str());
  }

  SelectForScreenshot(model, ws);
  if (!options_.zoom_to.empty() && !zoomed_to_ && ws.fitted) {
    zoomed_to_ = true;
    if (const auto zone = FindNthZone(model, options_.zoom_to, options_.zoom_to_number)) {
      ws.selected = Selection{
          zone->lane, zone->lane.kind == LaneKind::kGpu ? DrawItem::Kind::kGpuZone : DrawItem::Kind::kZone,
          zone->index};
      ws.JumpTo(zone->begin_ns, zone->begin_ns + zone->duration_ns, kZoneMargin);
    } else {
      std::fprintf(
          stderr, "gnomon-viewer: --zoom-to: the trace has no zone %s#%zu%s\n", options_.zoom_to.c_str(),
          options_.zoom_to_number,
          model.zones_held ? "" : " among its GPU zones (its CPU zones are not held: --memory-limit)");
    }
  }

  // Lane titles: click to collapse, right-click to hide, drag to move the lane.
  const ImGuiIO& io = ImGui::GetIO();
  const bool dragged = io.MouseDragMaxDistanceSqr[ImGuiMouseButton_Left] > kLaneDragPx * kLaneDragPx;
  for (const Lane& lane : ws.timeline.lanes()) {
    if (!ws.timeline.IsLaneVisible(lane, visible_top, visible_bottom)) continue;
    const float title_y = lane.y - ws.timeline.metrics().title_height;
    ImGui::SetCursorScreenPos(ImVec2(origin_.x, origin_.y + title_y));
    auto state = ws.lane_states.find(lane.key);
    const bool collapsed = state != ws.lane_states.end() && state->second.collapsed;
    ImGui::PushID(int(lane.key.kind) * 1000003 + int(lane.key.id));
    const std::string label = std::string(collapsed ? "> " : "v ") + ws.timeline.Title(model, lane);
    ImGui::PushStyleColor(ImGuiCol_Text, kLaneTitle);
    if (ImGui::Selectable(label.c_str(), false, 0, ImVec2(ImGui::CalcTextSize(label.c_str()).x, 0)) &&
        !dragged) {
      ws.lane_states[lane.key].collapsed = !collapsed;
    }
    if (ImGui::IsItemActive() && dragged) dragged_lane_ = lane.key;
    if (ImGui::IsItemClicked(ImGuiMouseButton_Right)) ws.lane_states[lane.key].hidden = true;
    ImGui::PopStyleColor();
    ImGui::PopID();
  }
  DrawItems(draw, model, ws.timeline, items_, ws.selected ? &*ws.selected : nullptr,
            float(ws.view.width_px()));
  DragLane(draw, model, ws);
  DrawFindOutlines(draw, ws);
  DrawPlotAxes(draw, model, ws, visible_top, visible_bottom);
  const float lanes_end =
      DrawGroups(draw, ws, group_title + ws.timeline.total_height(), visible_top, visible_bottom);
  DrawAnnotations(draw, ws, area_min, area_max);
  DrawRange(draw, ws, area_min, area_max);
  DrawHover(draw, parent_draw, model, ws, ruler_at.y);

  // The area the lanes take, so that the child scrolls.
  ImGui::SetCursorScreenPos(origin_);
  ImGui::InvisibleButton("lanes", ImVec2(std::max(1.0f, timeline_width - 16), std::max(1.0f, lanes_end)),
                         ImGuiButtonFlags_MouseButtonLeft);
  const bool hovered = ImGui::IsItemHovered() || ImGui::IsWindowHovered();
  HandleInput(model, ws, hovered);
  ImGui::EndChild();
}

float TimelineWindow::DrawGroups(ImDrawList* draw, Workspace& ws, float top, float visible_top,
                                 float visible_bottom) {
  static const std::map<LaneKey, LaneState> kNoStates;
  const float title_height = ws.timeline.metrics().title_height + 4;
  const float width = float(ws.view.width_px());
  float y = top;
  for (size_t i = 0; i < ws.groups.size(); ++i) {
    ProcessGroup& group = ws.groups[i];
    group.header_y = y;
    // Its title row: click to open or close the group.
    draw->AddRectFilled(ImVec2(origin_.x, origin_.y + y),
                        ImVec2(origin_.x + width, origin_.y + y + title_height - 2), kGroupBar);
    ImGui::SetCursorScreenPos(ImVec2(origin_.x + 4, origin_.y + y + 1));
    ImGui::PushID(int(i));
    ImGui::PushStyleColor(ImGuiCol_Text, kGroupText);
    const std::string label = std::string(group.collapsed ? "> " : "v ") + group.title;
    if (ImGui::Selectable(label.c_str(), false, 0, ImVec2(ImGui::CalcTextSize(label.c_str()).x, 0))) {
      group.collapsed = !group.collapsed;
    }
    ImGui::PopStyleColor();
    ImGui::PopID();
    y += title_height;
    group.items.clear();
    if (group.collapsed) continue;
    group.timeline.SetFontSize(ImGui::GetFontSize());
    group.timeline.HideLaneGroups(ws.hidden_lanes);
    group.timeline.SetZoneColoring(ws.zone_coloring);
    group.timeline.SetFrameTarget(ws.frame_target);
    group.timeline.Layout(*group.model, kNoStates, y);
    group.timeline.BuildItems(*group.model, GroupView(ws.view, group), group.items, visible_top,
                              visible_bottom);
    for (const Lane& lane : group.timeline.lanes()) {
      if (!group.timeline.IsLaneVisible(lane, visible_top, visible_bottom)) continue;
      const float title_y = origin_.y + lane.y - group.timeline.metrics().title_height;
      draw->AddText(ImVec2(origin_.x + 12, title_y), kLaneTitle,
                    group.timeline.Title(*group.model, lane).c_str());
    }
    DrawItems(draw, *group.model, group.timeline, group.items, nullptr, width);
    y += group.timeline.total_height();
  }
  return y;
}

bool TimelineWindow::GroupTooltip(const Workspace& ws, float x, float y) const {
  for (const ProcessGroup& group : ws.groups) {
    if (group.collapsed || y < group.header_y) continue;
    const std::optional<Hit> hit = group.timeline.HitTest(*group.model, GroupView(ws.view, group), x, y);
    if (!hit) continue;
    const server::TraceModel& model = *group.model;
    ImGui::BeginTooltip();
    if (hit->kind == DrawItem::Kind::kZone) {
      const auto& thread = model.threads[model.thread_index.at(hit->lane.id)];
      const server::Zone z = thread.zones[hit->index];
      ImGui::TextUnformatted(model.ZoneName(thread, hit->index).c_str());
      ImGui::Text("%s",
                  z.is_open()
                      ? "unfinished"
                      : server::FormatDuration(double(model.DurationNs(z.begin_tick, z.end_tick))).c_str());
    } else if (hit->kind == DrawItem::Kind::kOverviewZone || hit->kind == DrawItem::Kind::kMerged) {
      OverviewTooltip(model, group.timeline, *hit);
    } else if (hit->kind == DrawItem::Kind::kGpuZone) {
      const Span span = group.timeline.GpuSpan(hit->lane.id, hit->index);
      ImGui::TextUnformatted(
          model.Location(model.gpu_contexts.at(hit->lane.id).zones[hit->index].source_location).name.c_str());
      ImGui::Text("GPU %s", server::FormatDuration(double(span.end_ns - span.begin_ns)).c_str());
    } else {
      ImGui::TextUnformatted(Timeline::Name(model, hit->lane).c_str());
    }
    ImGui::TextDisabled("%s (the Program menu shows it with every window)", group.title.c_str());
    ImGui::EndTooltip();
    return true;
  }
  return false;
}

void TimelineWindow::SelectForScreenshot(const server::TraceModel& model, Workspace& ws) {
  if (options_.select_longest_zone && options_.show_counters && !ws.selected) {
    // For screenshots: select the first GPU zone with counters that starts in view.
    for (const auto& [id, context] : model.gpu_contexts) {
      for (const server::CounterSample& sample : context.counter_samples) {
        if (sample.target != uint8_t(protocol::CounterTarget::kGpuZone)) continue;
        const Span span = ws.timeline.GpuSpan(id, sample.target_index);
        if (span.begin_ns >= ws.view.begin_ns() && span.begin_ns <= ws.view.end_ns()) {
          ws.selected = Selection{{LaneKind::kGpu, id}, DrawItem::Kind::kGpuZone, sample.target_index};
          break;
        }
      }
      if (ws.selected) break;
    }
  }
  if (options_.select_longest_zone && !ws.selected) {
    // For screenshots: select the longest CPU zone of the first thread that has one.
    for (const auto& thread : model.threads) {
      int64_t longest = -1;
      for (size_t i = 0; i < thread.zones.size(); ++i) {
        const auto& z = thread.zones[i];
        if (!z.is_open() && model.DurationNs(z.begin_tick, z.end_tick) > longest) {
          longest = model.DurationNs(z.begin_tick, z.end_tick);
          ws.selected = Selection{{LaneKind::kThread, thread.id}, DrawItem::Kind::kZone, uint32_t(i)};
        }
      }
      if (ws.selected) break;
    }
  }
}

void TimelineWindow::CounterMenu(Workspace& ws) {
  if (counter_names_.empty() || !ImGui::BeginMenu("Counters")) return;
  for (const auto& [set, names] : counter_names_) {
    for (const auto& [index, name] : names) {
      const LaneKey key{LaneKind::kCounter, CounterLaneId(set, index)};
      auto it = ws.lane_states.find(key);
      bool shown = it != ws.lane_states.end() && !it->second.hidden;
      if (ImGui::MenuItem(name.c_str(), nullptr, &shown)) {
        if (shown) {
          ws.lane_states[key] = LaneState{};
        } else {
          ws.lane_states.erase(key);
        }
      }
    }
  }
  ImGui::EndMenu();
}

void TimelineWindow::Tooltip(const server::TraceModel& model, const Workspace& ws, const Hit& hit) {
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
  if (hit.kind == DrawItem::Kind::kRunning && hit.lane.kind == LaneKind::kCpu) {
    const Timeline::CpuRuns* runs = ws.timeline.CpuRunning(hit.lane.id);
    if (runs != nullptr && hit.index < runs->spans.size()) {
      const Span& span = runs->spans[hit.index];
      const uint32_t tid = runs->threads[hit.index];
      std::string name = "tid " + std::to_string(tid);
      for (const server::ThreadTimeline& t : model.threads) {
        if (t.os_thread_id == tid) name = Timeline::Name(model, {LaneKind::kThread, t.id});
      }
      ImGui::Text("CPU %u: %s", hit.lane.id, name.c_str());
      ImGui::Text("ran for %s", server::FormatDuration(double(span.end_ns - span.begin_ns)).c_str());
      ImGui::TextDisabled("where no thread of the program ran, another program did, or none");
    }
  } else if (hit.kind == DrawItem::Kind::kNotRunning && hit.lane.kind == LaneKind::kThread) {
    const auto& thread = model.threads[model.thread_index.at(hit.lane.id)];
    const Timeline::Running* running = ws.timeline.ThreadRunning(thread.os_thread_id);
    if (running != nullptr && hit.index + 1 < running->spans.size()) {
      ImGui::TextUnformatted(Timeline::Name(model, hit.lane).c_str());
      const std::string wait = server::FormatDuration(
          double(running->spans[hit.index + 1].begin_ns - running->spans[hit.index].end_ns));
      if (running->preempted[hit.index] != 0) {
        ImGui::Text("not running for %s: preempted, ready to run while another thread had the CPU",
                    wait.c_str());
      } else if (ws.timeline.preemption_known()) {
        ImGui::Text("not running for %s: it blocked (a sleep, a lock, I/O)", wait.c_str());
      } else {
        ImGui::Text("not running for %s (the kernel did not say why)", wait.c_str());
      }
      ImGui::TextDisabled("from the kernel's context switches (GNOMON_CONTEXT_SWITCHES)");
    }
  } else if (hit.kind == DrawItem::Kind::kRunning && hit.lane.kind == LaneKind::kThread) {
    const auto& thread = model.threads[model.thread_index.at(hit.lane.id)];
    const Timeline::Running* running = ws.timeline.ThreadRunning(thread.os_thread_id);
    if (running != nullptr && hit.index < running->spans.size()) {
      const Span& span = running->spans[hit.index];
      ImGui::TextUnformatted(Timeline::Name(model, hit.lane).c_str());
      ImGui::Text("running on CPU %u for %s", running->cpus[hit.index],
                  server::FormatDuration(double(span.end_ns - span.begin_ns)).c_str());
      if (hit.index + 1 < running->spans.size()) {
        // Why it stopped, where the kernel says (Linux 4.17 and later).
        const std::string wait =
            server::FormatDuration(double(running->spans[hit.index + 1].begin_ns - span.end_ns));
        if (running->preempted[hit.index] != 0) {
          ImGui::Text("then preempted for %s: ready to run, another thread had the CPU", wait.c_str());
        } else if (ws.timeline.preemption_known()) {
          ImGui::Text("then waited for %s: it blocked (a sleep, a lock, I/O)", wait.c_str());
        } else {
          ImGui::Text("then not running for %s (the kernel did not say why)", wait.c_str());
        }
      }
      ImGui::TextDisabled("from the kernel's context switches (GNOMON_CONTEXT_SWITCHES)");
    }
  } else if (hit.kind == DrawItem::Kind::kSample) {
    const auto& thread = model.threads[model.thread_index.at(hit.lane.id)];
    const Timeline::SampleTicks* ticks = ws.timeline.ThreadSamples(thread.os_thread_id);
    if (ticks != nullptr && hit.index < ticks->samples.size()) {
      const server::Sample& sample = model.samples[ticks->samples[hit.index]];
      ImGui::Text("a sample of %s", Timeline::Name(model, hit.lane).c_str());
      // The innermost frames; the Call stack window has them all.
      const auto frames = model.callstacks.Frames(sample.callstack);
      constexpr size_t kShown = 8;
      ws.symbolizer->Update(model.modules);
      for (size_t i = 0; i < std::min(frames.size(), kShown); ++i) {
        const server::SymbolizedFrame& frame = ws.symbolizer->Resolve(frames[i], i > 0);
        ImGui::TextUnformatted((std::string(i == 0 ? "in " : "   ") + frame.function).c_str());
      }
      if (frames.size() > kShown) ImGui::TextDisabled("   ... %zu more", frames.size() - kShown);
      ImGui::TextDisabled("click: the whole stack in the Call stack window");
    }
  } else if (hit.kind == DrawItem::Kind::kOverviewZone || hit.kind == DrawItem::Kind::kMerged) {
    OverviewTooltip(model, ws.timeline, hit);
  } else if (hit.kind == DrawItem::Kind::kZone) {
    const auto& thread = model.threads[model.thread_index.at(hit.lane.id)];
    const server::Zone& z = thread.zones[hit.index];
    const auto& location = model.Location(z.source_location);
    ImGui::TextUnformatted(model.ZoneName(thread, hit.index).c_str());
    ImGui::Text("%s",
                z.is_open()
                    ? "unfinished"
                    : server::FormatDuration(double(model.DurationNs(z.begin_tick, z.end_tick))).c_str());
    ImGui::TextDisabled("%s:%u  %s", location.file.c_str(), location.line, location.function.c_str());
    if (ws.shown_clock_bound_ns) {
      ImGui::TextDisabled("placed among the programs +/- %s (its program's clock)",
                          server::FormatDuration(double(*ws.shown_clock_bound_ns)).c_str());
    }
  } else if (hit.kind == DrawItem::Kind::kGpuZone) {
    const auto& context = model.gpu_contexts.at(hit.lane.id);
    const server::GpuZone& z = context.zones[hit.index];
    const auto mapped = model.MapGpuZone(context, z);
    ImGui::TextUnformatted(model.Location(z.source_location).name.c_str());
    ImGui::Text("GPU %s, placed +/- %s (relative), %s (absolute)",
                server::FormatDuration(double(mapped.end_ns - mapped.begin_ns)).c_str(),
                server::FormatDuration(double(mapped.relative_ns)).c_str(),
                server::FormatBound(mapped.early_ns, mapped.late_ns).c_str());
    if (ws.shown_clock_bound_ns) {
      ImGui::Text("among the programs: +/- %s more (its program's clock)",
                  server::FormatDuration(double(*ws.shown_clock_bound_ns)).c_str());
    }
    ImGui::Text(
        "CPU record -> GPU start: %s",
        server::FormatDuration(double(mapped.begin_ns - model.clock.TickToNs(z.cpu_begin_tick))).c_str());
    // The link to the CPU thread that recorded it.
    for (const Lane& lane : ws.timeline.lanes()) {
      if (lane.key.kind != LaneKind::kThread || lane.key.id != z.thread_id) continue;
      const Span gpu = ws.timeline.GpuSpan(hit.lane.id, hit.index);
      const float cpu_x = origin_.x + float(ws.view.NsToX(Workspace::RelNs(model, z.cpu_begin_tick)));
      const float gpu_x = origin_.x + float(ws.view.NsToX(gpu.begin_ns));
      float gpu_y = origin_.y;
      for (const Lane& g : ws.timeline.lanes()) {
        if (g.key == hit.lane) gpu_y += g.y + ws.timeline.metrics().row_height * (float(z.depth) + 0.5f);
      }
      ImGui::GetForegroundDrawList()->AddLine(ImVec2(cpu_x, origin_.y + lane.y), ImVec2(gpu_x, gpu_y),
                                              IM_COL32(255, 220, 80, 255), 2.0f);
    }
  } else if (hit.kind == DrawItem::Kind::kFrame) {
    if (const auto frame = ws.timeline.FrameSpan(model, FrameSeriesOf(hit), hit.index)) {
      const int64_t length = frame->end_ns - frame->begin_ns;
      const FrameTarget& target = ws.timeline.frame_target();
      const FrameGrade grade = target.Grade(length);
      ImGui::Text("Frame %u: %s (click to zoom)", hit.index, server::FormatDuration(double(length)).c_str());
      ImGui::TextDisabled("%s the %.0f FPS target (%s)",
                          grade == FrameGrade::kOnTime ? "within"
                          : grade == FrameGrade::kLate ? "late against"
                                                       : "more than twice",
                          target.fps(), server::FormatDuration(double(target.ns)).c_str());
    }
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
  if ((hit.kind == DrawItem::Kind::kLockHold || hit.kind == DrawItem::Kind::kLockWait) &&
      model.locks.contains(hit.lane.id) && hit.index < model.locks.at(hit.lane.id).holds.size()) {
    const server::Lock& lock = model.locks.at(hit.lane.id);
    const server::LockHold& hold = lock.holds[hit.index];
    ImGui::TextUnformatted(lock.name.c_str());
    ImGui::Text("%s by %s", hit.kind == DrawItem::Kind::kLockWait ? "waited for" : "held",
                Timeline::Name(model, {LaneKind::kThread, hold.thread_id}).c_str());
    if (hold.is_contended()) {
      ImGui::Text("waited %s",
                  server::FormatDuration(double(model.DurationNs(hold.wait_tick, hold.obtain_tick))).c_str());
    } else {
      ImGui::TextDisabled("uncontended");
    }
    ImGui::Text(
        "held %s%s",
        hold.is_released()
            ? server::FormatDuration(double(model.DurationNs(hold.obtain_tick, hold.release_tick))).c_str()
            : "until the end",
        (hold.flags & protocol::kLockShared) ? " (shared)" : "");
  }
  ImGui::EndTooltip();
}

void TimelineWindow::DrawPlotAxes(ImDrawList* draw, const server::TraceModel& model, const Workspace& ws,
                                  float visible_top, float visible_bottom) {
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  // Left of the lanes' scroll bar, when they have one.
  const float right =
      std::min(origin_.x + float(ws.view.width_px()), area_max_.x - ImGui::GetStyle().ScrollbarSize) - 4;
  constexpr uint32_t kAxisText = IM_COL32(200, 200, 205, 220);
  constexpr uint32_t kCursor = IM_COL32(255, 230, 120, 255);
  for (const Lane& lane : ws.timeline.lanes()) {
    const bool is_memory = lane.key.kind == LaneKind::kMemory;
    if ((lane.key.kind != LaneKind::kPlot && !is_memory) ||
        !ws.timeline.IsLaneVisible(lane, visible_top, visible_bottom))
      continue;
    const PlotRange range = ws.timeline.VisiblePlotRange(model, ws.view, lane.key);
    if (range.points == 0) continue;
    // Bytes for a memory pool, the value as it is for a plot.
    auto text_of = [is_memory](double v) {
      if (is_memory) return server::FormatBytes(uint64_t(std::max(0.0, v)));
      char text[64];
      std::snprintf(text, sizeof(text), "%.6g", v);
      return std::string(text);
    };
    const float top = origin_.y + lane.y, bottom = top + lane.height;
    const bool flat = !(range.max > range.min);
    const std::string max_text = text_of(range.max), min_text = flat ? std::string() : text_of(range.min);
    // The labels on a backing of the lane's colour, so that the curve under them never
    // makes them unreadable; a flat curve (drawn mid-lane) has one label, beside it.
    auto axis_label = [&](const std::string& text, float y) {
      const ImVec2 size = ImGui::CalcTextSize(text.c_str());
      const ImVec2 at(right - size.x, y);
      draw->AddRectFilled(ImVec2(at.x - 2, at.y), ImVec2(right + 1, at.y + size.y),
                          IM_COL32(30, 31, 34, 215));
      draw->AddText(at, kAxisText, text.c_str());
    };
    axis_label(max_text, flat && !is_memory ? (top + bottom - ImGui::GetFontSize()) / 2 : top);
    if (!flat) axis_label(min_text, bottom - ImGui::GetFontSize());
    draw->AddLine(ImVec2(right + 2, top), ImVec2(right + 2, bottom), IM_COL32(200, 200, 205, 120));
    // A pool's peak: where bytes in use were highest, marked when in view.
    if (const auto peak = is_memory ? ws.timeline.MemoryPeak(lane.key.id) : std::nullopt;
        peak && peak->first >= ws.view.begin_ns() && peak->first <= ws.view.end_ns()) {
      const float x = origin_.x + float(ws.view.NsToX(peak->first));
      const float y = origin_.y + Timeline::CurveY(lane, range, double(peak->second));
      draw->AddLine(ImVec2(x, top), ImVec2(x, bottom), IM_COL32(240, 120, 90, 200));
      draw->AddCircleFilled(ImVec2(x, y), 3, IM_COL32(240, 120, 90, 255));
      const std::string label = "peak " + server::FormatBytes(peak->second);
      // Right of the mark, or left of it where the axis' labels are.
      const float width = ImGui::CalcTextSize(label.c_str()).x;
      const float axis =
          std::max(ImGui::CalcTextSize(max_text.c_str()).x, ImGui::CalcTextSize(min_text.c_str()).x);
      const float label_x = x + 4 + width < right - axis - 4 ? x + 4 : x - 4 - width;
      draw->AddText(ImVec2(label_x, top + ImGui::GetFontSize()), IM_COL32(240, 120, 90, 255), label.c_str());
    }
    // The value under the cursor.
    if (mouse.y >= top && mouse.y <= bottom && mouse.x >= origin_.x && mouse.x <= right) {
      const int64_t ns = ws.view.XToNs(mouse.x - origin_.x);
      if (const auto value = ws.timeline.PlotValueAt(model, lane.key, ns)) {
        const float y = origin_.y + Timeline::CurveY(lane, range, value->second);
        const float x = origin_.x + float(ws.view.NsToX(value->first));
        draw->AddCircleFilled(ImVec2(x, y), 3, kCursor);
        draw->AddText(ImVec2(mouse.x + 8, std::max(top, y - 16)), kCursor, text_of(value->second).c_str());
      }
    }
  }
}

void TimelineWindow::DrawAnnotations(ImDrawList* draw, Workspace& ws, ImVec2 area_min, ImVec2 area_max) {
  // Each annotation in view: a tinted band over the lanes, its colour along the top with
  // its name.
  std::string drawn = "[";
  for (const Annotation& a : ws.annotations) {
    const float x0 = std::max(area_min.x, origin_.x + float(ws.view.NsToX(a.begin_ns)));
    const float x1 = std::min(area_max.x, std::max(x0 + 2, origin_.x + float(ws.view.NsToX(a.end_ns))));
    if (x1 < area_min.x || x0 > area_max.x) continue;
    draw->AddRectFilled(ImVec2(x0, area_min.y), ImVec2(x1, area_max.y), (a.color & 0x00FFFFFF) | 0x22000000);
    const float bar = ImGui::GetFontSize() + 4;
    draw->AddRectFilled(ImVec2(x0, area_min.y), ImVec2(x1, area_min.y + bar),
                        (a.color & 0x00FFFFFF) | 0xC0000000);
    draw->PushClipRect(ImVec2(x0, area_min.y), ImVec2(x1, area_min.y + bar), true);
    draw->AddText(ImVec2(x0 + 3, area_min.y + 2), IM_COL32(15, 15, 18, 255), a.text.c_str());
    draw->PopClipRect();
    if (options_.keep_labels) {
      drawn +=
          (drawn.size() > 1 ? "," : "") + JsonReport().Add("text", a.text).Add("x0", x0).Add("x1", x1).str();
    }
  }
  if (options_.keep_labels) ws.reports["annotations-drawn"] = drawn + "]";
}

void TimelineWindow::DrawRange(ImDrawList* draw, const Workspace& ws, ImVec2 area_min, ImVec2 area_max) {
  if (!ws.range) return;
  const float x0 = std::max(area_min.x, origin_.x + float(ws.view.NsToX(ws.range->first)));
  const float x1 = std::min(area_max.x, origin_.x + float(ws.view.NsToX(ws.range->second)));
  if (x1 < area_min.x || x0 > area_max.x) return;
  draw->AddRectFilled(ImVec2(x0, area_min.y), ImVec2(x1, area_max.y), IM_COL32(120, 160, 255, 40));
  draw->AddLine(ImVec2(x0, area_min.y), ImVec2(x0, area_max.y), IM_COL32(140, 180, 255, 200));
  draw->AddLine(ImVec2(x1, area_min.y), ImVec2(x1, area_max.y), IM_COL32(140, 180, 255, 200));
  const std::string length = server::FormatDuration(double(ws.range->second - ws.range->first));
  draw->AddText(ImVec2(x0 + 4, area_max.y - ImGui::GetFontSize() - 4), IM_COL32(200, 220, 255, 255),
                length.c_str());
}

}  // namespace gnomon::viewer
