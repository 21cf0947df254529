#include "gnomon/viewer/frame_strip.h"

#include <algorithm>

namespace gnomon::viewer {
namespace {

uint64_t Length(const server::FrameSeries& series, size_t k) {
  const auto [begin, end] = series.Frame(k);
  return end - begin;
}

}  // namespace

void FrameStrip::Sync(const server::FrameSeries& series) {
  const size_t count = series.frame_count();
  if (count < indexed_ || series.continuous() != continuous_) {
    indexed_ = 0;
    levels_.clear();
    continuous_ = series.continuous();
  }
  if (count == indexed_) return;
  // Level by level, from the block holding the first new item to the end.
  size_t below = count;       // items of the level below (frames, at first)
  size_t changed = indexed_;  // the first of them that is new
  auto longer = [&](uint32_t a, uint32_t b) { return Length(series, b) > Length(series, a) ? b : a; };
  for (size_t level = 0; below > 1; ++level) {
    if (levels_.size() <= level) levels_.emplace_back();
    std::vector<uint32_t>& blocks = levels_[level];
    const size_t n = (below + kFanOut - 1) / kFanOut;
    blocks.resize(n);
    for (size_t m = changed / kFanOut; m < n; ++m) {
      const size_t end = std::min(below, (m + 1) * kFanOut);
      uint32_t best = level == 0 ? uint32_t(m * kFanOut) : levels_[level - 1][m * kFanOut];
      for (size_t i = m * kFanOut + 1; i < end; ++i) {
        best = longer(best, level == 0 ? uint32_t(i) : levels_[level - 1][i]);
      }
      blocks[m] = best;
    }
    changed /= kFanOut;
    below = n;
  }
  indexed_ = count;
}

size_t FrameStrip::Longest(const server::FrameSeries& series, size_t first, size_t last) const {
  size_t best = first;
  auto consider = [&](size_t k) {
    if (Length(series, k) > Length(series, best) || (Length(series, k) == Length(series, best) && k < best))
      best = k;
  };
  // Items [lo, hi) of a level (0: the frames themselves; L: levels_[L - 1]): the partial
  // blocks at both ends item by item, the whole blocks between them one level up.
  size_t lo = first, hi = last;
  for (size_t level = 0;; ++level) {
    auto item = [&](size_t i) { return level == 0 ? i : size_t(levels_[level - 1][i]); };
    if (level >= levels_.size() || hi - lo <= 2 * kFanOut) {
      for (size_t i = lo; i < hi; ++i) consider(item(i));
      return best;
    }
    for (; lo < hi && lo % kFanOut != 0; ++lo) consider(item(lo));
    for (; hi > lo && hi % kFanOut != 0; --hi) consider(item(hi - 1));
    lo /= kFanOut;
    hi /= kFanOut;
  }
}

}  // namespace gnomon::viewer
