/* Tracy's C interface, recorded by Gnomon: the TracyC* macros and the ___tracy_*
 * functions that C programs and language bindings (Rust, Java, Zig, ...) call, with
 * Tracy's names, structures and layouts. Link gnomon::tracy instead of Tracy's client.
 * Without TRACY_ENABLE the macros compile to nothing, as in Tracy.
 * docs/tracy-compatibility.md lists what each call maps to.
 *
 * Gnomon extensions (GNOMON_TRACY_EXTENSIONS is defined):
 *   ___tracy_emit_gpu_new_context_cpu_time, ___tracy_emit_gpu_calibration_cpu_time
 * take the CPU time of the calibrated pair from the caller, in the clock it was read on
 * (CLOCK_MONOTONIC_RAW or CLOCK_MONOTONIC ns, as VK_EXT_calibrated_timestamps returns
 * it), with its deviation: a binding using calibrated timestamps through C gets the
 * accuracy of the C++ collectors. ___tracy_emit_gpu_calibration itself reads the CPU
 * time when it is called, after the caller read the GPU's, so its pairs carry an
 * unknown lag; Gnomon states them with a 1 ms uncertainty. */
#ifndef GNOMON_TRACY_TRACYC_H_
#define GNOMON_TRACY_TRACYC_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum TracyPlotFormatEnum {
  TracyPlotFormatNumber,
  TracyPlotFormatMemory,
  TracyPlotFormatPercentage,
  TracyPlotFormatWatt
};

#ifndef TracyFunction
#define TracyFunction __FUNCTION__
#endif
#ifndef TracyFile
#define TracyFile __FILE__
#endif
#ifndef TracyLine
#define TracyLine __LINE__
#endif
#ifndef TracyConcat
#define TracyConcatIndirect(x, y) x##y
#define TracyConcat(x, y) TracyConcatIndirect(x, y)
#endif

#ifndef TRACY_ENABLE

typedef const void* TracyCZoneCtx;
typedef const void* TracyCLockCtx;

#define TracyCSetThreadName(name)
#define TracyCZone(c, x)
#define TracyCZoneN(c, x, y)
#define TracyCZoneC(c, x, y)
#define TracyCZoneNC(c, x, y, z)
#define TracyCZoneEnd(c)
#define TracyCZoneText(c, x, y)
#define TracyCZoneName(c, x, y)
#define TracyCZoneColor(c, x)
#define TracyCZoneValue(c, x)
#define TracyCAlloc(x, y)
#define TracyCFree(x)
#define TracyCSecureAlloc(x, y)
#define TracyCSecureFree(x)
#define TracyCAllocN(x, y, z)
#define TracyCFreeN(x, y)
#define TracyCSecureAllocN(x, y, z)
#define TracyCSecureFreeN(x, y)
#define TracyCMemoryDiscard(x)
#define TracyCSecureMemoryDiscard(x)
#define TracyCMemoryDiscardS(x, y)
#define TracyCSecureMemoryDiscardS(x, y)
#define TracyCFrameMark
#define TracyCFrameMarkNamed(x)
#define TracyCFrameMarkStart(x)
#define TracyCFrameMarkEnd(x)
#define TracyCFrameImage(x, y, z, w, a)
#define TracyCPlot(x, y)
#define TracyCPlotF(x, y)
#define TracyCPlotI(x, y)
#define TracyCPlotConfig(x, y, z, w, a)
#define TracyCMessage(x, y)
#define TracyCMessageL(x)
#define TracyCMessageC(x, y, z)
#define TracyCMessageLC(x, y)
#define TracyCAppInfo(x, y)
#define TracyCZoneS(x, y, z)
#define TracyCZoneNS(x, y, z, w)
#define TracyCZoneCS(x, y, z, w)
#define TracyCZoneNCS(x, y, z, w, a)
#define TracyCAllocS(x, y, z)
#define TracyCFreeS(x, y)
#define TracyCSecureAllocS(x, y, z)
#define TracyCSecureFreeS(x, y)
#define TracyCAllocNS(x, y, z, w)
#define TracyCFreeNS(x, y, z)
#define TracyCSecureAllocNS(x, y, z, w)
#define TracyCSecureFreeNS(x, y, z)
#define TracyCMessageS(x, y, z)
#define TracyCMessageLS(x, y)
#define TracyCMessageCS(x, y, z, w)
#define TracyCMessageLCS(x, y, z)
#define TracyCLockCtx(l)
#define TracyCLockAnnounce(l)
#define TracyCLockTerminate(l)
#define TracyCLockBeforeLock(l)
#define TracyCLockAfterLock(l)
#define TracyCLockAfterUnlock(l)
#define TracyCLockAfterTryLock(l, x)
#define TracyCLockMark(l)
#define TracyCLockCustomName(l, x, y)
#define TracyCIsConnected 0
#define TracyCIsStarted 0
#define TracyCFiberEnter(fiber)
#define TracyCFiberLeave
#define TracyCBeginSamplingProfiling() 0
#define TracyCEndSamplingProfiling()

