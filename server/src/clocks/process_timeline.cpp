#include "gnomon/server/process_timeline.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_set>

#include "gnomon/server/report.h"

namespace gnomon::server {
namespace {

// a + b, or a - b, saturated: a crafted trace's offsets can be anything.
int64_t Add(int64_t a, int64_t b) {
  return int64_t(std::clamp<__int128>(__int128(a) + b, INT64_MIN, INT64_MAX));
}
int64_t Sub(int64_t a, int64_t b) {
  return int64_t(std::clamp<__int128>(__int128(a) - b, INT64_MIN, INT64_MAX));
}

}  // namespace

ProcessTimeline::ProcessTimeline(const TraceModel& model)
    : model_(&model),
      pid_(model.program.pid),
      name_(model.program.name),
      origin_ns_(model.first_tick == kOpenZone ? 0 : model.clock.TickToNs(model.first_tick)) {}

uint64_t ProcessTimeline::ReferenceErrorNs() const {
  return capture_->domain == base_->domain ? 0 : AddBounds(capture_->stated_error_ns, base_->stated_error_ns);
}

HostClockModel::Mapping ProcessTimeline::At(int64_t program_ns) const {
  HostClockModel::Mapping mapping = host_ ? host_->At(program_ns) : HostClockModel::Mapping{};
  if (capture_ == nullptr) return mapping;
  // Program -> its capture -> the reference -> the timeline's capture. Offsets are
  // within a day of each other (the reference readings were shifted alike, Of()).
  const int64_t capture_ns = Add(program_ns, mapping.offset_ns);
  const HostClockModel::Mapping up = capture_->reference.At(capture_ns);
  const int64_t reference_ns = Add(capture_ns, up.offset_ns);
  // The timeline's capture time whose reference time this is. Its offset changes by
  // ppm: from the offset of its first reading, each step shrinks the error by that much,
  // so a few steps reach the ns.
  const HostClockModel::Epoch* first = base_->reference.main_epoch();
  int64_t base_ns = Sub(reference_ns, first != nullptr ? first->offset_ns() : 0);
  HostClockModel::Mapping down = base_->reference.At(base_ns);
  for (int step = 0; step < 8; ++step) {
    const int64_t next = Sub(reference_ns, down.offset_ns);
    const int64_t moved = Sub(next, base_ns);
    const bool settled = moved >= -1 && moved <= 1;
    base_ns = next;
    down = base_->reference.At(base_ns);
    if (settled) break;
  }
  base_ns = Sub(reference_ns, down.offset_ns);
  const uint64_t bound = AddBounds(AddBounds(mapping.uncertainty_ns, ReferenceErrorNs()),
                                   AddBounds(up.uncertainty_ns, down.uncertainty_ns));
  return {.valid = mapping.valid, .offset_ns = Sub(base_ns, program_ns), .uncertainty_ns = bound};
}

std::optional<HostClockSummary> SummarizeHostClock(const HostClockModel& clock) {
  const HostClockModel::Epoch* epoch = clock.main_epoch();
  if (epoch == nullptr) return std::nullopt;
  return HostClockSummary{.offset_ns = epoch->offset_ns(),
                          .drift_ppm = epoch->drift_known() ? std::optional(epoch->drift_ppm) : std::nullopt,
                          .uncertainty_ns = epoch->uncertainty_ns()};
}

std::optional<HostClockSummary> ProcessTimeline::Summary() const {
  if (!host_) return std::nullopt;
  if (capture_ == nullptr) return SummarizeHostClock(*host_);
  // Through the reference: the offset at the first exchange; the bound, the widest of
  // each of the three mappings added (wherever in the trace each is widest), as a
  // single capture's states its widest.
  const HostClockModel::Epoch& epoch = *host_->main_epoch();
  const int64_t first = epoch.knots.front().program_ns, last = epoch.knots.back().program_ns;
  auto widest = [](const HostClockModel& model) {
    uint64_t bound = 0;
    for (const HostClockModel::Epoch& e : model.epochs()) bound = std::max(bound, e.uncertainty_ns());
    return bound;
  };
  const uint64_t bound = AddBounds(AddBounds(widest(*host_), ReferenceErrorNs()),
                                   AddBounds(widest(capture_->reference), widest(base_->reference)));
  const HostClockModel::Mapping at_first = At(first);
  HostClockSummary summary{
      .offset_ns = at_first.offset_ns, .drift_ppm = std::nullopt, .uncertainty_ns = bound};
  if (epoch.drift_known()) {
    summary.drift_ppm = double(Sub(At(last).offset_ns, at_first.offset_ns)) / double(last - first) * 1e6;
  }
  return summary;
}

std::vector<ProcessTimeline> ProcessTimeline::Of(const std::vector<const TraceModel*>& processes) {
  std::vector<ProcessTimeline> timelines;
  if (processes.size() == 1) return {ProcessTimeline(*processes[0])};
  // The captures, each with the readings of all its streams: the tightest of each second
  // of its clock (the model keeps no more), so that a capture of many programs costs
  // its duration, not its programs times it.
  struct Pooled {
    std::map<uint64_t, HostClockExchange> by_second;
    uint64_t error_ns = 0;
    std::string domain;
  };
  std::map<uint64_t, Pooled> pooled;
  std::unordered_set<uint64_t> ids;
  bool flagged = false;
  uint64_t shift = UINT64_MAX;
  for (const TraceModel* model : processes) {
    const CaptureReference& capture = model->capture;
    flagged |= capture.merged;
    ids.insert(capture.capture_id);
    if (capture.capture_id == 0 || capture.readings.empty()) continue;
    Pooled& pool = pooled[capture.capture_id];
    pool.error_ns = std::max(pool.error_ns, capture.reference_error_ns);
    if (pool.domain.empty()) pool.domain = capture.domain;
    for (const HostClockExchange& reading : capture.readings) {
      auto [it, added] = pool.by_second.try_emplace(reading.receive_ns / 1'000'000'000, reading);
      if (!added && reading.send_ns - reading.receive_ns < it->second.send_ns - it->second.receive_ns) {
        it->second = reading;
      }
      shift = std::min(shift, reading.probe_sent_ns);
    }
  }
  // A merged file, or programs of several captures: each placed through its capture's
  // readings, each reading shifted by the earliest (offsets stay small and exact).
  const bool merged = flagged || ids.size() > 1;
  std::map<uint64_t, std::shared_ptr<const Capture>> models;
  if (merged) {
    for (const auto& [id, pool] : pooled) {
      std::vector<HostClockExchange> readings;
      readings.reserve(pool.by_second.size());
      for (const auto& [second, reading] : pool.by_second) {
        readings.push_back(reading);
        readings.back().probe_sent_ns -= shift;
        readings.back().reply_received_ns -= shift;
      }
      HostClockModel model(readings);
      if (model.valid()) {
        models[id] = std::make_shared<const Capture>(Capture{std::move(model), pool.error_ns, pool.domain});
      }
    }
  }
  std::shared_ptr<const Capture> base;  // the first placed program's capture
  std::unordered_set<uint32_t> pids;
  uint32_t spare_pid = 0x400000u;  // past Linux's pid_max (2^22): numbers no process of the trace has
  for (const TraceModel* model : processes) {
    ProcessTimeline& timeline = timelines.emplace_back(*model);
    timeline.origin_ns_ = 0;
    while (!pids.insert(timeline.pid_).second) timeline.pid_ = spare_pid++;
    timeline.name_ = ProcessLabel(*model);
    HostClockModel host(model->host_clock_exchanges);
    if (host.valid()) timeline.host_.emplace(std::move(host));
    if (!merged) continue;
    // A program whose own clock is not tied to its capture's, or whose capture is not
    // tied to the reference, cannot be placed.
    const auto it = models.find(model->capture.capture_id);
    if (it == models.end() || !timeline.host_) {
      timeline.aligned_ = false;
      continue;
    }
    if (base == nullptr) base = it->second;
    if (it->second != base) {
      timeline.capture_ = it->second;
      timeline.base_ = base;
    }
  }
  // The earliest event of the programs placed (of all, when none is): a program on a
  // foreign clock must not move the others.
  int64_t origin = std::numeric_limits<int64_t>::max(), any_origin = origin;
  for (size_t i = 0; i < processes.size(); ++i) {
    if (processes[i]->first_tick == kOpenZone) continue;
    const int64_t first = timelines[i].Tick(processes[i]->first_tick);
    any_origin = std::min(any_origin, first);
    if (timelines[i].aligned_) origin = std::min(origin, first);
  }
  if (origin == std::numeric_limits<int64_t>::max()) origin = any_origin;
  if (origin == std::numeric_limits<int64_t>::max()) origin = 0;
  for (ProcessTimeline& timeline : timelines) timeline.origin_ns_ = origin;
  return timelines;
}

}  // namespace gnomon::server
