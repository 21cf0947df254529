// The frame times of a frame series (the main one by default): each frame's length,
// the percentiles, a histogram, and how each frame fares against a target.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::viewer {

struct FrameTimes {
  std::vector<int64_t> frame_ns;  // in order: frame i from mark i to mark i + 1
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

// The colour a frame's bar takes against the usual targets, as 0xAABBGGRR: within
// 1/60 s green, within 1/30 s yellow, longer red.
uint32_t FrameTargetColor(int64_t frame_ns);
inline constexpr int64_t kFrameTarget60Ns = 16'666'667;
inline constexpr int64_t kFrameTarget30Ns = 33'333'333;

}  // namespace gnomon::viewer
