// The writer of a block's summary (block_summary.h), given the block's events in order:
// by CompactBlock as it compacts a block, and by SummarizeBlock as it walks a compact
// one. Private to the trace-file library.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/tracefile/block_codec.h"
#include "gnomon/tracefile/block_summary.h"

namespace gnomon::tracefile::summary_detail {

using protocol::MessageType;

inline bool IsZoneAttribute(uint8_t type) {
  return type == uint8_t(MessageType::kZoneName) || type == uint8_t(MessageType::kZoneText) ||
         type == uint8_t(MessageType::kZoneColor) || type == uint8_t(MessageType::kZoneValue);
}

// A segment while its block is walked: its zones still open, and its zones' runs by how
// many zones of before it had closed when they began (rising: the last is the one in
// use), each a ZoneOverview by depth among the segment's zones.
struct SegmentBuilder {
  struct Open {
    uint64_t begin_tick;
    uint32_t location;
    uint32_t closed_before;
  };
  SummarySegment segment;
  std::vector<Open> open;
  std::vector<std::pair<uint32_t, ZoneOverview>> runs;

  void See(uint64_t tick) {
    segment.first_tick = std::min(segment.first_tick, tick);
    segment.last_tick = std::max(segment.last_tick, tick);
  }
  uint32_t closed_before() const { return uint32_t(segment.closed.size()); }
};

// Makes a block's summary from its events in order, as they are compacted
// (CompactBlock) or walked (SummarizeBlock).
class Summarizer {
 public:
  explicit Summarizer(BlockSummary& summary) : summary_(summary) {
    summary_ = BlockSummary{};
    segments_.emplace_back();
  }

  // Every message of the block but zone begins and ends, whole, its tick as written.
  void Message(const uint8_t* message, size_t length) {
    const uint8_t type = message[0];
    const bool after_begin = std::exchange(after_begin_, false);
    SegmentBuilder& s = segments_.back();
    if (IsZoneAttribute(type)) {
      ++s.segment.attributes;
      if (s.open.empty()) s.segment.loose_attributes.push_back(s.closed_before());
      return;
    }
    if (type == uint8_t(MessageType::kCallstack) && after_begin) {
      if (protocol::LoadLe<uint16_t>(message + 1) > kLongCallstack) ++s.segment.long_callstacks;
      return;
    }
    others_.insert(others_.end(), message, message + length);
    if (type == uint8_t(MessageType::kThreadContext)) {
      ForgetLocations(s.segment);
      segments_.emplace_back();
      ForgetHotRuns();
    }
  }
  // A zone value, in the block's compact form (no other message of its own).
  void Value() {
    SegmentBuilder& s = segments_.back();
    after_begin_ = false;
    ++s.segment.attributes;
    if (s.open.empty()) s.segment.loose_attributes.push_back(s.closed_before());
  }

  // The summary, once every event was given.
  void Finish() {
    summary_.others.resize(CompactBound(others_.size()));
    std::vector<uint8_t> scratch(CompactBound(others_.size()));
    summary_.others.resize(
        CompactBlock(others_.data(), others_.size(), summary_.others.data(), scratch.data()));
    for (SegmentBuilder& s : segments_) Finish(s);
  }

  // A Callstack's depth past which a reader counts it cut (the server's kMaxCallstackDepth).
  static constexpr uint16_t kLongCallstack = 256;

  void Begin(uint32_t location, uint64_t tick) {
    SegmentBuilder& s = segments_.back();
    ++s.segment.begins;
    s.See(tick);
    s.open.push_back({tick, location, s.closed_before()});
    after_begin_ = true;
    if (location != last_location_) See(s.segment, location);
  }

  void End(uint64_t tick) {
    after_begin_ = false;
    SegmentBuilder& s = segments_.back();
    ++s.segment.ends;
    if (s.open.empty()) {
      s.segment.closed.push_back(tick);
      return;
    }
    s.See(tick);
    const SegmentBuilder::Open open = s.open.back();
    s.open.pop_back();
    Close(s, uint32_t(s.open.size()), open.closed_before, open.begin_tick, tick, open.location);
  }

  // A zone begun and ended with nothing between (most of them): Begin then End.
  void Leaf(uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
    after_begin_ = false;
    SegmentBuilder& s = segments_.back();
    ++s.segment.begins;
    ++s.segment.ends;
    s.See(begin_tick);
    s.See(end_tick);
    if (location != last_location_) See(s.segment, location);
    Close(s, uint32_t(s.open.size()), s.closed_before(), begin_tick, end_tick, location);
  }

