#include "gnomon/viewer/timeline.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/counter_values.h"
#include "timeline_cpu_lanes.h"

namespace gnomon::viewer {
namespace {

using server::GpuContextTimeline;
using server::kOpenZone;
using server::ThreadTimeline;
using server::TraceModel;
using timeline_detail::CpuKey;
using timeline_detail::OverviewSpans;

constexpr int64_t kUntimed = INT64_MIN;

uint32_t Abgr(uint32_t rgb) {
  return 0xFF000000u | ((rgb & 0xFF) << 16) | (rgb & 0xFF00) | ((rgb >> 16) & 0xFF);
}

uint32_t FromHsv(float h, float s, float v) {
  const float c = v * s;
  const float hp = std::fmod(h * 6.0f, 6.0f);
  const float x = c * (1 - std::fabs(std::fmod(hp, 2.0f) - 1));
  float r = 0, g = 0, b = 0;
  if (hp < 1) {
    r = c;
    g = x;
  } else if (hp < 2) {
    r = x;
    g = c;
  } else if (hp < 3) {
    g = c;
    b = x;
  } else if (hp < 4) {
    g = x;
    b = c;
  } else if (hp < 5) {
    r = x;
    b = c;
  } else {
    r = c;
    b = x;
  }
  const float m = v - c;
  auto byte = [m](float f) { return uint32_t(std::lround((f + m) * 255)); };
  return 0xFF000000u | (byte(b) << 16) | (byte(g) << 8) | byte(r);
}

// The CPU zone accessor: relative ns through the CPU clock; open zones reach the end.
struct CpuSpans {
  const TraceModel& model;
  const ThreadTimeline& thread;
  int64_t origin_ns;
  int64_t end_ns;
  Span operator()(uint32_t i) const {
    const server::Zone& z = thread.zones[i];
    const int64_t b = model.clock.TickToNs(z.begin_tick) - origin_ns;
    return {b, z.is_open() ? std::max(b, end_ns) : model.clock.TickToNs(z.end_tick) - origin_ns};
  }
};

}  // namespace

uint32_t ZoneColor(const server::SourceLocation& location, uint32_t id) {
  if (location.color != protocol::kNoColor) return Abgr(location.color & 0xFFFFFF);
  const uint32_t hash = id * 2654435761u;
  return FromHsv(float(hash % 360) / 360.0f, 0.45f, 0.80f);
}

uint32_t ThreadColor(const LaneKey& lane) {
  const uint32_t hash = (lane.id ^ (uint32_t(lane.kind) << 24)) * 2654435761u;
  return FromHsv(float((hash >> 8) % 360) / 360.0f, 0.50f, 0.82f);
}

uint32_t DurationColor(int64_t duration_ns, int64_t target_ns) {
  // 0 at 1 us or less, 1 at the target or more, on a log scale; blue (hue 240) to red (0).
  constexpr double kShortNs = 1000;
  const double top = std::log(std::max(double(target_ns), 2 * kShortNs) / kShortNs);
  const double t = std::clamp(std::log(std::max(double(duration_ns), kShortNs) / kShortNs) / top, 0.0, 1.0);
  return FromHsv(float((1 - t) * 240 / 360), 0.60f, 0.90f);
}

uint32_t Timeline::ColorOf(const server::SourceLocation& location, uint32_t location_id, const LaneKey& lane,
                           const Span& span) const {
  switch (coloring_) {
    case ZoneColoring::kThread:
      return ThreadColor(lane);
    case ZoneColoring::kDuration:
      return DurationColor(span.end_ns - span.begin_ns, frame_target_.ns);
    case ZoneColoring::kLocation:
      break;
  }
  return ZoneColor(location, location_id);
}

int64_t Timeline::TraceEndNs(const TraceModel& model) const {
  if (model.first_tick == kOpenZone) return 0;
  int64_t end = model.clock.TickToNs(model.last_tick) - origin_ns_;
  for (const auto& [id, gpu] : gpus_) {
    for (const Span& s : gpu.spans) {
      if (s.begin_ns != kUntimed) end = std::max(end, s.end_ns);
    }
  }
  return end;
}

Span Timeline::GpuSpan(uint32_t context_id, uint32_t zone_index) const {
  auto it = gpus_.find(context_id);
  if (it == gpus_.end() || zone_index >= it->second.spans.size()) return {kUntimed, kUntimed};
  return it->second.spans[zone_index];
}

void Timeline::Sync(const TraceModel& model, double loaded) {
  origin_ns_ = model.first_tick == kOpenZone ? 0 : model.clock.TickToNs(model.first_tick);
  if (threads_.size() < model.threads.size()) threads_.resize(model.threads.size());
  for (size_t t = 0; t < model.threads.size(); ++t) {
    const ThreadTimeline& thread = model.threads[t];
    ThreadLane& lane = threads_[t];
    if (!model.zones_held) {
      SyncOverview(model, thread, lane, loaded);
      continue;
    }
    // A first few thousand zones show how the thread's zones share its rows; then room
    // for the rest, in one step.
    constexpr size_t kSample = 4096;
    const size_t first = lane.index.indexed();
    const size_t sampled = std::min(thread.zones.size(), first + kSample);
    // The zones this thread will have, judged from the share loaded (a thread's zones
    // spread over the whole file, roughly).
    const size_t expected =
        loaded > 0.02 && loaded < 1.0 ? size_t(double(thread.zones.size()) / loaded) : thread.zones.size();
    for (size_t i = first; i < thread.zones.size(); ++i) {
      if (i == sampled && expected - i > kSample) lane.index.Reserve(expected - i);
      const server::Zone& z = thread.zones[i];
      lane.index.Add(z.depth, uint32_t(i), int64_t(z.begin_tick),
                     z.is_open() ? kUnknownLength : z.end_tick - z.begin_tick);
    }
  }
  for (const auto& [id, context] : model.gpu_contexts) {
    GpuLane& lane = gpus_[id];
    size_t timed = 0;
    for (size_t i = lane.zones_seen; i < context.zones.size(); ++i) timed += context.zones[i].is_timed();
    const size_t knots = context.clock.sample_count();
    const size_t brackets = context.clock.offset_range().brackets;
    const bool changed = knots != lane.knots_seen || brackets != lane.brackets_seen ||
                         context.zones.size() != lane.zones_seen || timed > 0 ||
                         lane.timed_seen != lane.index.indexed();
    if (!changed) continue;
    // Re-map every zone: a new knot moves the zones it brackets.
    lane.spans.assign(context.zones.size(), Span{kUntimed, kUntimed});
    lane.index.Clear();
    for (size_t i = 0; i < context.zones.size(); ++i) {
      const server::GpuZone& zone = context.zones[i];
      if (!zone.is_timed()) continue;
      const auto mapped = model.MapGpuZone(context, zone);
      lane.spans[i] = {mapped.begin_ns - origin_ns_, mapped.end_ns - origin_ns_};
      lane.index.Add(zone.depth, uint32_t(i), lane.spans[i].begin_ns,
                     uint64_t(lane.spans[i].end_ns - lane.spans[i].begin_ns));
    }
    lane.index.SortRows();
    lane.knots_seen = knots;
    lane.brackets_seen = brackets;
    lane.zones_seen = context.zones.size();
    lane.timed_seen = lane.index.indexed();
  }
  for (const auto& [id, series] : model.frames) frame_strips_[id].Sync(series);
  SyncResources(model, loaded >= 1.0 && last_loaded_ < 1.0);
  last_loaded_ = loaded;
}

std::optional<Span> Timeline::FrameSpan(const TraceModel& model, uint32_t series_id, uint32_t number) const {
  auto it = model.frames.find(series_id);
  if (it == model.frames.end() || number == 0 || number > it->second.frame_count()) return std::nullopt;
  const auto [begin, end] = it->second.Frame(number - 1);
  return Span{model.clock.TickToNs(begin) - origin_ns_, model.clock.TickToNs(end) - origin_ns_};
}

size_t Timeline::CurvePointAt(const TraceModel& model, const CurvePointList& points, size_t from, int64_t ns,
                              bool after) const {
  const auto it = std::partition_point(points.begin() + ptrdiff_t(from), points.end(), [&](const auto& p) {
    const int64_t t = model.clock.TickToNs(p.first) - origin_ns_;
    return after ? t <= ns : t < ns;
  });
  return size_t(it - points.begin());
}

std::pair<double, double> Timeline::CurveMinMax(const LaneKey& key, const CurvePointList& points,
                                                size_t begin, size_t end) const {
  CurveBlocks& cache = curve_blocks_[key];
  if (cache.data != points.data() || cache.blocks.size() > points.size() / kCurveBlock) {
    cache.data = points.data();
    cache.blocks.clear();
  }
  while (cache.blocks.size() < points.size() / kCurveBlock) {  // the whole blocks, as they fill
    const size_t first = cache.blocks.size() * kCurveBlock;
    std::pair<double, double> block{points[first].second, points[first].second};
    for (size_t i = first + 1; i < first + kCurveBlock; ++i) {
      block.first = std::min(block.first, points[i].second);
      block.second = std::max(block.second, points[i].second);
    }
    cache.blocks.push_back(block);
  }
  std::pair<double, double> range{points[begin].second, points[begin].second};
  auto fold = [&range](double low, double high) {
    range.first = std::min(range.first, low);
    range.second = std::max(range.second, high);
  };
  size_t i = begin;
  for (; i < end && i % kCurveBlock != 0; ++i) fold(points[i].second, points[i].second);
  for (; i + kCurveBlock <= end; i += kCurveBlock)
    fold(cache.blocks[i / kCurveBlock].first, cache.blocks[i / kCurveBlock].second);
  for (; i < end; ++i) fold(points[i].second, points[i].second);
  return range;
}

PlotRange Timeline::VisiblePlotRange(const TraceModel& model, const TimelineView& view,
                                     const LaneKey& key) const {
  PlotRange r;
  const auto* curve = CurvePoints(model, key);
  if (curve == nullptr || curve->empty()) return r;
  const auto& points = *curve;
  // From the point before the view, which shapes its first segment, to the one after it.
  size_t begin = CurvePointAt(model, points, 0, view.begin_ns());
  if (begin > 0) --begin;
  const size_t end = std::min(points.size(), CurvePointAt(model, points, begin, view.end_ns(), true) + 1);
  r.points = end - begin;
  std::tie(r.min, r.max) = CurveMinMax(key, points, begin, end);
  if (key.kind == LaneKind::kMemory) {  // bytes in use are scaled from 0
    r.min = std::min(r.min, 0.0);
    r.max = std::max(r.max, 0.0);
  }
  return r;
}

float Timeline::CurveY(const Lane& lane, const PlotRange& range, double value) {
  double share = 0.5;  // of the height, from the bottom
  if (range.max > range.min) {
    share = (value - range.min) / (range.max - range.min);
  } else if (lane.key.kind == LaneKind::kMemory || value != range.min) {
    share = 0;
  }
  return lane.y + lane.height - float(share) * (lane.height - 2) - 1;
}

std::optional<std::pair<int64_t, double>> Timeline::PlotValueAt(const TraceModel& model, const LaneKey& key,
                                                                int64_t ns) const {
  const auto* curve = CurvePoints(model, key);
  if (curve == nullptr || curve->empty()) return std::nullopt;
  const auto& points = *curve;
  auto next = std::lower_bound(points.begin(), points.end(), ns, [&](const auto& p, int64_t t) {
    return model.clock.TickToNs(p.first) - origin_ns_ < t;
  });
  if (next == points.begin())
    return std::make_pair(model.clock.TickToNs(next->first) - origin_ns_, next->second);
  const auto& p = *(next - 1);  // the value in force at `ns`: the last point at or before it
  return std::make_pair(model.clock.TickToNs(p.first) - origin_ns_, p.second);
}

const Timeline::ThreadLane* Timeline::FindThreadLane(const TraceModel& model, uint32_t thread_id) const {
  auto it = model.thread_index.find(thread_id);
  return it == model.thread_index.end() || it->second >= threads_.size() ? nullptr : &threads_[it->second];
}

std::string Timeline::Name(const TraceModel& model, const LaneKey& key) {
  switch (key.kind) {
    case LaneKind::kFrames: {
      if (key.id == kMessagesLane) return "Messages";
      if (key.id == 0) return "Frames";
      auto it = model.frames.find(key.id);
      return "Frames: " +
             (it == model.frames.end() || it->second.name.empty() ? std::to_string(key.id) : it->second.name);
    }
    case LaneKind::kThread:
      return model.ThreadName(key.id);
    case LaneKind::kGpu: {
      auto it = model.gpu_contexts.find(key.id);
      return "GPU: " + (it == model.gpu_contexts.end() ? std::to_string(key.id) : it->second.label());
    }
    case LaneKind::kPlot: {
      auto it = model.plots.find(key.id);
      return it == model.plots.end() || it->second.name.empty() ? "plot " + std::to_string(key.id)
                                                                : it->second.name;
    }
    case LaneKind::kMemory: {
      auto it = model.memory_pools.find(key.id);
      return "Memory: " + (it == model.memory_pools.end() ? std::to_string(key.id) : it->second.name);
    }
    case LaneKind::kLock: {
      auto it = model.locks.find(key.id);
      return "Lock: " + (it == model.locks.end() ? std::to_string(key.id) : it->second.name);
    }
    case LaneKind::kCpu:
      return "CPU " + std::to_string(key.id);
    case LaneKind::kCounter: {
      auto set = model.counter_sets.find(CounterLaneSet(key.id));
      if (set == model.counter_sets.end()) return "counter";
      const uint32_t index = CounterLaneIndex(key.id);
      const std::string unit = server::CounterUnit(set->second, index);
      auto context = model.gpu_contexts.find(set->second.context_id);
      return "Counter: " + set->second.CounterName(index) + (unit.empty() ? "" : " (" + unit + ")") + " on " +
             (context == model.gpu_contexts.end() ? std::string("?") : context->second.label());
    }
  }
  return "";
}

std::string Timeline::Title(const TraceModel& model, const Lane& lane) const {
  if (lane.key.kind != LaneKind::kThread) return Name(model, lane.key);
  auto it = model.thread_index.find(lane.key.id);
  const uint64_t zones = it == model.thread_index.end() ? 0 : model.threads[it->second].zone_count();
  const bool library = it != model.thread_index.end() && model.threads[it->second].library;
  return Name(model, lane.key) + (library ? " (Gnomon's, " : " (") + std::to_string(zones) +
         (zones == 1 ? " zone)" : " zones)");
}

void Timeline::BuildFrameItems(const TraceModel& model, const TimelineView& view, const Lane& lane,
                               uint32_t lane_index, std::vector<DrawItem>& out) const {
  const int64_t t0 = view.begin_ns(), t1 = view.end_ns();
  auto series_it = model.frames.find(lane.key.id);
  auto strip_it = frame_strips_.find(lane.key.id);
  if (series_it != model.frames.end() && strip_it != frame_strips_.end()) {
    const server::FrameSeries& series = series_it->second;
    const FrameStrip& strip = strip_it->second;
    const size_t count = std::min(series.frame_count(), strip.indexed());
    auto begin_ns = [&](size_t k) { return model.clock.TickToNs(series.Frame(k).first) - origin_ns_; };
    auto end_ns = [&](size_t k) { return model.clock.TickToNs(series.Frame(k).second) - origin_ns_; };
    // The first frame that begins at or after `ns`, from `from` on (frames are in order).
    auto first_beginning = [&](size_t from, int64_t ns) {
      size_t lo = from, hi = count;
      while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (begin_ns(mid) < ns)
          lo = mid + 1;
        else
          hi = mid;
      }
      return lo;
    };
    size_t k = first_beginning(0, t0);
    if (k > 0 && end_ns(k - 1) >= t0) --k;  // the frame the view begins in
    const size_t last = first_beginning(k, t1 + 1);
    if (k < last) {
      // Bars are scaled to the longest frame in view.
      const int64_t longest = std::max<int64_t>(1, [&] {
        const size_t f = strip.Longest(series, k, last);
        return end_ns(f) - begin_ns(f);
      }());
      // Each bar starts right of the one before: frames that overlap it (a damaged or
      // hostile trace) join the next pixel's, so a strip never holds more bars than it
      // has pixels, whatever the frames.
      double free_x = -1e300;
      while (k < last && free_x <= view.width_px() + 1) {
        const double x0 = view.NsToX(begin_ns(k));
        size_t shown = k, next = k + 1;
        double left = x0;
        if (x0 < free_x || view.NsToX(end_ns(k)) - x0 < 1.0) {
          // Frames that begin in this pixel column: the longest stands for them all.
          left = std::floor(std::max(x0, free_x));
          next = std::max(k + 1, first_beginning(k, view.XToNs(left + 1.0)));
          shown = strip.Longest(series, k, next);
        }
        const int64_t length = end_ns(shown) - begin_ns(shown);
        const double right = std::max(view.NsToX(end_ns(shown)) - 1.0, left + 1.0);
        free_x = right;
        const float h = std::clamp(lane.height * float(double(length) / double(longest)), 1.0f,
                                   std::max(lane.height, 1.0f));
        out.push_back({DrawItem::Kind::kFrame, float(left), lane.y + lane.height - h, float(right),
                       lane.y + lane.height, frame_target_.Color(length), lane_index, uint32_t(shown + 1), 1,
                       nullptr});
        k = next;
      }
    }
  }
  if (messages_lane_ != lane.key) return;
  for (size_t m = 0; m < model.messages.size(); ++m) {
    const int64_t t = model.clock.TickToNs(model.messages[m].tick) - origin_ns_;
    if (t < t0 || t > t1) continue;
    const float x = float(view.NsToX(t));
    out.push_back({DrawItem::Kind::kMessage, x - 3, lane.y, x + 3, lane.y + 8,
                   model.messages[m].severity >= 3 ? 0xFF3030F0u : 0xFFE0C040u, lane_index, uint32_t(m), 1,
                   &model.messages[m].text});
  }
}

