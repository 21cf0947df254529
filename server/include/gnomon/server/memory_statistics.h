// What a trace's memory pools hold: per pool, the allocations and frees, the peak of
// bytes in use, and what was never freed; and the bytes in use over time, for a plot.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::server {

struct MemoryPoolStatistics {
  uint32_t pool_id = 0;
  std::string name;
  uint64_t allocations = 0;
  uint64_t frees = 0;               // matched to an allocation
  uint64_t unmatched_frees = 0;     // of pointers no allocation explains
  uint64_t allocated_bytes = 0;     // in all, saturating
  uint64_t peak_bytes = 0;          // most bytes in use at once
  uint64_t peak_tick = 0;           // when that peak was first reached
  uint64_t leaked_allocations = 0;  // never freed by the end of the trace
  uint64_t leaked_bytes = 0;
};

// One entry per pool, in pool order (the default pool first). O(n log n) in the
// allocations.
std::vector<MemoryPoolStatistics> ComputeMemoryStatistics(const TraceModel& model);

// The pool's bytes in use after each allocation and free, in time order: (tick, bytes).
// An allocation and a free at one tick count the allocation first.
std::vector<std::pair<uint64_t, uint64_t>> MemoryUsage(const MemoryPool& pool);

}  // namespace gnomon::server