#else /* TRACY_ENABLE */

#define GNOMON_TRACY_EXTENSIONS 1

struct ___tracy_source_location_data {
  const char* name;
  const char* function;
  const char* file;
  uint32_t line;
  uint32_t color;
};

struct ___tracy_c_zone_context {
  uint32_t id;
  int active;
};

struct ___tracy_gpu_time_data {
  int64_t gpuTime;
  uint16_t queryId;
  uint8_t context;
};

struct ___tracy_gpu_zone_begin_data {
  uint64_t srcloc;
  uint16_t queryId;
  uint8_t context;
};

struct ___tracy_gpu_zone_begin_callstack_data {
  uint64_t srcloc;
  int depth;
  uint16_t queryId;
  uint8_t context;
};

struct ___tracy_gpu_zone_end_data {
  uint16_t queryId;
  uint8_t context;
};

struct ___tracy_gpu_new_context_data {
  int64_t gpuTime;
  float period;
  uint8_t context;
  uint8_t flags;
  uint8_t type;
};

struct ___tracy_gpu_context_name_data {
  uint8_t context;
  const char* name;
  uint16_t len;
};

struct ___tracy_gpu_calibration_data {
  int64_t gpuTime;
  int64_t cpuDelta;
  uint8_t context;
};

struct ___tracy_gpu_time_sync_data {
  int64_t gpuTime;
  uint8_t context;
};

/* Gnomon extension: the clock a pair's cpuTime was read on. */
enum ___gnomon_tracy_cpu_clock {
  ___gnomon_tracy_cpu_clock_profiler = 0,      /* the profiler's own time (gnomon_now) */
  ___gnomon_tracy_cpu_clock_monotonic_raw = 1, /* CLOCK_MONOTONIC_RAW ns */
  ___gnomon_tracy_cpu_clock_monotonic = 2      /* CLOCK_MONOTONIC ns */
};

/* Gnomon extension: a new GPU context whose first pair has its CPU time. */
struct ___tracy_gpu_new_context_cpu_time_data {
  int64_t gpuTime;    /* device ticks, read at the same instant as cpuTime */
  int64_t cpuTime;    /* in cpuClock */
  float period;       /* ns per tick */
  uint32_t deviation; /* ns the pair may be off by (Vulkan's maxDeviation); 0: unknown */
  uint8_t context;
  uint8_t flags;
  uint8_t type;
  uint8_t cpuClock; /* enum ___gnomon_tracy_cpu_clock */
};

/* Gnomon extension: ___tracy_gpu_calibration_data with the pair's CPU time. */
struct ___tracy_gpu_calibration_cpu_time_data {
  int64_t gpuTime;    /* device ticks, read at the same instant as cpuTime */
  int64_t cpuTime;    /* in cpuClock */
  int64_t cpuDelta;   /* ns since the context's previous calibration */
  uint32_t deviation; /* ns the pair may be off by (Vulkan's maxDeviation); 0: unknown */
  uint8_t context;
  uint8_t cpuClock; /* enum ___gnomon_tracy_cpu_clock */
};

struct __tracy_lockable_context_data;

