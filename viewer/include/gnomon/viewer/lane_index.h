// Zones of one lane (a CPU thread, a GPU context) by depth row, for drawing and picking.
//
// A row holds its zones in begin order, each with a sort key: the zone's begin in the
// lane's own monotonic unit (CPU ticks, or GPU-mapped ns), kept in a contiguous array so
// that searches stay in cache. Zones of one row never overlap, so ends are in order too.
// Times are read through a span accessor when asked, so zones that were open when
// indexed show their end once it arrives. Drawing a row costs O(pixels x log zones), not
// O(zones): where zones are narrower than a pixel, one binary search jumps to the first
// zone past that pixel and the run becomes one merged block. That is what keeps a
// 10-million-zone trace smooth at every zoom.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
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

// How a lane's keys relate to nanoseconds. This one: the keys are nanoseconds.
struct IdentityKey {
  int64_t operator()(int64_t ns) const { return ns; }  // the key of a time
  int64_t ToNs(int64_t key) const { return key; }
  double per_ns() const { return 1.0; }  // key units per nanosecond
};

// A zone's length in key units, when it is not known yet (an open zone).
inline constexpr uint32_t kUnknownLength = UINT32_MAX;

class LaneIndex {
 public:
  void Clear() {
    rows_.clear();
    indexed_ = 0;
  }
  // Appends zone `index` to row `depth`, in begin order: its sort key (begin, in key
  // units) and its length in key units (saturated; kUnknownLength while open).
  void Add(uint16_t depth, uint32_t index, int64_t key, uint64_t length) {
    if (rows_.size() <= depth) rows_.resize(size_t(depth) + 1);
    Row& r = rows_[depth];
    if (r.entries.size() % kCoarseStride == 0) r.coarse.push_back(key);
    r.entries.push_back({key, uint32_t(std::min<uint64_t>(length, kUnknownLength)), index});
    ++indexed_;
  }
  // Makes room for about `more` zones yet to come, shared among the rows as the zones
  // so far were, so that a big batch (a loaded trace) grows each row once instead of
  // copying it at every doubling. Without zones so far there is nothing to go by.
  void Reserve(size_t more) {
    if (indexed_ == 0) return;
    for (Row& r : rows_) {
      const size_t target = r.entries.size() + r.entries.size() * more / indexed_ * 21 / 20 + kCoarseStride;
      if (target <= r.entries.capacity()) continue;
      r.entries.reserve(std::max(target, r.entries.capacity() * 3 / 2));
      r.coarse.reserve(r.entries.capacity() / kCoarseStride + 1);
    }
  }
  size_t indexed() const { return indexed_; }
  size_t rows() const { return rows_.size(); }
  // The lengths of row `depth`'s zones added up (key units), open zones left out.
  uint64_t RowLength(size_t depth) const {
    uint64_t total = 0;
    if (depth < rows_.size()) {
      for (const Entry& e : rows_[depth].entries) total += e.length == kUnknownLength ? 0 : e.length;
    }
    return total;
  }

  // Restores key order in every row (for lanes filled out of order).
  void SortRows() {
    for (Row& r : rows_) {
      std::stable_sort(r.entries.begin(), r.entries.end(),
                       [](const Entry& a, const Entry& b) { return a.key < b.key; });
      r.coarse.clear();
      for (size_t k = 0; k < r.entries.size(); k += kCoarseStride) r.coarse.push_back(r.entries[k].key);
    }
  }

