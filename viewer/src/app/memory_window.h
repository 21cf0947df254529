// Memory: a pool's allocations alive at a time (the end of the selected range, or the
// middle of the view) or never freed, biggest first, with when and by which thread each
// was made; a row jumps to its allocation. The list is made again only when the pool,
// the question or the pool's events change, and only the rows on screen are drawn.
// Or the pool's call tree (--show memory-tree=POOL): its allocations merged by the call
// stacks they were made with, top-down or bottom-up, over the whole trace or the
// selected range (alive: not freed by its end); built off the UI thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "gnomon/server/samples.h"
#include "gnomon/viewer/allocation_list.h"
#include "gnomon/viewer/background_job.h"
#include "widgets.h"
#include "workspace.h"

namespace gnomon::viewer {

class MemoryWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);
  // Forgets the list and the pool chosen (another trace is shown).
  void Reset() {
    tree_job_.Reset();
    pool_id_ = UINT32_MAX;
    list_ = {};
    list_pool_ = UINT32_MAX;
    list_events_ = UINT64_MAX;
    segments_pool_ = UINT32_MAX;
    map_key_ = {};
    map_blocks_.clear();
    symbolizer_ = std::make_shared<server::Symbolizer>();
  }
  bool is_busy() { return tree_job_.is_busy(); }
  // Lists the allocations that held `address` (hex with 0x, or decimal), in the first
  // pool where any did.
  void ShowAddress(const std::string& address) {
    mode_ = Mode::kAddress;
    std::snprintf(address_text_, sizeof(address_text_), "%s", address.c_str());
    pick_pool_for_address_ = true;
  }
  // Shows the memory map of the pool named `pool`, once it exists (until then the pool
  // with the largest peak).
  void ShowMap(const std::string& pool) {
    mode_ = Mode::kMap;
    pool_name_ = pool;
  }
  // Shows the call tree of the pool named `pool`, once it exists (until then the pool
  // with the largest peak).
  void ShowTree(const std::string& pool) {
    mode_ = Mode::kTree;
    pool_name_ = pool;
  }

 private:
  enum class Mode { kAliveAt, kNeverFreed, kAddress, kTree, kMap };
  struct TreeQuery {
    uint32_t pool_id = 0;
    bool bottom_up = false;
    server::TickRange range;
    uint64_t events = 0;
    friend bool operator==(const TreeQuery& a, const TreeQuery& b) {
      return a.pool_id == b.pool_id && a.bottom_up == b.bottom_up &&
             a.range.begin_tick == b.range.begin_tick && a.range.end_tick == b.range.end_tick &&
             a.events == b.events;
    }
  };
  void DrawTree(const server::TraceModel& model, const server::MemoryPool& pool, Workspace& ws);
  void DrawMap(const server::TraceModel& model, const server::MemoryPool& pool, Workspace& ws);
  // The memory map's address axis: the address ranges the pool's blocks took, merged
  // where they lie close, stacked without the gaps between (made again when the pool's
  // events change).
  struct Segment {
    uint64_t begin = 0, end = 0;
    double above = 0;  // bytes of the segments before it
  };
  std::vector<Segment> segments_;
  // The map's blocks as last drawn, and what they were drawn for.
  struct MapKey {
    uint32_t pool = UINT32_MAX;
    uint64_t events = 0;
    int64_t begin_ns = 0, end_ns = 0;
    float width = 0, height = 0;
    bool operator==(const MapKey&) const = default;
  };
  struct MapBlock {
    float x0, y0, x1, y1;
    bool alive;
    uint64_t allocation;  // its index in the pool
  };
  MapKey map_key_;
  std::vector<MapBlock> map_blocks_;
  size_t map_in_view_ = 0;
  uint32_t segments_pool_ = UINT32_MAX;
  uint64_t segments_events_ = UINT64_MAX;

  uint32_t pool_id_ = UINT32_MAX;  // none chosen yet
  std::string pool_name_;          // chosen by name before the trace is there (--show)
  Mode mode_ = Mode::kAliveAt;
  char address_text_[32] = {};
  bool pick_pool_for_address_ = false;
  bool bottom_up_ = false;
  bool tree_in_range_ = true;
  CountedOnceASecond tree_events_;  // the pool's events the tree counts: a live pool's, once a second
  // Used by the job's thread only (one computation at a time).
  std::shared_ptr<server::Symbolizer> symbolizer_ = std::make_shared<server::Symbolizer>();
  BackgroundJob<TreeQuery, server::AllocationTree> tree_job_;
  AllocationList list_;
  // What list_ answers.
  uint32_t list_pool_ = UINT32_MAX;
  Mode list_mode_ = Mode::kAliveAt;
  uint64_t list_at_tick_ = 0;
  uint64_t list_address_ = 0;
  uint64_t list_events_ = UINT64_MAX;
};

}  // namespace gnomon::viewer
