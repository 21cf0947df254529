// Pairs a stream's allocations with their frees, per memory pool (TraceBuilder's part
// for MemAlloc and MemFree).
//
// Threads' messages reach the server interleaved by chunks, not in time order: a free
// made on one thread can arrive before the allocation another thread made just before
// it. A free pairs with the live allocation of its address when that allocation came
// first in time; otherwise it waits (bounded) for an allocation that comes before it in
// time, and counts as unmatched until then. An allocation of an address that is still
// live leaves the older one unfreed, counted. Everything odd is counted in the model,
// never fatal.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

// Most pools one program may name; events for more count as invalid ids.
inline constexpr uint32_t kMaxMemoryPools = 1u << 12;
// Frees held per pool (and per address) while they wait for their allocation; later
// ones stay unmatched.
inline constexpr size_t kMaxPendingFrees = 1u << 20;
inline constexpr size_t kMaxPendingFreesPerAddress = 16;
// A larger size is not a real allocation: counted, and taken as 0.
inline constexpr uint64_t kMaxAllocationBytes = uint64_t{1} << 48;

class MemoryBuilder {
 public:
  explicit MemoryBuilder(TraceModel& model) : model_(model) {}

  void Alloc(uint32_t thread_id, const protocol::MemAlloc& m);
  void Free(uint32_t thread_id, const protocol::MemFree& m);
  void NamePool(uint32_t pool_id, std::string_view name);

 private:
  struct PendingFree {
    uint64_t tick;
    uint32_t thread_id;
  };
  struct PoolState {
    MemoryPool* pool = nullptr;                              // in the model (a std::map: stable)
    std::unordered_map<uint64_t, uint64_t> live;             // address -> allocation index
    std::unordered_multimap<uint64_t, PendingFree> pending;  // address -> frees awaiting it
  };
  // The pool's state, made at first use; nullptr past kMaxMemoryPools (counted).
  PoolState* FindPool(uint32_t pool_id);

  TraceModel& model_;
  std::unordered_map<uint32_t, PoolState> pools_;
};

}  // namespace gnomon::server
