// A block's summary (block_summary.h): what the writer makes of a block, and what a
// reader takes back of its bytes, damaged or not.
#include "gnomon/tracefile/block_summary.h"

#include <doctest/doctest.h>

#include <random>

#include "../../support/stream_writer.h"
#include "gnomon/tracefile/block_codec.h"

namespace {

using gnomon::test::StreamWriter;
using gnomon::tracefile::BlockSummary;
using gnomon::tracefile::OverviewRun;
using gnomon::tracefile::SummaryRow;
using gnomon::tracefile::SummarySegment;

// The summary of `w`'s stream made into one compact block.
BlockSummary Summarize(const StreamWriter& w) {
  const std::vector<uint8_t>& raw = w.bytes();
  std::vector<uint8_t> block(gnomon::tracefile::CompactBound(raw.size()));
  std::vector<uint8_t> scratch(block.size());
  block.resize(gnomon::tracefile::CompactBlock(raw.data(), raw.size(), block.data(), scratch.data()));
  BlockSummary summary;
  REQUIRE(gnomon::tracefile::SummarizeBlock(block.data(), block.size(), summary));
  return summary;
}

}  // namespace

TEST_CASE("a block's summary holds its zones by segment and its other messages") {
  StreamWriter w;
  // Before any ThreadContext: the thread the block began on closes two zones of before
  // and begins one that it leaves open.
  w.ZoneEnd(100).ZoneEnd(110).ZoneBegin(3, 120).ZoneValue(7);
  w.ThreadContext(2).ZoneBegin(1, 200).ZoneBegin(2, 210).ZoneEnd(220).ZoneEnd(260);
  w.ZoneText("alone").Frame(gnomon::protocol::MessageType::kFrameMark, 0, 300);
  w.ZoneBegin(1, 400).ZoneEnd(390);  // an end before its begin
  const BlockSummary summary = Summarize(w);
  CHECK(summary.resolution == gnomon::tracefile::kSummaryFirstResolution);
  REQUIRE(summary.segments.size() == 2);
  const SummarySegment& first = summary.segments[0];
  CHECK(first.begins == 1);
  CHECK(first.ends == 2);
  CHECK(first.first_tick == 120);  // the ends of zones of before are in `closed`
  CHECK(first.last_tick == 120);
  CHECK(first.closed == std::vector<uint64_t>{100, 110});
  CHECK(first.rows.empty());
  CHECK(first.left_open == std::vector<std::pair<uint32_t, uint64_t>>{{3, 120}});
  CHECK(first.attributes == 1);
  CHECK(first.loose_attributes.empty());
  const SummarySegment& second = summary.segments[1];
  CHECK(second.begins == 3);
  CHECK(second.ends == 3);
  CHECK(second.closed.empty());
  CHECK(second.clamped == 1);
  CHECK(second.attributes == 1);
  CHECK(second.loose_attributes == std::vector<uint32_t>{0});
  // Zones under 256 ticks apart merge; every zone here is narrower than that.
  CHECK(second.rows == std::vector<SummaryRow>{{0, 0, {{200, 400, 2, 1}}}, {0, 1, {{210, 220, 1, 2}}}});
  // The others: the ThreadContext and the frame mark, in a compact block of their own.
  size_t others = 0;
  auto none = [](auto&&...) { return false; };
  std::vector<uint8_t> bytes = summary.others;
  const auto walk =
      gnomon::tracefile::WalkCompactBlock(bytes.data(), bytes.size(), 7, none, none, none,
                                          [&](const uint8_t*, size_t) { return ++others, true; });
  CHECK(walk.ok);
  CHECK(others == 2);
}