typedef struct ___tracy_c_zone_context TracyCZoneCtx;
typedef struct __tracy_lockable_context_data* TracyCLockCtx;

void ___tracy_set_thread_name(const char* name);

uint64_t ___tracy_alloc_srcloc(uint32_t line, const char* source, size_t sourceSz, const char* function,
                               size_t functionSz, uint32_t color);
uint64_t ___tracy_alloc_srcloc_name(uint32_t line, const char* source, size_t sourceSz, const char* function,
                                    size_t functionSz, const char* name, size_t nameSz, uint32_t color);

TracyCZoneCtx ___tracy_emit_zone_begin(const struct ___tracy_source_location_data* srcloc, int active);
TracyCZoneCtx ___tracy_emit_zone_begin_callstack(const struct ___tracy_source_location_data* srcloc,
                                                 int depth, int active);
TracyCZoneCtx ___tracy_emit_zone_begin_alloc(uint64_t srcloc, int active);
TracyCZoneCtx ___tracy_emit_zone_begin_alloc_callstack(uint64_t srcloc, int depth, int active);
void ___tracy_emit_zone_end(TracyCZoneCtx ctx);
void ___tracy_emit_zone_text(TracyCZoneCtx ctx, const char* txt, size_t size);
void ___tracy_emit_zone_name(TracyCZoneCtx ctx, const char* txt, size_t size);
void ___tracy_emit_zone_color(TracyCZoneCtx ctx, uint32_t color);
void ___tracy_emit_zone_value(TracyCZoneCtx ctx, uint64_t value);

void ___tracy_emit_gpu_zone_begin(const struct ___tracy_gpu_zone_begin_data);
void ___tracy_emit_gpu_zone_begin_callstack(const struct ___tracy_gpu_zone_begin_callstack_data);
void ___tracy_emit_gpu_zone_begin_alloc(const struct ___tracy_gpu_zone_begin_data);
void ___tracy_emit_gpu_zone_begin_alloc_callstack(const struct ___tracy_gpu_zone_begin_callstack_data);
void ___tracy_emit_gpu_zone_end(const struct ___tracy_gpu_zone_end_data data);
void ___tracy_emit_gpu_time(const struct ___tracy_gpu_time_data);
void ___tracy_emit_gpu_new_context(const struct ___tracy_gpu_new_context_data);
void ___tracy_emit_gpu_context_name(const struct ___tracy_gpu_context_name_data);
void ___tracy_emit_gpu_calibration(const struct ___tracy_gpu_calibration_data);
void ___tracy_emit_gpu_time_sync(const struct ___tracy_gpu_time_sync_data);
void ___tracy_emit_gpu_new_context_cpu_time(const struct ___tracy_gpu_new_context_cpu_time_data);
void ___tracy_emit_gpu_calibration_cpu_time(const struct ___tracy_gpu_calibration_cpu_time_data);

/* Tracy's _serial forms order events through one queue; Gnomon orders GPU events by
 * their context and query ids, so they are the same functions. */
void ___tracy_emit_gpu_zone_begin_serial(const struct ___tracy_gpu_zone_begin_data);
void ___tracy_emit_gpu_zone_begin_callstack_serial(const struct ___tracy_gpu_zone_begin_callstack_data);
void ___tracy_emit_gpu_zone_begin_alloc_serial(const struct ___tracy_gpu_zone_begin_data);
void ___tracy_emit_gpu_zone_begin_alloc_callstack_serial(const struct ___tracy_gpu_zone_begin_callstack_data);
void ___tracy_emit_gpu_zone_end_serial(const struct ___tracy_gpu_zone_end_data data);
void ___tracy_emit_gpu_time_serial(const struct ___tracy_gpu_time_data);
void ___tracy_emit_gpu_new_context_serial(const struct ___tracy_gpu_new_context_data);
void ___tracy_emit_gpu_context_name_serial(const struct ___tracy_gpu_context_name_data);
void ___tracy_emit_gpu_calibration_serial(const struct ___tracy_gpu_calibration_data);
void ___tracy_emit_gpu_time_sync_serial(const struct ___tracy_gpu_time_sync_data);

