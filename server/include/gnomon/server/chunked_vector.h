// An append-only array stored in fixed-size chunks.
//
// Traces hold hundreds of millions of events. A std::vector that doubles would copy
// them and briefly need twice the memory; this container never moves an element, grows
// by one chunk at a time, and indexes in O(1).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace gnomon::server {

template <typename T, size_t kChunkElementsLog2 = 12>
class ChunkedVector {
 public:
  static constexpr size_t kChunkElements = size_t{1} << kChunkElementsLog2;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  T& operator[](size_t i) { return chunks_[i >> kChunkElementsLog2][i & (kChunkElements - 1)]; }
  const T& operator[](size_t i) const {
    return chunks_[i >> kChunkElementsLog2][i & (kChunkElements - 1)];
  }
  T& back() { return (*this)[size_ - 1]; }

  T& push_back(const T& value) {
    if ((size_ & (kChunkElements - 1)) == 0 && (size_ >> kChunkElementsLog2) == chunks_.size()) {
      chunks_.emplace_back(new T[kChunkElements]);
    }
    T& slot = (*this)[size_++];
    slot = value;
    return slot;
  }

  // Bytes held, counting whole chunks.
  size_t capacity_bytes() const { return chunks_.size() * kChunkElements * sizeof(T); }

  template <typename F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i < size_; ++i) f((*this)[i]);
  }

  friend bool operator==(const ChunkedVector& a, const ChunkedVector& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i) {
      if (!(a[i] == b[i])) return false;
    }
    return true;
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace gnomon::server