void Timeline::BuildItems(const TraceModel& model, const TimelineView& view, std::vector<DrawItem>& out,
                          float top, float bottom) const {
  out.clear();
  const int64_t t0 = view.begin_ns();
  const int64_t t1 = view.end_ns();
  const double px = view.ns_per_px();
  const int64_t end_ns = TraceEndNs(model);
  // Lanes are stacked in order: the first one reaching `top` is found by bisection.
  const auto first = std::lower_bound(lanes_.begin(), lanes_.end(), top,
                                      [](const Lane& lane, float y) { return lane.y + lane.height < y; });
  for (auto lane_index = uint32_t(first - lanes_.begin()); lane_index < lanes_.size(); ++lane_index) {
    const Lane& lane = lanes_[lane_index];
    if (!IsLaneVisible(lane, top, bottom)) break;
    auto emit_rows = [&](const LaneIndex& index, auto span, auto key_of, DrawItem::Kind kind,
                         auto location_of) {
      for (uint32_t depth = 0; depth < lane.rows; ++depth) {
        const float y0 = lane.y + float(depth) * metrics_.row_height;
        index.Visit(
            depth, t0, t1, px, metrics_.min_zone_px, span,
            [&](const VisibleItem& item) {
              const auto [location, id, name] = location_of(item.first_index);
              DrawItem d{item.merged ? DrawItem::Kind::kMerged : kind,
                         float(view.NsToX(item.span.begin_ns)),
                         y0,
                         float(std::max(view.NsToX(item.span.end_ns), view.NsToX(item.span.begin_ns) + 1.0)),
                         y0 + metrics_.row_height - 1,
                         item.merged ? 0xFF808080u : ColorOf(*location, id, lane.key, item.span),
                         lane_index,
                         item.first_index,
                         item.count,
                         item.merged ? nullptr : name};
              out.push_back(d);
            },
            key_of);
      }
    };
    switch (lane.key.kind) {
      case LaneKind::kThread: {
        const ThreadLane* thread_lane = FindThreadLane(model, lane.key.id);
        if (thread_lane == nullptr) break;
        const ThreadTimeline& thread = model.threads[model.thread_index.at(lane.key.id)];
        if (!model.zones_held) {
          BuildOverviewItems(model, view, lane, lane_index, *thread_lane, thread, out);
        } else {
          emit_rows(thread_lane->index, CpuSpans{model, thread, origin_ns_, end_ns},
                    CpuKey{model, origin_ns_}, DrawItem::Kind::kZone, [&](uint32_t i) {
                      const server::Zone& z = thread.zones[i];
                      return std::tuple{&model.Location(z.source_location), z.source_location,
                                        &model.ZoneName(thread, i)};
                    });
        }
        BuildRunningItems(view, lane, lane_index, thread.os_thread_id, out);
        BuildSampleItems(view, lane, lane_index, thread.os_thread_id, out);
        break;
      }
      case LaneKind::kGpu: {
        auto ctx = model.gpu_contexts.find(lane.key.id);
        auto idx = gpus_.find(lane.key.id);
        if (ctx == model.gpu_contexts.end() || idx == gpus_.end()) break;
        const GpuLane& gpu = idx->second;
        emit_rows(
            gpu.index, [&gpu](uint32_t i) { return gpu.spans[i]; }, IdentityKey{}, DrawItem::Kind::kGpuZone,
            [&](uint32_t i) {
              const server::GpuZone& z = ctx->second.zones[i];
              return std::tuple{&model.Location(z.source_location), z.source_location,
                                &model.Location(z.source_location).name};
            });
        break;
      }
      case LaneKind::kFrames:
        BuildFrameItems(model, view, lane, lane_index, out);
        break;
      case LaneKind::kCounter:
        BuildCounterItems(model, view, lane, lane_index, out);
        break;
      case LaneKind::kLock:
        BuildLockItems(model, view, lane, lane_index, out);
        break;
      case LaneKind::kCpu:
        BuildCpuItems(model, view, lane, lane_index, out);
        break;
      case LaneKind::kPlot:
      case LaneKind::kMemory: {
        const auto* curve = CurvePoints(model, lane.key);
        if (curve == nullptr || curve->empty()) break;
        const auto& points = *curve;
        // Scaled to the values in view, which the lane's axis shows.
        const PlotRange visible = VisiblePlotRange(model, view, lane.key);
        // A polyline through the points in view (and one on each side), at most one
        // segment per pixel. Bytes in use hold their value until the next change: a
        // memory lane is drawn as steps, and a pixel's changes as one vertical stroke
        // from their lowest to their highest, so that a short spike still shows.
        const bool steps = lane.key.kind == LaneKind::kMemory;
        const uint32_t color = steps ? 0xFF60C0F0u : 0xFFD0A040u;
        auto segment = [&](float x0, float y0, float x1, float y1, size_t at) {
          out.push_back({DrawItem::Kind::kPlot, x0, y0, x1, y1, color, lane_index, uint32_t(at), 1, nullptr});
        };
        size_t i = CurvePointAt(model, points, 0, t0);
        if (i > 0) --i;
        bool have_previous = false;
        float previous_x = 0, previous_y = 0;
        float column_top = 0, column_bottom = 0;  // a step lane's changes within the pixel
        while (i < points.size()) {
          const int64_t t = model.clock.TickToNs(points[i].first) - origin_ns_;
          const float x = float(view.NsToX(t));
          const float y = CurveY(lane, visible, points[i].second);
          const bool past_end = t > t1;
          if (!have_previous) {
            have_previous = true;
            column_top = column_bottom = y;
          } else if (steps) {
            if (column_bottom - column_top >= 1.0f)
              segment(previous_x, column_top, previous_x, column_bottom, i);
            segment(previous_x, previous_y, x, previous_y, i);
            segment(x, previous_y, x, y, i);
            column_top = column_bottom = y;
          } else {
            segment(previous_x, previous_y, x, y, i);
          }
          previous_x = x;
          previous_y = y;
          if (past_end) break;
          // The next point drawn: the first a pixel on or past the view's end. Those
          // between lie within this pixel: a step lane keeps their extent and the last
          // one's value, a polyline skips them.
          const size_t next =
              size_t(std::partition_point(points.begin() + ptrdiff_t(i) + 1, points.end(),
                                          [&](const auto& p) {
                                            const int64_t at = model.clock.TickToNs(p.first) - origin_ns_;
                                            return float(view.NsToX(at)) - x < 1.0f && at <= t1;
                                          }) -
                     points.begin());
          if (steps && next > i + 1) {
            const auto [low, high] = CurveMinMax(lane.key, points, i + 1, next);
            column_top = std::min(column_top, CurveY(lane, visible, high));
            column_bottom = std::max(column_bottom, CurveY(lane, visible, low));
            previous_y = CurveY(lane, visible, points[next - 1].second);
          }
          i = next;
        }
        break;
      }
    }
  }
}

