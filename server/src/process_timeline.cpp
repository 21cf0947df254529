#include "gnomon/server/process_timeline.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "gnomon/server/report.h"

namespace gnomon::server {

ProcessTimeline::ProcessTimeline(const TraceModel& model)
    : model_(&model),
      pid_(model.program.pid),
      name_(model.program.name),
      origin_ns_(model.first_tick == kOpenZone ? 0 : model.clock.TickToNs(model.first_tick)) {}

std::vector<ProcessTimeline> ProcessTimeline::Of(const std::vector<const TraceModel*>& processes) {
  std::vector<ProcessTimeline> timelines;
  if (processes.size() == 1) return {ProcessTimeline(*processes[0])};
  int64_t origin = std::numeric_limits<int64_t>::max();
  std::unordered_set<uint32_t> pids;
  for (const TraceModel* model : processes) {
    ProcessTimeline& timeline = timelines.emplace_back(*model);
    timeline.origin_ns_ = 0;
    // Past Linux's pid_max (2^22): numbers no process of the trace has.
    for (uint32_t n = 0; !pids.insert(timeline.pid_).second; ++n) timeline.pid_ = 0x400000u + n;
    timeline.name_ = ProcessLabel(*model);
    HostClockModel host(model->host_clock_exchanges);
    if (host.valid()) timeline.host_.emplace(std::move(host));
    if (model->first_tick != kOpenZone) origin = std::min(origin, timeline.Tick(model->first_tick));
  }
  if (origin == std::numeric_limits<int64_t>::max()) origin = 0;
  for (ProcessTimeline& timeline : timelines) timeline.origin_ns_ = origin;
  return timelines;
}

}  // namespace gnomon::server
