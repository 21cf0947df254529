#include "gnomon/server/memory_statistics.h"

#include <algorithm>

namespace gnomon::server {
namespace {

uint64_t SaturatedAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

}  // namespace

std::vector<std::pair<uint64_t, uint64_t>> MemoryUsage(const MemoryPool& pool) {
  struct Change {
    uint64_t tick;
    bool is_free;
    uint64_t bytes;
  };
  std::vector<Change> changes;
  changes.reserve(pool.allocations.size() * 2);
  for (size_t i = 0; i < pool.allocations.size(); ++i) {
    const MemoryAllocation& a = pool.allocations[i];
    changes.push_back({a.alloc_tick, false, a.size_bytes});
    if (a.is_freed()) changes.push_back({a.free_tick, true, a.size_bytes});
  }
  std::sort(changes.begin(), changes.end(), [](const Change& x, const Change& y) {
    return x.tick != y.tick ? x.tick < y.tick : x.is_free < y.is_free;
  });
  std::vector<std::pair<uint64_t, uint64_t>> usage;
  usage.reserve(changes.size());
  uint64_t bytes = 0;
  for (const Change& c : changes) {
    // Frees pair with allocations made before them, so bytes never goes below 0; a
    // saturated sum is kept from wrapping all the same.
    bytes = c.is_free ? bytes - std::min(bytes, c.bytes) : SaturatedAdd(bytes, c.bytes);
    usage.emplace_back(c.tick, bytes);
  }
  return usage;
}

std::vector<MemoryPoolStatistics> ComputeMemoryStatistics(const TraceModel& model) {
  std::vector<MemoryPoolStatistics> result;
  for (const auto& [id, pool] : model.memory_pools) {
    MemoryPoolStatistics s;
    s.pool_id = id;
    s.name = pool.name;
    s.allocations = pool.allocations.size();
    s.frees = pool.frees;
    s.unmatched_frees = pool.unmatched_frees;
    for (size_t i = 0; i < pool.allocations.size(); ++i) {
      const MemoryAllocation& a = pool.allocations[i];
      s.allocated_bytes = SaturatedAdd(s.allocated_bytes, a.size_bytes);
      if (!a.is_freed()) {
        ++s.leaked_allocations;
        s.leaked_bytes = SaturatedAdd(s.leaked_bytes, a.size_bytes);
      }
    }
    for (const auto& [tick, bytes] : MemoryUsage(pool)) {
      if (bytes > s.peak_bytes) {
        s.peak_bytes = bytes;
        s.peak_tick = tick;
      }
    }
    result.push_back(std::move(s));
  }
  return result;
}

}  // namespace gnomon::server
