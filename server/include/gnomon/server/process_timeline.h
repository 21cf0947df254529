// Where the events of the programs of one trace lie on one timeline, for exports and
// filters: the capture's clock, in ns from the earliest event of any program.
//
// A program's times are its own clock's (TraceModel::clock); its clock exchanges
// (HostClockModel) give the offset to the capture's clock at each of its times, so a
// program whose clock runs 1,000 s ahead, or drifts, still lands where it happened. A
// program without exchanges (its own file, an older trace) stays on its own clock. A
// trace of one program keeps its own times, from its first event, as before.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gnomon/server/host_clock_model.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

class ProcessTimeline {
 public:
  // The timelines of `processes`, in their order, from one origin.
  static std::vector<ProcessTimeline> Of(const std::vector<const TraceModel*>& processes);
  // One program on its own clock, from its first event.
  explicit ProcessTimeline(const TraceModel& model);

  // A time of the program's clock (ns) on the timeline; saturated (a crafted trace's
  // offsets can be anything).
  int64_t Ns(int64_t program_ns) const {
    const __int128 ns = __int128(program_ns) + (host_ ? host_->At(program_ns).offset_ns : 0) - origin_ns_;
    return int64_t(std::clamp<__int128>(ns, INT64_MIN, INT64_MAX));
  }
  // A CPU tick of the program on the timeline.
  int64_t Tick(uint64_t tick) const { return Ns(model_->clock.TickToNs(tick)); }
  const TraceModel& model() const { return *model_; }
  // The process id an export gives the program: its own, unless an earlier program of
  // the trace (on another host, or without one) has it, then one past Linux's pid_max.
  uint32_t pid() const { return pid_; }
  // Its name: the program's, or with several, with its pid, host and rank.
  const std::string& name() const { return name_; }

 private:
  const TraceModel* model_;
  uint32_t pid_ = 0;
  std::string name_;
  std::optional<HostClockModel> host_;  // set when the program's exchanges give a mapping
  int64_t origin_ns_ = 0;
};

}  // namespace gnomon::server
