// A block's summary (format 8): what a reader that counts a trace's zones instead of
// holding them needs of a block, a small fraction of its bytes, so that it opens a file of
// a billion zones without decompressing its blocks.
//
// The writer makes it from the block's compact form once that is compressed, and stores
// it, compressed, at the end of the zstd skippable frame that may follow the block's
// frame (format.h): the block's last kSummaryTrailer bytes are the summary frame's size
// and kSummaryMagic, the frame lies just before them. Readers that do not look for it
// skip it as they skip padding.
//
// What it holds:
// - the block's other messages, every one but zone begins and ends, the zones'
//   attributes (name, text, colour, value) and a zone's call stack, in a compact block of
//   their own (block_codec.h): replayed as they are;
// - for each segment of the block, the part before its first ThreadContext and the part
//   after each (in the order of those messages among the others), what its zones did:
//   the ends of zones begun before it, innermost first; the zones begun and ended inside
//   it as runs (zone_runs.h) at the summary's resolution; the zones it left open;
//   and what was wrong with them, as a reader decoding the block counts it.
// A segment does not know how many zones were open when it began: its rows are placed
// by how many of those it had closed when their zones began, and reading applies them,
// at the segment's end (after the definitions it holds), to the thread's stack as it
// stands.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gnomon/tracefile/zone_runs.h"

namespace gnomon::tracefile {

inline constexpr uint32_t kSummaryMagic = 0x4D555347;  // "GSUM"
inline constexpr size_t kSummaryTrailer = 8;           // the summary frame's size (u32), then kSummaryMagic
// The skippable frame that carries a summary (padding's is kSkippableFrameMagic).
inline constexpr uint32_t kSummaryFrameMagic = 0x184D2A51;
// A summary's runs: at most this many beyond one a row (the writer coarsens its
// resolution until they fit), and the resolution it starts from, in ticks.
inline constexpr size_t kSummaryRuns = 256;
inline constexpr uint64_t kSummaryFirstResolution = 256;
// The most a summary may decompress to, whatever its frame says (a writer leaves out a
// summary that would take more, or expand more than kWriterMaxExpansion times: its
// block is then decoded).
inline constexpr size_t kMaxSummaryBytes = 1u << 20;

struct SummaryRow {
  uint32_t closed_before = 0;  // zones of before the segment it had closed when these began
  uint32_t depth = 0;          // among the zones begun in the segment, 0 the outermost
  std::vector<OverviewRun> runs;
  friend bool operator==(const SummaryRow&, const SummaryRow&) = default;
};

struct SummarySegment {
  uint64_t begins = 0;  // zone begins and ends
  uint64_t ends = 0;
  uint64_t first_tick = UINT64_MAX;  // of the zones begun in it, begins and ends (first > last: none)
  uint64_t last_tick = 0;
  std::vector<uint64_t> closed;     // end ticks of zones begun before the segment, innermost first
  std::vector<SummaryRow> rows;     // zones begun and ended in the segment
  std::vector<uint32_t> locations;  // the ids its zones begin with, in first use order
  std::vector<std::pair<uint32_t, uint64_t>> left_open;  // location id and begin tick, outermost first
  // What a reader decoding the block counts: zones ended before they began (of those
  // begun in the segment), attributes and their count while no zone of the segment was
  // open (each by closed_before), and zones' call stacks past the deepest a model keeps.
  uint64_t clamped = 0;
  uint64_t attributes = 0;
  std::vector<uint32_t> loose_attributes;
  uint64_t long_callstacks = 0;
  friend bool operator==(const SummarySegment&, const SummarySegment&) = default;
};

struct BlockSummary {
  uint64_t resolution = kSummaryFirstResolution;  // of every row's runs
  std::vector<uint8_t> others;                    // compact block of the other messages
  std::vector<SummarySegment> segments;           // one more than the ThreadContexts among the others
  friend bool operator==(const BlockSummary&, const BlockSummary&) = default;
};

// CompactBlock (block_codec.h) of the block in `pieces`, in format 7's form, making its
// summary as it goes: what a writer does. `summarized` false when the bytes are not
// whole messages to their end (no summary then).
size_t CompactAndSummarize(std::span<const std::span<const uint8_t>> pieces, uint8_t* out, uint8_t* scratch,
                           BlockSummary& summary, bool& summarized);

// The summary of a compact block (format 7's form) of `size` bytes, which it walks in
// place (restoring its ticks): what a block already written gets, equal to what
// CompactAndSummarize made of it. A block that does not walk to its end (damaged: a
// writer's never is) has no summary: false.
bool SummarizeBlock(uint8_t* block, size_t size, BlockSummary& summary);

// The summary's bytes (varints), and back: false, with the reason, when they are not a
// summary (damaged or crafted: a reader then decodes the block).
std::vector<uint8_t> EncodeSummary(const BlockSummary& summary);
bool DecodeSummary(const uint8_t* data, size_t size, BlockSummary& summary, std::string& error);

}  // namespace gnomon::tracefile