int ___tracy_connected(void);
void ___tracy_startup_profiler(void);
void ___tracy_shutdown_profiler(void);
int ___tracy_profiler_started(void);

void ___tracy_emit_memory_alloc(const void* ptr, size_t size, int secure);
void ___tracy_emit_memory_alloc_callstack(const void* ptr, size_t size, int depth, int secure);
void ___tracy_emit_memory_free(const void* ptr, int secure);
void ___tracy_emit_memory_free_callstack(const void* ptr, int depth, int secure);
void ___tracy_emit_memory_alloc_named(const void* ptr, size_t size, int secure, const char* name);
void ___tracy_emit_memory_alloc_callstack_named(const void* ptr, size_t size, int depth, int secure,
                                                const char* name);
void ___tracy_emit_memory_free_named(const void* ptr, int secure, const char* name);
void ___tracy_emit_memory_free_callstack_named(const void* ptr, int depth, int secure, const char* name);
void ___tracy_emit_memory_discard(const char* name, int secure);
void ___tracy_emit_memory_discard_callstack(const char* name, int secure, int depth);

void ___tracy_emit_message(const char* txt, size_t size, int callstack);
void ___tracy_emit_messageL(const char* txt, int callstack);
void ___tracy_emit_messageC(const char* txt, size_t size, uint32_t color, int callstack);
void ___tracy_emit_messageLC(const char* txt, uint32_t color, int callstack);

void ___tracy_emit_frame_mark(const char* name);
void ___tracy_emit_frame_mark_start(const char* name);
void ___tracy_emit_frame_mark_end(const char* name);
void ___tracy_emit_frame_image(const void* image, uint16_t w, uint16_t h, uint8_t offset, int flip);

void ___tracy_emit_plot(const char* name, double val);
void ___tracy_emit_plot_float(const char* name, float val);
void ___tracy_emit_plot_int(const char* name, int64_t val);
void ___tracy_emit_plot_config(const char* name, int type, int step, int fill, uint32_t color);
void ___tracy_emit_message_appinfo(const char* txt, size_t size);

struct __tracy_lockable_context_data* ___tracy_announce_lockable_ctx(
    const struct ___tracy_source_location_data* srcloc);
void ___tracy_terminate_lockable_ctx(struct __tracy_lockable_context_data* lockdata);
int ___tracy_before_lock_lockable_ctx(struct __tracy_lockable_context_data* lockdata);
void ___tracy_after_lock_lockable_ctx(struct __tracy_lockable_context_data* lockdata);
void ___tracy_after_unlock_lockable_ctx(struct __tracy_lockable_context_data* lockdata);
void ___tracy_after_try_lock_lockable_ctx(struct __tracy_lockable_context_data* lockdata, int acquired);
void ___tracy_mark_lockable_ctx(struct __tracy_lockable_context_data* lockdata,
                                const struct ___tracy_source_location_data* srcloc);
void ___tracy_custom_name_lockable_ctx(struct __tracy_lockable_context_data* lockdata, const char* name,
                                       size_t nameSz);

void ___tracy_fiber_enter(const char* fiber);
void ___tracy_fiber_leave(void);

#define TracyCSetThreadName(name) ___tracy_set_thread_name(name);

#define TracyCLocation_(name, color)                                                                    \
  static const struct ___tracy_source_location_data TracyConcat(__tracy_source_location, TracyLine) = { \
      name, __func__, TracyFile, (uint32_t)TracyLine, color};

#ifdef TRACY_CALLSTACK
#define TracyCZoneBegin_(ctx, active)                                                                   \
  ___tracy_emit_zone_begin_callstack(&TracyConcat(__tracy_source_location, TracyLine), TRACY_CALLSTACK, \
                                     active)
#else
#define TracyCZoneBegin_(ctx, active) \
  ___tracy_emit_zone_begin(&TracyConcat(__tracy_source_location, TracyLine), active)
