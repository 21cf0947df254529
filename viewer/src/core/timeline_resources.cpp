// The timeline's memory and lock lanes -- a pool's bytes in use as a curve, a lock's
// holds and waits as rows of bars -- and the strip of each thread's running spans.
//
// All are rebuilt from the model when it changed, at most four times a second while a
// capture runs: a free or a release changes an event that arrived long before, so
// unlike zones they cannot be indexed as they come.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <tuple>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/memory_statistics.h"
#include "gnomon/server/samples.h"
#include "gnomon/viewer/timeline.h"

namespace gnomon::viewer {
namespace {

constexpr int64_t kUntimed = INT64_MIN;
constexpr int64_t kNever = INT64_MIN;  // resources_synced_ before the first rebuild
constexpr int64_t kRebuildEveryNs = 250'000'000;
// Lanes with more events than this wait for kRebuildEveryNs between rebuilds.
constexpr uint64_t kThrottledEvents = 100'000;
// Holds (or waits) that overlap -- readers of a shared lock, a recursive mutex, several
// threads waiting -- take rows of their own, up to this many; more share the last.
constexpr uint32_t kMaxRowsEach = 8;

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A stable colour per thread (0xAABBGGRR).
uint32_t ThreadColor(uint32_t thread_id) {
  const uint32_t hash = thread_id * 2654435761u;
  return 0xFF000000u | (((hash >> 8) & 0x7F) + 0x60) << 16 | (((hash >> 16) & 0x7F) + 0x60) << 8 |
         ((hash & 0x7F) + 0x60);
}

// Greedy rows: each span (in begin order) goes to the first row free by its begin.
void AddInRows(LaneIndex& index, std::vector<std::pair<Span, uint32_t>>& items, uint32_t first_row) {
  std::sort(items.begin(), items.end(),
            [](const auto& a, const auto& b) { return a.first.begin_ns < b.first.begin_ns; });
  std::vector<int64_t> row_end;
  for (const auto& [span, item] : items) {
    size_t row = 0;
    while (row < row_end.size() && row_end[row] > span.begin_ns) ++row;
    if (row == row_end.size()) {
      if (row_end.size() < kMaxRowsEach) {
        row_end.push_back(span.end_ns);
      } else {
        row = row_end.size() - 1;
      }
    }
    row_end[row] = std::max(row_end[row], span.end_ns);
    index.Add(uint16_t(first_row + row), item, span.begin_ns,
              uint64_t(std::max<int64_t>(0, span.end_ns - span.begin_ns)));
  }
}

}  // namespace

void Timeline::SyncResources(const server::TraceModel& model, bool force) {
  const int64_t now = SteadyNowNs();
  const bool due = force || resources_synced_ == kNever || now - resources_synced_ >= kRebuildEveryNs;
  bool rebuilt = false;
  const int64_t end_ns = TraceEndNs(model);
  for (const auto& [id, pool] : model.memory_pools) {
    MemoryLane& lane = memory_[id];
    const uint64_t seen = pool.allocations.size() + pool.frees + pool.unmatched_frees;
    if (seen == lane.seen || (!due && seen > kThrottledEvents)) continue;
    lane.usage.clear();
    lane.peak_bytes = 0;
    for (const auto& [tick, bytes] : server::MemoryUsage(pool)) {
      lane.usage.emplace_back(tick, double(bytes));
      if (bytes > lane.peak_bytes) {
        lane.peak_bytes = bytes;
        lane.peak_ns = model.clock.TickToNs(tick) - origin_ns_;
      }
    }
    lane.seen = seen;
    rebuilt = true;
  }
  for (const auto& [id, lock] : model.locks) {
    LockLane& lane = locks_[id];
    // A release changes a hold that arrived before: rebuilt while time moves on.
    const bool changed = lane.holds_seen != lock.holds.size() || lane.last_tick_seen != model.last_tick;
    if (!changed || (!due && lock.holds.size() > kThrottledEvents)) continue;
    lane.spans.assign(lock.holds.size() * 2, Span{kUntimed, kUntimed});
    lane.index.Clear();
    std::vector<std::pair<Span, uint32_t>> holds, waits;
    for (size_t i = 0; i < lock.holds.size(); ++i) {
      const server::LockHold& h = lock.holds[i];
      const int64_t obtain = model.clock.TickToNs(h.obtain_tick) - origin_ns_;
      const int64_t release = h.is_released() ? model.clock.TickToNs(h.release_tick) - origin_ns_ : end_ns;
      lane.spans[2 * i] = {obtain, std::max(obtain, release)};
      holds.emplace_back(lane.spans[2 * i], uint32_t(2 * i));
      if (h.is_contended()) {
        lane.spans[2 * i + 1] = {model.clock.TickToNs(h.wait_tick) - origin_ns_, obtain};
        waits.emplace_back(lane.spans[2 * i + 1], uint32_t(2 * i + 1));
      }
    }
    AddInRows(lane.index, holds, 0);
    lane.hold_rows = uint32_t(lane.index.rows());
    AddInRows(lane.index, waits, lane.hold_rows);
    lane.holds_seen = lock.holds.size();
    lane.last_tick_seen = model.last_tick;
    rebuilt = true;
  }
  // Switches of a thread arrive by CPU, out of order: the spans are made afresh.
  const size_t switches = model.context_switches.size();
  if (switches != 0 && (switches != switches_seen_ || model.last_tick != running_last_tick_) &&
      (due || switches < kThrottledEvents)) {
    running_.clear();
    cpus_.clear();
    std::map<uint32_t, std::vector<std::pair<Span, uint32_t>>> by_cpu;
    for (const auto& [tid, thread] : server::ComputeThreadRunning(model)) {
      Running& r = running_[tid];
      for (const server::RunSpan& span : thread.spans) {
        const Span s{model.clock.TickToNs(span.begin_tick) - origin_ns_,
                     model.clock.TickToNs(span.end_tick) - origin_ns_};
        r.spans.push_back(s);
        r.cpus.push_back(span.cpu);
        r.preempted.push_back(span.preempted ? 1 : 0);
        preemption_known_ |= span.preempted;
        by_cpu[span.cpu].emplace_back(s, tid);
      }
    }
    for (auto& [cpu, runs] : by_cpu) {
      std::sort(runs.begin(), runs.end(),
                [](const auto& a, const auto& b) { return a.first.begin_ns < b.first.begin_ns; });
      CpuRuns& lane = cpus_[cpu];
      for (const auto& [span, tid] : runs) {
        lane.spans.push_back(span);
        lane.threads.push_back(tid);
      }
    }
    switches_seen_ = switches;
    running_last_tick_ = model.last_tick;
    rebuilt = true;
  }
  // Samples arrive by CPU, each thread's nearly in order: the new ones are sorted and
  // merged into their thread's. Their times are placed again from the start when the
  // trace's origin or its clock's fit moved (a live trace, a file loading).
  const size_t clock_pairs = model.clock.pairs().size();
  if ((samples_origin_ != origin_ns_ || samples_clock_pairs_ != clock_pairs) &&
      (due || samples_seen_ < kThrottledEvents)) {
    samples_.clear();
    samples_seen_ = 0;
    samples_origin_ = origin_ns_;
    samples_clock_pairs_ = clock_pairs;
  }
  if (model.samples.size() > samples_seen_ &&
      (due || model.samples.size() - samples_seen_ < kThrottledEvents)) {
    std::map<uint32_t, size_t> old_sizes;
    for (size_t i = samples_seen_; i < model.samples.size(); ++i) {
      const server::Sample& sample = model.samples[i];
      SampleTicks& ticks = samples_[sample.os_thread_id];
      old_sizes.try_emplace(sample.os_thread_id, ticks.ns.size());
      ticks.ns.push_back(model.clock.TickToNs(sample.tick) - origin_ns_);
      ticks.samples.push_back(uint32_t(i));
    }
    for (const auto& [tid, old_size] : old_sizes) {
      SampleTicks& ticks = samples_[tid];
      if (std::is_sorted(ticks.ns.begin() + ptrdiff_t(old_size ? old_size - 1 : 0), ticks.ns.end())) continue;
      std::vector<std::pair<int64_t, uint32_t>> both(ticks.ns.size());
      for (size_t i = 0; i < both.size(); ++i) both[i] = {ticks.ns[i], ticks.samples[i]};
      std::sort(both.begin() + ptrdiff_t(old_size), both.end());
      std::inplace_merge(both.begin(), both.begin() + ptrdiff_t(old_size), both.end());
      for (size_t i = 0; i < both.size(); ++i) std::tie(ticks.ns[i], ticks.samples[i]) = both[i];
    }
    samples_seen_ = model.samples.size();
    rebuilt = true;
  }
  if (rebuilt) resources_synced_ = now;
}

void Timeline::BuildSampleItems(const TimelineView& view, const Lane& lane, uint32_t lane_index,
                                uint32_t os_thread_id, std::vector<DrawItem>& out) const {
  const SampleTicks* ticks = ThreadSamples(os_thread_id);
  if (ticks == nullptr) return;
  const float y1 = lane.y - 1, y0 = y1 - metrics_.sample_tick_height;
  const std::vector<int64_t>& ns = ticks->ns;
  // One tick per pixel column: a search per column, whatever the samples' number.
  auto it = std::lower_bound(ns.begin(), ns.end(), view.begin_ns());
  while (it != ns.end() && *it <= view.end_ns()) {
    const double column = std::floor(view.NsToX(*it));
    const auto next = std::lower_bound(it, ns.end(), view.XToNs(column + 1));
    const auto last = next > it ? next : it + 1;
    out.push_back({DrawItem::Kind::kSample, float(column), y0, float(column) + 1, y1, 0xFF30A8FFu, lane_index,
                   uint32_t(it - ns.begin()), uint32_t(last - it), nullptr});
    it = last;
  }
}

std::optional<uint32_t> Timeline::SampleAt(uint32_t os_thread_id, int64_t ns, int64_t slack) const {
  const SampleTicks* ticks = ThreadSamples(os_thread_id);
  if (ticks == nullptr || ticks->ns.empty()) return std::nullopt;
  const auto& all = ticks->ns;
  auto it = std::lower_bound(all.begin(), all.end(), ns);
  if (it == all.end() || (it != all.begin() && ns - *std::prev(it) < *it - ns)) --it;
  if (std::abs(*it - ns) > slack) return std::nullopt;
  return uint32_t(it - all.begin());
}

void Timeline::BuildRunningItems(const TimelineView& view, const Lane& lane, uint32_t lane_index,
                                 uint32_t os_thread_id, std::vector<DrawItem>& out) const {
  const Running* running = ThreadRunning(os_thread_id);
  if (running == nullptr || running->spans.empty()) return;
  const float y1 = lane.y - 1, y0 = y1 - metrics_.running_strip_height;
  const std::vector<Span>& spans = running->spans;
  // Not running, under the spans: from the first switch seen to the last.
  const float from = float(view.NsToX(std::max(spans.front().begin_ns, view.begin_ns())));
  const float to = float(view.NsToX(std::min(spans.back().end_ns, view.end_ns())));
  if (to > from) {
    out.push_back({DrawItem::Kind::kNotRunning, from, y0, to, y1, 0xFF5A4E4Au, lane_index, 0, 1, nullptr});
  }
  // Spans that share a pixel are drawn as one.
  auto it = std::lower_bound(spans.begin(), spans.end(), view.begin_ns(),
                             [](const Span& s, int64_t t) { return s.end_ns < t; });
  for (; it != spans.end() && it->begin_ns <= view.end_ns(); ++it) {
    const float x0 = float(view.NsToX(it->begin_ns));
    float x1 = float(std::max(view.NsToX(it->end_ns), view.NsToX(it->begin_ns) + 1.0));
    const auto first = it;
    while (std::next(it) != spans.end() && float(view.NsToX(std::next(it)->begin_ns)) < x1 + 1.0f) {
      ++it;
      x1 = std::max(x1, float(view.NsToX(it->end_ns)));
    }
    out.push_back({DrawItem::Kind::kRunning, x0, y0, x1, y1, 0xFF50C050u, lane_index,
                   uint32_t(first - spans.begin()), uint32_t(it - first + 1), nullptr});
  }
}

void Timeline::BuildCpuItems(const server::TraceModel& model, const TimelineView& view, const Lane& lane,
                             uint32_t lane_index, std::vector<DrawItem>& out) const {
  const CpuRuns* runs = CpuRunning(lane.key.id);
  if (runs == nullptr) return;
  // Each thread's colour (as ZoneColoring::kThread gives its zones) and name, once.
  std::map<uint32_t, std::pair<uint32_t, const std::string*>> looks;  // by OS thread id
  auto look = [&](uint32_t tid) {
    auto [it, added] = looks.try_emplace(tid, 0xFF808080u, nullptr);
    if (added) {
      for (const server::ThreadTimeline& t : model.threads) {
        if (t.os_thread_id == tid) it->second = {ThreadColor({LaneKind::kThread, t.id}), &t.name};
      }
    }
    return it->second;
  };
  const std::vector<Span>& spans = runs->spans;
  auto it = std::lower_bound(spans.begin(), spans.end(), view.begin_ns(),
                             [](const Span& s, int64_t t) { return s.end_ns < t; });
  // Spans of a CPU do not overlap; a span under a pixel wide joins the next ones that
  // share its pixel, drawn as one (grey when they are of several threads).
  auto narrow = [&](const Span& s) { return view.NsToX(s.end_ns) - view.NsToX(s.begin_ns) < 1.0; };
  for (; it != spans.end() && it->begin_ns <= view.end_ns(); ++it) {
    const auto first = it;
    const float x0 = float(view.NsToX(it->begin_ns));
    float x1 = float(std::max(view.NsToX(it->end_ns), view.NsToX(it->begin_ns) + 1.0));
    bool one_thread = true;
    while (std::next(it) != spans.end() && float(view.NsToX(std::next(it)->begin_ns)) < x1 + 1.0f &&
           (narrow(*it) || narrow(*std::next(it)))) {
      ++it;
      x1 = std::max(x1, float(view.NsToX(it->end_ns)));
      one_thread &= runs->threads[size_t(it - spans.begin())] == runs->threads[size_t(first - spans.begin())];
    }
    const auto [color, name] = look(runs->threads[size_t(first - spans.begin())]);
    const bool single = first == it;
    out.push_back({DrawItem::Kind::kRunning, x0, lane.y, x1, lane.y + lane.height - 1,
                   one_thread ? color : 0xFF808080u, lane_index, uint32_t(first - spans.begin()),
                   uint32_t(it - first + 1), single && name != nullptr && !name->empty() ? name : nullptr});
  }
}

std::optional<uint32_t> Timeline::CpuRunAt(uint32_t cpu, int64_t ns, int64_t slack) const {
  const CpuRuns* runs = CpuRunning(cpu);
  if (runs == nullptr) return std::nullopt;
  auto it = std::lower_bound(runs->spans.begin(), runs->spans.end(), ns - slack,
                             [](const Span& s, int64_t t) { return s.end_ns < t; });
  if (it == runs->spans.end() || it->begin_ns > ns + slack) return std::nullopt;
  return uint32_t(it - runs->spans.begin());
}

std::optional<uint32_t> Timeline::RunningAt(uint32_t os_thread_id, int64_t ns, int64_t slack) const {
  const Running* running = ThreadRunning(os_thread_id);
  if (running == nullptr) return std::nullopt;
  const std::vector<Span>& spans = running->spans;
  auto it = std::lower_bound(spans.begin(), spans.end(), ns - slack,
                             [](const Span& s, int64_t t) { return s.end_ns < t; });
  if (it == spans.end() || it->begin_ns > ns + slack) return std::nullopt;
  return uint32_t(it - spans.begin());
}

std::optional<uint32_t> Timeline::WaitAt(uint32_t os_thread_id, int64_t ns) const {
  const Running* running = ThreadRunning(os_thread_id);
  if (running == nullptr) return std::nullopt;
  const std::vector<Span>& spans = running->spans;
  auto next = std::lower_bound(spans.begin(), spans.end(), ns,
                               [](const Span& s, int64_t t) { return s.end_ns <= t; });
  if (next == spans.begin() || next == spans.end() || next->begin_ns <= ns) return std::nullopt;
  return uint32_t(next - spans.begin() - 1);
}

const std::vector<std::pair<uint64_t, double>>* Timeline::CurvePoints(const server::TraceModel& model,
                                                                      const LaneKey& key) const {
  if (key.kind == LaneKind::kPlot) {
    auto it = model.plots.find(key.id);
    return it == model.plots.end() ? nullptr : &it->second.points;
  }
  if (key.kind == LaneKind::kMemory) {
    auto it = memory_.find(key.id);
    return it == memory_.end() ? nullptr : &it->second.usage;
  }
  return nullptr;
}

std::optional<std::pair<int64_t, uint64_t>> Timeline::MemoryPeak(uint32_t pool_id) const {
  auto it = memory_.find(pool_id);
  if (it == memory_.end() || it->second.usage.empty()) return std::nullopt;
  return std::make_pair(it->second.peak_ns, it->second.peak_bytes);
}

Span Timeline::LockSpan(uint32_t lock_id, uint32_t hold, bool wait) const {
  auto it = locks_.find(lock_id);
  const size_t item = size_t(hold) * 2 + (wait ? 1 : 0);
  if (it == locks_.end() || item >= it->second.spans.size()) return {kUntimed, kUntimed};
  return it->second.spans[item];
}

void Timeline::BuildLockItems(const server::TraceModel& model, const TimelineView& view, const Lane& lane,
                              uint32_t lane_index, std::vector<DrawItem>& out) const {
  auto idx = locks_.find(lane.key.id);
  auto lock = model.locks.find(lane.key.id);
  if (idx == locks_.end() || lock == model.locks.end()) return;
  const LockLane& l = idx->second;
  for (uint32_t row = 0; row < lane.rows && row < l.index.rows(); ++row) {
    const float y0 = lane.y + float(row) * metrics_.row_height;
    l.index.Visit(
        row, view.begin_ns(), view.end_ns(), view.ns_per_px(), metrics_.min_zone_px,
        [&l](uint32_t i) { return l.spans[i]; },
        [&](const VisibleItem& item) {
          const bool wait = item.first_index % 2 == 1;
          const server::LockHold& hold = lock->second.holds[item.first_index / 2];
          const std::string* name = nullptr;
          if (auto t = model.thread_index.find(hold.thread_id);
              t != model.thread_index.end() && !model.threads[t->second].name.empty()) {
            name = &model.threads[t->second].name;
          }
          const uint32_t color = item.merged ? 0xFF808080u
                                 : wait      ? 0xFF4050D0u  // waits: red
                                             : ThreadColor(hold.thread_id);
          out.push_back({wait ? DrawItem::Kind::kLockWait : DrawItem::Kind::kLockHold,
                         float(view.NsToX(item.span.begin_ns)), y0,
                         float(std::max(view.NsToX(item.span.end_ns), view.NsToX(item.span.begin_ns) + 1.0)),
                         y0 + metrics_.row_height - 1, color, lane_index, item.first_index / 2, item.count,
                         item.merged ? nullptr : name});
        },
        IdentityKey{});
  }
}

}  // namespace gnomon::viewer
