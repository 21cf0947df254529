#include "gnomon/viewer/timeline_view.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

using gnomon::viewer::ChooseRulerStep;
using gnomon::viewer::TimelineView;

TEST_CASE("zooming keeps the time under the cursor in place, panning moves by pixels") {
  TimelineView view;
  view.Fit(0, 1'000'000, 1000);
  CHECK(view.ns_per_px() == doctest::Approx(1000));
  CHECK(view.XToNs(250) == 250'000);
  const int64_t under = view.XToNs(300);
  view.ZoomAt(300, 4.0);
  CHECK(view.ns_per_px() == doctest::Approx(250));
  CHECK(std::llabs(view.XToNs(300) - under) <= 1);
  view.Pan(100);
  CHECK(std::llabs(view.XToNs(400) - under) <= 1);
  CHECK(view.NsToX(view.begin_ns()) == doctest::Approx(0));
  view.Follow(5'000'000);
  CHECK(view.end_ns() == 5'000'000);
}

TEST_CASE("zoom stops at a hundredth of a nanosecond per pixel and at 10^12") {
  TimelineView view;
  view.Fit(0, 1000, 1000);
  for (int i = 0; i < 100; ++i) view.ZoomAt(500, 10);
  CHECK(view.ns_per_px() == doctest::Approx(TimelineView::kMinNsPerPx));
  for (int i = 0; i < 100; ++i) view.ZoomAt(500, 0.1);
  CHECK(view.ns_per_px() == doctest::Approx(TimelineView::kMaxNsPerPx));
}

TEST_CASE("the ruler picks 1-2-5 steps with readable units") {
  CHECK(ChooseRulerStep(1, 80).step_ns == 100);
  CHECK(std::string(ChooseRulerStep(1, 80).unit) == "ns");
  CHECK(ChooseRulerStep(1000, 80).step_ns == 100'000);
  CHECK(std::string(ChooseRulerStep(1000, 80).unit) == "us");
  CHECK(ChooseRulerStep(30'000, 80).step_ns == 5'000'000);
  CHECK(std::string(ChooseRulerStep(1e8, 80).unit) == "s");
}

TEST_CASE("a new width keeps the visible time range") {
  TimelineView view;
  view.Fit(2'000, 1'002'000, 1000);
  view.SetWidth(500);
  CHECK(view.begin_ns() == 2'000);
  CHECK(view.end_ns() == 1'002'000);
  view.SetWidth(1800);
  CHECK(view.begin_ns() == 2'000);
  CHECK(std::llabs(view.end_ns() - 1'002'000) <= 1);
}
