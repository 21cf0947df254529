// An append-only array stored in chunks that never move.
//
// Traces hold hundreds of millions of events. A std::vector that doubles would copy
// them and briefly need twice the memory; this container never moves an element, grows
// by one chunk at a time, and indexes in O(1).
//
// Chunks double from kFirstChunkElements up to 2 MiB, then stay at 2 MiB: a series with
// a handful of events costs a small chunk (a hostile stream that opens thousands of
// series with one event each costs little), while one with a hundred million fills
// 2 MiB blocks mapped on their own (chunk_memory.h).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "gnomon/server/chunk_memory.h"

namespace gnomon::server {

template <typename T, size_t kFirstChunkLog2 = 4>
class ChunkedVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  static_assert(sizeof(T) <= chunk_memory::kBlockBytes >> kFirstChunkLog2, "first chunk above 2 MiB");

 public:
  static constexpr size_t kFirstChunkElements = size_t{1} << kFirstChunkLog2;
  static constexpr size_t kLastChunkLog2 = std::bit_width(chunk_memory::kBlockBytes / sizeof(T)) - 1;
  static constexpr size_t kLastChunkElements = size_t{1} << kLastChunkLog2;

  ChunkedVector() = default;
  ChunkedVector(ChunkedVector&& other) noexcept
      : chunks_(std::move(other.chunks_)),
        size_(other.size_),
        capacity_(other.capacity_),
        shrunk_elements_(other.shrunk_elements_) {
    other.size_ = other.capacity_ = other.shrunk_elements_ = 0;
  }
  ChunkedVector& operator=(ChunkedVector&& other) noexcept {
    if (this != &other) {
      Release();
      chunks_ = std::move(other.chunks_);
      size_ = other.size_;
      capacity_ = other.capacity_;
      shrunk_elements_ = other.shrunk_elements_;
      other.size_ = other.capacity_ = other.shrunk_elements_ = 0;
    }
    return *this;
  }
  ChunkedVector(const ChunkedVector&) = delete;
  ChunkedVector& operator=(const ChunkedVector&) = delete;
  ~ChunkedVector() { Release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  T& operator[](size_t i) { return *Locate(i); }
  const T& operator[](size_t i) const { return *Locate(i); }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  T& push_back(const T& value) {
    if (size_ == capacity_) Grow();
    T& slot = (*this)[size_++];
    slot = value;
    return slot;
  }

  // Gives back the unused end of the last chunk, once no more elements are expected
  // (a trace loaded, a stream ended): a 2 MiB chunk is up to 2 MiB of slack per thread.
  // A later push_back still works; it copies the last chunk back to its full size.
  void ShrinkToFit() {
    if (chunks_.empty() || size_ == capacity_) return;
    const size_t full = HeldElements(chunks_.size() - 1);
    const size_t used = full - (capacity_ - size_);
    T* small = used == 0 ? nullptr : static_cast<T*>(::operator new(used * sizeof(T)));
    if (used != 0) std::memcpy(small, chunks_.back(), used * sizeof(T));
    chunk_memory::Free(chunks_.back(), full * sizeof(T));
    if (used == 0) {
      chunks_.pop_back();
      shrunk_elements_ = 0;
    } else {
      chunks_.back() = small;
      shrunk_elements_ = used;
    }
    capacity_ = size_;
  }

  // In a vector ordered so that below(element) holds for a first part and not after it:
  // the index where that part ends (a binary search).
  template <typename Below>
  size_t PartitionPoint(Below&& below) const {
    size_t first = 0;
    for (size_t n = size_; n > 0;) {
      const size_t half = n / 2;
      if (below((*this)[first + half])) {
        first += half + 1;
        n -= half + 1;
      } else {
        n = half;
      }
    }
    return first;
  }

  // Bytes held, counting whole chunks.
  size_t capacity_bytes() const { return capacity_ * sizeof(T); }

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
  // Chunk 0 holds [0, F); chunk k >= 1 holds [2^(log F + k - 1), twice that) until the
  // chunks reach kLastChunkElements; from there every chunk holds kLastChunkElements.
  T* Locate(size_t i) const {
    if (i >= kLastChunkElements) {
      return chunks_[(i >> kLastChunkLog2) + (kLastChunkLog2 - kFirstChunkLog2)] +
             (i & (kLastChunkElements - 1));
    }
    const size_t width = std::bit_width(i);
    if (width <= kFirstChunkLog2) return chunks_[0] + i;
    return chunks_[width - kFirstChunkLog2] + (i - (size_t{1} << (width - 1)));
  }
  static size_t ChunkElements(size_t chunk) {
    if (chunk == 0) return kFirstChunkElements;
    const size_t log2 = kFirstChunkLog2 + chunk - 1;
    return size_t{1} << (log2 < kLastChunkLog2 ? log2 : kLastChunkLog2);
  }
  // Elements chunk k has room for (the last one may have been shrunk).
  size_t HeldElements(size_t chunk) const {
    return chunk + 1 == chunks_.size() && shrunk_elements_ != 0 ? shrunk_elements_ : ChunkElements(chunk);
  }
  void Grow() {
    if (shrunk_elements_ != 0) {  // back to its full size first
      const size_t full = ChunkElements(chunks_.size() - 1);
      T* chunk = static_cast<T*>(chunk_memory::Allocate(full * sizeof(T)));
      std::memcpy(chunk, chunks_.back(), shrunk_elements_ * sizeof(T));
      chunk_memory::Free(chunks_.back(), shrunk_elements_ * sizeof(T));
      chunks_.back() = chunk;
      capacity_ += full - shrunk_elements_;
      shrunk_elements_ = 0;
      return;
    }
    const size_t elements = ChunkElements(chunks_.size());
    chunks_.reserve(chunks_.size() + 1);
    chunks_.push_back(static_cast<T*>(chunk_memory::Allocate(elements * sizeof(T))));
    capacity_ += elements;
  }
  void Release() {
    for (size_t k = 0; k < chunks_.size(); ++k) chunk_memory::Free(chunks_[k], HeldElements(k) * sizeof(T));
    chunks_.clear();
    shrunk_elements_ = 0;
  }

  std::vector<T*> chunks_;
  size_t size_ = 0;
  size_t capacity_ = 0;
  size_t shrunk_elements_ = 0;  // of the last chunk, when ShrinkToFit cut it; else 0
};

}  // namespace gnomon::server
