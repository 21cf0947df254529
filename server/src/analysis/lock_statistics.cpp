#include "gnomon/server/lock_statistics.h"

#include <algorithm>
#include <unordered_set>

#include "gnomon/protocol/messages.h"

namespace gnomon::server {
namespace {

int64_t SaturatedAdd(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

}  // namespace

std::vector<LockStatistics> ComputeLockStatistics(const TraceModel& model) {
  std::vector<LockStatistics> result;
  for (const auto& [id, lock] : model.locks) {
    LockStatistics s;
    s.lock_id = id;
    s.name = lock.name;
    s.acquisitions = lock.holds.size();
    std::unordered_set<uint32_t> threads;
    for (size_t i = 0; i < lock.holds.size(); ++i) {
      const LockHold& h = lock.holds[i];
      threads.insert(h.thread_id);
      if (h.flags & protocol::kLockShared) ++s.shared;
      if (h.is_contended()) {
        ++s.contended;
        const int64_t wait = std::max<int64_t>(0, model.DurationNs(h.wait_tick, h.obtain_tick));
        s.wait_total_ns = SaturatedAdd(s.wait_total_ns, wait);
        s.wait_max_ns = std::max(s.wait_max_ns, wait);
      }
      if (h.is_released()) {
        const int64_t hold = std::max<int64_t>(0, model.DurationNs(h.obtain_tick, h.release_tick));
        s.hold_total_ns = SaturatedAdd(s.hold_total_ns, hold);
        s.hold_max_ns = std::max(s.hold_max_ns, hold);
      }
    }
    s.threads = uint32_t(threads.size());
    result.push_back(std::move(s));
  }
  std::stable_sort(result.begin(), result.end(), [](const LockStatistics& a, const LockStatistics& b) {
    return a.wait_total_ns > b.wait_total_ns;
  });
  return result;
}

}  // namespace gnomon::server
