// Gnomon client C++ API. Link gnomon::client.
//
//   #include <gnomon/gnomon.hpp>
//   void Update() {
//     GNOMON_ZONE("Update");            // a zone from here to the end of the scope
//     gnomon::ZoneText("level 3");      // attributes of the innermost open zone
//     ...
//     GNOMON_FRAME_MARK();              // once per frame
//   }
//
// Recording an event costs a few nanoseconds on the calling thread: no lock, no
// allocation, no system call (see client/thread_writer.h). A background thread ships
// events to a connected server. Everything in the C API (gnomon.h) is here too, and
// both can be mixed freely. Define GNOMON_DISABLE to compile every macro to nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "gnomon/gnomon.h"

#ifndef GNOMON_DISABLE
#include "gnomon/client/thread_writer.h"
#endif

namespace gnomon {

enum class Severity : uint8_t {
  kTrace = GNOMON_TRACE,
  kDebug = GNOMON_DEBUG,
  kInfo = GNOMON_INFO,
  kWarning = GNOMON_WARNING,
  kError = GNOMON_ERROR,
  kFatal = GNOMON_FATAL,
};

#ifndef GNOMON_DISABLE

namespace detail {

GNOMON_HOT uint32_t LocationId(gnomon_source_location* location) {
  const uint32_t id = std::atomic_ref<uint32_t>(location->id).load(std::memory_order_acquire);
  return GNOMON_LIKELY(id != 0) ? id : RegisterSourceLocation(location);
}

// Records a zone's begin; false when it was not recorded (the event is then counted,
// as `events`: 2 when the caller will not count the end itself).
GNOMON_HOT bool RecordZoneBegin(gnomon_source_location* location, uint64_t events = 1) {
  if (GNOMON_UNLIKELY(SkipWhileNotRecording(sizeof(protocol::ZoneBegin), events))) return false;
  const uint32_t id = LocationId(location);
  if (GNOMON_UNLIKELY(g_callstack_depth != 0))
    return RecordZoneBeginWithCallstack(id, g_callstack_depth, events);
  uint8_t* p = Reserve(sizeof(protocol::ZoneBegin), events);
  if (GNOMON_UNLIKELY(p == nullptr)) return false;
  Commit(protocol::WriteMessage(p, protocol::ZoneBegin{.srcloc_id = id, .tick = Now()}));
  return true;
}

// The same with the caller's call stack of `depth` frames (walking it costs about a
// microsecond: not walked while the thread does not record).
inline bool RecordZoneBeginCallstack(gnomon_source_location* location, uint32_t depth, uint64_t events = 1) {
  if (SkipWhileNotRecording(sizeof(protocol::ZoneBegin), events)) return false;
  return RecordZoneBeginWithCallstack(LocationId(location), depth, events);
}

GNOMON_HOT void RecordZoneEnd() {
  uint8_t* p = Reserve(sizeof(protocol::ZoneEnd));
  if (GNOMON_UNLIKELY(p == nullptr)) return;
  Commit(protocol::WriteMessage(p, protocol::ZoneEnd{.tick = Now()}));
}

// Records a fixed-size message on the calling thread (or counts it, not recorded).
template <typename M>
inline void RecordEvent(const M& m) {
  uint8_t* p = Reserve(sizeof(M));
  if (GNOMON_UNLIKELY(p == nullptr)) return;
  Commit(protocol::WriteMessage(p, m));
}

}  // namespace detail

// A zone begun here and ended by ZoneEnd(). A capture never gets half a zone: when a
// begin is not recorded (no capture yet on demand, or the buffer full), neither is its
// end, nor any zone begun inside it this way, so that every ZoneEnd() knows what it
// closes.
GNOMON_HOT void ZoneBegin(gnomon_source_location* location) {
  if (GNOMON_UNLIKELY(detail::tls_writer.unrecorded_depth != 0)) {
    ++detail::tls_writer.unrecorded_depth;
    detail::CountNotRecorded();
  } else if (GNOMON_UNLIKELY(!detail::RecordZoneBegin(location))) {
    ++detail::tls_writer.unrecorded_depth;
  }
}

GNOMON_HOT void ZoneEnd() {
  if (GNOMON_UNLIKELY(detail::tls_writer.unrecorded_depth != 0)) {
    --detail::tls_writer.unrecorded_depth;
    detail::CountNotRecorded();
    return;
  }
  detail::RecordZoneEnd();
}

// Closes the zone it opened when it goes out of scope. It remembers whether its begin
// was recorded, so its end is recorded exactly then, and zones inside it are recorded
// as soon as the program records again (a capture connected, a chunk came back).
class ScopedZone {
 public:
  // A begin not recorded is counted with its end, at once.
  GNOMON_HOT explicit ScopedZone(gnomon_source_location* location)
      : recorded_(detail::RecordZoneBegin(location, 2)) {}
  // The same with the call stack of `callstack_depth` frames (GNOMON_ZONE_CALLSTACK).
  ScopedZone(gnomon_source_location* location, uint32_t callstack_depth)
      : recorded_(detail::RecordZoneBeginCallstack(location, callstack_depth, 2)) {}
  GNOMON_HOT ~ScopedZone() {
    if (GNOMON_LIKELY(recorded_)) detail::RecordZoneEnd();
  }
  ScopedZone(const ScopedZone&) = delete;
  ScopedZone& operator=(const ScopedZone&) = delete;

