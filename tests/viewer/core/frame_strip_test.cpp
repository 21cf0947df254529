// The frame strip's index (src/core/frame_strip.cpp): the longest of any run of frames,
// kept up to date as frames arrive.
#include "gnomon/viewer/frame_strip.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>

using gnomon::server::FrameSeries;
using gnomon::viewer::FrameStrip;

namespace {

uint64_t Length(const FrameSeries& series, size_t k) {
  const auto [begin, end] = series.Frame(k);
  return end - begin;
}

// The longest of [first, last) by looking at every frame; the first of equals.
size_t LongestByHand(const FrameSeries& series, size_t first, size_t last) {
  size_t best = first;
  for (size_t k = first + 1; k < last; ++k) {
    if (Length(series, k) > Length(series, best)) best = k;
  }
  return best;
}

}  // namespace

TEST_CASE("the longest of any run of frames is the one a look at each would find") {
  std::mt19937_64 rng(7);
  FrameSeries series;
  series.marks.push_back(0);
  FrameStrip strip;
  // Frames arrive in bursts of varied size, as a live capture brings them; lengths repeat
  // (ties) and some marks come out of order (frames of length 0).
  for (const size_t burst : {1u, 2u, 15u, 1u, 300u, 4096u, 17u, 5000u}) {
    for (size_t i = 0; i < burst; ++i) {
      const uint64_t step = rng() % 50;
      series.marks.push_back(rng() % 100 == 0
                                 ? series.marks.back() - std::min<uint64_t>(series.marks.back(), 3)
                                 : series.marks.back() + step);
    }
    strip.Sync(series);
    REQUIRE(strip.indexed() == series.frame_count());
    const size_t n = series.frame_count();
    for (int probe = 0; probe < 400; ++probe) {
      const size_t first = rng() % n;
      const size_t last = first + 1 + rng() % (n - first);
      REQUIRE(strip.Longest(series, first, last) == LongestByHand(series, first, last));
    }
    CHECK(strip.Longest(series, 0, n) == LongestByHand(series, 0, n));
  }
}

TEST_CASE("one long frame among a million short ones is found from anywhere around it") {
  FrameSeries series;
  for (uint64_t k = 0; k <= 1'000'000; ++k) series.marks.push_back(k * 1000 + (k > 654'321 ? 49'000 : 0));
  FrameStrip strip;
  strip.Sync(series);
  CHECK(Length(series, 654'321) == 50'000);
  CHECK(strip.Longest(series, 0, series.frame_count()) == 654'321);
  CHECK(strip.Longest(series, 654'000, 654'322) == 654'321);
  CHECK(strip.Longest(series, 654'321, 654'322) == 654'321);
  CHECK(strip.Longest(series, 654'322, 700'000) == 654'322);  // all equal: the first
}

TEST_CASE("a discontinuous series' frames are its spans, and another series starts anew") {
  FrameSeries series;
  series.spans = {{0, 10}, {20, 50}, {60, 65}, {70, 71}};
  FrameStrip strip;
  strip.Sync(series);
  CHECK(series.frame_count() == 4);
  CHECK(strip.Longest(series, 0, 4) == 1);
  CHECK(strip.Longest(series, 2, 4) == 2);

  FrameSeries shorter;
  shorter.marks = {0, 5, 100};
  strip.Sync(shorter);  // fewer frames: another trace, indexed anew
  CHECK(strip.indexed() == 2);
  CHECK(strip.Longest(shorter, 0, 2) == 1);
}
