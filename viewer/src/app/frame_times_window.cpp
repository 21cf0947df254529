#include "frame_times_window.h"

#include <imgui.h>

#include <algorithm>

#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

constexpr size_t kBins = 60;
std::string Duration(double ns) { return server::FormatDuration(ns); }

}  // namespace

bool FrameTimesWindow::ShowSeries(const server::TraceModel& model, const std::string& name) {
  for (const auto& entry : model.frames) {
    if (model.FrameSeriesName(entry.first) == (name.empty() ? "main" : name)) {
      series_ = entry.first;
      frames_seen_ = SIZE_MAX;
      return true;
    }
  }
  return false;
}

void FrameTimesWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("Frame times");
  if (!ImGui::Begin("Frame times", &open)) {
    ImGui::End();
    return;
  }
  if (!wanted_series_.empty() && ShowSeries(model, wanted_series_)) wanted_series_.clear();
  auto shown = model.frames.find(series_);
  if (model.frames.size() > 1) {  // a choice of series
    ImGui::SetNextItemWidth(Scaled(220));
    if (ImGui::BeginCombo("series", model.FrameSeriesName(series_).c_str())) {
      for (const auto& [id, series] : model.frames) {
        const std::string label =
            model.FrameSeriesName(id) + " (" + std::to_string(series.frame_count()) + " frames)";
        if (ImGui::Selectable(label.c_str(), id == series_)) {
          series_ = id;
          frames_seen_ = SIZE_MAX;
        }
      }
      ImGui::EndCombo();
    }
    shown = model.frames.find(series_);
  }
  const size_t frames = shown == model.frames.end() ? 0 : shown->second.frame_count();
  if (frames != frames_seen_) {  // frames are few: recomputed as they come
    times_ = ComputeFrameTimes(model, series_, kBins);
    frames_seen_ = frames;
  }
  if (times_.frame_ns.empty()) {
    ImGui::TextDisabled("no frames in this trace (GNOMON_FRAME_MARK marks them)");
    ImGui::End();
    return;
  }
  const FrameTarget& target = ws.frame_target;
  ImGui::Text("%zu frames   mean %s   p50 %s   p90 %s   p99 %s   max %s", times_.frame_ns.size(),
              Duration(times_.mean_ns).c_str(), Duration(double(times_.p50_ns)).c_str(),
              Duration(double(times_.p90_ns)).c_str(), Duration(double(times_.p99_ns)).c_str(),
              Duration(double(times_.max_ns)).c_str());
  // The histogram, with a line at each percentile.
  const ImVec2 at = ImGui::GetCursorScreenPos();
  std::vector<HistogramBar> bars;
  const auto hovered = Histogram("##frame-histogram", times_.histogram, times_.tallest,
                                 ImVec2(-1, Scaled(90)), IM_COL32(90, 170, 110, 255), nullptr, &bars);
  const float width = ImGui::GetItemRectSize().x;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float line_height = ImGui::GetFontSize();
  int row = 0;
  for (const auto& [ns, name] :
       {std::pair{times_.p50_ns, "p50"}, std::pair{times_.p90_ns, "p90"}, std::pair{times_.p99_ns, "p99"}}) {
    const float x = at.x + float(times_.Fraction(ns)) * width;
    draw->AddLine(ImVec2(x, at.y), ImVec2(x, at.y + Scaled(90)), IM_COL32(255, 255, 255, 160));
    // Each label a line lower than the one before, so close percentiles stay readable.
    draw->AddText(ImVec2(x + 2, at.y + float(row++) * line_height), IM_COL32(230, 230, 230, 255), name);
  }
  if (hovered) {
    ImGui::SetTooltip("%s .. %s: %llu frames", Duration(times_.EdgeNs(*hovered)).c_str(),
                      Duration(times_.EdgeNs(*hovered + 1)).c_str(),
                      static_cast<unsigned long long>(times_.histogram[*hovered]));
  }
  ImGui::Text("frame times %s .. %s, linear", Duration(double(times_.min_ns)).c_str(),
              Duration(double(times_.max_ns)).c_str());
  // Every frame in order, a bar each (the tallest of those sharing a pixel).
  ImGui::TextUnformatted("every frame, in order:");
  const ImVec2 graph_at = ImGui::GetCursorScreenPos();
  const float graph_w = std::max(40.0f, ImGui::GetContentRegionAvail().x);
  const float graph_h = std::max(Scaled(60), ImGui::GetContentRegionAvail().y - 4);
  ImGui::InvisibleButton("##frame-graph", ImVec2(graph_w, graph_h));
  draw->AddRectFilled(graph_at, ImVec2(graph_at.x + graph_w, graph_at.y + graph_h),
                      IM_COL32(22, 23, 26, 255));
  const double top_ns = std::max<double>(double(times_.max_ns), 2.4 * double(target.ns));
  auto y_of = [&](double ns) { return graph_at.y + graph_h - float(ns / top_ns) * (graph_h - 2); };
  const size_t n = times_.frame_ns.size();
  const size_t columns = std::min<size_t>(n, size_t(graph_w));
  const float bar_w = graph_w / float(columns);
  size_t colored[3] = {0, 0, 0};
  for (size_t c = 0; c < columns; ++c) {
    const size_t first = c * n / columns, last = std::max(first + 1, (c + 1) * n / columns);
    int64_t worst = 0;
    for (size_t f = first; f < last; ++f) worst = std::max(worst, times_.frame_ns[f]);
    const uint32_t color = target.Color(worst);
    colored[size_t(target.Grade(worst))]++;
    const float x0 = graph_at.x + float(c) * bar_w;
    draw->AddRectFilled(ImVec2(x0, y_of(double(worst))),
                        ImVec2(std::max(x0 + 1, x0 + bar_w - 1), graph_at.y + graph_h), color);
  }
  for (const int64_t ns : {target.ns, 2 * target.ns}) {
    const float y = y_of(double(ns));
    draw->AddLine(ImVec2(graph_at.x, y), ImVec2(graph_at.x + graph_w, y), IM_COL32(255, 255, 255, 120));
    draw->AddText(ImVec2(graph_at.x + 2, y - ImGui::GetFontSize() - 1), IM_COL32(220, 220, 220, 255),
                  Duration(double(ns)).c_str());
  }
  if (ImGui::IsItemHovered()) {
    const size_t frame =
        std::min(n - 1, size_t((ImGui::GetIO().MousePos.x - graph_at.x) / graph_w * float(n)));
    ImGui::SetTooltip("frame %zu: %s (click to show it)", frame + 1,
                      Duration(double(times_.frame_ns[frame])).c_str());
    if (ImGui::IsItemClicked() && shown != model.frames.end() && frame < shown->second.frame_count()) {
      const auto [begin, end] = shown->second.Frame(frame);
      ws.JumpTo(Workspace::RelNs(model, begin), Workspace::RelNs(model, end));
    }
  }
  ws.reports["frame-histogram"] = JsonReport()
                                      .Add("series", model.FrameSeriesName(series_))
                                      .Add("target_ns", double(target.ns))
                                      .Add("frames", double(n))
                                      .Add("p50_ns", double(times_.p50_ns))
                                      .Add("p99_ns", double(times_.p99_ns))
                                      .Add("green", double(colored[0]))
                                      .Add("yellow", double(colored[1]))
                                      .Add("red", double(colored[2]))
                                      .AddBars("bars", bars)
                                      .str();
  ImGui::End();
}

}  // namespace gnomon::viewer