 private:
  bool recorded_;
};

// A mutex whose waits, holds and releases are recorded: a lane per lock shows who held
// it and who waited, and the report counts its contention.
//
//   gnomon::Lockable<std::mutex> queue_mutex{"job queue"};
//   std::lock_guard lock(queue_mutex);               // or unique_lock, scoped_lock
//   gnomon::Lockable<std::shared_mutex> table{"table"};
//   std::shared_lock reader(table);                  // a reader's hold
//
// Mutex is any standard mutex (std::mutex, std::recursive_mutex, std::shared_mutex,
// ...). An acquisition first tries the mutex: when that succeeds (uncontended) it
// records one event, the hold; otherwise the wait, then the hold. Each lock made is a
// lock of its own, whatever its name. Unlike Mutex, it is not constexpr-constructible:
// the name is registered when it is made.
template <typename Mutex>
class Lockable {
 public:
  explicit Lockable(const char* name) : id_(gnomon_lock_create(name)) {}
  ~Lockable() { gnomon_lock_destroy(id_); }
  Lockable(const Lockable&) = delete;
  Lockable& operator=(const Lockable&) = delete;

  void lock() {
    if (!mutex_.try_lock()) {
      detail::RecordEvent(protocol::LockWait{.lock_id = id_, .tick = detail::Now()});
      mutex_.lock();
    }
    Obtained(0);
  }
  bool try_lock() {
    if (!mutex_.try_lock()) return false;
    Obtained(0);
    return true;
  }
  void unlock() {
    Released();
    mutex_.unlock();
  }

  void lock_shared() requires requires(Mutex& m) { m.lock_shared(); }
  {
    if (!mutex_.try_lock_shared()) {
      detail::RecordEvent(protocol::LockWait{.lock_id = id_, .tick = detail::Now()});
      mutex_.lock_shared();
    }
    Obtained(protocol::kLockShared);
  }
  bool try_lock_shared() requires requires(Mutex& m) { m.try_lock_shared(); }
  {
    if (!mutex_.try_lock_shared()) return false;
    Obtained(protocol::kLockShared);
    return true;
  }
  void unlock_shared() requires requires(Mutex& m) { m.unlock_shared(); }
  {
    Released();
    mutex_.unlock_shared();
  }

  Mutex& mutex() { return mutex_; }
  uint32_t id() const { return id_; }

 private:
  void Obtained(uint8_t flags) {
    detail::RecordEvent(protocol::LockObtain{.lock_id = id_, .flags = flags, .tick = detail::Now()});
  }
  // Before the mutex is let go: the next holder's obtain comes after this release.
  void Released() { detail::RecordEvent(protocol::LockRelease{.lock_id = id_, .tick = detail::Now()}); }

