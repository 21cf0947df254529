// Find zone, as plain data: every occurrence of one source location (CPU or GPU zones),
// its duration distribution, and the views the window shows of it.
//
//   ZoneOccurrences all = FindOccurrences(model, {.location = 7});   // once, off the UI thread
//   DurationHistogram h = MakeHistogram(all.durations, 64, HistogramScale::kLog);
//   std::vector<uint32_t> rows = SelectOccurrences(all, {.min_ns = a, .max_ns = b},
//   OccurrenceOrder::kDuration);
//
// FindOccurrences walks the trace once; the rest works on its result in time
// proportional to the occurrences, so a window can redraw them every frame.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gnomon/server/trace_model.h"
#include "gnomon/server/zone_finder.h"
#include "gnomon/viewer/timeline.h"

namespace gnomon::viewer {

struct ZoneQuery {
  uint32_t location = 0;  // index in model.source_locations
  bool gpu = false;
  // Only zones that begin inside [begin_ns, end_ns] (trace-relative), when set.
  int64_t begin_ns = INT64_MIN;
  int64_t end_ns = INT64_MAX;
  friend bool operator==(const ZoneQuery&, const ZoneQuery&) = default;
};

struct Occurrence {
  static constexpr uint32_t kNotHeld = UINT32_MAX;  // index of a zone read from the file
  LaneKey lane;                                     // the thread, or the GPU context
  uint32_t index = 0;                               // zone index in its thread or context, or kNotHeld
  uint32_t thread_id = 0;                           // the recording thread (a GPU zone's too)
  uint32_t parent = 0;                              // the parent's source location; 0 for a top-level zone
  uint32_t depth = 0;                               // its row in the lane
  int64_t begin_ns = 0;                             // trace-relative
  int64_t duration_ns = 0;
  int64_t self_ns = 0;  // the duration less its children's (those of its thread, for a GPU zone)
};

// Occurrences lane by lane, in begin order, for outlining them on the timeline: what the
// outlines read of each, side by side, so that a frame reads them in order (through
// indexes into ZoneOccurrences::items it cost a cache miss each: 8 ms a frame for
// 189,000 occurrences).
struct LaneOccurrence {
  int64_t begin_ns = 0;
  int64_t duration_ns = 0;
  int64_t self_ns = 0;
  uint32_t depth = 0;
  uint32_t item = 0;  // its index in ZoneOccurrences::items
};
struct OccurrencesByLane {
  std::vector<std::pair<LaneKey, std::vector<LaneOccurrence>>> lanes;
  int64_t longest_ns = 0;
};

// The spread of the occurrences' durations, or of their self times.
struct DurationSpread {
  std::vector<int64_t> sorted_ns;  // ascending
  // Empty: each value is one zone's. Else how many zones each value stands for (zones
  // read from a file: server::FoundSpread).
  std::vector<uint64_t> weights;
  double mean_ns = 0;
  double stddev_ns = 0;  // of the population
  int64_t total_ns = 0;
  uint64_t count() const;
  // The value at fraction q (0..1) of the sorted values (nearest rank); 0 when none.
  int64_t Percentile(double q) const;
};

struct ZoneOccurrences {
  ZoneQuery query;
  uint64_t count = 0;             // every occurrence
  std::vector<Occurrence> items;  // in begin order: every one, or the longest when read from a file
  bool from_file = false;
  std::string file_note;      // read from the file: why that failed, or what damage left out
  OccurrencesByLane by_lane;  // the same, lane by lane
  DurationSpread durations;
  DurationSpread self_times;
  const DurationSpread& Of(bool self) const { return self ? self_times : durations; }
};

// Every closed (CPU) or timed (GPU) zone of the query, GPU zones placed by their
// context's clock model. Reads only the model (safe on another thread under its lock).
ZoneOccurrences FindOccurrences(const server::TraceModel& model, const ZoneQuery& query);
// The same for CPU zones read from the file (server::FindZonesInFile, zones not held):
// the longest of them as items, every one in count and the spreads.
ZoneOccurrences OccurrencesFromFile(const server::FoundZones& found, const ZoneQuery& query);

// The n-th zone (from 1, by begin) of the locations named exactly `name`: CPU zones, or
// GPU zones when no CPU zone has that name; none when there are fewer.
std::optional<Occurrence> FindNthZone(const server::TraceModel& model, const std::string& name, size_t n);

// Source locations whose name (or function, or file) contains `text`, ignoring case
// (ASCII), best first: locations with more zones first. At most `limit`. Zone counts are
// estimated from a sample of some 65,536 CPU and as many GPU zones (CPU zones not held:
// from their overview), so a rare location may show none of the kind it has (Find zone
// then tries the other kind).
struct LocationMatch {
  uint32_t location = 0;
  uint64_t cpu_zones = 0;
  uint64_t gpu_zones = 0;
  bool is_gpu() const { return cpu_zones == 0 && gpu_zones > 0; }
};
std::vector<LocationMatch> SearchLocations(const server::TraceModel& model, const std::string& text,
                                           size_t limit);

enum class HistogramScale : uint8_t { kLinear, kLog };

struct DurationHistogram {
  HistogramScale scale = HistogramScale::kLog;
  int64_t min_ns = 0, max_ns = 0;  // of the data
  std::vector<uint64_t> counts;    // by bin
  uint64_t tallest = 0;
  // The lower edge of bin `bin` (bin == counts.size(): the upper edge of the last).
  double EdgeNs(size_t bin) const;
  // The bin a duration falls in.
  size_t BinOf(int64_t ns) const;
  // Where a duration lies across the histogram, from 0 (min_ns) to 1 (max_ns).
  double Fraction(double ns) const;
  // Adds durations (sorted, ascending; each weighs its weight, or one) to their bins;
  // `tallest` follows.
  void Count(const std::vector<int64_t>& sorted_ns, const std::vector<uint64_t>& weights = {});
};
DurationHistogram MakeHistogram(const DurationSpread& values, size_t bins, HistogramScale scale);

enum class OccurrenceOrder : uint8_t { kStart, kDuration, kThread };

struct OccurrenceFilter {
  int64_t min_ns = INT64_MIN;  // durations kept: [min_ns, max_ns]
  int64_t max_ns = INT64_MAX;
  bool self = false;     // the range is of self times
  template <typename O>  // an Occurrence or a LaneOccurrence
  bool Keeps(const O& o) const {
    const int64_t ns = self ? o.self_ns : o.duration_ns;
    return ns >= min_ns && ns <= max_ns;
  }
};
// Indexes into occurrences.items of those the filter keeps, in the order asked
// (kDuration: longest first; kThread: by thread, then start).
std::vector<uint32_t> SelectOccurrences(const ZoneOccurrences& occurrences, const OccurrenceFilter& filter,
                                        OccurrenceOrder order);

// Occurrences grouped by thread or by parent location: count, total and mean per group,
// groups by total, longest first.
enum class OccurrenceGrouping : uint8_t { kThread, kParent };
struct OccurrenceGroup {
  uint32_t key = 0;  // thread id, or parent location
  uint64_t count = 0;
  int64_t total_ns = 0;
  double mean_ns = 0;
};
std::vector<OccurrenceGroup> GroupOccurrences(const ZoneOccurrences& occurrences,
                                              const OccurrenceFilter& filter, OccurrenceGrouping grouping);

// Find zone on the timeline: a rectangle round each occurrence in `view` on the lanes
// `timeline` laid out (lane coordinates, as DrawItem), those `strong` keeps (the
// histogram's chosen durations) marked so. Occurrences within a pixel of each other on
// one row share a rectangle, which counts them. The occurrences are taken lane by lane
// (ZoneOccurrences::by_lane, made with them), so a frame costs a search per lane and a
// step per occurrence in view, with no lookup.
struct Outline {
  float x0, y0, x1, y1;
  uint32_t count;  // occurrences it stands for
  bool strong;     // at least one of them is in the chosen durations
};
void OutlineOccurrences(const Timeline& timeline, const TimelineView& view,
                        const ZoneOccurrences& occurrences, const OccurrenceFilter& strong,
                        std::vector<Outline>& out);

}  // namespace gnomon::viewer
