// Which lanes the timeline shows and in what order: the groups hidden, the user's order
// (dragged, or sorted by name or business), and the stacking of what is left (Layout).
#include <algorithm>
#include <cctype>
#include <set>

#include "gnomon/viewer/timeline.h"

namespace gnomon::viewer {

using server::TraceModel;
namespace {

// a < b, where runs of digits compare by value: "worker 2" before "worker 10".
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool digit_a = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool digit_b = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (digit_a && digit_b) {
      while (i < a.size() && a[i] == '0') ++i;  // leading zeros do not count
      while (j < b.size() && b[j] == '0') ++j;
      size_t end_a = i, end_b = j;
      while (end_a < a.size() && std::isdigit(static_cast<unsigned char>(a[end_a]))) ++end_a;
      while (end_b < b.size() && std::isdigit(static_cast<unsigned char>(b[end_b]))) ++end_b;
      if (end_a - i != end_b - j) return end_a - i < end_b - j;  // fewer digits, smaller
      const int c = a.compare(i, end_a - i, b, j, end_b - j);
      if (c != 0) return c < 0;
      i = end_a;
      j = end_b;
      continue;
    }
    const int ca = std::tolower(static_cast<unsigned char>(a[i]));
    const int cb = std::tolower(static_cast<unsigned char>(b[j]));
    if (ca != cb) return ca < cb;
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

void Timeline::SetLaneOrder(std::vector<LaneKey> order) {
  order_ = std::move(order);
  order_rank_.clear();
  for (size_t i = 0; i < order_.size(); ++i) order_rank_.try_emplace(order_[i], uint32_t(i));
  ordered_for_.clear();
  ordered_permutation_.clear();
}

void Timeline::MoveLane(const LaneKey& key, const LaneKey& target, bool after) {
  if (key == target) return;
  std::vector<LaneKey> order;
  order.reserve(lanes_.size());
  for (const Lane& lane : lanes_) {
    if (lane.key != key) order.push_back(lane.key);
  }
  const auto at = std::find(order.begin(), order.end(), target);
  if (at == order.end() || order.size() + 1 != lanes_.size()) return;  // either is not laid out
  order.insert(after ? at + 1 : at, key);
  CommitOrder(std::move(order));
}

void Timeline::CommitOrder(std::vector<LaneKey> shown) {
  const std::set<LaneKey> is_shown(shown.begin(), shown.end());
  // The lanes of the old order not laid out (hidden), by the shown lane before them.
  std::map<LaneKey, std::vector<LaneKey>> hidden_after;
  std::vector<LaneKey> order;  // those before every shown lane come first
  const LaneKey* previous = nullptr;
  for (const LaneKey& key : order_) {
    if (is_shown.contains(key)) {
      previous = &key;
    } else {
      (previous != nullptr ? hidden_after[*previous] : order).push_back(key);
    }
  }
  for (const LaneKey& key : shown) {
    order.push_back(key);
    if (auto it = hidden_after.find(key); it != hidden_after.end())
      order.insert(order.end(), it->second.begin(), it->second.end());
  }
  SetLaneOrder(std::move(order));
}

int64_t Timeline::BusyNs(const TraceModel& model, const LaneKey& key) const {
  if (key.kind == LaneKind::kThread) {
    const ThreadLane* lane = FindThreadLane(model, key.id);
    return lane == nullptr ? 0 : int64_t(double(lane->index.RowLength(0)) * model.clock.ns_per_tick());
  }
  if (key.kind == LaneKind::kGpu) {
    auto it = gpus_.find(key.id);
    return it == gpus_.end() ? 0 : int64_t(it->second.index.RowLength(0));
  }
  return 0;
}

void Timeline::SortLanes(const TraceModel& model, LaneSort by) {
  std::vector<LaneKey> order;
  order.reserve(lanes_.size());
  for (const Lane& lane : lanes_) order.push_back(lane.key);
  // Each kind's places, filled with its lanes in the new order.
  std::map<LaneKind, std::vector<size_t>> places;
  for (size_t i = 0; i < order.size(); ++i) places[order[i].kind].push_back(i);
  // Each lane's sort key computed once: its name, or minus its busy time.
  std::vector<std::pair<std::string, int64_t>> sort_key(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    if (by == LaneSort::kName)
      sort_key[i].first = Name(model, order[i]);
    else
      sort_key[i].second = -BusyNs(model, order[i]);
  }
  for (auto& [kind, at] : places) {
    std::vector<size_t> sorted = at;
    std::stable_sort(sorted.begin(), sorted.end(), [&](size_t a, size_t b) {
      return by == LaneSort::kName ? NaturalLess(sort_key[a].first, sort_key[b].first)
                                   : sort_key[a].second < sort_key[b].second;
    });
    std::vector<LaneKey> keys;
    for (size_t i : sorted) keys.push_back(order[i]);
    for (size_t i = 0; i < at.size(); ++i) order[at[i]] = keys[i];
  }
  CommitOrder(std::move(order));
}

void Timeline::ApplyOrder(std::vector<Pending>& pending) {
  if (order_rank_.empty()) return;
  // The same lanes as last time (every frame but the few where one comes or goes): the
  // same permutation, without looking each lane up again.
  const bool same = ordered_for_.size() == pending.size() &&
                    std::equal(pending.begin(), pending.end(), ordered_for_.begin(),
                               [](const Pending& p, const LaneKey& k) { return p.key == k; });
  if (!same) {
    ordered_for_.clear();
    for (const Pending& p : pending) ordered_for_.push_back(p.key);
    // The places of the lanes the order has, filled with them in its order.
    std::vector<uint32_t> places;
    std::vector<std::pair<uint32_t, uint32_t>> ranked;  // (rank, index in pending)
    for (uint32_t i = 0; i < pending.size(); ++i) {
      auto it = order_rank_.find(pending[i].key);
      if (it == order_rank_.end()) continue;
      places.push_back(i);
      ranked.emplace_back(it->second, i);
    }
    std::sort(ranked.begin(), ranked.end());
    ordered_permutation_.resize(pending.size());
    for (uint32_t i = 0; i < pending.size(); ++i) ordered_permutation_[i] = i;
    for (size_t k = 0; k < places.size(); ++k) ordered_permutation_[places[k]] = ranked[k].second;
  }
  ordered_scratch_.clear();
  for (uint32_t from : ordered_permutation_) ordered_scratch_.push_back(pending[from]);
  pending.swap(ordered_scratch_);
}

void Timeline::Layout(const TraceModel& model, const std::map<LaneKey, LaneState>& states, float top) {
  pending_.clear();
  auto add = [&](LaneKey key, uint32_t rows, float row_height) {
    if (!states.empty()) {  // only lanes the user changed have a state
      auto it = states.find(key);
      const LaneState state = it == states.end() ? LaneState{} : it->second;
      if (state.hidden) return false;
      if (state.collapsed) rows = std::min<uint32_t>(rows, 1);
    }
    pending_.push_back({key, rows, row_height});
    return true;
  };
  // A strip for each frame series with a frame; the first one shown also shows the
  // messages, which get a lane of their own in a trace without frames.
  bool any_frames = false;
  for (const auto& [id, series] : model.frames) {
    if (series.frame_count() == 0 || id == kMessagesLane) continue;  // that id is the messages' lane
    any_frames |= add({LaneKind::kFrames, id}, 1, metrics_.frame_strip_height);
  }
  if (!any_frames && !model.messages.empty())
    add({LaneKind::kFrames, kMessagesLane}, 1, metrics_.frame_strip_height / 2);
  const bool gpu = (hidden_groups_ & kGpuLanes) == 0;
  for (const auto& [id, context] : model.gpu_contexts) {
    if (!gpu) break;
    auto it = gpus_.find(id);
    add({LaneKind::kGpu, id},
        it == gpus_.end() ? 1 : std::max<uint32_t>(1, uint32_t(it->second.index.rows())),
        metrics_.row_height);
  }
  for (size_t t = 0; t < model.threads.size(); ++t) {
    if (model.threads[t].library && (hidden_groups_ & kLibraryLanes) != 0) continue;
    const uint32_t rows = t < threads_.size() ? std::max<uint32_t>(1, uint32_t(threads_[t].index.rows())) : 1;
    add({LaneKind::kThread, model.threads[t].id}, rows, metrics_.row_height);
  }
  if ((hidden_groups_ & kPlotLanes) == 0) {
    for (const auto& [id, plot] : model.plots) add({LaneKind::kPlot, id}, 1, metrics_.plot_height);
  }
  if ((hidden_groups_ & kMemoryLanes) == 0) {
    for (const auto& [id, pool] : model.memory_pools) add({LaneKind::kMemory, id}, 1, metrics_.plot_height);
  }
  if ((hidden_groups_ & kLockLanes) == 0) {
    for (const auto& [id, lock] : model.locks) {
      auto it = locks_.find(id);
      add({LaneKind::kLock, id},
          it == locks_.end() ? 1 : std::max<uint32_t>(1, uint32_t(it->second.index.rows())),
          metrics_.row_height);
    }
  }
  if ((hidden_groups_ & kCpuLanes) == 0) {
    for (const auto& [cpu, runs] : cpus_) add({LaneKind::kCpu, cpu}, 1, metrics_.row_height);
  }
  for (const auto& [set_id, set] : model.counter_sets) {
    if (!gpu || !model.gpu_contexts.contains(set.context_id)) continue;
    for (const server::CounterInfo& counter : set.counters) {
      const LaneKey key{LaneKind::kCounter, CounterLaneId(set_id, counter.index)};
      if (states.contains(key)) add(key, 1, metrics_.plot_height);  // chosen
    }
  }
  ApplyOrder(pending_);

  lanes_.clear();
  messages_lane_.reset();
  float y = top;
  for (const Pending& p : pending_) {
    const Lane lane{p.key, y + metrics_.title_height, float(p.rows) * p.row_height, p.rows};
    y = lane.y + lane.height + metrics_.lane_gap;
    lanes_.push_back(lane);
    if (p.key.kind == LaneKind::kFrames && !messages_lane_) messages_lane_ = p.key;
  }
  total_height_ = y - top;
}

}  // namespace gnomon::viewer
