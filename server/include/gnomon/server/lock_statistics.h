// Per lock: how often it was taken, how often a thread had to wait, and how long the
// waits and holds were.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::server {

struct LockStatistics {
  uint32_t lock_id = 0;
  std::string name;
  uint64_t acquisitions = 0;
  uint64_t contended = 0;  // acquisitions that waited
  uint64_t shared = 0;     // readers' holds
  uint32_t threads = 0;    // distinct threads that held it
  int64_t wait_total_ns = 0;
  int64_t wait_max_ns = 0;
  int64_t hold_total_ns = 0;  // of released holds
  int64_t hold_max_ns = 0;
};

// One entry per lock, most waited-for first (then by id).
std::vector<LockStatistics> ComputeLockStatistics(const TraceModel& model);

}  // namespace gnomon::server
