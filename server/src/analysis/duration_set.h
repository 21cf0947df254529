// The durations of one source location, in bounded memory: the values themselves
// while they are few, then a histogram exact below kExactBuckets ns and with
// 2^kSubBucketBits buckets per power of two above (a bucket is at most 1/128 of its
// values wide). Shared by the zone statistics and the regression check.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace gnomon::server::analysis {

// A location's durations are kept as values while they are few (kValuesBeforeHistogram).
constexpr uint64_t kExactBuckets = 256;
constexpr unsigned kSubBucketBits = 7;
constexpr size_t kBuckets = kExactBuckets + (64 - 8) * (size_t{1} << kSubBucketBits);
constexpr size_t kValuesBeforeHistogram = 4096;

inline size_t BucketOf(uint64_t v) {
  if (v < kExactBuckets) return v;
  const unsigned exponent = unsigned(std::bit_width(v)) - 1;  // >= 8
  const unsigned shift = exponent - kSubBucketBits;
  return kExactBuckets + (exponent - 8) * (size_t{1} << kSubBucketBits) +
         ((v >> shift) & ((uint64_t{1} << kSubBucketBits) - 1));
}
inline uint64_t BucketLow(size_t bucket) {
  if (bucket < kExactBuckets) return bucket;
  const size_t above = bucket - kExactBuckets;
  const unsigned exponent = unsigned(above >> kSubBucketBits) + 8;
  const uint64_t sub = above & ((size_t{1} << kSubBucketBits) - 1);
  return ((uint64_t{1} << kSubBucketBits) + sub) << (exponent - kSubBucketBits);
}
inline uint64_t BucketWidth(size_t bucket) {
  if (bucket < kExactBuckets) return 1;
  return uint64_t{1} << (((bucket - kExactBuckets) >> kSubBucketBits) + 8 - kSubBucketBits);
}

// The durations of one location: values while few, then a histogram.
class DurationSet {
 public:
  void Add(int64_t duration) {
    if (histogram_) {
      ++histogram_[BucketOf(uint64_t(duration))];
      return;
    }
    values_.push_back(duration);
    if (values_.size() > kValuesBeforeHistogram) MakeHistogram();
  }
  void Merge(DurationSet& other) {
    if (other.histogram_ && !histogram_) MakeHistogram();
    if (histogram_) {
      if (other.histogram_) {
        for (size_t b = 0; b < kBuckets; ++b) histogram_[b] += other.histogram_[b];
      }
      for (int64_t v : other.values_) ++histogram_[BucketOf(uint64_t(v))];
    } else {
      values_.insert(values_.end(), other.values_.begin(), other.values_.end());
      if (values_.size() > kValuesBeforeHistogram) MakeHistogram();
    }
    other = {};
  }
  bool has_histogram() const { return histogram_ != nullptr; }
  // The counts by bucket (BucketOf) once there are more than kValuesBeforeHistogram
  // values; nullptr before.
  uint64_t* histogram() { return histogram_.get(); }
  // Puts the kept values in order, for ValueRange.
  void SortValues() { std::sort(values_.begin(), values_.end()); }
  // The least and the greatest value of 0-based `rank` may be (of `count` values in
  // all): the value itself while values are kept (sorted by SortValues), else the ends
  // of its bucket.
  std::pair<int64_t, int64_t> ValueRange(uint64_t rank) const {
    if (!histogram_) {
      const int64_t v = values_[std::min<size_t>(rank, values_.size() - 1)];
      return {v, v};
    }
    const size_t bucket = FindRank(rank).first;
    return {int64_t(BucketLow(bucket)), int64_t(BucketLow(bucket) + BucketWidth(bucket) - 1)};
  }
  std::vector<int64_t>& values() { return values_; }
  // The bucket holding the value of 0-based `rank`, and how many values lie below it.
  std::pair<size_t, uint64_t> FindRank(uint64_t rank) const {
    uint64_t below = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
      if (rank < below + histogram_[b]) return {b, below};
      below += histogram_[b];
    }
    return {kBuckets - 1, below};
  }

 private:
  void MakeHistogram() {
    histogram_ = std::make_unique<uint64_t[]>(kBuckets);
    for (int64_t v : values_) ++histogram_[BucketOf(uint64_t(v))];
    values_ = {};
  }
  std::vector<int64_t> values_;
  std::unique_ptr<uint64_t[]> histogram_;
};

}  // namespace gnomon::server::analysis
