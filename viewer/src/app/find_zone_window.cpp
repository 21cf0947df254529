#include "find_zone_window.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/text.h"

namespace gnomon::viewer {
namespace {

std::string Duration(double ns) { return server::FormatDuration(ns); }

}  // namespace

void FindZoneWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  if (ws.find_request) {
    location_ = ws.find_request->location;
    gpu_ = ws.find_request->gpu;
    open = true;
  }
  if (!open) return;
  ImGui::SetNextWindowSize(ImVec2(520, 360), ImGuiCond_FirstUseEver);
  const bool shown = ImGui::Begin("Find zone", &open);
  if (!open) ws.find_request.reset();
  if (!shown) {
    ImGui::End();
    return;
  }
  struct Occurrence {
    LaneKey lane;
    uint32_t index;
    int64_t begin_ns;
    int64_t duration_ns;
  };
  std::vector<Occurrence> found;
  if (!gpu_) {
    for (const auto& thread : model.threads) {
      for (size_t i = 0; i < thread.zones.size(); ++i) {
        const auto& z = thread.zones[i];
        if (z.source_location != location_ || z.is_open()) continue;
        found.push_back({{LaneKind::kThread, thread.id},
                         uint32_t(i),
                         Workspace::RelNs(model, z.begin_tick),
                         model.DurationNs(z.begin_tick, z.end_tick)});
      }
    }
  } else {
    for (const auto& [id, context] : model.gpu_contexts) {
      for (size_t i = 0; i < context.zones.size(); ++i) {
        const auto& z = context.zones[i];
        if (z.source_location != location_ || !z.is_timed()) continue;
        const Span span = ws.timeline.GpuSpan(id, uint32_t(i));
        found.push_back({{LaneKind::kGpu, id}, uint32_t(i), span.begin_ns, span.end_ns - span.begin_ns});
      }
    }
  }
  ImGui::Text("%s: %zu occurrences", model.Location(location_).name.c_str(), found.size());
  if (!found.empty()) {
    // A histogram of durations on a log scale.
    int64_t lo = found[0].duration_ns, hi = lo;
    for (const auto& o : found) {
      lo = std::min(lo, o.duration_ns);
      hi = std::max(hi, o.duration_ns);
    }
    constexpr int kBins = 60;
    float bins[kBins] = {};
    const double log_lo = std::log(double(std::max<int64_t>(lo, 1)));
    const double log_hi = std::log(double(std::max<int64_t>(hi, 2)));
    for (const auto& o : found) {
      const double v = std::log(double(std::max<int64_t>(o.duration_ns, 1)));
      const int bin =
          log_hi > log_lo ? std::clamp(int((v - log_lo) / (log_hi - log_lo) * (kBins - 1)), 0, kBins - 1) : 0;
      bins[bin] += 1;
    }
    ImGui::PlotHistogram("##histogram", bins, kBins, 0, nullptr, 0, FLT_MAX, ImVec2(-1, 80));
    ImGui::Text("%s  ...  %s (log scale)", Duration(double(lo)).c_str(), Duration(double(hi)).c_str());
    if (ImGui::BeginTable("occurrences", 3, ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg)) {
      ImGui::TableSetupColumn("Start");
      ImGui::TableSetupColumn("Duration");
      ImGui::TableSetupColumn("Lane");
      ImGui::TableHeadersRow();
      ImGuiListClipper clipper;
      clipper.Begin(int(found.size()));
      while (clipper.Step()) {
        for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
          const Occurrence& o = found[size_t(row)];
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          ImGui::PushID(row);
          if (ImGui::Selectable(Duration(double(o.begin_ns)).c_str(), false,
                                ImGuiSelectableFlags_SpanAllColumns)) {
            ws.JumpTo(o.begin_ns, o.begin_ns + o.duration_ns);
            ws.selected = Selection{o.lane, gpu_ ? DrawItem::Kind::kGpuZone : DrawItem::Kind::kZone, o.index};
          }
          ImGui::PopID();
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(Duration(double(o.duration_ns)).c_str());
          ImGui::TableNextColumn();
          ImGui::Text("%s %u", o.lane.kind == LaneKind::kGpu ? "GPU" : "thread", o.lane.id);
        }
      }
      ImGui::EndTable();
    }
  }
  ImGui::End();
}

}  // namespace gnomon::viewer
