#include <algorithm>
#include <cstring>
#include <ctime>

#include "core/timer.h"
#include "gnomon/opengl.hpp"

namespace gnomon::opengl {
namespace {

// The few GL enums used here (values from the OpenGL registry).
constexpr uint32_t kGlTimestamp = 0x8E28;
constexpr uint32_t kGlQueryCounterBits = 0x8864;
constexpr uint32_t kGlQueryResult = 0x8866;
constexpr uint32_t kGlQueryResultAvailable = 0x8867;
constexpr uint32_t kGlRenderer = 0x1F01;
constexpr int kCalibrationTries = 5;

int64_t RawNs() { return client::ReadClockNs(CLOCK_MONOTONIC_RAW); }

// The tightest of `tries` reads of GL_TIMESTAMP between two CPU clock reads.
struct BracketedRead {
  int64_t gl_ns = 0;
  int64_t cpu_ns = 0;  // the bracket's midpoint
  int64_t width_ns = INT64_MAX;
};

}  // namespace

struct Context::Functions {
  void (*GenQueries)(int32_t, uint32_t*) = nullptr;
  void (*DeleteQueries)(int32_t, const uint32_t*) = nullptr;
  void (*QueryCounter)(uint32_t, uint32_t) = nullptr;
  void (*GetQueryObjectiv)(uint32_t, uint32_t, int32_t*) = nullptr;
  void (*GetQueryObjectui64v)(uint32_t, uint32_t, uint64_t*) = nullptr;
  void (*GetInteger64v)(uint32_t, int64_t*) = nullptr;
  void (*GetQueryiv)(uint32_t, uint32_t, int32_t*) = nullptr;
  const uint8_t* (*GetString)(uint32_t) = nullptr;