TEST_CASE("a block's summary keeps its runs within its budget by coarsening") {
  StreamWriter w;
  w.ThreadContext(1);
  for (uint64_t i = 0; i < 100'000; ++i) w.ZoneBegin(1 + uint32_t(i % 3), i * 1'000).ZoneEnd(i * 1'000 + 400);
  w.ZoneBegin(1, 200'000'000).ZoneEnd(900'000'000);  // wider than any resolution it reaches: exact
  const BlockSummary summary = Summarize(w);
  REQUIRE(summary.segments.size() == 2);
  const SummarySegment& s = summary.segments[1];
  REQUIRE(s.rows.size() == 1);
  CHECK(s.rows[0].runs.size() <= gnomon::tracefile::kSummaryRuns + 2);
  CHECK(summary.resolution > 1'000);
  uint64_t zones = 0;
  for (const OverviewRun& run : s.rows[0].runs) zones += run.count;
  CHECK(zones == 100'001);
  CHECK(s.rows[0].runs.back() == OverviewRun{200'000'000, 900'000'000, 1, 1});
}

TEST_CASE("a summary's bytes read back whole, and damaged bytes are refused, never trusted") {
  std::mt19937_64 rng(4);
  StreamWriter w;
  w.ZoneEnd(5);
  for (uint32_t thread = 1; thread <= 4; ++thread) {
    w.ThreadContext(thread);
    for (int i = 0; i < 300; ++i) {
      const uint64_t at = 1'000 * thread + uint64_t(i) * 50;
      w.ZoneBegin(1 + uint32_t(rng() % 5), at)
          .ZoneBegin(2, at + 1)
          .ZoneEnd(at + 2 + rng() % 600)
          .ZoneEnd(at + 40);
    }
    w.ZoneBegin(4, 90'000).Message(90'001, 1, "m");
  }
  const BlockSummary summary = Summarize(w);
  const std::vector<uint8_t> bytes = gnomon::tracefile::EncodeSummary(summary);
  BlockSummary back;
  std::string error;
  REQUIRE(gnomon::tracefile::DecodeSummary(bytes.data(), bytes.size(), back, error));
  CHECK(back == summary);
  // Every prefix is cut short; bytes after it are refused.
  for (size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    CHECK_FALSE(gnomon::tracefile::DecodeSummary(bytes.data(), n, back, error));
  }
  // A count more than its bytes can hold (a segment takes at least 12) is refused before
  // anything is made of it.
  const std::vector<uint8_t> claims = {1, 1, 0, 0x80, 0x80, 0x40};  // 2^20 segments in no bytes
  CHECK_FALSE(gnomon::tracefile::DecodeSummary(claims.data(), claims.size(), back, error));
  CHECK(back.segments.empty());
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  CHECK_FALSE(gnomon::tracefile::DecodeSummary(longer.data(), longer.size(), back, error));
  CHECK(error == "bytes follow its summary");
  // Flipped bytes: refused, or read as a summary that adds up (its counts agree).
  for (int round = 0; round < 2'000; ++round) {
    std::vector<uint8_t> damaged = bytes;
    for (int k = 0; k < 3; ++k) damaged[rng() % damaged.size()] ^= uint8_t(1 + rng() % 255);
    if (!gnomon::tracefile::DecodeSummary(damaged.data(), damaged.size(), back, error)) continue;
    for (const SummarySegment& s : back.segments) {
      uint64_t in_runs = 0;
      for (const SummaryRow& row : s.rows)
        for (const OverviewRun& run : row.runs) in_runs += run.count;
      CHECK(in_runs + s.left_open.size() == s.begins);
      CHECK(in_runs + s.closed.size() == s.ends);
    }
  }
}

TEST_CASE("a block summarized as it is compacted equals its compact form summarized, whole or in pieces") {
  std::mt19937_64 rng(9);
  StreamWriter w;
  w.ZoneEnd(3);
  uint64_t tick = 1'000;
  int depth[4] = {};
  for (int i = 0; i < 20'000; ++i) {
    const uint32_t thread = uint32_t(rng() % 4);
    if (rng() % 8 == 0) w.ThreadContext(thread);
    tick += rng() % 16 == 0 ? rng() % 100'000 : rng() % 50;
    switch (rng() % 10) {
      case 0:
        w.ZoneValue(rng() % 1'000);
        break;
      case 1:
        w.Message(tick, 1, "m");
        break;
      case 2:
        w.Alloc(0, 0x1000 + uint64_t(i), 64, tick).Callstack({0x10, 0x20});
        break;
      default:
        if (depth[thread] == 0 || (depth[thread] < 6 && rng() % 2 == 0)) {
          w.ZoneBegin(1 + uint32_t(rng() % 300), tick);
          if (rng() % 5 == 0) w.Callstack({0x30, 0x40, 0x50});
          ++depth[thread];
        } else {
          w.ZoneEnd(tick - (rng() % 50 == 0 ? 60 : 0));  // now and then before its begin
          --depth[thread];
        }
    }
  }
  const std::vector<uint8_t>& raw = w.bytes();
  // In two pieces, cut between two messages near the middle.
  size_t cut = 0;
  while (cut < raw.size() / 2)
    cut += gnomon::protocol::MeasureMessage(raw.data() + cut, raw.size() - cut).size;
  const std::span<const uint8_t> whole(raw), first(raw.data(), cut),
      second(raw.data() + cut, raw.size() - cut);
  const std::span<const uint8_t> both[] = {first, second};
  for (const auto pieces : {std::span<const std::span<const uint8_t>>(&whole, 1),
                            std::span<const std::span<const uint8_t>>(both)}) {
    CAPTURE(pieces.size());
    std::vector<uint8_t> fused(gnomon::tracefile::CompactBound(raw.size())), plain(fused.size());
    std::vector<uint8_t> scratch(fused.size());
    BlockSummary made;
    bool summarized = false;
    fused.resize(
        gnomon::tracefile::CompactAndSummarize(pieces, fused.data(), scratch.data(), made, summarized));
    plain.resize(gnomon::tracefile::CompactBlock(pieces, plain.data(), scratch.data()));
    REQUIRE(summarized);
    CHECK(fused == plain);  // the compact form is the same
    BlockSummary walked;
    REQUIRE(gnomon::tracefile::SummarizeBlock(plain.data(), plain.size(), walked));
    CHECK(made == walked);
    CHECK(made.segments.size() > 1'000);
  }
  // Bytes that are not whole messages to their end: no summary.
  const std::span<const uint8_t> cut_short(raw.data(), raw.size() - 3);
  std::vector<uint8_t> out(gnomon::tracefile::CompactBound(raw.size())), scratch(out.size());
  BlockSummary none;
  bool summarized = true;
  gnomon::tracefile::CompactAndSummarize({&cut_short, 1}, out.data(), scratch.data(), none, summarized);
  CHECK_FALSE(summarized);
}
