#include "gnomon/viewer/timeline_view.h"

#include <algorithm>
#include <cmath>

namespace gnomon::viewer {

void TimelineView::Fit(int64_t begin_ns, int64_t end_ns, double width_px) {
  width_px_ = std::max(1.0, width_px);
  begin_ns_ = begin_ns;
  ns_per_px_ =
      std::clamp(double(std::max<int64_t>(end_ns - begin_ns, 1)) / width_px_, kMinNsPerPx, kMaxNsPerPx);
}

void TimelineView::SetWidth(double width_px) {
  width_px = std::max(1.0, width_px);
  // The same span of time across the new width: resizing the window keeps the range.
  ns_per_px_ = std::clamp(ns_per_px_ * width_px_ / width_px, kMinNsPerPx, kMaxNsPerPx);
  width_px_ = width_px;
}

void TimelineView::ZoomAt(double x_px, double factor) {
  if (!(factor > 0)) return;
  const double anchor = double(begin_ns_) + x_px * ns_per_px_;
  double wanted = ns_per_px_ / factor;
  if (extent_ns_ > 0 && factor < 1) {
    const double widest = std::max(ns_per_px_, double(extent_ns_) * 1.1 / width_px_);
    wanted = std::min(wanted, widest);
  }
  ns_per_px_ = std::clamp(wanted, kMinNsPerPx, kMaxNsPerPx);
  begin_ns_ = int64_t(std::llround(anchor - x_px * ns_per_px_));
}

void TimelineView::SetExtent(int64_t begin_ns, int64_t end_ns) {
  extent_ns_ = end_ns > begin_ns ? end_ns - begin_ns : 0;
}

void TimelineView::GoTo(const ViewPlace& place) {
  begin_ns_ = place.begin_ns;
  ns_per_px_ = std::clamp(place.ns_per_px, kMinNsPerPx, kMaxNsPerPx);
}

void TimelineView::Pan(double dx_px) { begin_ns_ -= int64_t(std::llround(dx_px * ns_per_px_)); }

void TimelineView::Follow(int64_t newest_ns) {
  begin_ns_ = newest_ns - int64_t(std::llround(ns_per_px_ * width_px_));
}

void ViewHistory::Leave(const ViewPlace& left) {
  forward_.clear();
  if (!back_.empty() && back_.back() == left) return;
  if (back_.size() == kDepth) back_.erase(back_.begin());
  back_.push_back(left);
}

std::optional<ViewPlace> ViewHistory::Back(const ViewPlace& current) {
  if (back_.empty()) return std::nullopt;
  const ViewPlace place = back_.back();
  back_.pop_back();
  forward_.push_back(current);
  return place;
}

std::optional<ViewPlace> ViewHistory::Forward(const ViewPlace& current) {
  if (forward_.empty()) return std::nullopt;
  const ViewPlace place = forward_.back();
  forward_.pop_back();
  back_.push_back(current);
  return place;
}

RulerStep ChooseRulerStep(double ns_per_px, double min_px) {
  const double wanted = ns_per_px * min_px;
  auto smallest_step = [wanted] {
    for (int64_t decade = 1; decade < 1'000'000'000'000'000; decade *= 10) {
      for (int64_t m : {1, 2, 5}) {
        if (double(decade * m) >= wanted) return decade * m;
      }
    }
    return int64_t{1'000'000'000'000'000};
  };
  const int64_t step = smallest_step();
  if (step >= 1'000'000'000) return {step, "s", 1e9};
  if (step >= 1'000'000) return {step, "ms", 1e6};
  if (step >= 1'000) return {step, "us", 1e3};
  return {step, "ns", 1.0};
}

}  // namespace gnomon::viewer
