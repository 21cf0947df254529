#include "debug_window.h"

#include <imgui.h>

namespace gnomon::viewer {

void DebugWindow::Measure(const server::TraceModel& model, const Session& session) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - rate_time_).count();
  if (elapsed < 1.0) return;
  bytes_per_s_ = double(session.bytes_received() - rate_bytes_) / elapsed;
  zones_per_s_ = double(model.zone_count - rate_zones_) / elapsed;
  rate_bytes_ = session.bytes_received();
  rate_zones_ = model.zone_count;
  rate_time_ = now;
}

void DebugWindow::Draw(const server::TraceModel& model, const Session& session, const Workspace& ws) {
  ws.Place("Debug");
  if (!ImGui::Begin("Debug", &open)) {
    ImGui::End();
    return;
  }
  const server::Diagnostics& d = model.diagnostics;
  ImGui::Text("Session      %s (%s)", session.title().c_str(), session.is_live() ? "live" : "file");
  ImGui::Text("State        %s", session.StateText().c_str());
  ImGui::Text("Received     %.2f MB, %.2f MB/s, %.0f zones/s", double(session.bytes_received()) / 1e6,
              bytes_per_s_ / 1e6, zones_per_s_);
  ImGui::Text("Zones        %llu (%llu unfinished), %.1f MB in zone arrays",
              static_cast<unsigned long long>(model.zone_count),
              static_cast<unsigned long long>(model.open_zone_count), double(model.zone_bytes()) / 1e6);
  ImGui::Text("Dropped      %llu events (by the program)",
              static_cast<unsigned long long>(d.client_dropped_events));
  ImGui::Text("Decode       %llu ends without begin, %llu orphan attributes, %llu invalid ids",
              static_cast<unsigned long long>(d.zone_ends_without_begin),
              static_cast<unsigned long long>(d.attributes_without_zone),
              static_cast<unsigned long long>(d.invalid_ids));
  ImGui::Text("GPU          %llu unknown-context events, %llu rejected calibrations",
              static_cast<unsigned long long>(d.gpu_events_for_unknown_context),
              static_cast<unsigned long long>(d.gpu_rejected_calibrations));
  ImGui::Text("CPU clock    %zu pairs, %.6f GHz", model.clock.pairs().size(),
              1.0 / model.clock.ns_per_tick());
  ImGui::Text("Frame        %.1f ms (%.0f fps)", 1000.0 / ImGui::GetIO().Framerate, ImGui::GetIO().Framerate);
  if (!session.error().empty()) ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", session.error().c_str());
  ImGui::End();
}

}  // namespace gnomon::viewer
