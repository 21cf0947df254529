#include "clock_window.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gnomon/server/report.h"
#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

std::string Duration(double ns) { return server::FormatDuration(ns); }

}  // namespace

void ClockWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("GPU clocks");
  if (!ImGui::Begin("GPU clocks", &open)) {
    ImGui::End();
    return;
  }
  ImGui::Text("CPU timer: %.6f GHz from %zu pairs, residual %s rms", 1.0 / model.clock.ns_per_tick(),
              model.clock.pairs().size(), Duration(model.clock.ResidualRmsNs()).c_str());
  if (model.gpu_contexts.empty()) ImGui::TextDisabled("no GPU contexts in this trace");
  std::string contexts_json = "[";
  for (const auto& [id, context] : model.gpu_contexts) {
    const server::GpuClockModel& clock = context.clock;
    ImGui::Separator();
    ImGui::Text("%s (context %u)", context.label().c_str(), id);
    auto bound = [](uint32_t ns) { return ns == UINT32_MAX ? std::string("?") : Duration(ns); };
    ImGui::Text("drift %+.3f ppm   samples %zu (%zu rejected)   period %llu/%llu ns, %u bits",
                clock.drift_ppm(), clock.sample_count(), clock.rejected_count(),
                static_cast<unsigned long long>(clock.period().numerator_ns),
                static_cast<unsigned long long>(clock.period().denominator), unsigned{clock.valid_bits()});
    ImGui::Text("placement: +/- %s relative (from the calibrations' scatter), %s absolute",
                bound(clock.current_relative_ns()).c_str(),
                server::FormatBound(clock.current_early_ns(), clock.current_late_ns()).c_str());
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip(
          "relative: how far a GPU time can be off against other GPU times of this context and\n"
          "the CPU clock's read jitter; absolute: the offset to the CPU timeline that no\n"
          "calibration removes (the driver's stated bound), narrowed on either side where\n"
          "brackets (GPU times seen from the CPU) prove it. See docs/gpu-timestamps.md.");
    }
    const server::GpuClockModel::OffsetRange range = clock.offset_range();
    if (range.brackets > 0) {
      ImGui::TextWrapped("brackets: %zu GPU time(s) seen from the CPU, %s", range.brackets,
                         server::DescribeBrackets(range).c_str());
    }
    if (clock.flags().total() > 0) {
      ImGui::TextColored(
          ImVec4(1.0f, 0.75f, 0.3f, 1.0f),
          "%zu calibration(s) flagged: %zu stated 0 ns, %zu absurd, %zu contradicted by the scatter, %zu set "
          "aside as outliers",
          clock.flags().total(), clock.flags().zero_uncertainty, clock.flags().absurd_uncertainty,
          clock.flags().contradicted, clock.flags().set_aside);
    }
    if (clock.flags().bad_brackets > 0) {
      ImGui::TextColored(ImVec4(1.0f, 0.75f, 0.3f, 1.0f),
                         "%zu bracket(s) rejected (no side known, ending before they begin, or past the "
                         "4,096 waiting beyond the calibrations)",
                         clock.flags().bad_brackets);
    }
    const std::vector<double> residuals = clock.Residuals();
    ImGui::PushID(int(id));
    JsonReport context_report;
    context_report.Add("name", context.label())
        .Add("calibrations", double(residuals.size()))
        .Add("relative_bound_ns", double(clock.current_relative_ns()))
        .Add("absolute_bound_ns", double(std::max(clock.current_early_ns(), clock.current_late_ns())))
        .Add("absolute_early_ns", double(clock.current_early_ns()))
        .Add("absolute_late_ns", double(clock.current_late_ns()))
        .Add("brackets", double(range.brackets))
        .Add("bracket_correction_ns", range.correction_ns())
        .Add("flagged_calibrations", double(clock.flags().total()));
    if (residuals.size() < 2) {
      ImGui::TextDisabled("%zu calibration(s): residuals need two or more", residuals.size());
    } else {
      const auto [lo_at, hi_at] = std::minmax_element(residuals.begin(), residuals.end());
      const auto lo = lo_at, hi = hi_at;  // a lambda below takes them
      const double span = std::max(*hi - *lo, 1.0);
      const ImVec2 at = ImGui::GetCursorScreenPos();
      const float w = std::max(40.0f, ImGui::GetContentRegionAvail().x), h = Scaled(80);
      ImGui::InvisibleButton("##residuals", ImVec2(w, h));
      ImDrawList* draw = ImGui::GetWindowDrawList();
      draw->AddRectFilled(at, ImVec2(at.x + w, at.y + h), IM_COL32(22, 23, 26, 255));
      auto y_of = [&](double v) { return at.y + h - 3 - float((v - *lo) / span) * (h - 6); };
      if (*lo < 0 && *hi > 0)
        draw->AddLine(ImVec2(at.x, y_of(0)), ImVec2(at.x + w, y_of(0)), IM_COL32(255, 255, 255, 60));
      ImVec2 previous;
      float top = at.y + h, bottom = at.y;
      for (size_t i = 0; i < residuals.size(); ++i) {
        const ImVec2 p(at.x + w * float(i) / float(residuals.size() - 1), y_of(residuals[i]));
        if (i > 0) draw->AddLine(previous, p, IM_COL32(240, 180, 80, 255), 1.5f);
        draw->AddCircleFilled(p, 2, IM_COL32(240, 180, 80, 255));
        previous = p;
        top = std::min(top, p.y);
        bottom = std::max(bottom, p.y);
      }
      char plot[160];
      std::snprintf(plot, sizeof(plot), "{\"x0\":%.1f,\"y0\":%.1f,\"x1\":%.1f,\"y1\":%.1f}", at.x, at.y,
                    at.x + w, at.y + h);
      context_report.AddRaw("plot", plot).Add("points_top", top).Add("points_bottom", bottom);
      if (ImGui::IsItemHovered()) {
        const size_t i = std::min(
            residuals.size() - 1,
            size_t(std::llround((ImGui::GetIO().MousePos.x - at.x) / w * float(residuals.size() - 1))));
        ImGui::SetTooltip("calibration %zu: %s from the fitted line", i + 1, Duration(residuals[i]).c_str());
      }
      ImGui::Text("residuals from the fitted line, per calibration: %s .. %s", Duration(*lo).c_str(),
                  Duration(*hi).c_str());
    }
    ImGui::PopID();
    contexts_json += (contexts_json.size() > 1 ? "," : "") + context_report.str();
  }
  ws.reports["gpu-clocks"] = JsonReport().AddRaw("contexts", contexts_json + "]").str();
  ImGui::End();
}

}  // namespace gnomon::viewer
