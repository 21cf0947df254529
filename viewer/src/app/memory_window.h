// Memory: a pool's allocations alive at a time (the end of the selected range, or the
// middle of the view) or never freed, biggest first, with when and by which thread each
// was made; a row jumps to its allocation. The list is made again only when the pool,
// the question or the pool's events change, and only the rows on screen are drawn.
#pragma once

#include <cstdint>

#include "gnomon/viewer/allocation_list.h"
#include "workspace.h"

namespace gnomon::viewer {

class MemoryWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);
  // Forgets the list and the pool chosen (another trace is shown).
  void Reset() {
    pool_id_ = UINT32_MAX;
    list_ = {};
    list_pool_ = UINT32_MAX;
    list_events_ = UINT64_MAX;
  }

 private:
  uint32_t pool_id_ = UINT32_MAX;  // none chosen yet
  bool never_freed_ = false;
  AllocationList list_;
  // What list_ answers.
  uint32_t list_pool_ = UINT32_MAX;
  bool list_never_freed_ = false;
  uint64_t list_at_tick_ = 0;
  uint64_t list_events_ = UINT64_MAX;
};

}  // namespace gnomon::viewer