 private:
  void Close(SegmentBuilder& s, uint32_t depth, uint32_t closed_before, uint64_t begin_tick,
             uint64_t end_tick, uint32_t location) {
    if (end_tick < begin_tick) ++s.segment.clamped;
    const OverviewRun zone{begin_tick, std::max(begin_tick, end_tick), 1, location};
    // The usual case: the zone joins the run the last zone of its row went to.
    OverviewRun** hot = depth < kHotRows && closed_before == hot_closed_ ? &hot_[depth] : nullptr;
    if (hot != nullptr && *hot != nullptr && ZoneOverview::TryJoin(**hot, zone, summary_.resolution)) return;
    if (s.runs.empty() || s.runs.back().first != closed_before)
      s.runs.emplace_back(closed_before, ZoneOverview{});
    ZoneOverview& overview = s.runs.back().second;
    const size_t grown = overview.AddRun(depth, zone, summary_.resolution);
    if (closed_before != hot_closed_) {
      ForgetHotRuns();
      hot_closed_ = closed_before;
    }
    if (depth < kHotRows) hot_[depth] = &overview.last(depth);
    if (grown == 0) return;
    cost_ += grown;
    rows_ += grown - 1;  // a new run, and the rows it needed
    if (!Fits()) Coarsen();
  }

  // The segment's locations in first use order (a reader numbers the ones it was never
  // told of in that order).
  void See(SummarySegment& segment, uint32_t location) {
    last_location_ = location;
    if (location < kSeenIds) {
      if (seen_.size() <= location) seen_.resize(size_t(location) + 1);
      if (seen_[location]) return;
      seen_[location] = true;
    } else if (!seen_far_.insert(location).second) {
      return;
    }
    segment.locations.push_back(location);
  }
  // A new segment sees every location anew.
  void ForgetLocations(const SummarySegment& segment) {
    for (uint32_t location : segment.locations)
      if (location < kSeenIds) seen_[location] = false;
    seen_far_.clear();
    last_location_ = UINT32_MAX;
  }
  static constexpr uint32_t kSeenIds = 1u << 16;

  // At most kSummaryRuns runs beyond one a row (cost_ counts both).
  bool Fits() const { return cost_ <= kSummaryRuns + 2 * rows_; }
  // Doubles the resolution until the runs fit (at 2^62 they stay as they are).
  void Coarsen() {
    ForgetHotRuns();
    while (!Fits() && summary_.resolution < (uint64_t{1} << 62)) {
      summary_.resolution *= 2;
      cost_ = 0;
      for (SegmentBuilder& s : segments_)
        for (auto& [closed, overview] : s.runs) cost_ += overview.Coarsen(summary_.resolution);
    }
  }

  void Finish(SegmentBuilder& s) {
    for (const auto& [closed, overview] : s.runs) {
      for (size_t depth = 0; depth < overview.rows().size(); ++depth) {
        if (overview.rows()[depth].empty()) continue;
        s.segment.rows.push_back({closed, uint32_t(depth), overview.rows()[depth]});
      }
    }
    for (const SegmentBuilder::Open& open : s.open)
      s.segment.left_open.emplace_back(open.location, open.begin_tick);
    summary_.segments.push_back(std::move(s.segment));
  }

  BlockSummary& summary_;
  std::vector<SegmentBuilder> segments_;
  std::vector<uint8_t> others_;
  std::vector<bool> seen_;                 // locations the segment used, below kSeenIds
  std::unordered_set<uint32_t> seen_far_;  // and past it
  uint32_t last_location_ = UINT32_MAX;
  size_t cost_ = 0;  // ZoneOverview::cost of every segment's runs, and their rows
  size_t rows_ = 0;
  bool after_begin_ = false;
  // For the first rows of the segment's zones begun after hot_closed_ zones of before
  // were closed: the run the row's last zone went to, the last of its row.
  static constexpr uint32_t kHotRows = 8;
  OverviewRun* hot_[kHotRows] = {};
  uint32_t hot_closed_ = 0;
  void ForgetHotRuns() { std::fill(std::begin(hot_), std::end(hot_), nullptr); }
};

}  // namespace gnomon::tracefile::summary_detail
