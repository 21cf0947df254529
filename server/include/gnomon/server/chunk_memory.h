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
// Whether a block is advised for transparent huge pages is measured, not assumed
// (PageChooser): what a fresh page costs depends on the host more than on the kernel.
#pragma once

#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace gnomon::server::chunk_memory {

inline constexpr size_t kBlockBytes = size_t{2} << 20;
inline constexpr size_t kPageBytes = 4096;

// Plain pages or transparent huge pages for new blocks, whichever costs less to populate
// here. A huge page takes one fault and 2 MiB of zeroing where plain pages take 512
// faults, which on a many-core host makes a live model whole sooner; but on a virtual
// machine whose host takes back the guest's free memory, free huge pages are exactly
// what the host took back, and touching them can cost several times what plain pages
// do, from one run to the next (docs/benchmarks.md has the figures). Neither holds
// everywhere, nor for a whole run, so the reserves measure: each block they populate is
// timed by their thread's CPU time (what it waited for is not the block's cost), an
// average kept for each kind, and every kTrialEvery-th block is of the kind not chosen.
// Blocks mapped without a reserve take the kind chosen. A kernel whose huge pages are
// off ("never") is offered none. Thread-safe.
class PageChooser {
 public:
  static constexpr uint32_t kTrialEvery = 16;

  explicit PageChooser(bool huge_pages_on = true) : huge_pages_on_(huge_pages_on) {}

  // The kind for blocks mapped now: true for huge pages.
  bool huge() const { return huge_.load(std::memory_order_relaxed); }
  // The kind for the next block a reserve populates: each kind once, then the one
  // chosen, with a trial of the other now and then.
  bool NextForReserve() {
    std::lock_guard lock(mutex_);
    if (!huge_pages_on_ || average_ns_[0] < 0) return false;
    if (average_ns_[1] < 0) return true;
    const bool chosen = huge_.load(std::memory_order_relaxed);
    return ++blocks_ % kTrialEvery == 0 ? !chosen : chosen;
  }
  // What populating a block of that kind cost.
  void Record(bool huge, int64_t ns) {
    std::lock_guard lock(mutex_);
    ++measured_[huge ? 1 : 0];
    int64_t& average = average_ns_[huge ? 1 : 0];
    average = average < 0 ? ns : (3 * average + ns) / 4;
    huge_.store(average_ns_[0] >= 0 && average_ns_[1] >= 0 && average_ns_[1] < average_ns_[0],
                std::memory_order_relaxed);
  }
  // How many blocks of that kind were measured.
  uint64_t measured(bool huge) const {
    std::lock_guard lock(mutex_);
    return measured_[huge ? 1 : 0];
  }
  // The average cost of a block of that kind, ns; -1 before one is measured.
  int64_t average_ns(bool huge) const {
    std::lock_guard lock(mutex_);
    return average_ns_[huge ? 1 : 0];
  }

 private:
  const bool huge_pages_on_;
  mutable std::mutex mutex_;
  int64_t average_ns_[2] = {-1, -1};  // plain, huge
  uint64_t measured_[2] = {0, 0};
  uint32_t blocks_ = 0;  // asked for by reserves
  std::atomic<bool> huge_{false};
};

// Whether the kernel gives huge pages to a range advised for them: "always" or
// "madvise" in sysfs, not "never" (nor a kernel without them).
inline bool HugePagesOn() {
  std::FILE* file = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (file == nullptr) return false;
  char text[128] = {};
  const size_t read = std::fread(text, 1, sizeof(text) - 1, file);
  std::fclose(file);
  return read > 0 && std::strstr(text, "[never]") == nullptr;
}

// The process's chooser: the cost of a page is the host's, the same for every trace.
inline PageChooser& Pages() {
  static PageChooser chooser(HugePagesOn());
  return chooser;
}

// The 2 MiB-aligned block at the top of [mapped, mapped + span), the rest of which is
// unmapped: the next mapping the kernel places below it then joins it as one region.
// `span` is at least twice kBlockBytes.
inline void* KeepAlignedBlock(void* mapped, size_t span) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t end = start + span;
  const uintptr_t block = (end - kBlockBytes) / kBlockBytes * kBlockBytes;
  if (block > start) munmap(mapped, block - start);
  if (block + kBlockBytes < end)
    munmap(reinterpret_cast<void*>(block + kBlockBytes), end - block - kBlockBytes);
  return reinterpret_cast<void*>(block);
}

// A fresh 2 MiB block of its own mapping, untouched, advised for a huge page or against
// one (where huge pages are "always", plain pages are plain only when told). A huge page
// must be aligned to 2 MiB: a recent kernel places a 2 MiB mapping so, an older one
// may not, and then twice the room is mapped and the aligned block kept; where that
// room is refused, the block has plain pages. Throws std::bad_alloc when the kernel has
// no memory.
inline void* MapBlock(bool huge) {
  constexpr int kProtection = PROT_READ | PROT_WRITE;
  constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS;
  void* block = mmap(nullptr, kBlockBytes, kProtection, kFlags, -1, 0);
  if (block == MAP_FAILED) throw std::bad_alloc();
  if (huge && reinterpret_cast<uintptr_t>(block) % kBlockBytes != 0) {
    if (void* room = mmap(nullptr, 2 * kBlockBytes, kProtection, kFlags, -1, 0); room != MAP_FAILED) {
      munmap(block, kBlockBytes);
      block = KeepAlignedBlock(room, 2 * kBlockBytes);
    } else {
      huge = false;
    }
  }
  madvise(block, kBlockBytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  return block;
}

// Faults in every page of a block (MADV_POPULATE_WRITE: one call rather than 512
// faults), then writes to each page. The writes matter on a virtual machine whose kernel
// maps a page without writing it, its host handing out zeroed memory: the host backs the
// page only at its first write, which then costs microseconds a page; without these
// writes that cost fell on whoever stored first, a lane building a live model or a
// load's builder, instead of on the thread with time to spare (a large load was a fifth
// slower: docs/benchmarks.md). Where the fault backs the page, they cost 512 cache
// misses a block.
// A kernel without MADV_POPULATE_WRITE (before 5.14) gets the writes only.
inline void Populate(void* block) {
#ifdef MADV_POPULATE_WRITE
  madvise(block, kBlockBytes, MADV_POPULATE_WRITE);
#endif
  auto* bytes = static_cast<volatile uint8_t*>(block);
  for (size_t page = 0; page < kBlockBytes; page += kPageBytes) bytes[page] = 0;
}

// The CPU time the calling thread has taken, ns.
inline int64_t ThreadCpuNs() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return int64_t(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
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

  BlockReserve() { blocks_.reserve(kMaxBlocks); }  // adding never throws past the mapping
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
    const bool huge = Pages().NextForReserve();
    const int64_t start = ThreadCpuNs();
    void* block = MapBlock(huge);
    Populate(block);
    Pages().Record(huge, ThreadCpuNs() - start);
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
  return MapBlock(Pages().huge());
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
  // A huge page cut so is split, and the kernel frees its tail only when memory runs
  // short (its deferred split): until then the process's RSS still counts it.
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
