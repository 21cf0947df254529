// Which allocations of a memory pool to list: those alive at a time (made at or before
// it, freed after it or never) or those never freed, biggest first.
#pragma once

#include <cstdint>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::viewer {

struct AllocationList {
  std::vector<uint64_t> indexes;  // into pool.allocations, biggest first (then oldest)
  uint64_t bytes = 0;             // of them all, saturating
};

// `never_freed`: the allocations with no free (leaks, or alive at the end of a live
// capture); otherwise those alive at `at_tick`. O(n log n) in the pool's allocations.
AllocationList ListAllocations(const server::MemoryPool& pool, bool never_freed, uint64_t at_tick);

// The allocations that held `address` (it lay in their bytes), at any time, oldest first.
AllocationList ListAllocationsHolding(const server::MemoryPool& pool, uint64_t address);

}  // namespace gnomon::viewer
