// The visible time range of the timeline and the math of zooming and panning it.
//
// Plain arithmetic, no window: the viewer feeds it mouse positions and wheel steps, and
// tests check it directly. Times are nanoseconds since the trace's first event; x is in
// pixels from the left edge of the timeline area.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace gnomon::viewer {

// Where the view is: its first time and its scale.
struct ViewPlace {
  int64_t begin_ns = 0;
  double ns_per_px = 1e6;
  friend bool operator==(const ViewPlace&, const ViewPlace&) = default;
};

class TimelineView {
 public:
  // Shows [begin_ns, end_ns) across width_px pixels.
  void Fit(int64_t begin_ns, int64_t end_ns, double width_px);
  // The timeline area's new width; the visible time range stays what it was.
  void SetWidth(double width_px);

  double NsToX(int64_t ns) const { return double(ns - begin_ns_) / ns_per_px_; }
  int64_t XToNs(double x) const { return begin_ns_ + int64_t(x * ns_per_px_); }

  // Zooms by `factor` (> 1 zooms in) keeping the time under x_px where it is. Zooming
  // out stops where the extent (SetExtent) fills the width with a tenth to spare, or
  // where the view already was when it showed more.
  void ZoomAt(double x_px, double factor);
  // The trace's times, [begin_ns, end_ns]: how far zooming out goes (none until set).
  void SetExtent(int64_t begin_ns, int64_t end_ns);
  // Moves the view by dx_px pixels (positive: content moves right, earlier times show).
  void Pan(double dx_px);
  // Keeps the newest time in view (live capture): shifts so end() == newest_ns.
  void Follow(int64_t newest_ns);

  ViewPlace place() const { return {begin_ns_, ns_per_px_}; }
  void GoTo(const ViewPlace& place);

  int64_t begin_ns() const { return begin_ns_; }
  int64_t end_ns() const { return begin_ns_ + int64_t(ns_per_px_ * width_px_); }
  double ns_per_px() const { return ns_per_px_; }
  double width_px() const { return width_px_; }

  // Limits: one pixel never shows less than kMinNsPerPx nor more than kMaxNsPerPx.
  static constexpr double kMinNsPerPx = 0.01;
  static constexpr double kMaxNsPerPx = 1e12;

 private:
  int64_t begin_ns_ = 0;
  double ns_per_px_ = 1e6;
  double width_px_ = 1000;
  int64_t extent_ns_ = 0;  // 0: no limit
};

// Back and forward through the places the view visited, as a browser does with pages.
// The viewer remembers a place when it leaves it: for a jump (to a zone, a frame, the
// selected range, the whole trace), and when the user starts to move a view that had
// been still for a while.
class ViewHistory {
 public:
  static constexpr size_t kDepth = 100;  // places kept back; older ones are forgotten
  // Remembers `left`, the place the view leaves; forward places are forgotten.
  void Leave(const ViewPlace& left);
  // The place to go back to from `current` (which Forward then returns to); none at the
  // oldest.
  std::optional<ViewPlace> Back(const ViewPlace& current);
  std::optional<ViewPlace> Forward(const ViewPlace& current);
  size_t back_count() const { return back_.size(); }
  size_t forward_count() const { return forward_.size(); }

 private:
  std::vector<ViewPlace> back_, forward_;
};

// A ruler step for the current scale: the smallest of 1, 2, 5 x 10^k ns whose ticks are
// at least min_px apart, and a label unit for it.
struct RulerStep {
  int64_t step_ns;
  const char* unit;  // "ns", "us", "ms", "s"
  double unit_ns;    // nanoseconds per unit
};
RulerStep ChooseRulerStep(double ns_per_px, double min_px);

}  // namespace gnomon::viewer
