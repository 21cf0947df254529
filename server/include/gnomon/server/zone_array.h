// A thread's CPU zones, 12 bytes each.
//
// A trace of hundreds of millions of zones lives in memory, so zones are packed in groups
// of 64, 16 groups to a page of 1,024. A group holds, per zone, its timing (8 bytes: the
// begin as a 32-bit offset from the group's 64-bit base tick, and the length in ticks, 32
// bits) and one word for its source location (18 bits, the index limit), depth (12 bits)
// and flags (2 bits), the two kinds in runs of their own (768 bytes a group), so a page
// is exactly three 4 KiB pages of memory. A group's 64 zones fit their 2^32-tick window
// (1.6 s at 2.6 GHz) unless the thread records fewer than about 40 zones a second; a
// begin outside the window (such a thread, or a clock that stepped back) and an end more
// than about four billion ticks after its begin are kept whole in a side table.
//
// The first page starts with room for one group and doubles up to 16 (a hostile stream
// that names 65,536 threads of one zone each costs 50 MB, not 560), the next seven come
// from the heap, and the rest are carved from 2 MiB blocks (chunk_memory.h), 170 to a
// block. operator[] hands out the unpacked Zone by value; the builder changes a zone only
// through Close and AddFlags.
// Depths past 4,095 are stored as 4,095.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gnomon/server/chunk_memory.h"

namespace gnomon::server {

inline constexpr uint64_t kOpenZone = ~uint64_t{0};

struct Zone {
  uint64_t begin_tick = 0;
  uint64_t end_tick = kOpenZone;  // kOpenZone while open, or when never closed
  uint32_t source_location = 0;
  uint16_t depth = 0;
  uint16_t flags = 0;  // ZoneFlags
  bool is_open() const { return end_tick == kOpenZone; }
  friend bool operator==(const Zone&, const Zone&) = default;
};

enum ZoneFlags : uint16_t {
  kZoneHasAttributes = 1 << 0,  // see ThreadTimeline::attributes
  kZoneEndClamped = 1 << 1,     // the end came before the begin and was clamped to it
};

class ZoneArray {
 public:
  static constexpr uint32_t kMaxDepth = (1u << 12) - 1;

