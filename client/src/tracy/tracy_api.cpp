// Tracy's C interface (tracy/TracyC.h) on Gnomon's, and the helpers tracy/Tracy.hpp
// calls out of line.
//
// Tracy identifies source locations, plot names and frame names by pointer: the caller
// keeps them alive and passes the same pointer each time. Gnomon registers each once,
// and finds it again through a small direct-mapped cache per thread (no lock on a hit);
// a miss takes a lock. Locations made at run time (___tracy_alloc_srcloc, transient
// zones) are interned by content, so that a loop making one per call registers one.
#include <time.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gnomon/gnomon.hpp"
#include "tracy/TracyC.h"

namespace {

using gnomon::detail::RecordEvent;
namespace protocol = gnomon::protocol;

constexpr uint32_t ToGnomonColor(uint32_t rgb) { return rgb == 0 ? GNOMON_NO_COLOR : (rgb & 0xFFFFFFu); }

// A pointer-keyed cache of one thread: 256 slots, the pointer's bits as the index.
template <typename Value>
class PointerCache {
 public:
  Value* Find(const void* key) {
    Slot& s = slots_[Index(key)];
    return s.key == key ? &s.value : nullptr;
  }
  void Put(const void* key, Value value) { slots_[Index(key)] = {key, value}; }

 private:
  struct Slot {
    const void* key = nullptr;
    Value value{};
  };
  static size_t Index(const void* key) {
    const auto p = reinterpret_cast<uintptr_t>(key);
    return (p ^ (p >> 8) ^ (p >> 16)) & 255;
  }
  std::array<Slot, 256> slots_{};
};

// Every location Tracy's callers named, by the address of their structure, and every
// location made at run time, by content. Never freed: locations live as long as the
// program, as in Tracy.
struct Locations {
  std::mutex mutex;
  std::unordered_map<const void*, gnomon_source_location*> by_pointer;
  struct Owned {
    std::string name, function, file;
    gnomon_source_location location{};
  };
  std::deque<Owned> owned;
  std::unordered_map<std::string, gnomon_source_location*> by_content;
};

Locations& GetLocations() {
  static Locations* locations = new Locations;  // outlives threads that exit late
  return *locations;
}

thread_local PointerCache<gnomon_source_location*> tls_locations;
thread_local PointerCache<uint32_t> tls_plot_ids;
thread_local PointerCache<uint32_t> tls_frame_ids;

gnomon_source_location* LocationOf(const ___tracy_source_location_data* srcloc) {
  if (srcloc == nullptr) return nullptr;
  if (gnomon_source_location** hit = tls_locations.Find(srcloc)) return *hit;
  Locations& all = GetLocations();
  gnomon_source_location* location;
  {
    std::lock_guard lock(all.mutex);
    auto [it, inserted] = all.by_pointer.try_emplace(srcloc, nullptr);
    if (inserted) {
      Locations::Owned& owned = all.owned.emplace_back();
      owned.location = {srcloc->name,
                        srcloc->function != nullptr ? srcloc->function : "?",
                        srcloc->file != nullptr ? srcloc->file : "?",
                        srcloc->line,
                        ToGnomonColor(srcloc->color),
                        0};
      it->second = &owned.location;
    }
    location = it->second;
  }
  tls_locations.Put(srcloc, location);
  return location;
}

// Locations made at run time, by content: a per-thread cache of 256 by a hash of the
// content (checked field by field on a hit, no allocation), then the shared table.
struct TransientKey {
  uint32_t line;
  uint32_t color;
  std::string_view file, function, name;
  bool has_name;
  uint64_t Hash() const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    auto mix = [&h](std::string_view text) {
      for (const char c : text) h = (h ^ uint8_t(c)) * 1099511628211ull;
      h = (h ^ 0xFF) * 1099511628211ull;
    };
    mix(file);
    mix(function);
    mix(name);
    return h ^ (uint64_t(line) << 32 | color) ^ (has_name ? 1 : 0);
  }
  bool Matches(const gnomon_source_location& l) const {
    return l.line == line && l.color == ToGnomonColor(color) && (l.name != nullptr) == has_name &&
           l.file == file && l.function == function && (!has_name || l.name == name);
  }
};

struct TransientCacheSlot {
  uint64_t hash = 0;
  gnomon_source_location* location = nullptr;
};
thread_local std::array<TransientCacheSlot, 256> tls_transient{};

