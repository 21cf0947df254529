// Gnomon's OpenGL collector: GPU zones timed by GL_TIMESTAMP queries, placed on the CPU
// timeline by bracketing glGetInteger64v(GL_TIMESTAMP) between two CPU clock reads.
// Link gnomon::opengl. Needs OpenGL 3.3 (or ARB_timer_query); includes no GL header.
//
//   auto gpu = gnomon::opengl::Context::Create(glfwGetProcAddress);  // context current
//   per frame:
//     { GNOMON_GL_ZONE(*gpu, "Shadows"); draw(); }
//     gpu->Collect();                 // reads back finished queries; never waits
//
// The queries form a ring. Collect() reads them in issue order and stops at the first
// whose GL_QUERY_RESULT_AVAILABLE is false: a result not ready stays for a later
// collect. A zone that would need a query still in flight goes untimed and is counted
// (stats().zones_untimed); live queries are never reused. Calibration takes the
// tightest of five brackets at creation and one every recalibration_period, in
// Collect(); the bracket's width is the pair's uncertainty. Inert (creates nothing) when
// the context has no timestamp bits or lacks the functions.
//
// Counters: AttachCounters(source) with a counter source of this context (below) makes
// zones opened with GNOMON_GL_ZONE_COUNTERS also run an instance of the source's query
// type. Collect() fetches it without flushing or waiting, in ring order, just before the
// zone's begin time: a result not ready holds the ring for a later collect, as a time
// does. A counted zone inside another counted zone gets no counters (GL allows one
// active query per target), counted in stats().zones_uncounted_nested.
//
// Threads: the thread whose GL context is current, as for any GL call.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "gnomon/client/gpu_collector.h"
#include "gnomon/gnomon.h"
#include "gnomon/gpu_counters.hpp"

namespace gnomon::opengl {

using GetProcAddress = void* (*)(const char* name);

// Counter sources of the current GL context (see counters.hpp). Each is unavailable,
// and says why, when the driver lacks the extension.
//  - ARB_pipeline_statistics_query: one query type, "pipeline statistics", of eleven
//    counters (vertices and primitives submitted, shader invocations per stage,
//    clipping); Mesa's llvmpipe has it.
//  - GL_INTEL_performance_query: the driver's query types and counters, as it lists them
//    (Intel GPUs only).
std::unique_ptr<counters::Source> CreatePipelineStatisticsSource(GetProcAddress loader);
std::unique_ptr<counters::Source> CreateIntelPerformanceQuerySource(GetProcAddress loader);
template <typename Loader>
std::unique_ptr<counters::Source> CreatePipelineStatisticsSource(Loader loader) {
  return CreatePipelineStatisticsSource(reinterpret_cast<GetProcAddress>(loader));
}
template <typename Loader>
std::unique_ptr<counters::Source> CreateIntelPerformanceQuerySource(Loader loader) {
  return CreateIntelPerformanceQuerySource(reinterpret_cast<GetProcAddress>(loader));
}

struct ContextOptions {
  const char* name = nullptr;  // shown for the context; default the GL renderer string
  uint32_t queries = 4096;     // ring size; two per zone
  std::chrono::milliseconds recalibration_period{500};
  bool enabled = true;  // false: an inert context
};

// The counts of client::GpuZoneStats (zones_untimed: the ring was full of queries in
// flight), and the counter source's failures.
struct ContextStats : client::GpuZoneStats {
  uint64_t counter_results_failed = 0;  // the source could not read an instance
};

class Context {
 public:
  // GetProcAddress has the shape of glfwGetProcAddress / eglGetProcAddress.
  template <typename Loader>
  static std::unique_ptr<Context> Create(Loader loader, const ContextOptions& options = {}) {
    return CreateWith(reinterpret_cast<GetProcAddress>(loader), options);
  }
  static std::unique_ptr<Context> CreateWith(GetProcAddress loader, const ContextOptions& options);
  ~Context();  // the context must be current
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  bool is_active() const { return active_; }
  uint32_t id() const { return id_; }
  const ContextStats& stats() const { return stats_; }

  // Zones opened with counters = true run an instance of source.query_types()[type]; the
  // source must outlive the context. Describes the set to the server; false when the
  // context is inert or the source unavailable.
  bool AttachCounters(counters::Source& source, size_t type = 0);
  uint32_t counter_set() const { return counter_set_; }

  bool BeginZone(gnomon_source_location* location, bool counters = false);
  void EndZone();
  // Reads back finished queries in order and recalibrates when due. Never waits.
  void Collect();

 private:
  struct Functions;
  Context() = default;
  void Calibrate(int tries);
  uint64_t TakeQuery();  // the next ring entry's sequence number
  // Fetches the oldest counted zone's result and sends it; false when not ready.
  bool SendZoneCounters();

  std::unique_ptr<Functions> fn_;
  bool active_ = false;
  uint32_t id_ = 0;
  std::vector<uint32_t> queries_;   // GL names
  std::vector<uint32_t> wire_ids_;  // per ring entry
  uint64_t head_ = 0;               // sequence number of the next entry to take
  uint64_t tail_ = 0;               // oldest entry not read back; entry = sequence % size
  uint32_t next_wire_id_ = 1;
  std::vector<uint64_t> open_zones_;  // sequence number of each open zone's end query
  struct CountedZone {
    uint64_t begin_sequence = 0;
    uint32_t instance = 0;
  };
  std::deque<CountedZone> counted_;     // by begin sequence
  std::vector<uint32_t> open_counted_;  // per open zone: its instance, or 0
  std::vector<uint32_t> free_instances_;
  counters::Source* source_ = nullptr;
  size_t source_type_ = 0;
  uint32_t counter_set_ = 0;
  bool counted_open_ = false;
  uint64_t valid_mask_ = ~uint64_t{0};
  client::CalibrationChannel calibration_;
  client::CalibrationSchedule schedule_;
  ContextStats stats_;
};

// Times the GL commands issued during its lifetime:
// ScopedZone(context, location, counters = false).
using ScopedZone = client::ScopedGpuZone<Context>;

}  // namespace gnomon::opengl

#ifndef GNOMON_DISABLE
#define GNOMON_GL_ZONE(context, zone_name)                               \
  ::gnomon::opengl::ScopedZone GNOMON_CONCAT(gnomon_gl_zone_, __LINE__)( \
      (context), GNOMON_STATIC_LOCATION(zone_name, GNOMON_NO_COLOR))
// The same, with the attached counter source measuring the zone.
#define GNOMON_GL_ZONE_COUNTERS(context, zone_name)                      \
  ::gnomon::opengl::ScopedZone GNOMON_CONCAT(gnomon_gl_zone_, __LINE__)( \
      (context), GNOMON_STATIC_LOCATION(zone_name, GNOMON_NO_COLOR), true)
#else
#define GNOMON_GL_ZONE(context, zone_name) static_cast<void>(0)
#define GNOMON_GL_ZONE_COUNTERS(context, zone_name) static_cast<void>(0)
#endif
