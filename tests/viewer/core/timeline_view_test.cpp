#include "gnomon/viewer/timeline_view.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

using gnomon::viewer::ChooseRulerStep;
using gnomon::viewer::TimelineView;
using gnomon::viewer::ViewHistory;
using gnomon::viewer::ViewPlace;

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

TEST_CASE("zooming out stops where the whole trace fits, with a tenth to spare") {
  TimelineView view;
  view.Fit(0, 1000, 1000);
  view.SetExtent(0, 10'000'000);
  for (int i = 0; i < 100; ++i) view.ZoomAt(500, 0.5);
  CHECK(view.ns_per_px() == doctest::Approx(11'000));
  CHECK(view.end_ns() - view.begin_ns() == 11'000'000);
  view.ZoomAt(500, 2);  // zooming in is never held back
  CHECK(view.ns_per_px() == doctest::Approx(5'500));
  // A view already wider than the limit (fitted so) stays as wide, and no wider.
  view.Fit(0, 50'000'000, 1000);
  view.ZoomAt(500, 0.5);
  CHECK(view.ns_per_px() == doctest::Approx(50'000));
  // Without an extent, only the absolute limit holds.
  view.SetExtent(0, 0);
  view.ZoomAt(500, 0.5);
  CHECK(view.ns_per_px() == doctest::Approx(100'000));
}

TEST_CASE("back and forward walk the places the view left, as a browser walks pages") {
  ViewHistory history;
  const ViewPlace a{0, 1000}, b{5000, 10}, c{7000, 1};
  CHECK_FALSE(history.Back(a));
  history.Leave(a);  // a -> b
  history.Leave(b);  // b -> c
  history.Leave(b);  // the same place twice is kept once
  CHECK(history.back_count() == 2);
  CHECK(history.Back(c) == b);
  CHECK(history.Back(b) == a);
  CHECK_FALSE(history.Back(a));
  CHECK(history.Forward(a) == b);
  CHECK(history.Forward(b) == c);
  CHECK_FALSE(history.Forward(c));
  // Going somewhere new forgets the way forward.
  CHECK(history.Back(c) == b);
  history.Leave(b);
  CHECK(history.forward_count() == 0);
  // Only the newest places are kept.
  for (int i = 0; i < 300; ++i) history.Leave({i, 1});
  CHECK(history.back_count() == ViewHistory::kDepth);
  CHECK(history.Back({999, 1})->begin_ns == 299);

  TimelineView view;
  view.Fit(0, 1000, 1000);
  view.GoTo(b);
  CHECK(view.place() == b);
  CHECK(view.begin_ns() == 5000);
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
