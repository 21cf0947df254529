// The builder's zones counted, not held (TraceBuilder::CountZonesOnly): the threads'
// overviews kept within their budget, and the record of each block a window of zones is
// read back from (zone_window.h).
#include <algorithm>

#include "model/trace_builder.h"

namespace gnomon::server {

void TraceBuilder::CoarsenOverviews() { CoarsenOverviews(model_.overview_resolution); }

void TraceBuilder::CoarsenOverviews(uint64_t least_resolution) {
  constexpr uint64_t kCoarsest = uint64_t{1} << 62;
  while ((overview_cost_ > overview_budget_ / 2 || model_.overview_resolution < least_resolution) &&
         model_.overview_resolution < kCoarsest) {
    model_.overview_resolution *= 2;
    overview_cost_ = 0;
    for (ThreadTimeline& thread : model_.threads)
      overview_cost_ += thread.overview.Coarsen(model_.overview_resolution);
  }
  // More rows (or zones of 2^62 ticks) than the budget: the overviews stop where they
  // are, and the model says so.
  if (overview_cost_ > overview_budget_) {
    model_.overview_truncated = true;
    overview_budget_ = 0;
    DropBlockRecords();
  }
}

void TraceBuilder::BeginBlock(const ZoneBlock& where) {
  if (overview_budget_ == 0 || windows_dropped_) return;
  block_first_tick_ = UINT64_MAX;
  block_last_tick_ = 0;
  // Within the overviews' budget, checked before anything is copied.
  if (model_.open_at_blocks.size() + model_.open_zone_count > overview_budget_ ||
      model_.zone_blocks.size() >= overview_budget_) {
    DropBlockRecords();
    return;
  }
  model_.zone_blocks.push_back(where);
  model_.zone_blocks.back().first_open = uint32_t(model_.open_at_blocks.size());
  block_recorded_ = true;
  // Only the stacks that may hold zones: each once, those left empty forgotten.
  std::sort(open_threads_.begin(), open_threads_.end(),
            [](const OpenStack& a, const OpenStack& b) { return a.stack < b.stack; });
  size_t kept = 0;
  for (size_t i = 0; i < open_threads_.size(); ++i) {
    const OpenStack& open = open_threads_[i];
    if (open.stack->empty() || (kept > 0 && open_threads_[kept - 1].stack == open.stack)) continue;
    open_threads_[kept++] = open;
    for (const OpenZone& zone : *open.stack) {
      model_.open_at_blocks.push_back({open.thread_id,
                                       uint32_t((zone.index & kCountedLocations) >> kCountedLocationShift),
                                       zone.begin_tick});
    }
  }
  open_threads_.resize(kept);
}

void TraceBuilder::DropBlockRecords() {
  model_.zone_blocks.clear();
  model_.zone_blocks.shrink_to_fit();
  model_.open_at_blocks.clear();
  model_.open_at_blocks.shrink_to_fit();
  windows_dropped_ = true;
  block_recorded_ = false;
  open_threads_.clear();
  open_threads_.shrink_to_fit();
}

void TraceBuilder::ApplySummary(const tracefile::SummarySegment& s, uint64_t resolution) {
  const uint64_t events = s.begins + s.ends;
  if (events == 0 && s.attributes == 0) return;
  if (CurrentThread() == nullptr) {
    model_.diagnostics.events_without_thread += events;
    model_.diagnostics.attributes_without_zone += s.attributes;
    return;
  }
  if (overview_budget_ != 0 && resolution > model_.overview_resolution) CoarsenOverviews(resolution);
  // The ticks decoding sees: of the zones begun in the segment (the ends of zones of
  // before and the zones left open: EndZone and BeginZone below).
  if (s.first_tick <= s.last_tick) {
    for (const uint64_t tick : {s.first_tick, s.last_tick}) {
      SeeTick(tick);
      if (overview_budget_ != 0) SeeBlockTick(tick);
    }
  }
  for (uint32_t id : s.locations) LocationIndex(id);           // numbered in the order decoding would
  const uint64_t closed_here = s.begins - s.left_open.size();  // DecodeSummary checked it
  thread_->zones_not_held += closed_here;
  model_.zone_count += closed_here;
  model_.diagnostics.clamped_zone_ends += s.clamped;
  model_.diagnostics.callstacks_cut += s.long_callstacks;
  const size_t entering = open_->size();
  for (uint32_t closed : s.loose_attributes)
    if (closed >= entering) ++model_.diagnostics.attributes_without_zone;
  for (uint64_t tick : s.closed) EndZone(tick);
  for (const tracefile::SummaryRow& row : s.rows) {
    const size_t base = entering > row.closed_before ? entering - row.closed_before : 0;
    const uint32_t depth = uint32_t(std::min<size_t>(base + row.depth, ZoneArray::kMaxDepth));
    for (OverviewRun run : row.runs) {
      if (run.location != kMixedLocations) run.location = LocationIndex(run.location);
      AddRunToOverview(depth, run);
    }
  }
  for (const auto& [id, tick] : s.left_open) BeginZone(id, tick);
}

void TraceBuilder::FinishOverviews() {
  if (overview_budget_ == 0 || model_.last_tick == 0) return;
  for (size_t t = 0; t < open_zones_.size() && t < model_.threads.size() && overview_budget_ > 0; ++t) {
    thread_ = &model_.threads[t];
    const std::vector<OpenZone>& open = open_zones_[t];
    for (size_t depth = 0; depth < open.size() && overview_budget_ > 0; ++depth) {
      AddToOverview(uint32_t(std::min<size_t>(depth, ZoneArray::kMaxDepth)), open[depth].begin_tick,
                    model_.last_tick,
                    uint32_t((open[depth].index & kCountedLocations) >> kCountedLocationShift));
    }
  }
  ForgetThread();
}

}  // namespace gnomon::server
