// The lanes of threads whose zones are not held (TraceModel::zones_held false): drawn
// from their overviews (ZoneOverview), or, zoomed in past them, from a window of zones
// read from the file again (ZoneWindow).
#include <algorithm>
#include <chrono>

#include "gnomon/viewer/timeline.h"
#include "timeline_cpu_lanes.h"

namespace gnomon::viewer {

using server::ThreadTimeline;
using server::TraceModel;
using timeline_detail::CpuKey;
using timeline_detail::OverviewSpans;

void Timeline::SyncOverview(const TraceModel& model, const ThreadTimeline& thread, ThreadLane& lane,
                            double loaded) {
  const server::ZoneOverview& overview = thread.overview;
  const bool coarser = model.overview_resolution != lane.overview_resolution;
  if (!coarser && overview.runs() == lane.overview_runs) return;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  constexpr int64_t kPeriodNs = 250'000'000;
  // Rows only grew: the runs indexed are still where they were (BuildOverviewItems and
  // HitTest check the resolution).
  if (!coarser && loaded < 1.0 && now - lane.overview_synced < kPeriodNs) return;
  lane.overview_runs = overview.runs();
  lane.overview_resolution = model.overview_resolution;
  lane.overview_synced = now;
  lane.index.Clear();
  bool in_order = true;
  for (size_t depth = 0; depth < overview.rows().size(); ++depth) {
    const std::vector<server::OverviewRun>& row = overview.rows()[depth];
    for (size_t i = 0; i < row.size(); ++i) {
      in_order = in_order && (i == 0 || row[i].begin_tick >= row[i - 1].begin_tick);
      lane.index.Add(uint16_t(depth), uint32_t(i), int64_t(row[i].begin_tick),
                     row[i].end_tick - row[i].begin_tick);
    }
  }
  if (!in_order) lane.index.SortRows();  // a damaged stream's
}

const server::OverviewRun* Timeline::OverviewRunAt(const TraceModel& model, uint32_t thread_id, uint32_t row,
                                                   uint32_t index) const {
  const std::vector<std::vector<server::OverviewRun>>* rows = nullptr;
  if ((row & kWindowRow) != 0) {
    if (window_ == nullptr) return nullptr;
    auto it = window_->window.threads.find(thread_id);
    if (it == window_->window.threads.end()) return nullptr;
    rows = &it->second;
    row &= ~kWindowRow;
  } else {
    auto it = model.thread_index.find(thread_id);
    if (it == model.thread_index.end()) return nullptr;
    rows = &model.threads[it->second].overview.rows();
  }
  return row < rows->size() && index < (*rows)[row].size() ? &(*rows)[row][index] : nullptr;
}

std::shared_ptr<const Timeline::IndexedZoneWindow> Timeline::IndexZoneWindow(server::ZoneWindow window) {
  auto indexed = std::make_shared<IndexedZoneWindow>();
  indexed->window = std::move(window);
  for (const auto& [thread_id, rows] : indexed->window.threads) {
    LaneIndex& index = indexed->lanes[thread_id];
    for (size_t depth = 0; depth < rows.size(); ++depth) {
      for (size_t i = 0; i < rows[depth].size(); ++i) {
        const server::OverviewRun& run = rows[depth][i];
        index.Add(uint16_t(depth), uint32_t(i), int64_t(run.begin_tick), run.end_tick - run.begin_tick);
      }
    }
  }
  return indexed;
}

std::pair<uint64_t, uint64_t> Timeline::ViewTicks(const TraceModel& model, const TimelineView& view) const {
  return {model.clock.NsToTick(std::max<int64_t>(0, view.begin_ns()) + origin_ns_),
          model.clock.NsToTick(std::max<int64_t>(0, view.end_ns()) + origin_ns_)};
}

bool Timeline::WindowShows(const TraceModel& model, const TimelineView& view) const {
  if (window_ == nullptr) return false;
  const auto [begin, end] = ViewTicks(model, view);
  return window_->window.begin_tick <= begin && end <= window_->window.end_tick &&
         view.ns_per_px() < model.clock.ns_per_tick() * double(model.overview_resolution);
}

bool Timeline::NeedsZoneWindow(const TraceModel& model, const TimelineView& view) const {
  return !model.zones_held && model.overview_resolution > 1 && !model.zone_blocks.empty() &&
         view.ns_per_px() < model.clock.ns_per_tick() * double(model.overview_resolution) &&
         !WindowShows(model, view);
}

Timeline::RunSource Timeline::SourceFor(const TraceModel& model, const ThreadTimeline& thread,
                                        const ThreadLane& thread_lane, const TimelineView& view) const {
  if (WindowShows(model, view)) {
    auto rows = window_->window.threads.find(thread.id);
    auto index = window_->lanes.find(thread.id);
    if (rows == window_->window.threads.end() || index == window_->lanes.end()) return {};
    return {&rows->second, &index->second, kWindowRow};
  }
  // Merged coarser since it was indexed (the app syncs four times a second while a file
  // loads): the index does not match the rows until the next Sync.
  if (thread_lane.overview_resolution != model.overview_resolution) return {};
  return {&thread.overview.rows(), &thread_lane.index, 0};
}

void Timeline::BuildOverviewItems(const TraceModel& model, const TimelineView& view, const Lane& lane,
                                  uint32_t lane_index, const ThreadLane& thread_lane,
                                  const ThreadTimeline& thread, std::vector<DrawItem>& out) const {
  const RunSource source = SourceFor(model, thread, thread_lane, view);
  if (source.rows == nullptr) return;
  const auto& rows = *source.rows;
  for (uint32_t depth = 0; depth < lane.rows && depth < rows.size(); ++depth) {
    const std::vector<server::OverviewRun>& row = rows[depth];
    const float y0 = lane.y + float(depth) * metrics_.row_height;
    const size_t row_first = out.size();
    source.index->Visit(
        depth, view.begin_ns(), view.end_ns(), view.ns_per_px(), metrics_.min_zone_px,
        OverviewSpans{model, row, origin_ns_},
        [&](const VisibleItem& item) {
          const uint32_t i = item.first_index;
          const server::OverviewRun& run = row[i];
          const float x0 = float(view.NsToX(item.span.begin_ns));
          const float x1 =
              float(std::max(view.NsToX(item.span.end_ns), view.NsToX(item.span.begin_ns) + 1.0));
          // A zone under min_zone_px beside zones merged (shorter than the resolution,
          // so merged in the overview) within a pixel: merged with them, as held zones
          // would be.
          auto beside = [&](size_t other) {
            if (other >= row.size() || row[other].count == 1) return false;
            const double gap = other < i ? double(model.DurationNs(row[other].end_tick, run.begin_tick))
                                         : double(model.DurationNs(run.end_tick, row[other].begin_tick));
            return gap <= view.ns_per_px();
          };
          const bool zone =
              !item.merged && run.count == 1 &&
              (x1 - x0 >= metrics_.min_zone_px || !(beside(size_t(i) - 1) || beside(size_t(i) + 1)));
          // Runs merged that follow each other within a pixel make one item, as held
          // zones merged would.
          if (!zone && out.size() > row_first && out.back().kind == DrawItem::Kind::kMerged &&
              out.back().x1 + 1 >= x0) {
            out.back().x1 = std::max(out.back().x1, x1);
            out.back().count += item.count;
            return;
          }
          const server::SourceLocation* location = zone ? &model.Location(run.location) : nullptr;
          out.push_back({zone ? DrawItem::Kind::kOverviewZone : DrawItem::Kind::kMerged, x0, y0, x1,
                         y0 + metrics_.row_height - 1,
                         zone ? ColorOf(*location, run.location, lane.key, item.span) : 0xFF808080u,
                         lane_index, i, zone ? 1 : item.count, zone ? &location->name : nullptr,
                         depth | source.flag});
        },
        CpuKey{model, origin_ns_});
  }
}

}  // namespace gnomon::viewer