gnomon_source_location* InternLocation(uint32_t line, const char* source, size_t source_size,
                                       const char* function, size_t function_size, const char* name,
                                       size_t name_size, uint32_t color) {
  const TransientKey k{line,
                       color,
                       {source != nullptr ? source : "", source != nullptr ? source_size : 0},
                       {function != nullptr ? function : "", function != nullptr ? function_size : 0},
                       {name != nullptr ? name : "", name != nullptr ? name_size : 0},
                       name != nullptr};
  const uint64_t hash = k.Hash();
  TransientCacheSlot& slot = tls_transient[hash & 255];
  if (slot.location != nullptr && slot.hash == hash && k.Matches(*slot.location)) return slot.location;
  std::string key = std::to_string(hash);
  key.append(1, '\0').append(k.file).append(1, '\0').append(k.function).append(1, '\0').append(k.name);
  key.append(std::to_string(line))
      .append(1, '/')
      .append(std::to_string(color))
      .append(1, k.has_name ? '1' : '0');
  Locations& all = GetLocations();
  std::lock_guard lock(all.mutex);
  auto [it, inserted] = all.by_content.try_emplace(std::move(key), nullptr);
  if (inserted) {
    Locations::Owned& owned = all.owned.emplace_back();
    owned.name = k.name;
    owned.function = k.function;
    owned.file = k.file;
    owned.location = {k.has_name ? owned.name.c_str() : nullptr,
                      owned.function.c_str(),
                      owned.file.c_str(),
                      line,
                      ToGnomonColor(color),
                      0};
    it->second = &owned.location;
  }
  slot = {hash, it->second};
  return it->second;
}

uint32_t CachedId(PointerCache<uint32_t>& cache, const char* name, uint32_t (*make)(const char*)) {
  if (uint32_t* hit = cache.Find(name)) return *hit;
  const uint32_t id = make(name);
  cache.Put(name, id);
  return id;
}

TracyCZoneCtx BeginZone(gnomon_source_location* location, int depth, int active) {
  if (!active || location == nullptr) return {0, 0};
  if (depth > 0) {
    gnomon_zone_begin_callstack(location, uint32_t(depth));
  } else {
    gnomon_zone_begin(location);
  }
  return {1, 1};
}

// ---- GPU ----
// Tracy's callers number their contexts 0..255; each becomes a Gnomon context.
std::array<std::atomic<uint32_t>, 256> g_gpu_contexts{};

// The CPU half of a pair read by ___tracy_emit_gpu_calibration itself, after the
// caller read the GPU's: its lag is not known. A bound that holds for a caller that
// reads a timestamp back and calls at once.
constexpr uint32_t kCallTimePairUncertaintyNs = 1'000'000;

gnomon_cpu_time_domain DomainOf(uint8_t clock) {
  switch (clock) {
    case ___gnomon_tracy_cpu_clock_monotonic_raw:
      return GNOMON_CPU_TIME_MONOTONIC_RAW;
    case ___gnomon_tracy_cpu_clock_monotonic:
      return GNOMON_CPU_TIME_MONOTONIC;
    default:
      return GNOMON_CPU_TIME_TICKS;
  }
}

gnomon_gpu_api ApiOf(uint8_t tracy_type) {
  switch (tracy_type) {  // Tracy's GpuContextType
    case 1:
      return GNOMON_GPU_API_OPENGL;
    case 2:
      return GNOMON_GPU_API_VULKAN;
    case 8:
      return GNOMON_GPU_API_CUDA;
    default:
      return GNOMON_GPU_API_UNKNOWN;
  }
}

void NewGpuContext(uint8_t context, int64_t gpu_time, float period, uint8_t flags, uint8_t type,
                   uint64_t cpu_time, gnomon_cpu_time_domain domain, uint32_t uncertainty_ns) {
  gnomon_gpu_context_info info{};
  info.api = ApiOf(type);
  char name[32];
  std::snprintf(name, sizeof(name), "GPU context %u", unsigned(context));
  info.device_name = name;
  gnomon_gpu_period_from_float(period > 0 ? double(period) : 1.0, &info.period_numerator_ns,
                               &info.period_denominator);
  info.valid_bits = 64;
  info.flags = (flags & 1u) != 0 ? GNOMON_GPU_CONTEXT_CALIBRATED : GNOMON_GPU_CONTEXT_FALLBACK_CALIBRATION;
  info.gpu_ticks = uint64_t(gpu_time);
  info.cpu_time = cpu_time;
  info.cpu_domain = domain;
  info.uncertainty_ns = uncertainty_ns;
  g_gpu_contexts[context].store(gnomon_gpu_context_create(&info), std::memory_order_release);
}