#endif
#define TracyCZone(ctx, active) TracyCLocation_(NULL, 0) TracyCZoneCtx ctx = TracyCZoneBegin_(ctx, active);
#define TracyCZoneN(ctx, name, active) \
  TracyCLocation_(name, 0) TracyCZoneCtx ctx = TracyCZoneBegin_(ctx, active);
#define TracyCZoneC(ctx, color, active) \
  TracyCLocation_(NULL, color) TracyCZoneCtx ctx = TracyCZoneBegin_(ctx, active);
#define TracyCZoneNC(ctx, name, color, active) \
  TracyCLocation_(name, color) TracyCZoneCtx ctx = TracyCZoneBegin_(ctx, active);

#define TracyCZoneS(ctx, depth, active)        \
  TracyCLocation_(NULL, 0) TracyCZoneCtx ctx = \
      ___tracy_emit_zone_begin_callstack(&TracyConcat(__tracy_source_location, TracyLine), depth, active);
#define TracyCZoneNS(ctx, name, depth, active) \
  TracyCLocation_(name, 0) TracyCZoneCtx ctx = \
      ___tracy_emit_zone_begin_callstack(&TracyConcat(__tracy_source_location, TracyLine), depth, active);
#define TracyCZoneCS(ctx, color, depth, active)    \
  TracyCLocation_(NULL, color) TracyCZoneCtx ctx = \
      ___tracy_emit_zone_begin_callstack(&TracyConcat(__tracy_source_location, TracyLine), depth, active);
#define TracyCZoneNCS(ctx, name, color, depth, active) \
  TracyCLocation_(name, color) TracyCZoneCtx ctx =     \
      ___tracy_emit_zone_begin_callstack(&TracyConcat(__tracy_source_location, TracyLine), depth, active);

#define TracyCZoneEnd(ctx) ___tracy_emit_zone_end(ctx);
#define TracyCZoneText(ctx, txt, size) ___tracy_emit_zone_text(ctx, txt, size);
#define TracyCZoneName(ctx, txt, size) ___tracy_emit_zone_name(ctx, txt, size);
#define TracyCZoneColor(ctx, color) ___tracy_emit_zone_color(ctx, color);
#define TracyCZoneValue(ctx, value) ___tracy_emit_zone_value(ctx, value);

#define TracyCAlloc(ptr, size) ___tracy_emit_memory_alloc(ptr, size, 0);
#define TracyCFree(ptr) ___tracy_emit_memory_free(ptr, 0);
#define TracyCSecureAlloc(ptr, size) ___tracy_emit_memory_alloc(ptr, size, 1);
#define TracyCSecureFree(ptr) ___tracy_emit_memory_free(ptr, 1);
#define TracyCAllocN(ptr, size, name) ___tracy_emit_memory_alloc_named(ptr, size, 0, name);
#define TracyCFreeN(ptr, name) ___tracy_emit_memory_free_named(ptr, 0, name);
#define TracyCSecureAllocN(ptr, size, name) ___tracy_emit_memory_alloc_named(ptr, size, 1, name);
#define TracyCSecureFreeN(ptr, name) ___tracy_emit_memory_free_named(ptr, 1, name);
#define TracyCAllocS(ptr, size, depth) ___tracy_emit_memory_alloc_callstack(ptr, size, depth, 0);
#define TracyCFreeS(ptr, depth) ___tracy_emit_memory_free_callstack(ptr, depth, 0);
#define TracyCSecureAllocS(ptr, size, depth) ___tracy_emit_memory_alloc_callstack(ptr, size, depth, 1);
#define TracyCSecureFreeS(ptr, depth) ___tracy_emit_memory_free_callstack(ptr, depth, 1);
#define TracyCAllocNS(ptr, size, depth, name) \
  ___tracy_emit_memory_alloc_callstack_named(ptr, size, depth, 0, name);
#define TracyCFreeNS(ptr, depth, name) ___tracy_emit_memory_free_callstack_named(ptr, depth, 0, name);
#define TracyCSecureAllocNS(ptr, size, depth, name) \
  ___tracy_emit_memory_alloc_callstack_named(ptr, size, depth, 1, name);
