// The frame times of a frame series (the main one by default): each frame's length,
// the percentiles, a histogram, and how each frame fares against a target.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::viewer {

struct FrameTimes {
  std::vector<int64_t> frame_ns;  // in order, by FrameSeries::Frame
  std::vector<int64_t> sorted_ns;
  int64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0;
  // Bins of equal width over [min_ns, max_ns]; counts by bin.
  std::vector<uint64_t> histogram;
  uint64_t tallest = 0;
  // The lower edge of `bin` (histogram.size(): the upper edge of the last one).
  double EdgeNs(size_t bin) const {
    return double(min_ns) +
           double(max_ns - min_ns) * double(bin) / double(std::max<size_t>(histogram.size(), 1));
  }
  // Where `ns` lies across the histogram, 0 (min_ns) to 1 (max_ns).
  double Fraction(int64_t ns) const {
    return max_ns > min_ns ? double(ns - min_ns) / double(max_ns - min_ns) : 0.5;
  }
};

// The frames of series `name_id` (0: the main series), a histogram of `bins` bins.
FrameTimes ComputeFrameTimes(const server::TraceModel& model, uint32_t name_id, size_t bins);

// How a frame fares against the target frame time: within it, within twice it (a
// frame shown late), or longer. One rule for the timeline's frame strips and the Frame
// times window.
enum class FrameGrade : uint8_t { kOnTime, kLate, kMissed };
struct FrameTarget {
  static constexpr double kMinFps = 1, kMaxFps = 1000;
  int64_t ns = 16'666'667;             // 60 frames a second
  static FrameTarget Fps(double fps);  // clamped to [kMinFps, kMaxFps]
  double fps() const { return 1e9 / double(ns); }
  FrameGrade Grade(int64_t frame_ns) const;
  // The grade's colour, as 0xAABBGGRR: green, yellow, red.
  uint32_t Color(int64_t frame_ns) const;
};

}  // namespace gnomon::viewer
