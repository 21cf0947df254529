#include "gnomon/viewer/lane_index.h"

#include <doctest/doctest.h>

#include <vector>

using gnomon::viewer::LaneIndex;
using gnomon::viewer::Span;
using gnomon::viewer::VisibleItem;

namespace {
struct Row {
  std::vector<Span> spans;
  LaneIndex index;
  void Add(int64_t b, int64_t e) {
    index.Add(0, uint32_t(spans.size()), b, uint64_t(e - b));
    spans.push_back({b, e});
  }
  std::vector<VisibleItem> Visit(int64_t t0, int64_t t1, double ns_per_px) const {
    std::vector<VisibleItem> items;
    index.Visit(
        0, t0, t1, ns_per_px, 2.0, [this](uint32_t i) { return spans[i]; },
        [&](const VisibleItem& item) { items.push_back(item); });
    return items;
  }
};
}  // namespace

TEST_CASE("wide zones are drawn one by one, only those in view") {
  Row row;
  for (int i = 0; i < 10; ++i) row.Add(i * 100, i * 100 + 90);
  const auto items = row.Visit(250, 650, 1.0);
  REQUIRE(items.size() == 5);  // zones 2..6 touch [250, 650]
  CHECK(items.front().first_index == 2);
  CHECK(items.back().first_index == 6);
  for (const auto& item : items) CHECK_FALSE(item.merged);
}

TEST_CASE("a million sub-pixel zones merge into at most a block per pixel, and no zone is lost") {
  Row row;
  for (int64_t i = 0; i < 1'000'000; ++i) row.Add(i * 50, i * 50 + 30);  // 50 ms of 30 ns zones
  const double ns_per_px = 50'000'000.0 / 1000;                          // 1000 pixels
  const auto items = row.Visit(0, 50'000'000, ns_per_px);
  CHECK(items.size() <= 1000);
  uint64_t covered = 0;
  for (const auto& item : items) {
    CHECK(item.merged);
    covered += item.count;
  }
  CHECK(covered == 1'000'000);
}

TEST_CASE("a wide zone after a run of small ones is never swallowed by the run") {
  Row row;
  for (int64_t i = 0; i < 100; ++i) row.Add(i * 10, i * 10 + 5);  // small, dense
  row.Add(1000, 5000);                                            // wide, right after
  const auto items = row.Visit(0, 6000, 10.0);                    // 10 ns per pixel
  REQUIRE(items.size() >= 2);
  CHECK(items.back().first_index == 100);
  CHECK_FALSE(items.back().merged);
  CHECK(items.back().span.begin_ns == 1000);
}

TEST_CASE("picking finds the zone under a time, or none in a gap") {
  Row row;
  row.Add(0, 100);
  row.Add(200, 300);
  auto span = [&row](uint32_t i) { return row.spans[i]; };
  CHECK(row.index.FindAt(0, 50, span) == 0u);
  CHECK(row.index.FindAt(0, 300, span) == 1u);
  CHECK_FALSE(row.index.FindAt(0, 150, span).has_value());
  CHECK_FALSE(row.index.FindAt(3, 50, span).has_value());
}
