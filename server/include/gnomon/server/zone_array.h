// A thread's CPU zones, 16 bytes each.
//
// A trace of hundreds of millions of zones lives in memory, so each zone is packed: its
// begin tick (64 bits), its length in ticks (32 bits; a zone longer than about four
// billion ticks keeps its end in a side table) and one word for its source location
// (18 bits, the id limit), depth (12 bits) and flags (2 bits). operator[] hands out the
// unpacked Zone by value; the builder changes a zone only through Close and AddFlags.
// Depths past 4,095 are stored as 4,095.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "gnomon/server/chunked_vector.h"

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

  size_t size() const { return zones_.size(); }
  bool empty() const { return zones_.empty(); }

  Zone operator[](size_t i) const {
    const Packed& p = zones_[i];
    Zone z;
    z.begin_tick = p.begin_tick;
    z.end_tick = p.length == kOpen ? kOpenZone
                 : p.length == kLong ? long_ends_.at(i)
                                     : p.begin_tick + p.length;
    z.source_location = p.meta & kLocationMask;
    z.depth = uint16_t((p.meta >> kLocationBits) & kMaxDepth);
    z.flags = uint16_t(p.meta >> (kLocationBits + kDepthBits));
    return z;
  }

  // Appends `zone` (its source location must be below 2^18).
  void push_back(const Zone& zone) {
    const size_t index = zones_.size();
    zones_.push_back({zone.begin_tick, kOpen, Meta(zone.source_location, zone.depth, zone.flags)});
    if (!zone.is_open()) Close(index, zone.end_tick);
  }
  // Appends a zone that is already closed, written once; an end before the begin is
  // clamped to it and flagged kZoneEndClamped. Returns whether it was.
  bool PushClosed(uint64_t begin_tick, uint64_t end_tick, uint32_t location, uint32_t depth) {
    const bool clamped = end_tick < begin_tick;
    const uint64_t length = clamped ? 0 : end_tick - begin_tick;
    const uint32_t meta = Meta(location, depth, clamped ? kZoneEndClamped : 0);
    if (length < kLong) {
      zones_.push_back({begin_tick, uint32_t(length), meta});
    } else {
      long_ends_[zones_.size()] = end_tick;
      zones_.push_back({begin_tick, kLong, meta});
    }
    return clamped;
  }
  // Closes zone i at end_tick. An end before the begin is clamped to it and flagged
  // kZoneEndClamped; returns whether it was.
  bool Close(size_t i, uint64_t end_tick) {
    const uint64_t begin = zones_[i].begin_tick;
    const bool clamped = end_tick < begin;
    SetEnd(i, clamped ? begin : end_tick);
    if (clamped) AddFlags(i, kZoneEndClamped);
    return clamped;
  }
  // The same for a zone known to be open that began at begin_tick: it writes the
  // length without reading the zone back (a load from a freshly written line stalls).
  bool CloseOpen(size_t i, uint64_t begin_tick, uint64_t end_tick) {
    const bool clamped = end_tick < begin_tick;
    const uint64_t length = clamped ? 0 : end_tick - begin_tick;
    Packed& p = zones_[i];
    if (length < kLong) {
      p.length = uint32_t(length);
    } else {
      p.length = kLong;
      long_ends_[i] = end_tick;
    }
    if (clamped) AddFlags(i, kZoneEndClamped);
    return clamped;
  }
  void AddFlags(size_t i, uint16_t flags) {
    zones_[i].meta |= uint32_t(flags & kFlagMask) << (kLocationBits + kDepthBits);
  }

  void ShrinkToFit() { zones_.ShrinkToFit(); }

  // Bytes held: whole chunks, and the side table's entries.
  size_t capacity_bytes() const {
    return zones_.capacity_bytes() + long_ends_.size() * (sizeof(size_t) + sizeof(uint64_t));
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
  static constexpr uint32_t kOpen = UINT32_MAX;      // not closed (yet)
  static constexpr uint32_t kLong = UINT32_MAX - 1;  // the end is in long_ends_

  struct Packed {
    uint64_t begin_tick;
    uint32_t length;  // ticks, or kOpen / kLong
    uint32_t meta;    // source location | depth << 18 | flags << 30
  };
  static_assert(sizeof(Packed) == 16);

  void SetEnd(size_t i, uint64_t end_tick) {
    Packed& p = zones_[i];
    const uint64_t length = end_tick - p.begin_tick;
    if (length < kLong) {
      if (p.length == kLong) long_ends_.erase(i);  // closed again, shorter
      p.length = uint32_t(length);
    } else {
      p.length = kLong;
      long_ends_[i] = end_tick;
    }
  }
  static uint32_t Meta(uint32_t location, uint32_t depth, uint16_t flags) {
    return (location & kLocationMask) | (depth < kMaxDepth ? depth : kMaxDepth) << kLocationBits |
           uint32_t(flags & kFlagMask) << (kLocationBits + kDepthBits);
  }

  ChunkedVector<Packed> zones_;
  std::unordered_map<size_t, uint64_t> long_ends_;  // by index
};

}  // namespace gnomon::server
