// Frame times (src/core/frame_times.cpp): percentiles, histogram and the frame target.
#include "gnomon/viewer/frame_times.h"

#include <doctest/doctest.h>

#include <cstdint>

#include "analysis_sample.h"
#include "gnomon/server/statistics.h"

using namespace gnomon::viewer;
using gnomon::server::TraceModel;
using gnomon::test::AnalysisSample;

TEST_CASE("frame times: percentiles and histogram") {
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
  CHECK(ComputeFrameTimes(m, 5, 20).frame_ns.empty());
}

TEST_CASE("a frame is graded against the target: within it, within twice it, or longer") {
  const FrameTarget sixty;  // the default: 60 frames a second
  CHECK(sixty.ns == 16'666'667);
  CHECK(sixty.Grade(16'666'667) == FrameGrade::kOnTime);
  CHECK(sixty.Grade(22'000'000) == FrameGrade::kLate);  // late, not missed: yellow
  CHECK(sixty.Grade(33'333'334) == FrameGrade::kLate);
  CHECK(sixty.Grade(33'333'335) == FrameGrade::kMissed);
  CHECK(sixty.Color(10'000'000) != sixty.Color(22'000'000));
  CHECK(sixty.Color(22'000'000) != sixty.Color(40'000'000));
  CHECK(sixty.Color(40'000'000) != sixty.Color(10'000'000));

  const FrameTarget thirty = FrameTarget::Fps(30);
  CHECK(thirty.Grade(22'000'000) == FrameGrade::kOnTime);
  CHECK(thirty.Color(22'000'000) == sixty.Color(10'000'000));
  CHECK(thirty.fps() == doctest::Approx(30).epsilon(1e-6));
  CHECK(FrameTarget::Fps(0).fps() == doctest::Approx(FrameTarget::kMinFps));  // clamped, never 1/0
  CHECK(FrameTarget::Fps(1e9).fps() == doctest::Approx(FrameTarget::kMaxFps));
}

TEST_CASE("percentiles are nearest-rank, as the report prints them") {
  const TraceModel m = AnalysisSample();
  const FrameTimes f = ComputeFrameTimes(m, 0, 20);
  const auto summary = gnomon::server::SummarizeFrameTimes(m, m.frames.at(0));
  CHECK(f.p50_ns == summary.p50_ns);
  CHECK(f.p90_ns == summary.p90_ns);
  CHECK(f.p99_ns == summary.p99_ns);
}
