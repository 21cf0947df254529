#include "model/lock_builder.h"

#include <algorithm>

#include "gnomon/server/text.h"

namespace gnomon::server {

Lock* LockBuilder::FindLock(uint32_t lock_id) {
  auto it = model_.locks.find(lock_id);
  if (it != model_.locks.end()) return &it->second;
  if (model_.locks.size() >= kMaxLocks) {
    ++model_.diagnostics.invalid_ids;
    return nullptr;
  }
  Lock& lock = model_.locks[lock_id];
  lock.id = lock_id;
  lock.name = "lock " + std::to_string(lock_id);
  return &lock;
}

void LockBuilder::NameLock(uint32_t lock_id, std::string_view name) {
  if (Lock* lock = FindLock(lock_id)) AssignUtf8(lock->name, name);
}

void LockBuilder::Wait(uint32_t thread_id, uint32_t lock_id, uint64_t tick) {
  if (FindLock(lock_id) == nullptr) return;
  StateOf(thread_id, lock_id).wait_tick = tick;
}

void LockBuilder::Obtain(uint32_t thread_id, uint32_t lock_id, uint8_t flags, uint64_t tick) {
  Lock* lock = FindLock(lock_id);
  if (lock == nullptr) return;
  ThreadLockState& state = StateOf(thread_id, lock_id);
  LockHold hold{.wait_tick = tick, .obtain_tick = tick, .thread_id = thread_id, .flags = flags};
  if (state.wait_tick != kOpenZone && state.wait_tick <= tick) hold.wait_tick = state.wait_tick;
  state.wait_tick = kOpenZone;
  state.open.push_back(lock->holds.size());
  lock->holds.push_back(hold);
}

void LockBuilder::Release(uint32_t thread_id, uint32_t lock_id, uint64_t tick) {
  Lock* lock = FindLock(lock_id);
  if (lock == nullptr) return;
  ThreadLockState& state = StateOf(thread_id, lock_id);
  if (state.open.empty()) {
    ++model_.diagnostics.lock_releases_without_hold;
    return;
  }
  LockHold& hold = lock->holds[state.open.back()];
  state.open.pop_back();
  hold.release_tick = std::max(tick, hold.obtain_tick);
}

}  // namespace gnomon::server