uint32_t GpuContext(uint8_t context) { return g_gpu_contexts[context].load(std::memory_order_acquire); }

// A zone whose location is missing still opens, so that its end closes it and not an
// outer zone.
gnomon_source_location g_unknown_location{"(unknown)", "?", "?", 0, GNOMON_NO_COLOR, 0};

void GpuZoneBegin(uint8_t context, uint16_t query, gnomon_source_location* location) {
  if (const uint32_t id = GpuContext(context)) {
    gnomon_gpu_zone_begin(id, query, location != nullptr ? location : &g_unknown_location);
  }
}

gnomon_source_location* AllocatedLocation(uint64_t srcloc) {
  return reinterpret_cast<gnomon_source_location*>(static_cast<uintptr_t>(srcloc));
}
gnomon_source_location* StaticLocation(uint64_t srcloc) {
  return LocationOf(reinterpret_cast<const ___tracy_source_location_data*>(static_cast<uintptr_t>(srcloc)));
}

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

// ---- locks ----
// Made at the first event, so that a custom name given right after the announce names
// it. Tracy's before-lock cannot tell whether the lock will block: an acquisition that
// took 1 µs or more is recorded as a wait (from the before-lock) and a hold.
struct __tracy_lockable_context_data {
  const ___tracy_source_location_data* srcloc = nullptr;
  std::mutex mutex;
  std::string name;
  std::atomic<uint32_t> id{0};
};

namespace {

constexpr int64_t kContendedNs = 1000;
thread_local uint64_t tls_wait_tick = 0;
thread_local int64_t tls_wait_ns = 0;

uint32_t LockId(__tracy_lockable_context_data* lock) {
  uint32_t id = lock->id.load(std::memory_order_acquire);
  if (id != 0) return id;
  std::lock_guard guard(lock->mutex);
  id = lock->id.load(std::memory_order_relaxed);
  if (id == 0) {
    if (lock->name.empty()) {
      const ___tracy_source_location_data* s = lock->srcloc;
      lock->name = s == nullptr         ? "lock"
                   : s->name != nullptr ? s->name
                                        : std::string(s->function != nullptr ? s->function : "lock") + ":" +
                                              std::to_string(s->line);
    }
    id = gnomon_lock_create(lock->name.c_str());
    lock->id.store(id, std::memory_order_release);
  }
  return id;
}

}  // namespace

namespace tracy {

extern "C" gnomon_source_location* ___gnomon_tracy_transient_location(uint32_t line, const char* source,
                                                                      size_t source_size,
                                                                      const char* function,
                                                                      size_t function_size, const char* name,
                                                                      size_t name_size, uint32_t color) {
  return InternLocation(line, source, source_size, function, function_size, name, name_size, color);
}
extern "C" uint32_t ___gnomon_tracy_plot_id(const char* name) {
  return CachedId(tls_plot_ids, name, gnomon_plot_id);
}
extern "C" uint32_t ___gnomon_tracy_frame_id(const char* name) {
  return name == nullptr ? 0 : CachedId(tls_frame_ids, name, gnomon_frame_name);
}

}  // namespace tracy