  Mutex mutex_;
  uint32_t id_;
};

inline void ZoneName(std::string_view name) { gnomon_zone_name(name.data(), name.size()); }
inline void ZoneText(std::string_view text) { gnomon_zone_text(text.data(), text.size()); }
inline void ZoneColor(uint32_t rgb) { gnomon_zone_color(rgb); }
inline void ZoneValue(uint64_t value) { gnomon_zone_value(value); }

inline void FrameMark(uint32_t name_id = 0) { gnomon_frame_mark(name_id); }
inline uint32_t FrameName(const char* name) { return gnomon_frame_name(name); }
inline void FrameBegin(uint32_t name_id) { gnomon_frame_begin(name_id); }
inline void FrameEnd(uint32_t name_id) { gnomon_frame_end(name_id); }
inline void SetThreadName(const char* name) { gnomon_set_thread_name(name); }
inline void Message(std::string_view text, Severity severity = Severity::kInfo) {
  gnomon_message(text.data(), text.size(), static_cast<gnomon_severity>(severity));
}
inline uint32_t PlotId(const char* name) { return gnomon_plot_id(name); }
inline void Plot(uint32_t plot_id, double value) { gnomon_plot(plot_id, value); }
inline uint64_t Now() { return gnomon_now(); }
// Writes what the buffer holds (under the ring policy: the last seconds) to a trace file
// (see gnomon_save_recording); false, with the reason on stderr, when it cannot.
inline bool SaveRecording(const char* path = nullptr) { return gnomon_save_recording(path) == 0; }
// Asks for a save to the default path and returns at once; safe in a signal handler.
inline void RequestSave() { gnomon_request_save(); }

// ---- GPU (see gnomon.h for the model; the collectors in vulkan.hpp/opengl.hpp use it) ----
using GpuContextInfo = gnomon_gpu_context_info;
using GpuCalibrationData = gnomon_gpu_calibration_data;

inline uint32_t GpuContextCreate(const GpuContextInfo& info) { return gnomon_gpu_context_create(&info); }
inline void GpuContextName(uint32_t context, std::string_view name) {
  gnomon_gpu_context_name(context, name.data(), name.size());
}
inline void GpuZoneBegin(uint32_t context, uint32_t query_id, gnomon_source_location* location) {
  gnomon_gpu_zone_begin(context, query_id, location);
}
inline void GpuZoneEnd(uint32_t context, uint32_t query_id) { gnomon_gpu_zone_end(context, query_id); }
inline void GpuTime(uint32_t context, uint32_t query_id, uint64_t gpu_ticks) {
  gnomon_gpu_time(context, query_id, gpu_ticks);
}
inline void GpuCalibration(const GpuCalibrationData& data) { gnomon_gpu_calibration(&data); }
inline void GpuResync(uint32_t context, uint64_t gpu_ticks, uint64_t cpu_time, gnomon_cpu_time_domain domain,
                      uint32_t uncertainty_ns) {
  gnomon_gpu_resync(context, gpu_ticks, cpu_time, domain, uncertainty_ns);
}
inline void GpuTimeBracket(uint32_t context, uint64_t gpu_ticks, uint64_t cpu_not_before,
                           uint64_t cpu_not_after, gnomon_cpu_time_domain domain) {
  gnomon_gpu_time_bracket(context, gpu_ticks, cpu_not_before, cpu_not_after, domain);
}
inline uint64_t CpuTimeFromHostNs(gnomon_cpu_time_domain domain, int64_t host_ns) {
  return gnomon_cpu_time_from_host_ns(domain, host_ns);
}

// One declaration, so that `for (...) GNOMON_ZONE("x");` times each iteration. The
// source location is a constant-initialized static (no guard, no run-time cost), made in
// a GCC/Clang statement expression so that __func__ names the enclosing function.
#define GNOMON_ZONE_C(zone_name, rgb) \
  ::gnomon::ScopedZone GNOMON_CONCAT(gnomon_zone_, __LINE__)(GNOMON_STATIC_LOCATION(zone_name, rgb))
#define GNOMON_ZONE(zone_name) GNOMON_ZONE_C(zone_name, GNOMON_NO_COLOR)
// A zone with the call stack of `depth` frames (at most 64) that led to it.
#define GNOMON_ZONE_CALLSTACK(zone_name, depth)               \
  ::gnomon::ScopedZone GNOMON_CONCAT(gnomon_zone_, __LINE__)( \
      GNOMON_STATIC_LOCATION(zone_name, GNOMON_NO_COLOR), uint32_t(depth))
#define GNOMON_FUNCTION() GNOMON_ZONE_C(nullptr, GNOMON_NO_COLOR)
#define GNOMON_FRAME_MARK_NAMED(frame_name)                                   \
  do {                                                                        \
    static const uint32_t gnomon_frame_id_ = ::gnomon::FrameName(frame_name); \
    ::gnomon::FrameMark(gnomon_frame_id_);                                    \
  } while (0)
#define GNOMON_PLOT(plot_name, value)                                    \
  do {                                                                   \
    static const uint32_t gnomon_plot_id_ = ::gnomon::PlotId(plot_name); \
    ::gnomon::Plot(gnomon_plot_id_, (value));                            \
  } while (0)

#else  // GNOMON_DISABLE

class ScopedZone {
 public:
  explicit ScopedZone(gnomon_source_location*) {}
  ScopedZone(gnomon_source_location*, uint32_t) {}
};
// The same interface, nothing recorded.
template <typename Mutex>
class Lockable {
 public:
  explicit Lockable(const char*) {}
  Lockable(const Lockable&) = delete;
  Lockable& operator=(const Lockable&) = delete;
  void lock() { mutex_.lock(); }
  bool try_lock() { return mutex_.try_lock(); }
  void unlock() { mutex_.unlock(); }
  void lock_shared() requires requires(Mutex& m) { m.lock_shared(); }
  { mutex_.lock_shared(); }
  bool try_lock_shared() requires requires(Mutex& m) { m.try_lock_shared(); }
  { return mutex_.try_lock_shared(); }
  void unlock_shared() requires requires(Mutex& m) { m.unlock_shared(); }
  { mutex_.unlock_shared(); }
  Mutex& mutex() { return mutex_; }
  uint32_t id() const { return 0; }

