// Pairs a stream's allocations with their frees, per memory pool (TraceBuilder's part
// for MemAlloc and MemFree).
//
// Threads' messages reach the server interleaved by chunks, not in time order: a free
// made on one thread can arrive before the allocation another thread made just before
// it. A free pairs with a live allocation of its address that came first in time;
// otherwise it waits (bounded) for an allocation that comes before it in
// time, and counts as unmatched until then. For the same reason one address can be
// live several times over (thread A's free of it has not arrived when thread B's
// allocation does): a free pairs with the latest live allocation of its address made
// before it. An allocation of an address its own thread still holds is a double
// allocation: counted, the older one stays unfreed. Everything odd is counted in the
// model, never fatal.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/seeded_hash.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

// Most pools one program may name; events for more count as invalid ids.
inline constexpr uint32_t kMaxMemoryPools = 1u << 12;
// Frees held per pool (and per address) while they wait for their allocation; later
// ones stay unmatched.
inline constexpr size_t kMaxPendingFrees = 1u << 20;
inline constexpr size_t kMaxPendingFreesPerAddress = 16;
// Live allocations kept per address; past it the oldest is let go (it stays unfreed).
inline constexpr size_t kMaxLivePerAddress = 16;
// A larger size is not a real allocation: counted, and taken as 0.
inline constexpr uint64_t kMaxAllocationBytes = uint64_t{1} << 48;

class MemoryBuilder {
 public:
  explicit MemoryBuilder(TraceModel& model) : model_(model) {}

  // Returns where the allocation is (its pool, its index), or nullptr when it was not
  // kept (a pool past kMaxMemoryPools).
  MemoryAllocation* Alloc(uint32_t thread_id, const protocol::MemAlloc& m);
  void Free(uint32_t thread_id, const protocol::MemFree& m);
  void NamePool(uint32_t pool_id, std::string_view name);

 private:
  struct PendingFree {
    uint64_t tick;
    uint32_t thread_id;
  };
  struct PoolState {
    MemoryPool* pool = nullptr;                                          // in the model (a std::map: stable)
    std::unordered_multimap<uint64_t, uint64_t, SeededHash> live;        // address -> allocation indexes
    std::unordered_multimap<uint64_t, PendingFree, SeededHash> pending;  // address -> frees awaiting it
  };
  // The pool's state, made at first use; nullptr past kMaxMemoryPools (counted).
  PoolState* FindPool(uint32_t pool_id);

  TraceModel& model_;
  std::unordered_map<uint32_t, PoolState> pools_;
};

}  // namespace gnomon::server
