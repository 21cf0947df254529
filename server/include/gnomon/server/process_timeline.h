// Where the events of the programs of one trace lie on one timeline, for exports and
// filters: the capture's clock, in ns from the earliest event of any program.
//
// A program's times are its own clock's (TraceModel::clock); its clock exchanges
// (HostClockModel) give the offset to the capture's clock at each of its times, so a
// program whose clock runs 1,000 s ahead, or drifts, still lands where it happened. A
// program without exchanges (its own file, an older trace) stays on its own clock. A
// trace of one program keeps its own times, from its first event, as before.
//
// A merged trace (gnomon-merge) holds the programs of several captures. Each capture
// recorded its clock against a common reference (CaptureReference), so a program's time
// goes to its capture's clock, then to the reference, then to the clock of the first
// program's capture, which is the timeline's; the bounds of the three mappings add, and
// the reference's stated error (both captures') where the two captures read different
// hosts' reference clocks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gnomon/server/host_clock_model.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

// Two bounds (ns) added, saturated: a crafted trace's bounds can be anything.
inline uint64_t AddBounds(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// A program's clock against another, as reports state it: timeline = program + offset
// within the bound, the drift known after 10 s of exchanges.
struct HostClockSummary {
  int64_t offset_ns = 0;
  std::optional<double> drift_ppm;
  uint64_t uncertainty_ns = 0;
};
// The main epoch of `clock` (against the capture's clock); empty when it has none.
std::optional<HostClockSummary> SummarizeHostClock(const HostClockModel& clock);

class ProcessTimeline {
 public:
  // The timelines of `processes`, in their order, from one origin.
  static std::vector<ProcessTimeline> Of(const std::vector<const TraceModel*>& processes);
  // One program on its own clock, from its first event.
  explicit ProcessTimeline(const TraceModel& model);

  // A time of the program's clock (ns) on the timeline; saturated (a crafted trace's
  // offsets can be anything).
  int64_t Ns(int64_t program_ns) const {
    const __int128 ns = __int128(program_ns) + OffsetNs(program_ns) - origin_ns_;
    return int64_t(std::clamp<__int128>(ns, INT64_MIN, INT64_MAX));
  }
  // The program's clock against the timeline's (before the origin) at a program time:
  // timeline = program + offset, within the bound (invalid when the program's own
  // exchanges give no mapping and its capture's do not either).
  HostClockModel::Mapping At(int64_t program_ns) const;
  // Whether the program could be placed against the others: false for a program of a
  // merged trace whose capture recorded no reference (it stays on its capture's clock).
  bool aligned() const { return aligned_; }
  // Whether the program's time goes through its capture's reference readings (a merged
  // trace's program of any capture but the timeline's).
  bool through_reference() const { return capture_ != nullptr; }
  // The program's clock against the timeline's, as reports state it: its host clock
  // model's main epoch (SummarizeHostClock), or through the reference its offset at the
  // epoch's first exchange, the drift between its first and last, the widest bound at
  // the first, middle and last. Empty where the program has no mapping.
  std::optional<HostClockSummary> Summary() const;
  // A CPU tick of the program on the timeline.
  int64_t Tick(uint64_t tick) const { return Ns(model_->clock.TickToNs(tick)); }
  const TraceModel& model() const { return *model_; }
  // The process id an export gives the program: its own, unless an earlier program of
  // the trace (on another host, or without one) has it, then one past Linux's pid_max.
  uint32_t pid() const { return pid_; }
  // Its name: the program's, or with several, with its pid, host and rank.
  const std::string& name() const { return name_; }

 private:
  // A capture of a merged trace, against the common reference.
  struct Capture {
    HostClockModel reference;  // capture clock -> reference
    uint64_t stated_error_ns = 0;
    std::string domain;
  };
  // Both captures' stated reference errors where they read different hosts' clocks; 0
  // on one host (through the reference only).
  uint64_t ReferenceErrorNs() const;
  int64_t OffsetNs(int64_t program_ns) const {
    if (capture_ == nullptr) return host_ ? host_->At(program_ns).offset_ns : 0;
    return At(program_ns).offset_ns;
  }

  const TraceModel* model_;
  uint32_t pid_ = 0;
  std::string name_;
  std::optional<HostClockModel> host_;  // set when the program's exchanges give a mapping
  // Set in a merged trace when the program's capture is not the timeline's: its capture,
  // and the timeline's.
  std::shared_ptr<const Capture> capture_;
  std::shared_ptr<const Capture> base_;
  bool aligned_ = true;
  int64_t origin_ns_ = 0;
};

}  // namespace gnomon::server