std::optional<Hit> Timeline::HitTest(const TraceModel& model, const TimelineView& view, float x,
                                     float y) const {
  for (const Lane& lane : lanes_) {
    // A thread's sample ticks and running strip, at the bottom of its title bar.
    const float strip = std::max(metrics_.running_strip_height, metrics_.sample_tick_height);
    if (lane.key.kind == LaneKind::kThread && y < lane.y && y >= lane.y - 1 - strip) {
      auto thread = model.thread_index.find(lane.key.id);
      if (thread == model.thread_index.end()) continue;
      const uint32_t tid = model.threads[thread->second].os_thread_id;
      const int64_t slack = int64_t(view.ns_per_px() * 2);
      if (auto sample = SampleAt(tid, view.XToNs(x), slack))
        return Hit{lane.key, DrawItem::Kind::kSample, *sample};
      if (y < lane.y - 1 - metrics_.running_strip_height) return std::nullopt;
      if (auto span = RunningAt(tid, view.XToNs(x), slack))
        return Hit{lane.key, DrawItem::Kind::kRunning, *span};
      if (auto before = WaitAt(tid, view.XToNs(x)))
        return Hit{lane.key, DrawItem::Kind::kNotRunning, *before};
      return std::nullopt;
    }
    if (y < lane.y || y >= lane.y + lane.height) continue;
    const int64_t t = view.XToNs(x);
    const int64_t slack = int64_t(view.ns_per_px() * 2);
    const uint32_t depth = uint32_t((y - lane.y) / metrics_.row_height);
    auto probe = [&](const LaneIndex& index, auto span, auto key_of) -> std::optional<uint32_t> {
      for (int64_t at : {t, t - slack, t + slack}) {
        if (auto found = index.FindAt(depth, at, span, key_of)) return found;
      }
      return std::nullopt;
    };
    switch (lane.key.kind) {
      case LaneKind::kThread: {
        const ThreadLane* thread_lane = FindThreadLane(model, lane.key.id);
        if (thread_lane == nullptr) return std::nullopt;
        const ThreadTimeline& thread = model.threads[model.thread_index.at(lane.key.id)];
        if (!model.zones_held) {
          const RunSource source = SourceFor(model, thread, *thread_lane, view);
          if (source.rows == nullptr || depth >= source.rows->size()) return std::nullopt;
          const auto& rows = *source.rows;
          if (auto run = probe(*source.index, OverviewSpans{model, rows[depth], origin_ns_},
                               CpuKey{model, origin_ns_})) {
            const bool zone = rows[depth][*run].count == 1;
            return Hit{lane.key, zone ? DrawItem::Kind::kOverviewZone : DrawItem::Kind::kMerged, *run,
                       depth | source.flag};
          }
          return std::nullopt;
        }
        if (auto zone = probe(thread_lane->index, CpuSpans{model, thread, origin_ns_, TraceEndNs(model)},
                              CpuKey{model, origin_ns_})) {
          return Hit{lane.key, DrawItem::Kind::kZone, *zone};
        }
        return std::nullopt;
      }
      case LaneKind::kGpu: {
        auto idx = gpus_.find(lane.key.id);
        if (idx == gpus_.end()) return std::nullopt;
        const GpuLane& gpu = idx->second;
        if (auto zone = probe(
                gpu.index, [&gpu](uint32_t i) { return gpu.spans[i]; }, IdentityKey{})) {
          return Hit{lane.key, DrawItem::Kind::kGpuZone, *zone};
        }
        return std::nullopt;
      }
      case LaneKind::kFrames: {
        std::vector<DrawItem> items;
        BuildFrameItems(model, view, lane, 0, items);
        for (const DrawItem& item : items) {
          if (item.kind == DrawItem::Kind::kFrame && x >= item.x0 && x <= item.x1)
            return Hit{lane.key, item.kind, item.index};
        }
        return std::nullopt;
      }
      case LaneKind::kCounter: {
        std::vector<DrawItem> items;
        BuildCounterItems(model, view, lane, 0, items);
        for (const DrawItem& item : items) {
          if (x >= item.x0 - 1 && x <= item.x1 + 1) return Hit{lane.key, item.kind, item.index};
        }
        return std::nullopt;
      }
      case LaneKind::kLock: {
        auto idx = locks_.find(lane.key.id);
        if (idx == locks_.end()) return std::nullopt;
        const LockLane& lock = idx->second;
        if (auto item = probe(
                lock.index, [&lock](uint32_t i) { return lock.spans[i]; }, IdentityKey{})) {
          return Hit{lane.key, *item % 2 == 0 ? DrawItem::Kind::kLockHold : DrawItem::Kind::kLockWait,
                     *item / 2};
        }
        return std::nullopt;
      }
      case LaneKind::kCpu:
        if (auto run = CpuRunAt(lane.key.id, t, slack)) return Hit{lane.key, DrawItem::Kind::kRunning, *run};
        return std::nullopt;
      case LaneKind::kPlot:
      case LaneKind::kMemory:
        return std::nullopt;
    }
  }
  return std::nullopt;
}

