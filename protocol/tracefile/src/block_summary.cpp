#include "gnomon/tracefile/block_summary.h"

#include "gnomon/tracefile/block_codec.h"
#include "summarizer.h"

namespace gnomon::tracefile {
namespace {

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
  // A count of items that each take at least `least` bytes: no more than the bytes left
  // can hold, so that no count allocates what the bytes do not carry.
  bool GetCount(uint64_t& n, uint64_t least = 1) {
    return Get(n) && (n <= uint64_t(end_ - p_) / least || Fail());
  }
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
  if (!in.GetCount(n, 3)) return false;
  s.rows.resize(n);
  for (SummaryRow& row : s.rows) {
    uint64_t runs = 0;
    if (!in.Get32(row.closed_before) || !in.Get32(row.depth) || !in.GetCount(runs, 4)) return false;
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
  if (!in.GetCount(n, 2)) return false;
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
  summary_detail::Summarizer summarizer(summary);
  const CompactWalk walk = WalkCompactBlock(
      block, size, 7,
      [&](uint32_t location, uint64_t tick) {
        summarizer.Begin(location, tick);
        return true;
      },
      [&](uint64_t tick) {
        summarizer.End(tick);
        return true;
      },
      [&](uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
        summarizer.Leaf(location, begin_tick, end_tick);
        return true;
      },
      [&](const uint8_t* message, size_t length) {
        summarizer.Message(message, length);
        return true;
      });
  if (!walk.ok || walk.stopped_at != size) return false;
  summarizer.Finish();
  return true;
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
    summary = BlockSummary{};  // nothing of it kept
    return false;
  };
  if (size == 0 || data[0] != 1) return fail("its summary is of a layout this build does not read");
  Reader in(data + 1, data + size);
  uint64_t n = 0;
  if (!in.Get(summary.resolution) || summary.resolution == 0 || !in.GetBytes(summary.others) ||
      !in.GetCount(n, 12) || n == 0)
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