  ZoneArray() = default;
  ZoneArray(ZoneArray&& other) noexcept { *this = std::move(other); }
  ZoneArray& operator=(ZoneArray&& other) noexcept {
    if (this != &other) {
      Release();
      pages_ = std::move(other.pages_);
      group_bases_ = std::move(other.group_bases_);
      blocks_ = std::move(other.blocks_);
      far_ = std::move(other.far_);
      size_ = std::exchange(other.size_, 0);
      first_page_groups_ = std::exchange(other.first_page_groups_, 0);
      last_group_ = std::exchange(other.last_group_, nullptr);
      last_base_ = std::exchange(other.last_base_, 0);
      pages_left_ = std::exchange(other.pages_left_, 0);
      other.pages_.clear();
      other.group_bases_.clear();
      other.blocks_.clear();
      other.far_.clear();
    }
    return *this;
  }
  ZoneArray(const ZoneArray&) = delete;
  ZoneArray& operator=(const ZoneArray&) = delete;
  ~ZoneArray() { Release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  [[gnu::always_inline]] Zone operator[](size_t i) const {
    const Group& group = GroupOf(i);
    const Timing t = group.timing[i & kGroupMask];
    const uint32_t meta = group.meta[i & kGroupMask];
    Zone z;
    z.begin_tick = t.begin_offset == kFar ? FarBegin(i) : group_bases_[i >> kGroupLog2] + t.begin_offset;
    z.end_tick = t.length == kOpen ? kOpenZone : t.length == kLong ? FarEnd(i) : z.begin_tick + t.length;
    z.source_location = meta & kLocationMask;
    z.depth = uint16_t((meta >> kLocationBits) & kMaxDepth);
    z.flags = uint16_t(meta >> (kLocationBits + kDepthBits));
    return z;
  }

  // Appends `zone` (its source location must be below 2^18).
  void push_back(const Zone& zone) {
    const size_t index = size_;
    Append(zone.begin_tick, kOpen, Meta(zone.source_location, zone.depth, zone.flags));
    if (!zone.is_open()) Close(index, zone.end_tick);
  }
  // Appends a zone that is already closed, written once; an end before the begin is
  // clamped to it and flagged kZoneEndClamped. Returns whether it was.
  [[gnu::always_inline]] bool PushClosed(uint64_t begin_tick, uint64_t end_tick, uint32_t location,
                                         uint32_t depth) {
    const bool clamped = end_tick < begin_tick;
    const uint64_t length = clamped ? 0 : end_tick - begin_tick;
    const uint32_t meta = Meta(location, depth, clamped ? kZoneEndClamped : 0);
    if (length < kLong) [[likely]] {
      Append(begin_tick, uint32_t(length), meta);
    } else {
      SetFarEnd(size_, end_tick);
      Append(begin_tick, kLong, meta);
    }
    return clamped;
  }
  // Closes zone i at end_tick. An end before the begin is clamped to it and flagged
  // kZoneEndClamped; returns whether it was.
  bool Close(size_t i, uint64_t end_tick) { return CloseOpen(i, (*this)[i].begin_tick, end_tick); }
  // The same for a zone that began at begin_tick, without reading the zone back (a load
  // from a freshly written line stalls).
  bool CloseOpen(size_t i, uint64_t begin_tick, uint64_t end_tick) {
    assert(i < size_ && "closing a zone the array does not hold");
    const bool clamped = end_tick < begin_tick;
    const uint64_t length = clamped ? 0 : end_tick - begin_tick;
    Timing& t = GroupOf(i).timing[i & kGroupMask];
    if (length < kLong) [[likely]] {
      if (t.length == kLong) DropFarEnd(i, t);  // closed again, shorter
      t.length = uint32_t(length);
    } else {
      t.length = kLong;
      SetFarEnd(i, end_tick);
    }
    if (clamped) AddFlags(i, kZoneEndClamped);
    return clamped;
  }
  uint16_t Flags(size_t i) const {
    return uint16_t(GroupOf(i).meta[i & kGroupMask] >> (kLocationBits + kDepthBits));
  }
  void AddFlags(size_t i, uint16_t flags) {
    GroupOf(i).meta[i & kGroupMask] |= uint32_t(flags & kFlagMask) << (kLocationBits + kDepthBits);
  }

  // Gives back the untouched end of the last 2 MiB block, once no more zones are expected
  // (a trace loaded, a stream ended). A later append carves from a new block.
  void ShrinkToFit() {
    pages_.shrink_to_fit();
    group_bases_.shrink_to_fit();
    if (blocks_.empty() || pages_left_ == 0) return;
    blocks_.back().TrimTo((kPagesPerBlock - pages_left_) * sizeof(Page));
    pages_left_ = 0;
  }

  // Bytes held: pages from the heap, what is still mapped of the blocks, the page table,
  // the group bases and the side table's entries.
  size_t capacity_bytes() const {
    size_t bytes = pages_.capacity() * sizeof(Group*) + group_bases_.capacity() * sizeof(uint64_t) +
                   far_.size() * (sizeof(size_t) + sizeof(FarValues));
    if (!pages_.empty()) bytes += first_page_groups_ * sizeof(Group);
    bytes += (std::min(pages_.size(), kHeapPages) - std::min<size_t>(pages_.size(), 1)) * sizeof(Page);
    for (const chunk_memory::MappedBlock& block : blocks_) bytes += block.mapped_bytes();
    return bytes;
  }

  // Calls f(base, mapped_bytes) for each 2 MiB block pages are carved from (diagnostics
  // and tests: what is mapped must be exactly what is freed).
  template <typename F>
  void ForEachBlock(F&& f) const {
    for (const chunk_memory::MappedBlock& block : blocks_)
      f(static_cast<const void*>(block.base()), block.mapped_bytes());
  }

  friend bool operator==(const ZoneArray& a, const ZoneArray& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!(a[i] == b[i])) return false;
    }
    return true;
  }

 private:
  static constexpr uint32_t kLocationBits = 18;
  static constexpr uint32_t kDepthBits = 12;
  static constexpr uint32_t kLocationMask = (1u << kLocationBits) - 1;
  static constexpr uint32_t kFlagMask = 3;
  static constexpr uint32_t kOpen = UINT32_MAX;      // length: not closed (yet)
  static constexpr uint32_t kLong = UINT32_MAX - 1;  // length: the end is in far_
  static constexpr uint32_t kFar = UINT32_MAX;       // begin_offset: the begin is in far_
  static constexpr uint32_t kPageLog2 = 10;
  static constexpr size_t kPageZones = size_t{1} << kPageLog2;
  static constexpr size_t kPageMask = kPageZones - 1;
  static constexpr uint32_t kGroupLog2 = 6;  // zones sharing one base tick
  static constexpr size_t kGroupMask = (size_t{1} << kGroupLog2) - 1;
  static constexpr size_t kHeapPages = 8;  // a thread's first 8,192 zones
  static constexpr size_t kGroupZones = size_t{1} << kGroupLog2;
  static constexpr size_t kPageGroups = kPageZones / kGroupZones;
  // A group's base lies this far before its first begin, so that a clock stepping back a
  // little (a thread moved to a core whose counter is behind) stays inline.
  static constexpr uint64_t kBaseMargin = uint64_t{1} << 24;

  struct Timing {
    uint32_t begin_offset;  // from the group's base, or kFar
    uint32_t length;        // ticks, or kOpen / kLong
  };
  struct Group {
    Timing timing[kGroupZones];
    uint32_t meta[kGroupZones];  // source location | depth << 18 | flags << 30
  };
  static_assert(sizeof(Group) == kGroupZones * 12);
  struct Page {
    Group groups[kPageGroups];
  };
  static_assert(sizeof(Page) == 3 * chunk_memory::kPageBytes);
  static constexpr size_t kPagesPerBlock = chunk_memory::kBlockBytes / sizeof(Page);
  struct FarValues {
    uint64_t begin = 0;  // when begin_offset is kFar
    uint64_t end = 0;    // when length is kLong
  };

