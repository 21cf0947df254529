// Zone details: the selected CPU or GPU zone, its times to the nanosecond, its parent and
// children (each a click away), and its GPU counters when it has some; or the selected
// hold of a lock, with its wait. Open while something is selected; closing it clears
// the selection.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "workspace.h"

namespace gnomon::viewer {

class DetailsWindow {
 public:
  void Draw(const server::TraceModel& model, Workspace& ws);

 private:
  // The family of the selected CPU zone, found once per selection.
  struct Family {
    LaneKey lane;
    uint32_t index = 0;
    std::optional<uint32_t> parent;
    std::vector<uint32_t> children;  // the first kMaxChildren
    size_t child_count = 0;
    int64_t children_ns = 0;
  };
  static constexpr size_t kMaxChildren = 200;
  void DrawCpuZone(const server::TraceModel& model, Workspace& ws, const server::ThreadTimeline& thread,
                   uint32_t index);
  void DrawGpuZone(const server::TraceModel& model, const server::GpuContextTimeline& context,
                   uint32_t index);
  void DrawLockHold(const server::TraceModel& model, const server::Lock& lock, uint32_t index);
  std::optional<Family> family_;
};

}  // namespace gnomon::viewer
