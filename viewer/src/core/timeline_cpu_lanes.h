// What the timeline's files share about CPU lanes (timeline.cpp, timeline_overview.cpp):
// their keys, and the accessor of an overview's runs.
#pragma once

#include <cstdint>
#include <vector>

#include "gnomon/server/trace_model.h"
#include "gnomon/viewer/lane_index.h"

namespace gnomon::viewer::timeline_detail {

// A CPU lane's keys are ticks: the tick of a relative time, through the clock.
struct CpuKey {
  const server::TraceModel& model;
  int64_t origin_ns;
  int64_t operator()(int64_t relative_ns) const {
    return int64_t(model.clock.NsToTick(relative_ns + origin_ns));
  }
  int64_t ToNs(int64_t tick) const { return model.clock.TickToNs(uint64_t(tick)) - origin_ns; }
  double per_ns() const { return 1.0 / model.clock.ns_per_tick(); }
};

// The overview's accessor, for one row of runs.
struct OverviewSpans {
  const server::TraceModel& model;
  const std::vector<server::OverviewRun>& row;
  int64_t origin_ns;
  Span operator()(uint32_t i) const {
    return {model.clock.TickToNs(row[i].begin_tick) - origin_ns,
            model.clock.TickToNs(row[i].end_tick) - origin_ns};
  }
};

}  // namespace gnomon::viewer::timeline_detail
