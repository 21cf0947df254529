// Two traces side by side: per source location (matched by name, function and file's
// base name, since two runs number their locations as they go), the count, total and
// mean of each, their difference and their ratio.
//
//   auto rows = CompareTraces(a, ComputeZoneStatistics(a), b, ComputeZoneStatistics(b));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gnomon/server/statistics.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::viewer {

struct ComparisonRow {
  std::string name;
  std::string where;                        // "file.cpp:42" of the first trace that has it
  uint32_t location_a = 0, location_b = 0;  // 0: absent from that trace
  uint64_t count_a = 0, count_b = 0;
  int64_t total_a_ns = 0, total_b_ns = 0;
  double mean_a_ns = 0, mean_b_ns = 0;
  int64_t total_difference_ns() const { return total_b_ns - total_a_ns; }
  // B's mean over A's; 0 when either has none.
  double mean_ratio() const { return mean_a_ns > 0 && count_b > 0 ? mean_b_ns / mean_a_ns : 0; }
};

// Rows for every location in either trace, by the larger total of the two, longest first.
std::vector<ComparisonRow> CompareTraces(const server::TraceModel& a,
                                         const std::vector<server::ZoneStatistics>& stats_a,
                                         const server::TraceModel& b,
                                         const std::vector<server::ZoneStatistics>& stats_b);

// The location in `model` that `other`'s location matches (0 when none).
uint32_t MatchLocation(const server::TraceModel& model, const server::SourceLocation& other);

}  // namespace gnomon::viewer
