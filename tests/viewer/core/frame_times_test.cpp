// Frame times (src/core/frame_times.cpp): percentiles, histogram and target colours.
#include "gnomon/viewer/frame_times.h"

#include <doctest/doctest.h>

#include <cstdint>

#include "analysis_sample.h"

using namespace gnomon::viewer;
using gnomon::server::TraceModel;
using gnomon::test::AnalysisSample;

TEST_CASE("frame times: percentiles, histogram and colours against 1/60 and 1/30 s") {
  const TraceModel m = AnalysisSample();
  const FrameTimes f = ComputeFrameTimes(m, 0, 20);
  REQUIRE(f.frame_ns.size() == 9);
  CHECK(f.max_ns == 40'000'000);
  CHECK(f.p50_ns == 1000);
  uint64_t counted = 0;
  for (uint64_t c : f.histogram) counted += c;
  CHECK(counted == 9);
  CHECK(f.histogram.back() == 1);
  CHECK(f.min_ns == f.sorted_ns.front());
  CHECK(f.EdgeNs(0) == double(f.min_ns));
  CHECK(f.EdgeNs(20) == double(f.max_ns));
  CHECK(f.histogram.front() > 0);  // the bins span the frames, not zero to the longest
  CHECK(FrameTargetColor(10'000'000) != FrameTargetColor(20'000'000));
  CHECK(FrameTargetColor(20'000'000) != FrameTargetColor(40'000'000));
  CHECK(ComputeFrameTimes(m, 5, 20).frame_ns.empty());
}