extern "C" {

void ___tracy_set_thread_name(const char* name) { gnomon_set_thread_name(name); }

uint64_t ___tracy_alloc_srcloc(uint32_t line, const char* source, size_t sourceSz, const char* function,
                               size_t functionSz, uint32_t color) {
  return reinterpret_cast<uintptr_t>(
      InternLocation(line, source, sourceSz, function, functionSz, nullptr, 0, color));
}
uint64_t ___tracy_alloc_srcloc_name(uint32_t line, const char* source, size_t sourceSz, const char* function,
                                    size_t functionSz, const char* name, size_t nameSz, uint32_t color) {
  return reinterpret_cast<uintptr_t>(InternLocation(line, source, sourceSz, function, functionSz, name,
                                                    name != nullptr ? nameSz : 0, color));
}

TracyCZoneCtx ___tracy_emit_zone_begin(const ___tracy_source_location_data* srcloc, int active) {
  return BeginZone(active ? LocationOf(srcloc) : nullptr, 0, active);
}
TracyCZoneCtx ___tracy_emit_zone_begin_callstack(const ___tracy_source_location_data* srcloc, int depth,
                                                 int active) {
  return BeginZone(active ? LocationOf(srcloc) : nullptr, depth, active);
}
TracyCZoneCtx ___tracy_emit_zone_begin_alloc(uint64_t srcloc, int active) {
  return BeginZone(AllocatedLocation(srcloc), 0, active);
}
TracyCZoneCtx ___tracy_emit_zone_begin_alloc_callstack(uint64_t srcloc, int depth, int active) {
  return BeginZone(AllocatedLocation(srcloc), depth, active);
}
void ___tracy_emit_zone_end(TracyCZoneCtx ctx) {
  if (ctx.active) gnomon_zone_end();
}
void ___tracy_emit_zone_text(TracyCZoneCtx ctx, const char* txt, size_t size) {
  if (ctx.active && txt != nullptr) gnomon_zone_text(txt, size);
}
void ___tracy_emit_zone_name(TracyCZoneCtx ctx, const char* txt, size_t size) {
  if (ctx.active && txt != nullptr) gnomon_zone_name(txt, size);
}
void ___tracy_emit_zone_color(TracyCZoneCtx ctx, uint32_t color) {
  if (ctx.active) gnomon_zone_color(ToGnomonColor(color));
}
void ___tracy_emit_zone_value(TracyCZoneCtx ctx, uint64_t value) {
  if (ctx.active) gnomon_zone_value(value);
}

// ---- GPU ----
void ___tracy_emit_gpu_zone_begin(const ___tracy_gpu_zone_begin_data data) {
  GpuZoneBegin(data.context, data.queryId, StaticLocation(data.srcloc));
}
void ___tracy_emit_gpu_zone_begin_callstack(const ___tracy_gpu_zone_begin_callstack_data data) {
  GpuZoneBegin(data.context, data.queryId, StaticLocation(data.srcloc));
}
void ___tracy_emit_gpu_zone_begin_alloc(const ___tracy_gpu_zone_begin_data data) {
  GpuZoneBegin(data.context, data.queryId, AllocatedLocation(data.srcloc));
}
void ___tracy_emit_gpu_zone_begin_alloc_callstack(const ___tracy_gpu_zone_begin_callstack_data data) {
  GpuZoneBegin(data.context, data.queryId, AllocatedLocation(data.srcloc));
}
void ___tracy_emit_gpu_zone_end(const ___tracy_gpu_zone_end_data data) {
  if (const uint32_t id = GpuContext(data.context)) gnomon_gpu_zone_end(id, data.queryId);
}
void ___tracy_emit_gpu_time(const ___tracy_gpu_time_data data) {
  if (const uint32_t id = GpuContext(data.context)) gnomon_gpu_time(id, data.queryId, uint64_t(data.gpuTime));
}
void ___tracy_emit_gpu_new_context(const ___tracy_gpu_new_context_data data) {
  NewGpuContext(data.context, data.gpuTime, data.period, data.flags, data.type, gnomon_now(),
                GNOMON_CPU_TIME_TICKS, kCallTimePairUncertaintyNs);
}
void ___tracy_emit_gpu_new_context_cpu_time(const ___tracy_gpu_new_context_cpu_time_data data) {
  NewGpuContext(data.context, data.gpuTime, data.period, data.flags, data.type, uint64_t(data.cpuTime),
                DomainOf(data.cpuClock), data.deviation);
}
void ___tracy_emit_gpu_context_name(const ___tracy_gpu_context_name_data data) {
  const uint32_t id = GpuContext(data.context);
  if (id != 0 && data.name != nullptr) gnomon_gpu_context_name(id, data.name, data.len);
}
void ___tracy_emit_gpu_calibration(const ___tracy_gpu_calibration_data data) {
  const uint32_t id = GpuContext(data.context);
  if (id == 0) return;
  gnomon_gpu_calibration_data c{};
  c.gpu_ticks = uint64_t(data.gpuTime);
  c.cpu_time = gnomon_now();
  c.cpu_delta_ns = data.cpuDelta;
  c.uncertainty_ns = kCallTimePairUncertaintyNs;
  c.context = id;
  c.cpu_domain = GNOMON_CPU_TIME_TICKS;
  gnomon_gpu_calibration(&c);
}
void ___tracy_emit_gpu_calibration_cpu_time(const ___tracy_gpu_calibration_cpu_time_data data) {
  const uint32_t id = GpuContext(data.context);
  if (id == 0) return;
  gnomon_gpu_calibration_data c{};
  c.gpu_ticks = uint64_t(data.gpuTime);
  c.cpu_time = uint64_t(data.cpuTime);
  c.cpu_delta_ns = data.cpuDelta;
  c.uncertainty_ns = data.deviation;
  c.context = id;
  c.cpu_domain = DomainOf(data.cpuClock);
  gnomon_gpu_calibration(&c);
}
void ___tracy_emit_gpu_time_sync(const ___tracy_gpu_time_sync_data data) {
  if (const uint32_t id = GpuContext(data.context)) {
    gnomon_gpu_resync(id, uint64_t(data.gpuTime), gnomon_now(), GNOMON_CPU_TIME_TICKS,
                      kCallTimePairUncertaintyNs);
  }
}

void ___tracy_emit_gpu_zone_begin_serial(const ___tracy_gpu_zone_begin_data data) {
  ___tracy_emit_gpu_zone_begin(data);
}
void ___tracy_emit_gpu_zone_begin_callstack_serial(const ___tracy_gpu_zone_begin_callstack_data data) {
  ___tracy_emit_gpu_zone_begin_callstack(data);
}
void ___tracy_emit_gpu_zone_begin_alloc_serial(const ___tracy_gpu_zone_begin_data data) {
  ___tracy_emit_gpu_zone_begin_alloc(data);
}
void ___tracy_emit_gpu_zone_begin_alloc_callstack_serial(const ___tracy_gpu_zone_begin_callstack_data data) {
  ___tracy_emit_gpu_zone_begin_alloc_callstack(data);
}
void ___tracy_emit_gpu_zone_end_serial(const ___tracy_gpu_zone_end_data data) {
  ___tracy_emit_gpu_zone_end(data);
}
void ___tracy_emit_gpu_time_serial(const ___tracy_gpu_time_data data) { ___tracy_emit_gpu_time(data); }
void ___tracy_emit_gpu_new_context_serial(const ___tracy_gpu_new_context_data data) {
  ___tracy_emit_gpu_new_context(data);
}
void ___tracy_emit_gpu_context_name_serial(const ___tracy_gpu_context_name_data data) {
  ___tracy_emit_gpu_context_name(data);
}
void ___tracy_emit_gpu_calibration_serial(const ___tracy_gpu_calibration_data data) {
  ___tracy_emit_gpu_calibration(data);
}
void ___tracy_emit_gpu_time_sync_serial(const ___tracy_gpu_time_sync_data data) {
  ___tracy_emit_gpu_time_sync(data);
}

// ---- the profiler ----
int ___tracy_connected(void) { return gnomon_is_connected(); }
void ___tracy_startup_profiler(void) { gnomon_startup(); }
void ___tracy_shutdown_profiler(void) { gnomon_shutdown(); }
// Gnomon starts at the first event: the profiler is always there to record.
int ___tracy_profiler_started(void) { return 1; }

// ---- memory: call stacks are not recorded for allocations; `secure` changes nothing,
// Gnomon's calls being safe at any time ----
void ___tracy_emit_memory_alloc(const void* ptr, size_t size, int) { gnomon_alloc(ptr, size, nullptr); }
void ___tracy_emit_memory_alloc_callstack(const void* ptr, size_t size, int, int) {
  gnomon_alloc(ptr, size, nullptr);
}
void ___tracy_emit_memory_free(const void* ptr, int) { gnomon_free(ptr, nullptr); }
void ___tracy_emit_memory_free_callstack(const void* ptr, int, int) { gnomon_free(ptr, nullptr); }
void ___tracy_emit_memory_alloc_named(const void* ptr, size_t size, int, const char* name) {
  gnomon_alloc(ptr, size, name);
}
void ___tracy_emit_memory_alloc_callstack_named(const void* ptr, size_t size, int, int, const char* name) {
  gnomon_alloc(ptr, size, name);
}
void ___tracy_emit_memory_free_named(const void* ptr, int, const char* name) { gnomon_free(ptr, name); }
void ___tracy_emit_memory_free_callstack_named(const void* ptr, int, int, const char* name) {
  gnomon_free(ptr, name);
}
void ___tracy_emit_memory_discard(const char*, int) {}
void ___tracy_emit_memory_discard_callstack(const char*, int, int) {}

// ---- messages: a colour has no place in Gnomon's messages, which carry a severity ----
void ___tracy_emit_message(const char* txt, size_t size, int) {
  if (txt != nullptr) gnomon_message(txt, size, GNOMON_INFO);
}
void ___tracy_emit_messageL(const char* txt, int) {
  if (txt != nullptr) gnomon_message(txt, std::strlen(txt), GNOMON_INFO);
}
void ___tracy_emit_messageC(const char* txt, size_t size, uint32_t, int) {
  if (txt != nullptr) gnomon_message(txt, size, GNOMON_INFO);
}
void ___tracy_emit_messageLC(const char* txt, uint32_t, int) {
  if (txt != nullptr) gnomon_message(txt, std::strlen(txt), GNOMON_INFO);
}
void ___tracy_emit_message_appinfo(const char* txt, size_t size) {
  if (txt != nullptr) gnomon_message(txt, size, GNOMON_INFO);
}

// ---- frames and plots ----
void ___tracy_emit_frame_mark(const char* name) { gnomon_frame_mark(tracy::___gnomon_tracy_frame_id(name)); }
void ___tracy_emit_frame_mark_start(const char* name) {
  if (name != nullptr) gnomon_frame_begin(tracy::___gnomon_tracy_frame_id(name));
}
void ___tracy_emit_frame_mark_end(const char* name) {
  if (name != nullptr) gnomon_frame_end(tracy::___gnomon_tracy_frame_id(name));
}
void ___tracy_emit_frame_image(const void*, uint16_t, uint16_t, uint8_t, int) {}
void ___tracy_emit_plot(const char* name, double val) {
  if (name != nullptr) gnomon_plot(tracy::___gnomon_tracy_plot_id(name), val);
}
void ___tracy_emit_plot_float(const char* name, float val) { ___tracy_emit_plot(name, double(val)); }
void ___tracy_emit_plot_int(const char* name, int64_t val) { ___tracy_emit_plot(name, double(val)); }
void ___tracy_emit_plot_config(const char*, int, int, int, uint32_t) {}

// ---- locks ----
__tracy_lockable_context_data* ___tracy_announce_lockable_ctx(const ___tracy_source_location_data* srcloc) {
  auto* lock = new __tracy_lockable_context_data;
  lock->srcloc = srcloc;
  return lock;
}
void ___tracy_terminate_lockable_ctx(__tracy_lockable_context_data* lockdata) {
  if (lockdata == nullptr) return;
  gnomon_lock_destroy(lockdata->id.load(std::memory_order_acquire));  // a later lock of its name takes its id
  delete lockdata;
}
int ___tracy_before_lock_lockable_ctx(__tracy_lockable_context_data* lockdata) {
  if (lockdata == nullptr) return 0;
  tls_wait_tick = gnomon_now();
  tls_wait_ns = MonotonicNs();
  return 1;
}
void ___tracy_after_lock_lockable_ctx(__tracy_lockable_context_data* lockdata) {
  if (lockdata == nullptr) return;
  const uint32_t id = LockId(lockdata);
  if (tls_wait_tick != 0 && MonotonicNs() - tls_wait_ns >= kContendedNs) {
    RecordEvent(protocol::LockWait{.lock_id = id, .tick = tls_wait_tick});
  }
  tls_wait_tick = 0;
  gnomon_lock_obtain(id);
}
void ___tracy_after_unlock_lockable_ctx(__tracy_lockable_context_data* lockdata) {
  if (lockdata != nullptr) gnomon_lock_release(LockId(lockdata));
}
void ___tracy_after_try_lock_lockable_ctx(__tracy_lockable_context_data* lockdata, int acquired) {
  if (lockdata != nullptr && acquired) gnomon_lock_obtain(LockId(lockdata));
}
void ___tracy_mark_lockable_ctx(__tracy_lockable_context_data*, const ___tracy_source_location_data*) {}
void ___tracy_custom_name_lockable_ctx(__tracy_lockable_context_data* lockdata, const char* name,
                                       size_t nameSz) {
  if (lockdata == nullptr || name == nullptr) return;
  std::lock_guard guard(lockdata->mutex);
  if (lockdata->id.load(std::memory_order_relaxed) == 0) lockdata->name.assign(name, nameSz);
}

// ---- fibers: not recorded ----
void ___tracy_fiber_enter(const char*) {}
void ___tracy_fiber_leave(void) {}

}  // extern "C"
