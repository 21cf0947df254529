#include "gnomon/viewer/allocation_list.h"

#include <algorithm>

namespace gnomon::viewer {

AllocationList ListAllocations(const server::MemoryPool& pool, bool never_freed, uint64_t at_tick) {
  AllocationList list;
  for (size_t i = 0; i < pool.allocations.size(); ++i) {
    const server::MemoryAllocation& a = pool.allocations[i];
    const bool listed =
        never_freed ? !a.is_freed() : a.alloc_tick <= at_tick && (!a.is_freed() || a.free_tick > at_tick);
    if (!listed) continue;
    list.indexes.push_back(i);
    list.bytes = a.size_bytes > UINT64_MAX - list.bytes ? UINT64_MAX : list.bytes + a.size_bytes;
  }
  std::sort(list.indexes.begin(), list.indexes.end(), [&pool](uint64_t x, uint64_t y) {
    const server::MemoryAllocation& a = pool.allocations[x];
    const server::MemoryAllocation& b = pool.allocations[y];
    return a.size_bytes != b.size_bytes ? a.size_bytes > b.size_bytes : a.alloc_tick < b.alloc_tick;
  });
  return list;
}

AllocationList ListAllocationsHolding(const server::MemoryPool& pool, uint64_t address) {
  AllocationList list;
  for (size_t i = 0; i < pool.allocations.size(); ++i) {
    const server::MemoryAllocation& a = pool.allocations[i];
    if (address < a.address || address - a.address >= std::max<uint64_t>(a.size_bytes, 1)) continue;
    list.indexes.push_back(i);
    list.bytes = a.size_bytes > UINT64_MAX - list.bytes ? UINT64_MAX : list.bytes + a.size_bytes;
  }
  std::stable_sort(list.indexes.begin(), list.indexes.end(), [&pool](uint64_t x, uint64_t y) {
    return pool.allocations[x].alloc_tick < pool.allocations[y].alloc_tick;
  });
  return list;
}

}  // namespace gnomon::viewer