  // Calls emit(VisibleItem) for row `depth` over [t0_ns, t1_ns]. Zones narrower than
  // min_px pixels, and gaps narrower than a pixel between them, merge into blocks.
  // span(index) -> Span; keys: see IdentityKey. Merging reads only the row's arrays.
  template <typename SpanOf, typename Emit, typename Keys = IdentityKey>
  void Visit(size_t depth, int64_t t0_ns, int64_t t1_ns, double ns_per_px, double min_px, SpanOf span,
             Emit emit, Keys keys = {}) const {
    if (depth >= rows_.size()) return;
    const Row& r = rows_[depth];
    const double min_ns = ns_per_px * min_px;
    const double min_length = min_ns * keys.per_ns();
    const int64_t pixel = std::max<int64_t>(1, int64_t(std::max(ns_per_px, 1.0) * keys.per_ns()));
    const std::vector<Entry>& e = r.entries;
    auto end_key = [&](size_t k) {
      if (e[k].length != kUnknownLength) return e[k].key + int64_t(e[k].length);
      return std::max(e[k].key, keys(span(e[k].index).end_ns));
    };
    auto is_wide = [&](size_t k) {
      if (e[k].length != kUnknownLength) return double(e[k].length) >= min_length;
      const Span s = span(e[k].index);
      return double(s.end_ns - s.begin_ns) >= min_ns;
    };
    size_t i = FirstEndingAtOrAfter(r, t0_ns, span, keys);
    const int64_t last_key = keys(t1_ns);
    while (i < e.size() && e[i].key <= last_key) {
      if (is_wide(i)) {
        emit(VisibleItem{span(e[i].index), e[i].index, 1, false});
        ++i;
        continue;
      }
      // A run of small zones. Each step absorbs every zone that starts within a pixel of
      // the run's end; only the last of those can be wide (zones of a row do not
      // overlap), and a wide one ends the run instead of joining it.
      const size_t first = i;
      int64_t run_end = end_key(i);
      ++i;
      while (i < e.size()) {
        const int64_t target = run_end + pixel;
        // Dense rows: when a whole coarse block of zones starts within one pixel, none of
        // them can be wide (they do not overlap), so the run jumps to the block's end
        // knowing only the coarse keys, with an error under a pixel.
        const size_t block = i / kCoarseStride + 1;
        if (block + 1 < r.coarse.size() && r.coarse[block] < target &&
            r.coarse[block + 1] <= target + pixel && r.coarse[block + 1] - r.coarse[block - 1] <= 2 * pixel) {
          size_t b = block + 1;
          while (b + 1 < r.coarse.size() && r.coarse[b + 1] <= target + pixel &&
                 r.coarse[b + 1] - r.coarse[b] <= pixel)
            ++b;
          i = b * kCoarseStride;
          run_end = std::max(run_end, r.coarse[b]);
          if (r.coarse[b] > last_key) break;
          continue;
        }
        size_t j = LowerBound(r, i, target);
        if (j == i) break;
        const bool last_is_wide = is_wide(j - 1);
        if (last_is_wide) --j;
        if (j > i) run_end = std::max(run_end, end_key(j - 1));
        i = j;
        if (last_is_wide || e[j - 1].key > last_key) break;
      }
      emit(VisibleItem{
          {keys.ToNs(e[first].key), keys.ToNs(run_end)}, e[first].index, uint32_t(i - first), i - first > 1});
    }
  }

  // The zone of row `depth` that contains t_ns, if any.
  template <typename SpanOf, typename KeyOf = IdentityKey>
  std::optional<uint32_t> FindAt(size_t depth, int64_t t_ns, SpanOf span, KeyOf key_of = {}) const {
    if (depth >= rows_.size()) return std::nullopt;
    const Row& r = rows_[depth];
    const size_t i = FirstEndingAtOrAfter(r, t_ns, span, key_of);
    if (i < r.entries.size()) {
      const Span s = span(r.entries[i].index);
      if (s.begin_ns <= t_ns && t_ns <= s.end_ns) return r.entries[i].index;
    }
    return std::nullopt;
  }

 private:
  // Every kCoarseStride-th key again, in a small array: searches gallop there first.
  static constexpr size_t kCoarseStride = 16;

  // One zone of a row: everything a merge step reads, in one cache line's quarter.
  struct Entry {
    int64_t key;      // begin, in key units
    uint32_t length;  // in key units, saturated; kUnknownLength while open
    uint32_t index;   // the zone's index in its thread or context
  };
  struct Row {
    std::vector<Entry> entries;
    std::vector<int64_t> coarse;  // entries[0].key, entries[16].key, ...
  };

  // The first entry with key >= `key` at or after `from`. The target is usually a pixel
  // away: gallop over the coarse keys (small, cache-resident), then finish inside one
  // stride, so a search costs a couple of cache misses rather than a walk of the row.
  static size_t LowerBound(const Row& r, size_t from, int64_t key) {
    const std::vector<Entry>& e = r.entries;
    const size_t n = e.size();
    auto by_key = [](const Entry& entry, int64_t k) { return entry.key < k; };
    size_t block = from / kCoarseStride + 1;  // first coarse entry past `from`
    if (block < r.coarse.size() && r.coarse[block] < key) {
      size_t step = 1, low = block;
      while (block + step < r.coarse.size() && r.coarse[block + step] < key) {
        low = block + step;
        step *= 2;
      }
      const size_t high = std::min(r.coarse.size(), block + step + 1);
      block = size_t(
          std::lower_bound(r.coarse.begin() + ptrdiff_t(low), r.coarse.begin() + ptrdiff_t(high), key) -
          r.coarse.begin());
    }
    // The answer lies in [(block - 1) * stride, block * stride], and not before `from`.
    const size_t lo = std::max(from, (block - 1) * kCoarseStride);
    const size_t hi = std::min(n, block * kCoarseStride + 1);
    return size_t(std::lower_bound(e.begin() + ptrdiff_t(lo), e.begin() + ptrdiff_t(hi), key, by_key) -
                  e.begin());
  }
  // Zones do not overlap: the first zone ending at or after t is the last one beginning
  // at or before t, if it reaches t, else the one after it.
  template <typename SpanOf, typename KeyOf>
  static size_t FirstEndingAtOrAfter(const Row& r, int64_t t, SpanOf span, KeyOf key_of) {
    const auto& e = r.entries;
    const size_t after =
        size_t(std::upper_bound(e.begin(), e.end(), key_of(t),
                                [](int64_t k, const Entry& entry) { return k < entry.key; }) -
               e.begin());
    if (after > 0 && span(e[after - 1].index).end_ns >= t) return after - 1;
    return after;
  }

  std::vector<Row> rows_;
  size_t indexed_ = 0;
};

}  // namespace gnomon::viewer
