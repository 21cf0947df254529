#include "clock_window.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "gnomon/server/text.h"

namespace gnomon::viewer {
namespace {

std::string Duration(double ns) { return server::FormatDuration(ns); }

}  // namespace

void ClockWindow::Draw(const server::TraceModel& model) {
  ImGui::SetNextWindowSize(ImVec2(560, 210), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(600, 300), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("GPU clocks", &open)) {
    ImGui::End();
    return;
  }
  ImGui::Text("CPU timer: %.6f GHz from %zu pairs, residual %s rms", 1.0 / model.clock.ns_per_tick(),
              model.clock.pairs().size(), Duration(model.clock.ResidualRmsNs()).c_str());
  if (model.gpu_contexts.empty()) ImGui::TextDisabled("no GPU contexts in this trace");
  for (const auto& [id, context] : model.gpu_contexts) {
    const server::GpuClockModel& clock = context.clock;
    ImGui::Separator();
    ImGui::Text("%s (context %u)", context.label().c_str(), id);
    ImGui::Text(
        "drift %+.3f ppm   samples %zu (%zu rejected)   uncertainty %s   period %llu/%llu ns, %u bits",
        clock.drift_ppm(), clock.sample_count(), clock.rejected_count(),
        clock.current_uncertainty_ns() == UINT32_MAX ? "?" : Duration(clock.current_uncertainty_ns()).c_str(),
        static_cast<unsigned long long>(clock.period().numerator_ns),
        static_cast<unsigned long long>(clock.period().denominator), unsigned{clock.valid_bits()});
    const std::vector<double> residuals = clock.Residuals();
    std::vector<float> values(residuals.begin(), residuals.end());
    ImGui::PushID(int(id));
    if (!values.empty()) {
      const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
      ImGui::PlotLines("##residuals", values.data(), int(values.size()), 0, nullptr, *lo, *hi,
                       ImVec2(-1, 70));
      ImGui::Text("residuals from the fitted line, per calibration: %s .. %s", Duration(*lo).c_str(),
                  Duration(*hi).c_str());
    }
    ImGui::PopID();
  }
  ImGui::End();
}

}  // namespace gnomon::viewer