 private:
  Mutex mutex_;
};
inline void ZoneBegin(gnomon_source_location*) {}
inline void ZoneEnd() {}
inline void ZoneName(std::string_view) {}
inline void ZoneText(std::string_view) {}
inline void ZoneColor(uint32_t) {}
inline void ZoneValue(uint64_t) {}
inline void FrameMark(uint32_t = 0) {}
inline uint32_t FrameName(const char*) { return 1; }
inline void FrameBegin(uint32_t) {}
inline void FrameEnd(uint32_t) {}
inline void SetThreadName(const char*) {}
inline void Message(std::string_view, Severity = Severity::kInfo) {}
inline uint32_t PlotId(const char*) { return 1; }
inline void Plot(uint32_t, double) {}
inline uint64_t Now() { return 0; }
inline bool SaveRecording(const char* = nullptr) { return false; }
inline void RequestSave() {}
using GpuContextInfo = gnomon_gpu_context_info;
using GpuCalibrationData = gnomon_gpu_calibration_data;
inline uint32_t GpuContextCreate(const GpuContextInfo&) { return 1; }
inline void GpuContextName(uint32_t, std::string_view) {}
inline void GpuZoneBegin(uint32_t, uint32_t, gnomon_source_location*) {}
inline void GpuZoneEnd(uint32_t, uint32_t) {}
inline void GpuTime(uint32_t, uint32_t, uint64_t) {}
inline void GpuCalibration(const GpuCalibrationData&) {}
inline void GpuResync(uint32_t, uint64_t, uint64_t, gnomon_cpu_time_domain, uint32_t) {}
inline void GpuTimeBracket(uint32_t, uint64_t, uint64_t, uint64_t, gnomon_cpu_time_domain) {}
inline uint64_t CpuTimeFromHostNs(gnomon_cpu_time_domain, int64_t) { return 0; }

#define GNOMON_ZONE_C(zone_name, rgb) static_cast<void>(0)
#define GNOMON_ZONE(zone_name) static_cast<void>(0)
#define GNOMON_ZONE_CALLSTACK(zone_name, depth) static_cast<void>(0)
#define GNOMON_FUNCTION() static_cast<void>(0)
#define GNOMON_FRAME_MARK_NAMED(frame_name) static_cast<void>(0)
#define GNOMON_PLOT(plot_name, value) static_cast<void>(0)

#endif  // GNOMON_DISABLE

}  // namespace gnomon
