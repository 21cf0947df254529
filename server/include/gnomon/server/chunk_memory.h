// Where the big arrays of a trace get their memory: 2 MiB blocks mapped on their own.
//
// A trace of a hundred million zones takes 1.2 GB. Its arrays (ZoneArray, ChunkedVector)
// take memory 2 MiB at a time, each block a mapping of its own, which a thread with
// time to spare can fault in ahead (BlockReserve): loading a big trace spends much of its
// time taking fresh memory from the kernel, and this is where that time is shared out.
//
// A block that will not fill (the last one of an array, once a trace is loaded or a
// stream ended) gives its unused tail back to the kernel. The kernel may then place
// another mapping in that hole, so a block must never be unmapped whole afterwards:
// MappedBlock remembers how much of it is still mapped and frees exactly that.
//
// Blocks are not advised for transparent huge pages. On a virtual machine whose host
// takes back the guest's free memory, free huge pages are exactly what the host took
// back: touching 1.6 GB of them took 0.15 s or, as often, 1.2 - 3.9 s, against a steady
// 0.66 - 1.08 s for plain pages (a 100 M-zone load: 1.04 - 1.98 s with huge pages,
// 0.75 - 1.12 s without; same build, same host, runs interleaved).
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace gnomon::server::chunk_memory {

inline constexpr size_t kBlockBytes = size_t{2} << 20;
inline constexpr size_t kPageBytes = 4096;

// A fresh 2 MiB block of its own mapping, untouched. Throws std::bad_alloc when the
// kernel has none.
inline void* MapBlock() {
  void* block = mmap(nullptr, kBlockBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) throw std::bad_alloc();
  return block;
}

// Faults in every page of a block (MADV_POPULATE_WRITE: one call rather than 512
// faults), then writes to each page. The writes matter on a virtual machine whose kernel
// maps a page without writing it, its host handing out zeroed memory: the host backs the
// page only at its first write. On such a 2-core machine that first write cost about
// 5 us a page (15 ns for each 12-byte zone stored), and without these writes it fell on
// whoever stored first, a lane building a live model or a load's builder, instead of on
// the thread with time to spare: a 100 M-zone load took 2.45 - 2.79 s, against 2.04 -
// 2.33 s with them. Where the fault backs the page, they cost 512 cache misses a block.
// A kernel without MADV_POPULATE_WRITE (before 5.14) gets the writes only.
inline void Populate(void* block) {
#ifdef MADV_POPULATE_WRITE
  madvise(block, kBlockBytes, MADV_POPULATE_WRITE);
#endif
  auto* bytes = static_cast<volatile uint8_t*>(block);
  for (size_t page = 0; page < kBlockBytes; page += kPageBytes) bytes[page] = 0;
}

// 2 MiB blocks whose pages were touched ahead of time by a thread with time to spare.
// Taking a page for the first time costs a kernel fault and zeroing; loading a trace
// takes 1.2 GB for 100 M zones, and its reader thread, waiting for the builder, can pay
// that instead of the builder. Each load owns one: its reader fills it, and its builder
// thread draws on it (UseBlockReserve) while the load lasts; what is left is given back
// when it is destroyed. A worker building a live model keeps one filled the same way.
// Thread-safe.
class BlockReserve {
 public:
  static constexpr size_t kMaxBlocks = 16;

  BlockReserve() = default;
  BlockReserve(const BlockReserve&) = delete;
  BlockReserve& operator=(const BlockReserve&) = delete;
  ~BlockReserve() { Clear(); }

  // A touched block, or nullptr when none is ready.
  void* Take() {
    std::lock_guard lock(mutex_);
    if (blocks_.empty()) return nullptr;
    void* block = blocks_.back();
    blocks_.pop_back();
    return block;
  }
  // Touches one more block when fewer than `limit` (at most kMaxBlocks) wait; false when
  // full.
  bool AddOne(size_t limit = kMaxBlocks) {
    {
      std::lock_guard lock(mutex_);
      if (blocks_.size() >= std::min(limit, kMaxBlocks)) return false;
    }
    void* block = MapBlock();
    Populate(block);
    std::lock_guard lock(mutex_);
    blocks_.push_back(block);
    return true;
  }
  // Gives the unused blocks back to the system.
  void Clear() {
    std::vector<void*> blocks;
    {
      std::lock_guard lock(mutex_);
      blocks.swap(blocks_);
    }
    for (void* block : blocks) munmap(block, kBlockBytes);
  }

 private:
  std::mutex mutex_;
  std::vector<void*> blocks_;
};

// The reserve the calling thread's new blocks come from, if any.
inline thread_local BlockReserve* t_block_reserve = nullptr;

// While it lives, the calling thread takes its new blocks from `reserve` first.
class UseBlockReserve {
 public:
  explicit UseBlockReserve(BlockReserve& reserve) : previous_(std::exchange(t_block_reserve, &reserve)) {}
  ~UseBlockReserve() { t_block_reserve = previous_; }
  UseBlockReserve(const UseBlockReserve&) = delete;
  UseBlockReserve& operator=(const UseBlockReserve&) = delete;

 private:
  BlockReserve* previous_;
};

// A whole 2 MiB block: from the calling thread's reserve, or fresh.
inline void* TakeBlock() {
  if (t_block_reserve != nullptr) {
    if (void* block = t_block_reserve->Take()) return block;
  }
  return MapBlock();
}

// Small pieces from new; 2 MiB ones as blocks of their own.
inline void* Allocate(size_t bytes) { return bytes == kBlockBytes ? TakeBlock() : ::operator new(bytes); }

// Frees what Allocate(bytes) gave.
inline void Free(void* memory, size_t bytes) {
  if (bytes == kBlockBytes) {
    munmap(memory, kBlockBytes);
  } else {
    ::operator delete(memory);
  }
}

// Owns one 2 MiB block, of which the first mapped_bytes() are still mapped.
//
//   MappedBlock block = MappedBlock::Take();
//   ... use [block.base(), block.base() + used) ...
//   block.TrimTo(used);   // the rest goes back to the kernel, which may reuse the range
//   // destroying the block unmaps [base, base + used) only
class MappedBlock {
 public:
  MappedBlock() = default;
  static MappedBlock Take() { return MappedBlock(TakeBlock()); }
  MappedBlock(MappedBlock&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)), mapped_bytes_(std::exchange(other.mapped_bytes_, 0)) {}
  MappedBlock& operator=(MappedBlock&& other) noexcept {
    if (this != &other) {
      Release();
      base_ = std::exchange(other.base_, nullptr);
      mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    }
    return *this;
  }
  MappedBlock(const MappedBlock&) = delete;
  MappedBlock& operator=(const MappedBlock&) = delete;
  ~MappedBlock() { Release(); }

  char* base() const { return static_cast<char*>(base_); }
  size_t mapped_bytes() const { return mapped_bytes_; }

  // Gives back everything past the first `keep_bytes` (rounded up to whole pages); a
  // block never grows back. Nothing happens when that is no less than what is mapped.
  void TrimTo(size_t keep_bytes) {
    keep_bytes = (keep_bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
    if (base_ == nullptr || keep_bytes >= mapped_bytes_) return;
    munmap(base() + keep_bytes, mapped_bytes_ - keep_bytes);
    mapped_bytes_ = keep_bytes;
    if (mapped_bytes_ == 0) base_ = nullptr;
  }

 private:
  explicit MappedBlock(void* base) : base_(base), mapped_bytes_(kBlockBytes) {}
  void Release() {
    if (base_ != nullptr) munmap(base_, mapped_bytes_);
    base_ = nullptr;
    mapped_bytes_ = 0;
  }

  void* base_ = nullptr;
  size_t mapped_bytes_ = 0;
};

}  // namespace gnomon::server::chunk_memory
