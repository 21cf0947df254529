// Two traces compared (src/core/trace_comparison.cpp): locations matched by name,
// function and file, whatever their ids.
#include "gnomon/viewer/trace_comparison.h"

#include <doctest/doctest.h>

#include "../../support/build_model.h"
#include "../../support/stream_writer.h"
#include "analysis_sample.h"
#include "gnomon/server/statistics.h"

using namespace gnomon::viewer;
using gnomon::server::TraceModel;
using gnomon::test::AnalysisSample;
using gnomon::test::StreamWriter;

TEST_CASE("two traces compared by name, function and file, whatever their ids") {
  const TraceModel a = AnalysisSample();
  StreamWriter w;
  w.AppInfo("other")
      .SourceLocation(7, "B", "f", "/elsewhere/x.cpp", 3)
      .SourceLocation(8, "New", "f", "y.cpp", 1);
  w.ThreadContext(1).ZoneBegin(7, 0).ZoneEnd(42).ZoneBegin(8, 50).ZoneEnd(60);
  const TraceModel b = gnomon::test::BuildModel(w);
  const auto rows =
      CompareTraces(a, gnomon::server::ComputeZoneStatistics(a), b, gnomon::server::ComputeZoneStatistics(b));
  REQUIRE(rows.size() == 5);  // Frame, A, B, C from A; B matched; New from B
  const ComparisonRow* row_b = nullptr;
  const ComparisonRow* row_new = nullptr;
  for (const ComparisonRow& r : rows) {
    if (r.name == "B") row_b = &r;
    if (r.name == "New") row_new = &r;
  }
  REQUIRE(row_b != nullptr);
  CHECK(row_b->count_a == 10);
  CHECK(row_b->count_b == 1);
  CHECK(row_b->mean_ratio() == doctest::Approx(42.0 / row_b->mean_a_ns));
  REQUIRE(row_new != nullptr);
  CHECK(row_new->count_a == 0);
  CHECK(row_new->mean_ratio() == 0);
  CHECK(MatchLocation(a, b.Location(1)) == 3);
}
