// A frame series drawn as a strip of bars: where frames are narrower than a pixel, the
// pixel shows the longest frame under it, never merely the first, so a slow frame is
// seen at any zoom.
//
// FrameStrip keeps, for blocks of 16, 256, 4096, ... frames, the longest frame of each
// block (by ticks, which the clock maps to ns in the same order), so that the longest
// of any run of frames is found in O(log n): a strip over 10 M frames costs a few
// lookups per pixel, not a pass over every frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::viewer {

class FrameStrip {
 public:
  // Indexes the frames `series` gained since the last call (the last, partial block of
  // each level is redone). A series that lost frames, or turned from spans to marks
  // (another trace, or a damaged one), is indexed anew.
  void Sync(const server::FrameSeries& series);
  // Of frames [first, last) of `series` (first < last <= indexed()), the longest; the
  // first of equals.
  size_t Longest(const server::FrameSeries& series, size_t first, size_t last) const;
  size_t indexed() const { return indexed_; }

 private:
  static constexpr size_t kFanOut = 16;
  size_t indexed_ = 0;
  bool continuous_ = false;  // of the series indexed: marks, or spans
  // levels_[k][m]: the longest frame of block m of kFanOut^(k+1) frames.
  std::vector<std::vector<uint32_t>> levels_;
};

}  // namespace gnomon::viewer