void Timeline::BuildCounterItems(const TraceModel& model, const TimelineView& view, const Lane& lane,
                                 uint32_t lane_index, std::vector<DrawItem>& out) const {
  auto set = model.counter_sets.find(CounterLaneSet(lane.key.id));
  if (set == model.counter_sets.end()) return;
  auto context = model.gpu_contexts.find(set->second.context_id);
  auto gpu = gpus_.find(set->second.context_id);
  if (context == model.gpu_contexts.end() || gpu == gpus_.end()) return;
  const uint32_t counter = CounterLaneIndex(lane.key.id);
  // Bars from each measured zone's begin to its end, as tall as the value against the
  // largest value of the counter; one bar per pixel at most.
  double largest = 0;
  for (const server::CounterSample& sample : context->second.counter_samples) {
    if (sample.set_id != set->first || counter >= sample.value_count) continue;
    largest = std::max(largest, server::NormalizedCounterValue(model, context->second, sample, counter));
  }
  if (largest <= 0) largest = 1;
  // A frame's result spans the frame (main series: frame N from mark N to mark N + 1).
  auto frames = model.frames.find(0);
  float last_x[2] = {-1e9f, -1e9f};  // zones', frames' (each in time order)
  for (const server::CounterSample& sample : context->second.counter_samples) {
    if (sample.set_id != set->first || counter >= sample.value_count) continue;
    Span span{kUntimed, kUntimed};
    DrawItem::Kind kind = DrawItem::Kind::kCounter;
    uint32_t index = sample.target_index;
    if (sample.target == uint8_t(protocol::CounterTarget::kGpuZone) &&
        sample.target_index < gpu->second.spans.size()) {
      span = gpu->second.spans[sample.target_index];
    } else if (sample.target == uint8_t(protocol::CounterTarget::kFrame) && frames != model.frames.end() &&
               size_t(sample.target_index) + 1 < frames->second.marks.size()) {
      span = {model.clock.TickToNs(frames->second.marks[sample.target_index]) - origin_ns_,
              model.clock.TickToNs(frames->second.marks[sample.target_index + 1]) - origin_ns_};
      kind = DrawItem::Kind::kFrame;  // hovering and clicking it act on the frame
      index = sample.target_index + 1;
    }
    if (span.begin_ns == kUntimed || span.end_ns < view.begin_ns() || span.begin_ns > view.end_ns()) continue;
    const float x0 = float(view.NsToX(span.begin_ns));
    float& last = last_x[kind == DrawItem::Kind::kFrame];
    if (x0 < last + 1.0f) continue;
    const float x1 = std::max(float(view.NsToX(span.end_ns)), x0 + 1.0f);
    const double value = server::NormalizedCounterValue(model, context->second, sample, counter);
    const float h = std::max(1.0f, lane.height * float(value / largest));
    out.push_back({kind, x0, lane.y + lane.height - h, x1, lane.y + lane.height, 0xFF40B0E0u, lane_index,
                   index, 1, nullptr});
    last = x0;
  }
}

}  // namespace gnomon::viewer
