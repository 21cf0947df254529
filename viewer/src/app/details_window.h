// Zone details: the selected CPU or GPU zone, its times to the nanosecond, its share of
// its parent, where its time goes (its children by location), its parent and children
// (each a click away), the messages and allocations its thread made inside it, and its
// GPU counters when it has some; or the selected hold of a lock, with its wait. Open while something is
// selected; closing it clears the selection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "workspace.h"

namespace gnomon::viewer {

class DetailsWindow {
 public:
  void Draw(const server::TraceModel& model, Workspace& ws);
  // Forgets what belonged to the previous trace.
  void Reset() { family_.reset(); }

 private:
  // The family of the selected CPU zone, and what its thread did inside it, found once
  // per selection.
  struct Family {
    LaneKey lane;
    uint32_t index = 0;
    // What the model held when it was found: a live trace grows, and it is found again.
    uint64_t model_zones = 0;
    size_t model_messages = 0;
    std::optional<uint32_t> parent;
    int64_t parent_ns = -1;          // the parent's duration (-1: none, or unfinished)
    std::vector<uint32_t> children;  // the first kMaxChildren
    size_t child_count = 0;
    int64_t children_ns = 0;
    struct ChildGroup {
      uint32_t location = 0;
      uint64_t count = 0;
      int64_t total_ns = 0;
    };
    std::vector<ChildGroup> child_groups;  // the children by location, longest total first
    std::vector<uint32_t> messages;        // the first kMaxListed of the thread's inside it (model.messages)
    size_t message_count = 0;
    struct Allocation {
      uint32_t pool = 0;
      size_t index = 0;
    };
    std::vector<Allocation> allocations;  // the first kMaxListed the thread made inside it
    size_t allocation_count = 0;
    uint64_t allocated_bytes = 0;
  };
  static constexpr size_t kMaxChildren = 200;
  static constexpr size_t kMaxListed = 50;
  static Family FindFamily(const server::TraceModel& model, const server::ThreadTimeline& thread,
                           uint32_t index);
  static std::string ChildGroupsJson(const server::TraceModel& model, const Family& family);
  // The messages and allocations inside the zone, each a click away.
  void DrawInside(const server::TraceModel& model, Workspace& ws);
  void DrawCpuZone(const server::TraceModel& model, Workspace& ws, const server::ThreadTimeline& thread,
                   uint32_t index);
  void DrawGpuZone(const server::TraceModel& model, const server::GpuContextTimeline& context,
                   uint32_t index);
  void DrawLockHold(const server::TraceModel& model, const server::Lock& lock, uint32_t index);
  std::optional<Family> family_;
};

}  // namespace gnomon::viewer
