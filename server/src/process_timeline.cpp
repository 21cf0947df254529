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
  // The timeline's capture time whose reference time this is: its offset changes by
  // ppm, so two steps from its offset at the reference time converge to the ns.
  int64_t base_ns = Sub(reference_ns, base_->reference.At(reference_ns).offset_ns);
  base_ns = Sub(reference_ns, base_->reference.At(base_ns).offset_ns);
  const HostClockModel::Mapping down = base_->reference.At(base_ns);
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
  // The captures of a merged trace, each against the reference, with every reading
  // shifted by the earliest (so that offsets stay small and exact in the models).
  std::map<uint64_t, const CaptureReference*> captures;
  uint64_t shift = UINT64_MAX;
  for (const TraceModel* model : processes) {
    if (model->capture.capture_id == 0 || model->capture.readings.empty()) continue;
    captures.emplace(model->capture.capture_id, &model->capture);
    for (const HostClockExchange& reading : model->capture.readings)
      shift = std::min(shift, reading.probe_sent_ns);
  }
  std::map<uint64_t, std::shared_ptr<const Capture>> models;
  if (captures.size() > 1) {
    for (const auto& [id, reference] : captures) {
      std::vector<HostClockExchange> readings = reference->readings;
      for (HostClockExchange& reading : readings) {
        reading.probe_sent_ns -= shift;
        reading.reply_received_ns -= shift;
      }
      HostClockModel model(readings);
      if (model.valid()) {
        models[id] = std::make_shared<const Capture>(
            Capture{std::move(model), reference->reference_error_ns, reference->domain});
      }
    }
  }
  std::shared_ptr<const Capture> base;  // the first placed program's capture
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
    if (captures.size() > 1) {
      // A program whose own clock is not tied to its capture's cannot be placed.
      const auto it = models.find(model->capture.capture_id);
      if (it == models.end() || !timeline.host_) {
        timeline.aligned_ = false;
      } else {
        if (base == nullptr) base = it->second;
        if (it->second != base) {
          timeline.capture_ = it->second;
          timeline.base_ = base;
        }
      }
    }
    if (model->first_tick != kOpenZone) origin = std::min(origin, timeline.Tick(model->first_tick));
  }
  if (origin == std::numeric_limits<int64_t>::max()) origin = 0;
  for (ProcessTimeline& timeline : timelines) timeline.origin_ns_ = origin;
  return timelines;
}

}  // namespace gnomon::server
