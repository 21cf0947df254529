// Turns a stream's lock waits, obtains and releases into holds, per lock (TraceBuilder's
// part for LockWait, LockObtain and LockRelease).
//
// A thread's lock events arrive in its order, so each (thread, lock) pair is a small
// state machine: a wait pending until the obtain that ends it, and a stack of open
// holds (a recursive mutex nests) that releases close innermost first. A release with
// no hold open is counted, never fatal.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gnomon/server/seeded_hash.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

// Most locks one program may name; events for more count as invalid ids.
inline constexpr uint32_t kMaxLocks = 1u << 16;

class LockBuilder {
 public:
  explicit LockBuilder(TraceModel& model) : model_(model) {}

  void Wait(uint32_t thread_id, uint32_t lock_id, uint64_t tick);
  void Obtain(uint32_t thread_id, uint32_t lock_id, uint8_t flags, uint64_t tick);
  void Release(uint32_t thread_id, uint32_t lock_id, uint64_t tick);
  void NameLock(uint32_t lock_id, std::string_view name);

 private:
  struct ThreadLockState {
    uint64_t wait_tick = kOpenZone;  // a wait not yet ended by an obtain
    std::vector<uint64_t> open;      // holds not yet released, innermost last
  };
  // The lock, made at first use; nullptr past kMaxLocks (counted).
  Lock* FindLock(uint32_t lock_id);
  ThreadLockState& StateOf(uint32_t thread_id, uint32_t lock_id) {
    return states_[uint64_t(thread_id) << 32 | lock_id];
  }

  TraceModel& model_;
  std::unordered_map<uint64_t, ThreadLockState, SeededHash> states_;  // by thread << 32 | lock
};

}  // namespace gnomon::server
