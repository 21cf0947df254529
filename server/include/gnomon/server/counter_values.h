// GPU counter values as a reader wants them: normalised by their type, and summed per
// source location.
//
// Normalisation follows the performance-query model (protocol::CounterType):
//  - a normalised duration (busy clocks) is divided by the set's render clocks: the
//    counter of the same set whose name contains "clocks" and whose type is an event or
//    raw count; the result is a fraction of time, shown in percent. Without such a
//    counter the value stays as it is;
//  - a throughput is divided by the measured GPU time (the zone's length on the GPU's
//    own clock, or the frame's length): a rate per second;
//  - every other type is shown as it is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::server {

// The unit a counter's normalised values are in: "%", "/s" or "".
std::string CounterUnit(const CounterSet& set, size_t index);

// Normalised value of counter `index` in `sample` of `context`.
double NormalizedCounterValue(const TraceModel& model, const GpuContextTimeline& context,
                              const CounterSample& sample, size_t index);

// The sample attached to a GPU zone, or nullptr.
const CounterSample* FindZoneCounters(const GpuContextTimeline& context, uint32_t zone_index);

struct CounterStatistics {
  uint32_t source_location = 0;  // of the GPU zones measured
  uint32_t set_id = 0;
  uint32_t counter = 0;  // index in the set
  uint64_t count = 0;    // samples
  double sum = 0;        // of normalised values
  double mean = 0;
  double min = 0;
  double max = 0;
};

// Per (source location, set, counter) of every GPU zone with a counter result, in
// source-location order of ComputeGpuZoneStatistics's sorting (by id here; the caller
// sorts as it shows them). Frame results are left out.
std::vector<CounterStatistics> ComputeCounterStatistics(const TraceModel& model);

}  // namespace gnomon::server
