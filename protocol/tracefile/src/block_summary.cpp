#include "gnomon/tracefile/block_summary.h"

#include <algorithm>
#include <unordered_set>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/tracefile/block_codec.h"

namespace gnomon::tracefile {
namespace {

using protocol::MessageType;

bool IsZoneAttribute(uint8_t type) {
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

class Summarizer {
 public:
  explicit Summarizer(BlockSummary& summary) : summary_(summary) { segments_.emplace_back(); }

  bool Walk(uint8_t* block, size_t size) {
    std::vector<uint8_t> others;
    const CompactWalk walk = WalkCompactBlock(
        block, size, 7,
        [&](uint32_t location, uint64_t tick) {
          Begin(location, tick);
          return true;
        },
        [&](uint64_t tick) {
          End(tick);
          return true;
        },
        [&](uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
          Leaf(location, begin_tick, end_tick);
          return true;
        },
        [&](const uint8_t* message, size_t length) {
          const uint8_t type = message[0];
          const bool after_begin = std::exchange(after_begin_, false);
          SegmentBuilder& s = segments_.back();
          if (IsZoneAttribute(type)) {
            ++s.segment.attributes;
            if (s.open.empty()) s.segment.loose_attributes.push_back(s.closed_before());
            return true;
          }
          if (type == uint8_t(MessageType::kCallstack) && after_begin) {
            if (protocol::LoadLe<uint16_t>(message + 1) > kLongCallstack) ++s.segment.long_callstacks;
            return true;
          }
          others.insert(others.end(), message, message + length);
          if (type == uint8_t(MessageType::kThreadContext)) {
            ForgetLocations(s.segment);
            segments_.emplace_back();
            ForgetHotRuns();
          }
          return true;
        });
    if (!walk.ok || walk.stopped_at != size) return false;
    summary_.others.resize(CompactBound(others.size()));
    std::vector<uint8_t> scratch(CompactBound(others.size()));
    summary_.others.resize(
        CompactBlock(others.data(), others.size(), summary_.others.data(), scratch.data()));
    for (SegmentBuilder& s : segments_) Finish(s);
    return true;
  }

  // A Callstack's depth past which a reader counts it cut (the server's kMaxCallstackDepth).
  static constexpr uint16_t kLongCallstack = 256;

 private:
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

uint64_t ZigZag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }

void Put(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(uint8_t(v) | 0x80);
    v >>= 7;
  }
  out.push_back(uint8_t(v));
}
void PutTick(std::vector<uint8_t>& out, uint64_t tick, uint64_t base) {
  Put(out, ZigZag(int64_t(tick - base)));
}

// Reads what EncodeSummary wrote; every count is checked against the bytes left (each
// item takes at least one), so no count allocates what the bytes do not hold.
class Reader {
 public:
  Reader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  bool Get(uint64_t& v) {
    if (p_ == nullptr) return false;
    p_ = GetVarint(p_, end_, v);
    return p_ != nullptr;
  }
  bool Get32(uint32_t& v) {
    uint64_t w = 0;
    if (!Get(w) || w > UINT32_MAX) return Fail();
    v = uint32_t(w);
    return true;
  }
  bool GetTick(uint64_t& tick, uint64_t base) {
    uint64_t z = 0;
    if (!Get(z)) return false;
    tick = base + uint64_t(UnZigZag(z));
    return true;
  }
  bool GetCount(uint64_t& n) { return Get(n) && (n <= uint64_t(end_ - p_) || Fail()); }
  bool GetBytes(std::vector<uint8_t>& out) {
    uint64_t n = 0;
    if (!GetCount(n)) return false;
    out.assign(p_, p_ + n);
    p_ += n;
    return true;
  }
  bool done() const { return p_ == end_; }

