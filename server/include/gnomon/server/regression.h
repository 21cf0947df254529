// The regression check: a new trace of a program against an old one, location by
// location (gnomon-report NEW --compare OLD).
//
// Each CPU zone location, GPU zone location and frame series found in both traces is
// compared by the median and the 90th percentile of its durations (nearest rank). A
// quantile's confidence interval assumes no distribution: in each trace it lies between
// two order statistics whose ranks come from the binomial law (the sign test, inverted),
// and the change new / old - 1 lies between the new's low end over the old's high end
// and the new's high end over the old's low end. Every interval of the check holds at
// once with at least the confidence asked for (the error is shared out over them all:
// Bonferroni). A row changed when the interval of its median or of its p90 lies wholly
// beyond the threshold: slower above +threshold, faster below -threshold, and beyond
// min_change_ns in nanoseconds as well. The one
// assumption is that within a trace a location's durations are independent draws of one
// distribution; runs whose durations drift with time (warm-up, heat) break it.
//
// Memory stays bounded per location (analysis/duration_set.h): past 4096 durations a
// quantile is known to its histogram bucket (1/128 of its value), and the interval
// takes the bucket's ends.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::server {

struct RegressionOptions {
  double threshold = 0.05;    // a change smaller than this (either way) is no change
  double min_change_ns = 10;  // nor one of fewer nanoseconds (a timer's tick, a cache miss)
  double confidence = 0.99;   // of all the intervals at once
};

// One quantile in both traces, and its change.
struct QuantileChange {
  int64_t old_ns = 0;
  int64_t new_ns = 0;
  double change = 0;  // new / old - 1
  // The change's confidence interval; infinite on a side the zones are too few to bound
  // (and where the old value is 0 ns).
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  // The same interval in nanoseconds (new - old).
  double low_ns = -std::numeric_limits<double>::infinity();
  double high_ns = std::numeric_limits<double>::infinity();
};

struct RegressionRow {
  enum class Kind : uint8_t { kCpuZone, kGpuZone, kFrames };
  enum class Verdict : uint8_t { kSame, kSlower, kFaster, kOnlyOld, kOnlyNew };
  Kind kind = Kind::kCpuZone;
  std::string name;   // the zone's or the frame series' name
  std::string where;  // the zone's file (without folders), or its function when it has none
  uint64_t old_count = 0;
  uint64_t new_count = 0;
  QuantileChange median;
  QuantileChange p90;
  Verdict verdict = Verdict::kSame;
};

struct RegressionReport {
  RegressionOptions options;
  double interval_confidence = 0;  // of each quantile's interval in one trace
  uint64_t old_zones = 0, new_zones = 0;
  // Slower rows first (largest change first), then faster ones, then the rest by kind and
  // name, then the rows of one trace only.
  std::vector<RegressionRow> rows;
  size_t compared = 0;  // rows found in both
  size_t slower = 0;
  size_t faster = 0;
};

// The programs of each trace are taken together (a location by its name and file).
RegressionReport CompareForRegressions(const std::vector<const TraceModel*>& old_programs,
                                       const std::vector<const TraceModel*>& new_programs,
                                       const RegressionOptions& options = {});

// The 1-based ranks of the order statistics that bracket the p-quantile of n independent
// values with probability at least 1 - 2 * tail (tail on each side); 0 for a low end, or
// n + 1 for a high end, that n values cannot give.
struct OrderRanks {
  uint64_t low = 0;
  uint64_t high = 0;
};
OrderRanks QuantileRanks(uint64_t n, double p, double tail);

// The check as text: the options, each compared row, and what was in one trace only.
void PrintRegressions(const RegressionReport& report, std::ostream& out);
// The same as one JSON object.
void WriteRegressionJson(const RegressionReport& report, std::ostream& out);

}  // namespace gnomon::server
