#include "gnomon/server/statistics.h"

#include <doctest/doctest.h>

#include "gnomon/server/trace_builder.h"
#include "../support/build_model.h"

using namespace gnomon::server;

TEST_CASE("count, total, self, min, max, mean, median and deviation per source location") {
  gnomon::test::StreamWriter w;
  w.AppInfo("app").SourceLocation(1, "Frame", "f", "a.cpp", 1).SourceLocation(2, "A", "a", "a.cpp", 2);
  w.SourceLocation(3, "B", "b", "a.cpp", 3).ThreadContext(1);
  w.ZoneBegin(1, 0);
  w.ZoneBegin(2, 10).ZoneEnd(30);                          // A: 20
  w.ZoneBegin(2, 40).ZoneBegin(3, 45).ZoneEnd(50).ZoneEnd(70);  // A: 30 with B: 5
  w.ZoneEnd(100);                                          // Frame: 100
  w.ZoneBegin(3, 200);                                     // unfinished: left out
  const TraceModel model = gnomon::test::BuildModel(w);
  const auto stats = ComputeZoneStatistics(model);
  REQUIRE(stats.size() == 3);
  CHECK(stats[0].source_location == 1);
  CHECK(stats[0].total_ns == 100);
  CHECK(stats[0].self_ns == 50);
  const ZoneStatistics& a = stats[1];
  CHECK(a.source_location == 2);
  CHECK(a.count == 2);
  CHECK(a.total_ns == 50);
  CHECK(a.self_ns == 45);
  CHECK(a.min_ns == 20);
  CHECK(a.max_ns == 30);
  CHECK(a.mean_ns == doctest::Approx(25));
  CHECK(a.median_ns == 25);
  CHECK(a.stddev_ns == doctest::Approx(5));
  CHECK(stats[2].count == 1);
  CHECK(stats[2].self_ns == 5);
}