  // A page is an array of groups: pages_[p] points at its first.
  Group& GroupOf(size_t i) const { return pages_[i >> kPageLog2][(i >> kGroupLog2) & (kPageGroups - 1)]; }

  // Inline, as it runs for every zone; new groups, pages and the side table are out of
  // line.
  [[gnu::always_inline]] void Append(uint64_t begin_tick, uint32_t length, uint32_t meta) {
    const size_t index = size_;
    if ((index & kGroupMask) == 0) [[unlikely]]
      MakeRoom(index, begin_tick);
    const uint64_t offset = begin_tick - last_base_;  // wraps when the begin is before the base
    uint32_t stored = uint32_t(offset);
    if (offset >= kFar) [[unlikely]] {
      SetFarBegin(index, begin_tick);
      stored = kFar;
    }
    last_group_->timing[index & kGroupMask] = {stored, length};
    last_group_->meta[index & kGroupMask] = meta;
    size_ = index + 1;
  }
  // Runs at the first zone of each group: a new page, or a bigger first page, and the
  // group's base.
  [[gnu::noinline]] void MakeRoom(size_t index, uint64_t begin_tick) {
    if ((index & kPageMask) == 0) {
      AddPage();
    } else if (index >> kGroupLog2 == first_page_groups_) {
      GrowFirstPage();
    }
    last_base_ = begin_tick - std::min(begin_tick, kBaseMargin);
    group_bases_.push_back(last_base_);
    last_group_ = &GroupOf(index);
  }
  static Group* NewGroups(size_t groups) {
    return static_cast<Group*>(::operator new(groups * sizeof(Group)));
  }
  void GrowFirstPage() {
    Group* grown = NewGroups(first_page_groups_ * 2);
    std::memcpy(grown, pages_[0], first_page_groups_ * sizeof(Group));
    ::operator delete(pages_[0]);
    pages_[0] = grown;
    first_page_groups_ *= 2;
  }
  void AddPage() {
    if (pages_.empty()) {
      first_page_groups_ = 1;
      pages_.push_back(NewGroups(1));
    } else if (pages_.size() < kHeapPages) {
      pages_.push_back(NewGroups(kPageGroups));
    } else {
      if (pages_left_ == 0) {
        blocks_.reserve(blocks_.size() + 1);
        blocks_.push_back(chunk_memory::MappedBlock::Take());
        pages_left_ = kPagesPerBlock;
      }
      Page* page = reinterpret_cast<Page*>(blocks_.back().base()) + (kPagesPerBlock - pages_left_);
      --pages_left_;
      pages_.push_back(page->groups);
    }
  }
  void Release() {
    for (size_t k = 0; k < std::min(pages_.size(), kHeapPages); ++k) ::operator delete(pages_[k]);
    pages_.clear();
    group_bases_.clear();
    blocks_.clear();
    far_.clear();
    size_ = 0;
    first_page_groups_ = 0;
    last_group_ = nullptr;
    last_base_ = 0;
    pages_left_ = 0;
  }
  [[gnu::noinline]] void SetFarBegin(size_t i, uint64_t begin) { far_[i].begin = begin; }
  [[gnu::noinline]] void SetFarEnd(size_t i, uint64_t end) { far_[i].end = end; }
  [[gnu::noinline]] uint64_t FarBegin(size_t i) const { return far_.at(i).begin; }
  [[gnu::noinline]] uint64_t FarEnd(size_t i) const { return far_.at(i).end; }
  [[gnu::noinline]] void DropFarEnd(size_t i, const Timing& t) {
    if (t.begin_offset == kFar) {
      far_[i].end = 0;
    } else {
      far_.erase(i);
    }
  }
  static uint32_t Meta(uint32_t location, uint32_t depth, uint16_t flags) {
    return (location & kLocationMask) | (depth < kMaxDepth ? depth : kMaxDepth) << kLocationBits |
           uint32_t(flags & kFlagMask) << (kLocationBits + kDepthBits);
  }

  std::vector<Group*> pages_;                      // each page's first group
  std::vector<uint64_t> group_bases_;              // one per group of 64 zones
  std::vector<chunk_memory::MappedBlock> blocks_;  // pages past the first kHeapPages
  std::unordered_map<size_t, FarValues> far_;      // by index: begins and ends too far to pack
  size_t size_ = 0;
  size_t first_page_groups_ = 0;  // room in the first page (kPageGroups once full size)
  Group* last_group_ = nullptr;   // where appends go: the last group, and its base
  uint64_t last_base_ = 0;
  size_t pages_left_ = 0;  // uncarved pages in the last block
};

}  // namespace gnomon::server
