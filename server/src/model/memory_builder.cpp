#include "model/memory_builder.h"

#include "gnomon/server/text.h"

namespace gnomon::server {

MemoryBuilder::PoolState* MemoryBuilder::FindPool(uint32_t pool_id) {
  auto it = pools_.find(pool_id);
  if (it != pools_.end()) return &it->second;
  if (model_.memory_pools.size() >= kMaxMemoryPools && !model_.memory_pools.contains(pool_id)) {
    ++model_.diagnostics.invalid_ids;
    return nullptr;
  }
  MemoryPool& pool = model_.memory_pools[pool_id];
  pool.id = pool_id;
  if (pool.name.empty()) pool.name = pool_id == 0 ? "default" : "pool " + std::to_string(pool_id);
  PoolState& state = pools_[pool_id];
  state.pool = &pool;
  return &state;
}

void MemoryBuilder::NamePool(uint32_t pool_id, std::string_view name) {
  if (PoolState* state = FindPool(pool_id)) AssignUtf8(state->pool->name, name);
}

MemoryAllocation* MemoryBuilder::Alloc(uint32_t thread_id, const protocol::MemAlloc& m) {
  PoolState* state = FindPool(m.pool_id);
  if (state == nullptr) return nullptr;
  MemoryPool& pool = *state->pool;
  MemoryAllocation allocation{.address = m.address, .size_bytes = m.size_bytes, .alloc_tick = m.tick};
  allocation.alloc_thread = thread_id;
  if (allocation.size_bytes > kMaxAllocationBytes) {
    ++model_.diagnostics.memory_absurd_sizes;
    allocation.size_bytes = 0;
  }
  // A free that arrived first and came after this allocation in time is its free: the
  // earliest such one.
  auto [first, last] = state->pending.equal_range(allocation.address);
  auto free = last;
  for (auto it = first; it != last; ++it) {
    if (it->second.tick >= allocation.alloc_tick && (free == last || it->second.tick < free->second.tick))
      free = it;
  }
  if (free != last) {
    allocation.free_tick = free->second.tick;
    allocation.free_thread = free->second.thread_id;
    state->pending.erase(free);
    --pool.unmatched_frees;
    ++pool.frees;
    return &pool.allocations.push_back(allocation);
  }
  const uint64_t index = pool.allocations.size();
  MemoryAllocation& kept = pool.allocations.push_back(allocation);
  auto [first_live, last_live] = state->live.equal_range(allocation.address);
  size_t live_here = 0;
  auto oldest = last_live;
  bool doubled = false;
  for (auto it = first_live; it != last_live; ++it) {
    ++live_here;
    const MemoryAllocation& other = pool.allocations[it->second];
    doubled |= other.alloc_thread == thread_id;
    if (oldest == last_live || other.alloc_tick < pool.allocations[oldest->second].alloc_tick) oldest = it;
  }
  if (doubled) ++model_.diagnostics.memory_allocations_over_live;  // the older one stays unfreed
  if (live_here >= kMaxLivePerAddress) state->live.erase(oldest);
  state->live.emplace(allocation.address, index);
  return &kept;
}

void MemoryBuilder::Free(uint32_t thread_id, const protocol::MemFree& m) {
  PoolState* state = FindPool(m.pool_id);
  if (state == nullptr) return;
  MemoryPool& pool = *state->pool;
  const uint64_t address = m.address;
  const uint64_t tick = m.tick;
  // The latest live allocation of the address made before the free.
  auto [first_live, last_live] = state->live.equal_range(address);
  auto best = last_live;
  for (auto it = first_live; it != last_live; ++it) {
    const uint64_t made = pool.allocations[it->second].alloc_tick;
    if (made <= tick && (best == last_live || made > pool.allocations[best->second].alloc_tick)) best = it;
  }
  if (best != last_live) {
    MemoryAllocation& allocation = pool.allocations[best->second];
    allocation.free_tick = tick;
    allocation.free_thread = thread_id;
    state->live.erase(best);
    ++pool.frees;
    return;
  }
  // Its allocation has not arrived (or never will: made before profiling started).
  ++pool.unmatched_frees;
  if (state->pending.size() < kMaxPendingFrees && state->pending.count(address) < kMaxPendingFreesPerAddress)
    state->pending.emplace(address, PendingFree{tick, thread_id});
}

}  // namespace gnomon::server
