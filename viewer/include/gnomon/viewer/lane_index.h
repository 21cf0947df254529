// Zones of one lane (a CPU thread, a GPU context) by depth row, for drawing and picking.
//
// A row holds the indices of its zones in begin order; zones of one row never overlap,
// so ends are in order too. Times are read through a span accessor when asked, so zones
// that were open when indexed show their end once it arrives. Drawing a row costs
// O(pixels x log zones), not O(zones): where zones are narrower than a pixel, one
// binary search jumps to the first zone past that pixel and the run becomes one merged
// block. That is what keeps a 10-million-zone trace smooth at every zoom.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace gnomon::viewer {

struct Span {
  int64_t begin_ns;
  int64_t end_ns;
};

// What Visit() hands out: one zone, or a merged run of zones each under a pixel wide.
struct VisibleItem {
  Span span;
  uint32_t first_index;  // the zone, or the run's first zone
  uint32_t count;        // 1 for a zone; > 1 for a merged run
  bool merged;
};

class LaneIndex {
 public:
  void Clear() {
    rows_.clear();
    indexed_ = 0;
  }
  // Appends zone `index` to row `depth`; zones of a row must come in begin order.
  void Add(uint16_t depth, uint32_t index) {
    if (rows_.size() <= depth) rows_.resize(size_t(depth) + 1);
    rows_[depth].push_back(index);
    ++indexed_;
  }
  size_t indexed() const { return indexed_; }
  // Restores begin order in every row (for lanes filled out of order). span(index) -> Span.
  template <typename SpanOf>
  void SortRows(SpanOf span) {
    for (auto& r : rows_) {
      std::stable_sort(r.begin(), r.end(), [&](uint32_t a, uint32_t b) { return span(a).begin_ns < span(b).begin_ns; });
    }
  }
  size_t rows() const { return rows_.size(); }
  const std::vector<uint32_t>& row(size_t depth) const { return rows_[depth]; }

  // Calls emit(VisibleItem) for row `depth` over [t0_ns, t1_ns]. Zones narrower than
  // min_px pixels, and gaps narrower than a pixel between them, merge into blocks.
  // span(index) -> Span.
  template <typename SpanOf, typename Emit>
  void Visit(size_t depth, int64_t t0_ns, int64_t t1_ns, double ns_per_px, double min_px, SpanOf span,
             Emit emit) const {
    if (depth >= rows_.size()) return;
    const std::vector<uint32_t>& r = rows_[depth];
    const double min_ns = ns_per_px * min_px;
    size_t i = FirstEndingAtOrAfter(r, t0_ns, span);
    while (i < r.size()) {
      const Span s = span(r[i]);
      if (s.begin_ns > t1_ns) break;
      if (double(s.end_ns - s.begin_ns) >= min_ns) {
        emit(VisibleItem{s, r[i], 1, false});
        ++i;
        continue;
      }
      // A run of small zones. Each step absorbs, with one binary search, every zone that
      // starts within a pixel of the run's end; only the last of those can be wide (zones
      // of a row do not overlap), and a wide one ends the run instead of joining it.
      const size_t first = i;
      Span run = s;
      ++i;
      while (i < r.size()) {
        size_t j = FirstBeginningAtOrAfter(r, i, run.end_ns + int64_t(std::max(ns_per_px, 1.0)), span);
        if (j == i) break;
        const Span last = span(r[j - 1]);
        const bool last_is_wide = double(last.end_ns - last.begin_ns) >= min_ns;
        if (last_is_wide) --j;
        if (j > i) run.end_ns = std::max(run.end_ns, span(r[j - 1]).end_ns);
        i = j;
        if (last_is_wide || span(r[j - 1]).begin_ns > t1_ns) break;
      }
      emit(VisibleItem{run, r[first], uint32_t(i - first), i - first > 1});
    }
  }

  // The zone of row `depth` that contains t_ns, if any.
  template <typename SpanOf>
  std::optional<uint32_t> FindAt(size_t depth, int64_t t_ns, SpanOf span) const {
    if (depth >= rows_.size()) return std::nullopt;
    const std::vector<uint32_t>& r = rows_[depth];
    const size_t i = FirstEndingAtOrAfter(r, t_ns, span);
    if (i < r.size()) {
      const Span s = span(r[i]);
      if (s.begin_ns <= t_ns && t_ns <= s.end_ns) return r[i];
    }
    return std::nullopt;
  }

 private:
  template <typename SpanOf>
  static size_t FirstEndingAtOrAfter(const std::vector<uint32_t>& r, int64_t t, SpanOf span) {
    size_t lo = 0, hi = r.size();
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (span(r[mid]).end_ns < t) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
  template <typename SpanOf>
  static size_t FirstBeginningAtOrAfter(const std::vector<uint32_t>& r, size_t from, int64_t t, SpanOf span) {
    size_t lo = from, hi = r.size();
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (span(r[mid]).begin_ns < t) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  std::vector<std::vector<uint32_t>> rows_;
  size_t indexed_ = 0;
};

}  // namespace gnomon::viewer