#define TracyCSecureFreeNS(ptr, depth, name) ___tracy_emit_memory_free_callstack_named(ptr, depth, 1, name);
#define TracyCMemoryDiscard(name) ___tracy_emit_memory_discard(name, 0);
#define TracyCSecureMemoryDiscard(name) ___tracy_emit_memory_discard(name, 1);
#define TracyCMemoryDiscardS(name, depth) ___tracy_emit_memory_discard_callstack(name, 0, depth);
#define TracyCSecureMemoryDiscardS(name, depth) ___tracy_emit_memory_discard_callstack(name, 1, depth);

#define TracyCMessage(txt, size) ___tracy_emit_message(txt, size, 0);
#define TracyCMessageL(txt) ___tracy_emit_messageL(txt, 0);
#define TracyCMessageC(txt, size, color) ___tracy_emit_messageC(txt, size, color, 0);
#define TracyCMessageLC(txt, color) ___tracy_emit_messageLC(txt, color, 0);
#define TracyCMessageS(txt, size, depth) ___tracy_emit_message(txt, size, depth);
#define TracyCMessageLS(txt, depth) ___tracy_emit_messageL(txt, depth);
#define TracyCMessageCS(txt, size, color, depth) ___tracy_emit_messageC(txt, size, color, depth);
#define TracyCMessageLCS(txt, color, depth) ___tracy_emit_messageLC(txt, color, depth);

#define TracyCFrameMark ___tracy_emit_frame_mark(0);
#define TracyCFrameMarkNamed(name) ___tracy_emit_frame_mark(name);
#define TracyCFrameMarkStart(name) ___tracy_emit_frame_mark_start(name);
#define TracyCFrameMarkEnd(name) ___tracy_emit_frame_mark_end(name);
#define TracyCFrameImage(image, width, height, offset, flip) \
  ___tracy_emit_frame_image(image, width, height, offset, flip);

#define TracyCPlot(name, val) ___tracy_emit_plot(name, val);
#define TracyCPlotF(name, val) ___tracy_emit_plot_float(name, val);
#define TracyCPlotI(name, val) ___tracy_emit_plot_int(name, val);
#define TracyCPlotConfig(name, type, step, fill, color) \
  ___tracy_emit_plot_config(name, type, step, fill, color);
#define TracyCAppInfo(txt, size) ___tracy_emit_message_appinfo(txt, size);

#define TracyCLockCtx(l) TracyCLockCtx l
#define TracyCLockAnnounce(lock)  \
  TracyCLocation_(NULL, 0) lock = \
      ___tracy_announce_lockable_ctx(&TracyConcat(__tracy_source_location, TracyLine));
#define TracyCLockTerminate(lock) ___tracy_terminate_lockable_ctx(lock);
#define TracyCLockBeforeLock(lock) ___tracy_before_lock_lockable_ctx(lock);
#define TracyCLockAfterLock(lock) ___tracy_after_lock_lockable_ctx(lock);
#define TracyCLockAfterUnlock(lock) ___tracy_after_unlock_lockable_ctx(lock);
#define TracyCLockAfterTryLock(lock, acquired) ___tracy_after_try_lock_lockable_ctx(lock, acquired);
#define TracyCLockMark(lock) \
  TracyCLocation_(NULL, 0) ___tracy_mark_lockable_ctx(lock, &TracyConcat(__tracy_source_location, TracyLine));
#define TracyCLockCustomName(lock, name, nameSz) ___tracy_custom_name_lockable_ctx(lock, name, nameSz);

#define TracyCIsConnected ___tracy_connected()
#define TracyCIsStarted ___tracy_profiler_started()
#define TracyCFiberEnter(fiber) ___tracy_fiber_enter(fiber);
#define TracyCFiberLeave ___tracy_fiber_leave();
/* Gnomon samples with GNOMON_SAMPLING_HZ for the whole run: nothing to begin here. */
#define TracyCBeginSamplingProfiling() 0
#define TracyCEndSamplingProfiling()

#endif /* TRACY_ENABLE */

#ifdef __cplusplus
}
#endif

#endif /* GNOMON_TRACY_TRACYC_H_ */
