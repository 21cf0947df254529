// Debug: the viewer's own state, as ImGui's Metrics window is for ImGui: the session,
// the rates it receives at, the model's size, decode problems, the clocks, frame time.
#pragma once

#include <chrono>
#include <cstdint>

#include "workspace.h"

namespace gnomon::viewer {

class DebugWindow {
 public:
  bool open = false;
  // Updates the rates (once a second); call every frame, open or not.
  void Measure(const server::TraceModel& model, const Session& session);
  void Draw(const server::TraceModel& model, const Session& session, const Workspace& ws);
  // What the session received in the last second measured.
  double bytes_per_s() const { return bytes_per_s_; }
  double zones_per_s() const { return zones_per_s_; }

 private:
  std::chrono::steady_clock::time_point rate_time_ = std::chrono::steady_clock::now();
  uint64_t rate_bytes_ = 0;
  uint64_t rate_zones_ = 0;
  double bytes_per_s_ = 0;
  double zones_per_s_ = 0;
};

}  // namespace gnomon::viewer