  BracketedRead ReadTimestamp(int tries) const {
    BracketedRead best;
    for (int i = 0; i < tries; ++i) {
      const int64_t before = RawNs();
      int64_t gl = 0;
      GetInteger64v(kGlTimestamp, &gl);
      const int64_t after = RawNs();
      if (after - before < best.width_ns) best = {gl, before + (after - before) / 2, after - before};
    }
    return best;
  }
};

std::unique_ptr<Context> Context::CreateWith(GetProcAddress loader, const ContextOptions& options) {
  std::unique_ptr<Context> context(new Context);
  if (loader == nullptr || !options.enabled) return context;
  auto fn = std::make_unique<Functions>();
#define GNOMON_LOAD(member, name) fn->member = reinterpret_cast<decltype(fn->member)>(loader(name))
  GNOMON_LOAD(GenQueries, "glGenQueries");
  GNOMON_LOAD(DeleteQueries, "glDeleteQueries");
  GNOMON_LOAD(QueryCounter, "glQueryCounter");
  GNOMON_LOAD(GetQueryObjectiv, "glGetQueryObjectiv");
  GNOMON_LOAD(GetQueryObjectui64v, "glGetQueryObjectui64v");
  GNOMON_LOAD(GetInteger64v, "glGetInteger64v");
  GNOMON_LOAD(GetQueryiv, "glGetQueryiv");
  GNOMON_LOAD(GetString, "glGetString");
#undef GNOMON_LOAD
  if (!fn->GenQueries || !fn->DeleteQueries || !fn->QueryCounter || !fn->GetQueryObjectiv ||
      !fn->GetQueryObjectui64v || !fn->GetInteger64v || !fn->GetQueryiv) {
    return context;
  }
  int32_t bits = 0;
  fn->GetQueryiv(kGlTimestamp, kGlQueryCounterBits, &bits);
  if (bits <= 0) return context;  // no timestamps: inert

  Context& c = *context;
  c.fn_ = std::move(fn);
  c.valid_mask_ = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  c.schedule_ = client::CalibrationSchedule(options.recalibration_period);
  const uint32_t size = std::max<uint32_t>(4, options.queries & ~1u);
  c.queries_.resize(size);
  c.wire_ids_.resize(size);
  c.fn_->GenQueries(int32_t(size), c.queries_.data());

  const char* renderer =
      c.fn_->GetString ? reinterpret_cast<const char*>(c.fn_->GetString(kGlRenderer)) : nullptr;
  const BracketedRead pair = c.fn_->ReadTimestamp(kCalibrationTries);
  gnomon_gpu_context_info info{};
  info.api = GNOMON_GPU_API_OPENGL;
  info.device_name = renderer ? renderer : "OpenGL";
  info.period_numerator_ns = 1;  // GL timestamps are nanoseconds
  info.period_denominator = 1;
  info.valid_bits = uint8_t(std::min(bits, 64));
  info.flags = GNOMON_GPU_CONTEXT_FALLBACK_CALIBRATION;
  info.gpu_ticks = uint64_t(pair.gl_ns) & c.valid_mask_;
  info.cpu_time = uint64_t(pair.cpu_ns);
  info.cpu_domain = GNOMON_CPU_TIME_MONOTONIC_RAW;
  info.uncertainty_ns = uint32_t(pair.width_ns + 1);
  c.id_ = gnomon_gpu_context_create(&info);
  if (options.name != nullptr) gnomon_gpu_context_name(c.id_, options.name, std::strlen(options.name));
  c.calibration_ = client::CalibrationChannel(c.id_, pair.cpu_ns);
  c.stats_.last_calibration_uncertainty_ns = info.uncertainty_ns;
  c.active_ = c.id_ != 0;
  return context;
}

Context::~Context() {
  // The queries done so far, then one more calibration: every zone lies between two.
  if (active_) {
    Collect();
    Calibrate(kCalibrationTries);
  }
  if (fn_ && !queries_.empty()) fn_->DeleteQueries(int32_t(queries_.size()), queries_.data());
  if (source_ != nullptr) {
    for (const CountedZone& zone : counted_) source_->Destroy(zone.instance);
    for (uint32_t instance : free_instances_) source_->Destroy(instance);
  }
}

bool Context::AttachCounters(counters::Source& source, size_t type) {
  if (!active_ || !source.is_available() || type >= source.query_types().size()) return false;
  const uint32_t set = counters::DefineSet(id_, source.query_types()[type]);
  if (set == 0) return false;
  source_ = &source;
  source_type_ = type;
  counter_set_ = set;
  return true;
}

void Context::Calibrate(int tries) {
  const BracketedRead pair = fn_->ReadTimestamp(tries);
  calibration_.Send(uint64_t(pair.gl_ns) & valid_mask_, pair.cpu_ns, uint32_t(pair.width_ns + 1),
                    GNOMON_CPU_TIME_MONOTONIC_RAW, stats_);
}

bool Context::SendZoneCounters() {
  const CountedZone zone = counted_.front();
  counters::Values values;
  const counters::FetchStatus status =
      source_->Fetch(zone.instance, counters::FetchMode::kDoNotFlush, values);
  if (status == counters::FetchStatus::kNotReady) return false;
  if (status == counters::FetchStatus::kReady) {
    // Before the zone's begin time: the server finds the zone by that query.
    counters::SendResult(id_, counter_set_, GNOMON_COUNTER_TARGET_GPU_ZONE,
                         wire_ids_[zone.begin_sequence % queries_.size()], values);
    ++stats_.counter_results_read;
  } else {
    ++stats_.counter_results_failed;
  }
  counted_.pop_front();
  free_instances_.push_back(zone.instance);
  return true;
}

uint64_t Context::TakeQuery() {
  const uint64_t sequence = head_++;
  wire_ids_[sequence % queries_.size()] = next_wire_id_++;
  return sequence;
}

bool Context::BeginZone(gnomon_source_location* location, bool counters) {
  if (!active_) return false;
  ++stats_.zones_recorded;
  // Both queries of the zone are taken now, so that its end can never find the ring full.
  if (head_ + 2 - tail_ > queries_.size()) {
    ++stats_.zones_untimed;
    return false;
  }
  const uint64_t begin_sequence = TakeQuery();
  const size_t begin = begin_sequence % queries_.size();
  const uint64_t end = TakeQuery();
  fn_->QueryCounter(queries_[begin], kGlTimestamp);
  gnomon_gpu_zone_begin(id_, wire_ids_[begin], location);
  open_zones_.push_back(end);
  uint32_t instance = 0;
  if (counters && source_ != nullptr) {
    if (counted_open_) {
      ++stats_.zones_uncounted_nested;
    } else {
      if (free_instances_.empty()) {
        instance = source_->Create(source_type_);
      } else {
        instance = free_instances_.back();
        free_instances_.pop_back();
      }
      if (instance != 0 && source_->Begin(instance)) {
        counted_.push_back({begin_sequence, instance});
        counted_open_ = true;
        ++stats_.zones_counted;
      } else if (instance != 0) {
        free_instances_.push_back(instance);
        instance = 0;
      }
    }
  }
  open_counted_.push_back(instance);
  return true;
}

void Context::EndZone() {
  if (!active_ || open_zones_.empty()) return;
  const size_t end = open_zones_.back() % queries_.size();
  open_zones_.pop_back();
  const uint32_t instance = open_counted_.back();
  open_counted_.pop_back();
  if (instance != 0) {
    source_->End(instance);
    counted_open_ = false;
  }
  fn_->QueryCounter(queries_[end], kGlTimestamp);
  gnomon_gpu_zone_end(id_, wire_ids_[end]);
}

void Context::Collect() {
  if (!active_) return;
  // An open zone's end query is taken but not yet issued: read only up to it.
  uint64_t limit = head_;
  for (uint64_t open_end : open_zones_) limit = std::min(limit, open_end);
  while (tail_ < limit) {
    const uint32_t index = uint32_t(tail_ % queries_.size());
    int32_t available = 0;
    fn_->GetQueryObjectiv(queries_[index], kGlQueryResultAvailable, &available);
    if (!available) break;  // a later collect
    if (!counted_.empty() && counted_.front().begin_sequence == tail_ && !SendZoneCounters()) break;
    uint64_t value = 0;
    fn_->GetQueryObjectui64v(queries_[index], kGlQueryResult, &value);
    gnomon_gpu_time(id_, wire_ids_[index], value & valid_mask_);
    ++stats_.timestamps_read;
    ++tail_;
  }
  if (schedule_.IsDue()) {
    Calibrate(kCalibrationTries);
    schedule_.Restart();
  }
}

}  // namespace gnomon::opengl