 private:
  bool Fail() {
    p_ = nullptr;
    return false;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

bool ReadSegment(Reader& in, SummarySegment& s) {
  uint64_t n = 0;
  if (!in.Get(s.begins) || !in.Get(s.ends) || !in.Get(s.first_tick) || !in.GetTick(s.last_tick, s.first_tick))
    return false;
  if (!in.GetCount(n)) return false;
  s.closed.resize(n);
  for (uint64_t& tick : s.closed)
    if (!in.GetTick(tick, s.first_tick)) return false;
  if (!in.GetCount(n)) return false;
  s.rows.resize(n);
  for (SummaryRow& row : s.rows) {
    uint64_t runs = 0;
    if (!in.Get32(row.closed_before) || !in.Get32(row.depth) || !in.GetCount(runs)) return false;
    row.runs.resize(runs);
    for (OverviewRun& run : row.runs) {
      uint64_t length = 0, count = 0;
      uint32_t location = 0;
      if (!in.GetTick(run.begin_tick, s.first_tick) || !in.Get(length) || !in.Get(count) ||
          !in.Get32(location))
        return false;
      if (count == 0 || count > UINT32_MAX || run.begin_tick + length < run.begin_tick) return false;
      run.end_tick = run.begin_tick + length;
      run.count = uint32_t(count);
      run.location = location == 0 ? kMixedLocations : location - 1;
    }
  }
  if (!in.GetCount(n)) return false;
  s.locations.resize(n);
  for (uint32_t& location : s.locations)
    if (!in.Get32(location)) return false;
  if (!in.GetCount(n)) return false;
  s.left_open.resize(n);
  for (auto& [location, tick] : s.left_open)
    if (!in.Get32(location) || !in.GetTick(tick, s.first_tick)) return false;
  if (!in.Get(s.clamped) || !in.Get(s.attributes) || !in.GetCount(n)) return false;
  s.loose_attributes.resize(n);
  for (uint32_t& closed : s.loose_attributes)
    if (!in.Get32(closed)) return false;
  return in.Get(s.long_callstacks);
}

// What a segment says of its zones adds up: every zone begun in it is in a run or left
// open, every end closes one of those or one of before.
bool Consistent(const SummarySegment& s) {
  uint64_t in_runs = 0;
  for (const SummaryRow& row : s.rows)
    for (const OverviewRun& run : row.runs) in_runs += run.count;
  return in_runs + s.left_open.size() == s.begins && in_runs + s.closed.size() == s.ends &&
         s.clamped <= in_runs && s.loose_attributes.size() <= s.attributes;
}

}  // namespace

bool SummarizeBlock(uint8_t* block, size_t size, BlockSummary& summary) {
  summary = BlockSummary{};
  return Summarizer(summary).Walk(block, size);
}

std::vector<uint8_t> EncodeSummary(const BlockSummary& summary) {
  std::vector<uint8_t> out;
  out.push_back(1);  // this layout
  Put(out, summary.resolution);
  Put(out, summary.others.size());
  out.insert(out.end(), summary.others.begin(), summary.others.end());
  Put(out, summary.segments.size());
  for (const SummarySegment& s : summary.segments) {
    const uint64_t base = s.first_tick;
    Put(out, s.begins);
    Put(out, s.ends);
    Put(out, s.first_tick);
    PutTick(out, s.last_tick, base);
    Put(out, s.closed.size());
    for (uint64_t tick : s.closed) PutTick(out, tick, base);
    Put(out, s.rows.size());
    for (const SummaryRow& row : s.rows) {
      Put(out, row.closed_before);
      Put(out, row.depth);
      Put(out, row.runs.size());
      for (const OverviewRun& run : row.runs) {
        PutTick(out, run.begin_tick, base);
        Put(out, run.end_tick - run.begin_tick);
        Put(out, run.count);
        Put(out, run.location == kMixedLocations ? 0 : uint64_t(run.location) + 1);
      }
    }
    Put(out, s.locations.size());
    for (uint32_t location : s.locations) Put(out, location);
    Put(out, s.left_open.size());
    for (const auto& [location, tick] : s.left_open) {
      Put(out, location);
      PutTick(out, tick, base);
    }
    Put(out, s.clamped);
    Put(out, s.attributes);
    Put(out, s.loose_attributes.size());
    for (uint32_t closed : s.loose_attributes) Put(out, closed);
    Put(out, s.long_callstacks);
  }
  return out;
}

bool DecodeSummary(const uint8_t* data, size_t size, BlockSummary& summary, std::string& error) {
  summary = BlockSummary{};
  auto fail = [&](const char* what) {
    error = what;
    return false;
  };
  if (size == 0 || data[0] != 1) return fail("its summary is of a layout this build does not read");
  Reader in(data + 1, data + size);
  uint64_t n = 0;
  if (!in.Get(summary.resolution) || summary.resolution == 0 || !in.GetBytes(summary.others) ||
      !in.GetCount(n) || n == 0)
    return fail("its summary is cut short or damaged");
  summary.segments.resize(n);
  for (SummarySegment& s : summary.segments) {
    if (!ReadSegment(in, s)) return fail("its summary is cut short or damaged");
    if (!Consistent(s)) return fail("its summary does not add up");
  }
  if (!in.done()) return fail("bytes follow its summary");
  return true;
}

}  // namespace gnomon::tracefile
