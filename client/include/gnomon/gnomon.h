/* Gnomon client C API (C99). Link gnomon::client.
 *
 * Everything the C++ API (gnomon.hpp) can record can be recorded from here, through a
 * plain C ABI that other languages can bind to. Recording is lock-free and allocates
 * nothing on the calling thread; a background thread ships events to a connected
 * server (see docs/integration.md).
 *
 * Zones: a zone is a span of time on the calling thread, opened by
 * gnomon_zone_begin() with a *static* source location and closed by gnomon_zone_end().
 * Zones nest. The GNOMON_ZONE_BEGIN/GNOMON_ZONE_END macros declare the static source
 * location for you; with GCC or Clang, GNOMON_ZONE_SCOPED closes the zone at scope exit.
 *
 * Define GNOMON_DISABLE before including this header (or for the whole build) and every
 * macro and every function call expands to nothing: the program records nothing, pays
 * nothing, evaluates no argument, and needs no Gnomon library to link. Compiled out,
 * calls that return an id return 1, the others 0 (gnomon_save_recording: -1). Only
 * calls compile out: a function's address (atexit(gnomon_shutdown)) or a prototype
 * declared again by the program still names the library.
 *
 * Threads: every function may be called from any thread. Strings are copied; the caller
 * keeps ownership. Lengths are in bytes; longer strings are cut to GNOMON_MAX_INLINE_STRING.
 */
#ifndef GNOMON_GNOMON_H_
#define GNOMON_GNOMON_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GNOMON_NO_COLOR 0xFF000000u
#define GNOMON_MAX_INLINE_STRING 8000u
#define GNOMON_DEFAULT_PORT 9421u

/* A static description of a place in the code. `id` must start at 0; the library
 * assigns it on first use. The strings must outlive the program's profiling. */
typedef struct gnomon_source_location {
  const char* name; /* zone name shown to the user; may be NULL (function is used) */
  const char* function;
  const char* file;
  uint32_t line;
  uint32_t color; /* 0x00RRGGBB, or GNOMON_NO_COLOR */
  uint32_t id;    /* 0 until registered; owned by the library */
} gnomon_source_location;

typedef enum gnomon_severity {
  GNOMON_TRACE = 0,
  GNOMON_DEBUG = 1,
  GNOMON_INFO = 2,
  GNOMON_WARNING = 3,
  GNOMON_ERROR = 4,
  GNOMON_FATAL = 5
} gnomon_severity;

/* ---- configuration; call before the first event, or they return -1 ---- */

/* Address and port the program listens on for a server. The default is 127.0.0.1 and
 * GNOMON_DEFAULT_PORT, overridden by the environment variables GNOMON_ADDRESS and
 * GNOMON_PORT. Any address other than loopback exposes the recorded events to the
 * network: use it only on a trusted network. Port 0 picks a free port. */
int gnomon_set_listen_address(const char* address, uint16_t port);

/* Bytes of events the program holds before its buffer policy acts (default 64 MiB, or
 * GNOMON_BUFFER_MB). */
int gnomon_set_buffer_budget(uint64_t bytes);

/* What the program does with events past the budget (or GNOMON_BUFFER_POLICY=auto,
 * drop, grow, wait or ring; docs/integration.md weighs them):
 *  AUTO  the default: the budget while no server drains; while one does and falls
 *        behind, the buffer grows up to a quarter of the machine's memory (or
 *        GNOMON_BUFFER_MAX_MB); past that, events are dropped, counted, and the program
 *        says so on stderr.
 *  DROP  the budget, always; past it events are dropped and counted.
 *  GROW  no bound: nothing is dropped, memory grows as long as the backlog does.
 *  WAIT  the budget; past it the recording thread waits for the sender while a server
 *        is connected (nothing is dropped, the program slows down to the capture's
 *        pace; if the capture stalls, so does the program), and drops when none is.
 *  RING  a flight recorder: while no server is connected the budget keeps the newest
 *        events, the oldest whole chunks (64 KiB of one thread's events) recycled;
 *        definitions are always kept. A capture that connects, or
 *        gnomon_save_recording(), gets the last seconds. While a server is connected,
 *        as AUTO. */
typedef enum gnomon_buffer_policy {
  GNOMON_BUFFER_AUTO = 0,
  GNOMON_BUFFER_DROP = 1,
  GNOMON_BUFFER_GROW = 2,
  GNOMON_BUFFER_WAIT = 3,
  GNOMON_BUFFER_RING = 4
} gnomon_buffer_policy;
int gnomon_set_buffer_policy(gnomon_buffer_policy policy);

/* On demand (or GNOMON_ON_DEMAND=1): record nothing until a server connects, then
 * everything (definitions made before are sent too); a zone open at that moment is
 * left out whole. An event costs a compare and an increment while nobody is connected.
 * After the server leaves, each thread stops at the end of its current chunk. */
int gnomon_set_on_demand(int enabled);

/* The program writes its own trace file at `path` (or GNOMON_OUTPUT=PATH), in the
 * format gnomon-capture writes, compressed on the profiler's thread, instead of
 * listening for a server. Under the RING policy the file is written only when
 * gnomon_save_recording() is called or the signal GNOMON_SAVE_SIGNAL (a number or a
 * name such as USR1) arrives, with the ring's contents; the program listens as usual. */
int gnomon_set_output_file(const char* path);

/* Writes what the buffer holds now (under RING: the newest budget's worth of events)
 * and every definition to a trace file at `path` (NULL: the GNOMON_OUTPUT path, or
 * gnomon-PID.gnomon in the current folder), replacing a regular file there. Recording
 * goes on; events that find no chunk while the file is written are dropped and
 * counted. Returns 0, or -1 with the reason on stderr (a server is connected and has
 * the events, the program writes its own file, a save is already running, the path
 * cannot be written). */
int gnomon_save_recording(const char* path);

/* Asks the profiler's thread to save the recording to the default path (as
 * GNOMON_SAVE_SIGNAL does) and returns at once: unlike gnomon_save_recording, which
 * waits, safe in a signal handler. */
void gnomon_request_save(void);

/* Starts the profiler now instead of at the first event. Returns 0, or -1 when the
 * listening socket could not be opened (the reason goes to stderr): then only the
 * collector of GNOMON_COLLECTOR, which the program connects to, can receive its events;
 * they are kept meanwhile as before any capture connects, up to the buffer budget. */
int gnomon_startup(void);

/* The port actually listened on, 0 before start-up or when listening failed. */
uint16_t gnomon_listen_port(void);

/* Nonzero while a server is connected. */
int gnomon_is_connected(void);

/* Waits up to timeout_ms for a server to connect (a capture that connects to the
   program's port, or the collector the program connects to, GNOMON_COLLECTOR), and for
   the extra connections (lanes) it asked for to come. Returns nonzero when connected;
   zero at once when nothing can connect (no port of its own and no collector) or the
   profiler has shut down. */
int gnomon_wait_for_server(uint32_t timeout_ms);

/* Ships everything recorded to a connected server (up to the exit wait, see
 * docs/integration.md), then stops the profiler. Called automatically at exit. */
void gnomon_shutdown(void);

/* Events dropped so far because the buffer was full (see gnomon_set_buffer_policy).
 * Events an on-demand program did not record because nobody was connected, and
 * events a ring recycled, are not drops. */
uint64_t gnomon_dropped_events(void);

/* ---- time ---- */

/* The current time in the program's profiler ticks. */
uint64_t gnomon_now(void);

/* ---- zones ---- */
void gnomon_zone_begin(gnomon_source_location* location);
/* The same, with the call stack of `depth` frames (at most 64) that led to it. */
void gnomon_zone_begin_callstack(gnomon_source_location* location, uint32_t depth);
void gnomon_zone_end(void);
/* Runtime attributes of the innermost open zone of the calling thread. */
void gnomon_zone_name(const char* name, size_t length);
void gnomon_zone_text(const char* text, size_t length);
void gnomon_zone_color(uint32_t rgb);
void gnomon_zone_value(uint64_t value);

/* ---- frames ---- */
/* Registers a frame-series name; returns its id (never 0). Cheap to call again. */
uint32_t gnomon_frame_name(const char* name);
/* Marks the end of a frame of the main series (name_id 0) or of a named series. */
void gnomon_frame_mark(uint32_t name_id);
/* Brackets one frame of a discontinuous named series. */
void gnomon_frame_begin(uint32_t name_id);
void gnomon_frame_end(uint32_t name_id);

/* ---- threads, messages, plots ---- */
void gnomon_set_thread_name(const char* name);
void gnomon_message(const char* text, size_t length, gnomon_severity severity);
/* Registers a plot; returns its id (never 0). */
uint32_t gnomon_plot_id(const char* name);
void gnomon_plot(uint32_t plot_id, double value);

/* ---- memory ----
 * An allocation and its free, in a pool named `name` (NULL: the default pool, named
 * "default"). Each pool is a plot of bytes in use beside the timeline; the report lists
 * allocations, frees, the peak and what was never freed. A free of a pointer no
 * allocation explains (memory allocated before profiling started) is counted, not
 * fatal. NULL pointers are ignored. Any name works; a literal (one pointer for one
 * name) is the fastest. To record every operator new and delete of a C++ program,
 * include <gnomon/new_delete.hpp> in one of its source files. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
/* The pointer is recorded, never read through: fresh memory passed in is not "used". */
#define GNOMON_POINTER_NOT_READ(i) __attribute__((access(none, i)))
#else
#define GNOMON_POINTER_NOT_READ(i)
#endif
GNOMON_POINTER_NOT_READ(1) void gnomon_alloc(const void* ptr, size_t size, const char* name);
GNOMON_POINTER_NOT_READ(1) void gnomon_free(const void* ptr, const char* name);
/* The same at a time already past (a CPU time as gnomon_now() or
 * gnomon_cpu_time_from_host_ns() give it), for what is learnt after the fact: a GPU
 * driver's records of its allocations. Recorded on the calling thread. */
GNOMON_POINTER_NOT_READ(1)
void gnomon_alloc_at(const void* ptr, size_t size, const char* name, uint64_t cpu_time);
GNOMON_POINTER_NOT_READ(1) void gnomon_free_at(const void* ptr, const char* name, uint64_t cpu_time);

/* ---- locks ----
 * A lock (a mutex of the program) is made once with a name; two locks of one name are
 * still two. Around each acquisition: gnomon_lock_wait() when the thread must wait for
 * it (skip it when a first try succeeded: the acquisition was uncontended),
 * gnomon_lock_obtain() (or _shared for a reader) once it holds it,
 * gnomon_lock_release() when it lets go. gnomon_lock_destroy() when the mutex is gone:
 * a lock made later with the same name takes its id, so locks made and destroyed by
 * the million cost only as many definitions as were ever alive at once. C++:
 * gnomon::Lockable<M> does all of this. */
uint32_t gnomon_lock_create(const char* name);
void gnomon_lock_destroy(uint32_t lock);
void gnomon_lock_wait(uint32_t lock);
void gnomon_lock_obtain(uint32_t lock);
void gnomon_lock_obtain_shared(uint32_t lock);
void gnomon_lock_release(uint32_t lock);

/* ---- GPU ----
 * A GPU context is one clock domain: a Vulkan queue, a GL context, a CUDA device. GPU
 * zones are recorded on a CPU thread (which nests them and links them to the thread),
 * and timed by two GPU timestamp queries whose raw values arrive later through
 * gnomon_gpu_time(). Calibrations pair GPU ticks with the CPU time of the same instant;
 * the server fits every GPU clock onto the CPU timeline from them. The collectors in
 * gnomon/vulkan.hpp and gnomon/opengl.hpp do all of this for you; these calls are for
 * other APIs and for bindings. */

typedef enum gnomon_gpu_api {
  GNOMON_GPU_API_UNKNOWN = 0,
  GNOMON_GPU_API_VULKAN = 1,
  GNOMON_GPU_API_OPENGL = 2,
  GNOMON_GPU_API_CUDA = 3
} gnomon_gpu_api;

/* The clock a CPU time is read on. Vulkan's calibrated timestamps return
 * CLOCK_MONOTONIC_RAW (or CLOCK_MONOTONIC) ns: pass them with that domain, as they are. */
typedef enum gnomon_cpu_time_domain {
  GNOMON_CPU_TIME_TICKS = 0,         /* gnomon_now() ticks */
  GNOMON_CPU_TIME_MONOTONIC_RAW = 1, /* CLOCK_MONOTONIC_RAW ns */
  GNOMON_CPU_TIME_MONOTONIC = 2      /* CLOCK_MONOTONIC ns */
} gnomon_cpu_time_domain;

#define GNOMON_GPU_CONTEXT_CALIBRATED 1u           /* pairs from a simultaneous-read API */
#define GNOMON_GPU_CONTEXT_FALLBACK_CALIBRATION 2u /* pairs from a submit/fence bracket */

typedef struct gnomon_gpu_context_info {
  gnomon_gpu_api api;
  const char* device_name;
  /* tick period = period_numerator_ns / period_denominator ns, exactly (see
   * gnomon_gpu_period_from_float) */
  uint64_t period_numerator_ns;
  uint64_t period_denominator;
  uint8_t valid_bits; /* of the timestamp counter, 1..64 */
  uint16_t flags;     /* GNOMON_GPU_CONTEXT_* */
  uint64_t gpu_ticks; /* an initial calibration pair: GPU ticks... */
  uint64_t cpu_time;  /* ...and the CPU time at the same instant */
  gnomon_cpu_time_domain cpu_domain;
  uint32_t uncertainty_ns; /* of that pair */
} gnomon_gpu_context_info;

typedef struct gnomon_gpu_calibration_data {
  uint64_t gpu_ticks;
  uint64_t cpu_time;       /* read at the same instant as gpu_ticks, in cpu_domain */
  int64_t cpu_delta_ns;    /* CPU ns since this context's previous calibration (> 0) */
  uint32_t uncertainty_ns; /* e.g. Vulkan's maxDeviation */
  uint32_t context;
  gnomon_cpu_time_domain cpu_domain;
} gnomon_gpu_calibration_data;

/* Creates a GPU context; returns its id (never 0), or 0 when info is invalid. */
uint32_t gnomon_gpu_context_create(const gnomon_gpu_context_info* info);
void gnomon_gpu_context_name(uint32_t context, const char* name, size_t length);
/* Opens a GPU zone on the calling thread; query_id names the timestamp written at its
 * begin. The CPU time of the call is recorded as the zone's CPU-side time. */
void gnomon_gpu_zone_begin(uint32_t context, uint32_t query_id, gnomon_source_location* location);
/* Closes the calling thread's innermost GPU zone of the context. */
void gnomon_gpu_zone_end(uint32_t context, uint32_t query_id);
/* The raw GPU value of a query, once the GPU wrote it. */
void gnomon_gpu_time(uint32_t context, uint32_t query_id, uint64_t gpu_ticks);
/* A calibration pair; the caller passes the CPU time of the pair. */
void gnomon_gpu_calibration(const gnomon_gpu_calibration_data* data);
/* The GPU clock jumped: re-anchor the context at this pair. */
void gnomon_gpu_resync(uint32_t context, uint64_t gpu_ticks, uint64_t cpu_time,
                       gnomon_cpu_time_domain cpu_domain, uint32_t uncertainty_ns);
/* A GPU time seen from the CPU: the GPU wrote gpu_ticks (raw) no earlier than
 * cpu_not_before (e.g. read just before the submit) and no later than cpu_not_after
 * (e.g. read as soon as the value was available), both in cpu_domain; 0 for a side not
 * known. Brackets narrow the absolute error bound of the context's GPU times where they
 * are tighter than the calibrations' stated uncertainty (docs/gpu-timestamps.md). */
void gnomon_gpu_time_bracket(uint32_t context, uint64_t gpu_ticks, uint64_t cpu_not_before,
                             uint64_t cpu_not_after, gnomon_cpu_time_domain cpu_domain);
/* A host clock reading (CLOCK_MONOTONIC_RAW or CLOCK_MONOTONIC ns) as Gnomon ticks,
 * through the program's latest calibration pairs. */
uint64_t gnomon_cpu_time_from_host_ns(gnomon_cpu_time_domain domain, int64_t host_ns);
/* An exact fraction for a period given as a float (Vulkan's timestampPeriod). */
void gnomon_gpu_period_from_float(double period_ns, uint64_t* numerator_ns, uint64_t* denominator);

/* ---- GPU counters ----
 * The performance-query model: a counter set (a query type) of a GPU context groups
 * counters measured together; one instance of the set, begun and ended around GPU work,
 * gives one value per counter. The collectors in gnomon/gpu_counters.hpp, vulkan.hpp and
 * opengl.hpp do this for you; these calls are for other sources and for bindings. */

typedef enum gnomon_counter_type {
  GNOMON_COUNTER_EVENT = 0,         /* a number of events */
  GNOMON_COUNTER_DURATION_NORM = 1, /* busy clocks, shown divided by the set's render clocks */
  GNOMON_COUNTER_DURATION_RAW = 2,
  GNOMON_COUNTER_THROUGHPUT = 3, /* bytes, shown divided by the measured time */
  GNOMON_COUNTER_RAW = 4,
  GNOMON_COUNTER_TIMESTAMP = 5
} gnomon_counter_type;

typedef enum gnomon_counter_data_type {
  GNOMON_COUNTER_UINT32 = 0,
  GNOMON_COUNTER_UINT64 = 1,
  GNOMON_COUNTER_FLOAT = 2,
  GNOMON_COUNTER_DOUBLE = 3,
  GNOMON_COUNTER_BOOL32 = 4
} gnomon_counter_data_type;

typedef struct gnomon_counter_info {
  const char* name;
  const char* description; /* may be NULL */
  gnomon_counter_type type;
  gnomon_counter_data_type data_type;
  uint32_t offset;  /* in the source's result structure */
  uint32_t size;    /* bytes there */
  uint64_t raw_max; /* largest value in one second, 0 when not known */
} gnomon_counter_info;

#define GNOMON_COUNTER_TARGET_GPU_ZONE 0u /* target_id: the zone's begin query id */
#define GNOMON_COUNTER_TARGET_FRAME 1u    /* target_id: the frame's number (main series, from 0) */
#define GNOMON_COUNTER_FREQUENCY_CHANGED 1u
#define GNOMON_COUNTER_SPLIT_OCCURRED 2u
/* Most values one result carries. */
#define GNOMON_MAX_COUNTER_VALUES (GNOMON_MAX_INLINE_STRING / 8u)

/* Defines a counter set of a GPU context; returns its id (never 0), or 0 when the
 * arguments are invalid (no counters, more than GNOMON_MAX_COUNTER_VALUES). */
uint32_t gnomon_counter_set_create(uint32_t context, const char* name, const gnomon_counter_info* counters,
                                   uint16_t count);
/* One instance's values, one per counter of the set, in order: integers (and bool32)
 * as they are, float and double as the bits of a double (memcpy a double into a
 * uint64_t). For a GPU zone, send it before the zone's GPU times. */
void gnomon_counter_result(uint32_t context, uint32_t set, uint8_t target, uint32_t target_id, uint8_t flags,
                           const uint64_t* values, uint16_t count);

#ifdef __cplusplus
}
#endif

/* ---- macros ---- */
#define GNOMON_CONCAT_INNER(a, b) a##b
#define GNOMON_CONCAT(a, b) GNOMON_CONCAT_INNER(a, b)

/* A zone's source location is a static made once, from constants: its name is a string
 * literal (or a constant), never text made at run time, which the location would keep
 * pointing to after it is gone. C refuses anything else by itself; C++20 is told so
 * with constinit, and the compiler's error names the variable
 * gnomon_zone_name_must_be_a_constant. A name known only at run time goes on the zone
 * with GNOMON_ZONE_NAME / gnomon::ZoneName (Tracy's layer: ZoneTransientN, ZoneName). */
#if defined(__cplusplus) && __cplusplus >= 202002L
#define GNOMON_CONSTANT_LOCATION_ static constinit
#else
#define GNOMON_CONSTANT_LOCATION_ static
#endif
#ifndef GNOMON_DISABLE
#define GNOMON_ZONE_BEGIN_C(zone_name, rgb)                                                  \
  do {                                                                                       \
    GNOMON_CONSTANT_LOCATION_ gnomon_source_location gnomon_zone_name_must_be_a_constant = { \
        (zone_name), __func__, __FILE__, (uint32_t)__LINE__, (rgb), 0u};                     \
    gnomon_zone_begin(&gnomon_zone_name_must_be_a_constant);                                 \
  } while (0)
#define GNOMON_ZONE_BEGIN(zone_name) GNOMON_ZONE_BEGIN_C(zone_name, GNOMON_NO_COLOR)
#define GNOMON_ZONE_END() gnomon_zone_end()
#if defined(__GNUC__) || defined(__clang__)
/* The address of a constant-initialized static source location for this line, as an
 * expression (a GCC/Clang statement expression, so that __func__ names the enclosing
 * function). The zone macros of the C++ API and of the GPU collectors use it. */
#define GNOMON_STATIC_LOCATION(zone_name, rgb)                                               \
  __extension__({                                                                            \
    GNOMON_CONSTANT_LOCATION_ gnomon_source_location gnomon_zone_name_must_be_a_constant = { \
        (zone_name), __func__, __FILE__, (uint32_t)__LINE__, (rgb), 0u};                     \
    &gnomon_zone_name_must_be_a_constant;                                                    \
  })
static inline void gnomon_scope_exit_(int* unused) {
  (void)unused;
  gnomon_zone_end();
}
#define GNOMON_ZONE_SCOPED(zone_name) \
  GNOMON_ZONE_BEGIN(zone_name);       \
  int GNOMON_CONCAT(gnomon_scope_, __LINE__) __attribute__((cleanup(gnomon_scope_exit_), unused)) = 0
#endif
#define GNOMON_ZONE_NAME(name, length) gnomon_zone_name((name), (length))
#define GNOMON_ZONE_TEXT(text, length) gnomon_zone_text((text), (length))
#define GNOMON_ZONE_COLOR(rgb) gnomon_zone_color(rgb)
#define GNOMON_ZONE_VALUE(value) gnomon_zone_value(value)
#define GNOMON_THREAD_NAME(name) gnomon_set_thread_name(name)
#define GNOMON_FRAME_MARK() gnomon_frame_mark(0)
#define GNOMON_MESSAGE(text, length) gnomon_message((text), (length), GNOMON_INFO)
#define GNOMON_MESSAGE_SEVERITY(text, length, severity) gnomon_message((text), (length), (severity))
#define GNOMON_ALLOC(ptr, size) gnomon_alloc((ptr), (size), NULL)
#define GNOMON_FREE(ptr) gnomon_free((ptr), NULL)
#define GNOMON_ALLOC_NAMED(ptr, size, pool_name) gnomon_alloc((ptr), (size), (pool_name))
#define GNOMON_FREE_NAMED(ptr, pool_name) gnomon_free((ptr), (pool_name))
/* The id of a name, registered once per call site (gnomon.hpp has its own for C++). */
static inline uint32_t gnomon_cached_id_(uint32_t* slot, uint32_t (*make)(const char*), const char* name) {
#if defined(__GNUC__) || defined(__clang__)
  uint32_t id = __atomic_load_n(slot, __ATOMIC_RELAXED);
  if (id == 0) {
    id = make(name);
    __atomic_store_n(slot, id, __ATOMIC_RELAXED);
  }
#else
  uint32_t id = *slot;
  if (id == 0) *slot = id = make(name);
#endif
  return id;
}
#ifndef __cplusplus
#define GNOMON_FRAME_MARK_NAMED(frame_name)                                                   \
  do {                                                                                        \
    static uint32_t gnomon_frame_id_ = 0;                                                     \
    gnomon_frame_mark(gnomon_cached_id_(&gnomon_frame_id_, gnomon_frame_name, (frame_name))); \
  } while (0)
#define GNOMON_PLOT(plot_name, value)                                                       \
  do {                                                                                      \
    static uint32_t gnomon_plot_id_ = 0;                                                    \
    gnomon_plot(gnomon_cached_id_(&gnomon_plot_id_, gnomon_plot_id, (plot_name)), (value)); \
  } while (0)
#endif
#else
#define GNOMON_ZONE_BEGIN_C(zone_name, rgb) \
  do {                                      \
  } while (0)
#define GNOMON_ZONE_BEGIN(zone_name) \
  do {                               \
  } while (0)
#define GNOMON_ZONE_END() \
  do {                    \
  } while (0)
#define GNOMON_ZONE_SCOPED(zone_name) \
  do {                                \
  } while (0)
/* Arguments are named (never evaluated), so variables used only here stay used. */
#define GNOMON_ZONE_NAME(name, length) ((void)sizeof(name), (void)sizeof((length) + 0))
#define GNOMON_ZONE_TEXT(text, length) ((void)sizeof(text), (void)sizeof((length) + 0))
#define GNOMON_ZONE_COLOR(rgb) ((void)sizeof((rgb) + 0))
#define GNOMON_ZONE_VALUE(value) ((void)sizeof((value) + 0))
#define GNOMON_THREAD_NAME(name) ((void)sizeof(name))
#define GNOMON_FRAME_MARK() \
  do {                      \
  } while (0)
#define GNOMON_MESSAGE(text, length) ((void)sizeof(text), (void)sizeof((length) + 0))
#define GNOMON_MESSAGE_SEVERITY(text, length, severity) \
  ((void)sizeof(text), (void)sizeof((length) + 0), (void)sizeof((severity) + 0))
#define GNOMON_ALLOC(ptr, size) ((void)sizeof(ptr), (void)sizeof((size) + 0))
#define GNOMON_FREE(ptr) ((void)sizeof(ptr))
#define GNOMON_ALLOC_NAMED(ptr, size, pool_name) ((void)sizeof(ptr), (void)sizeof((size) + 0))
#define GNOMON_FREE_NAMED(ptr, pool_name) ((void)sizeof(ptr))
#ifndef __cplusplus
#define GNOMON_FRAME_MARK_NAMED(frame_name) ((void)sizeof(frame_name))
#define GNOMON_PLOT(plot_name, value) ((void)sizeof(plot_name), (void)sizeof((value) + 0))
#endif

/* Every function, compiled out: no call, no argument evaluated, no symbol to link. */
static inline int gnomon_disabled_int_(size_t unused, int value) {
  (void)unused;
  return value;
}
static inline uint64_t gnomon_disabled_zero_(size_t unused) {
  (void)unused;
  return 0;
}
static inline uint32_t gnomon_disabled_id_(size_t unused) {
  (void)unused;
  return 1u;
}
static inline void gnomon_disabled_period_(double period_ns, uint64_t* numerator_ns, uint64_t* denominator) {
  *numerator_ns = (uint64_t)(period_ns * 1000000.0 + 0.5);
  *denominator = 1000000u;
}
/* Named, never evaluated: sizeof of the argument (for numbers, of `x + 0`, which a
 * bit-field allows). */
#define GNOMON_UNUSED_(x) ((void)sizeof(x))
#define GNOMON_UNUSED_NUMBER_(x) ((void)sizeof((x) + 0))
#define gnomon_set_listen_address(address, port) gnomon_disabled_int_(sizeof(address) + sizeof((port) + 0), 0)
#define gnomon_set_buffer_budget(bytes) gnomon_disabled_int_(sizeof((bytes) + 0), 0)
#define gnomon_set_buffer_policy(policy) gnomon_disabled_int_(sizeof((policy) + 0), 0)
#define gnomon_set_on_demand(enabled) gnomon_disabled_int_(sizeof((enabled) + 0), 0)
#define gnomon_set_output_file(path) gnomon_disabled_int_(sizeof(path), 0)
#define gnomon_save_recording(path) gnomon_disabled_int_(sizeof(path), -1)
#define gnomon_request_save() ((void)0)
#define gnomon_startup() gnomon_disabled_int_(0, 0)
#define gnomon_listen_port() ((uint16_t)gnomon_disabled_zero_(0))
#define gnomon_is_connected() gnomon_disabled_int_(0, 0)
#define gnomon_wait_for_server(timeout_ms) gnomon_disabled_int_(sizeof((timeout_ms) + 0), 0)
#define gnomon_shutdown() ((void)0)
#define gnomon_dropped_events() gnomon_disabled_zero_(0)
#define gnomon_now() gnomon_disabled_zero_(0)
#define gnomon_zone_begin(location) GNOMON_UNUSED_(location)
#define gnomon_zone_begin_callstack(location, depth) (GNOMON_UNUSED_(location), GNOMON_UNUSED_NUMBER_(depth))
#define gnomon_zone_end() ((void)0)
#define gnomon_zone_name(name, length) GNOMON_ZONE_NAME(name, length)
#define gnomon_zone_text(text, length) GNOMON_ZONE_TEXT(text, length)
#define gnomon_zone_color(rgb) GNOMON_UNUSED_NUMBER_(rgb)
#define gnomon_zone_value(value) GNOMON_UNUSED_NUMBER_(value)
#define gnomon_frame_name(name) gnomon_disabled_id_(sizeof(name))
#define gnomon_frame_mark(name_id) GNOMON_UNUSED_NUMBER_(name_id)
#define gnomon_frame_begin(name_id) GNOMON_UNUSED_NUMBER_(name_id)
#define gnomon_frame_end(name_id) GNOMON_UNUSED_NUMBER_(name_id)
#define gnomon_set_thread_name(name) GNOMON_UNUSED_(name)
#define gnomon_message(text, length, severity) GNOMON_MESSAGE_SEVERITY(text, length, severity)
#define gnomon_plot_id(name) gnomon_disabled_id_(sizeof(name))
#define gnomon_plot(plot_id, value) (GNOMON_UNUSED_NUMBER_(plot_id), GNOMON_UNUSED_NUMBER_(value))
#define gnomon_alloc(ptr, size, name) (GNOMON_UNUSED_(ptr), GNOMON_UNUSED_NUMBER_(size), GNOMON_UNUSED_(name))
#define gnomon_free(ptr, name) (GNOMON_UNUSED_(ptr), GNOMON_UNUSED_(name))
#define gnomon_alloc_at(ptr, size, name, cpu_time) \
  (GNOMON_UNUSED_(ptr), GNOMON_UNUSED_NUMBER_(size), GNOMON_UNUSED_(name), GNOMON_UNUSED_NUMBER_(cpu_time))
#define gnomon_free_at(ptr, name, cpu_time) \
  (GNOMON_UNUSED_(ptr), GNOMON_UNUSED_(name), GNOMON_UNUSED_NUMBER_(cpu_time))
#define gnomon_lock_create(name) gnomon_disabled_id_(sizeof(name))
#define gnomon_lock_destroy(lock) GNOMON_UNUSED_NUMBER_(lock)
#define gnomon_lock_wait(lock) GNOMON_UNUSED_NUMBER_(lock)
#define gnomon_lock_obtain(lock) GNOMON_UNUSED_NUMBER_(lock)
#define gnomon_lock_obtain_shared(lock) GNOMON_UNUSED_NUMBER_(lock)
#define gnomon_lock_release(lock) GNOMON_UNUSED_NUMBER_(lock)
/* Variadic: a compound literal's commas stay inside the one argument. */
#define gnomon_gpu_context_create(...) gnomon_disabled_id_(sizeof(__VA_ARGS__))
#define gnomon_gpu_context_name(context, name, length) \
  (GNOMON_UNUSED_NUMBER_(context), GNOMON_UNUSED_(name), GNOMON_UNUSED_NUMBER_(length))
#define gnomon_gpu_zone_begin(context, query_id, location) \
  (GNOMON_UNUSED_NUMBER_(context), GNOMON_UNUSED_NUMBER_(query_id), GNOMON_UNUSED_(location))
#define gnomon_gpu_zone_end(context, query_id) \
  (GNOMON_UNUSED_NUMBER_(context), GNOMON_UNUSED_NUMBER_(query_id))
#define gnomon_gpu_time(context, query_id, gpu_ticks) \
  (GNOMON_UNUSED_NUMBER_(context), GNOMON_UNUSED_NUMBER_(query_id), GNOMON_UNUSED_NUMBER_(gpu_ticks))
#define gnomon_gpu_calibration(...) ((void)sizeof(__VA_ARGS__))
#define gnomon_gpu_resync(context, gpu_ticks, cpu_time, cpu_domain, uncertainty_ns)                   \
  (GNOMON_UNUSED_NUMBER_(context), GNOMON_UNUSED_NUMBER_(gpu_ticks), GNOMON_UNUSED_NUMBER_(cpu_time), \
   GNOMON_UNUSED_NUMBER_(cpu_domain), GNOMON_UNUSED_NUMBER_(uncertainty_ns))
#define gnomon_gpu_time_bracket(context, gpu_ticks, cpu_not_before, cpu_not_after, cpu_domain)              \
  (GNOMON_UNUSED_NUMBER_(context), GNOMON_UNUSED_NUMBER_(gpu_ticks), GNOMON_UNUSED_NUMBER_(cpu_not_before), \
   GNOMON_UNUSED_NUMBER_(cpu_not_after), GNOMON_UNUSED_NUMBER_(cpu_domain))
#define gnomon_cpu_time_from_host_ns(domain, host_ns) \
  gnomon_disabled_zero_(sizeof((domain) + 0) + sizeof((host_ns) + 0))
#define gnomon_gpu_period_from_float(period_ns, numerator_ns, denominator) \
  gnomon_disabled_period_((period_ns), (numerator_ns), (denominator))
#define gnomon_counter_set_create(context, name, counters, count) \
  gnomon_disabled_id_(sizeof((context) + 0) + sizeof(name) + sizeof(counters) + sizeof((count) + 0))
#define gnomon_counter_result(context, set, target, target_id, flags, values, count)          \
  (GNOMON_UNUSED_NUMBER_(context), GNOMON_UNUSED_NUMBER_(set), GNOMON_UNUSED_NUMBER_(target), \
   GNOMON_UNUSED_NUMBER_(target_id), GNOMON_UNUSED_NUMBER_(flags), GNOMON_UNUSED_(values),    \
   GNOMON_UNUSED_NUMBER_(count))
#endif

#endif /* GNOMON_GNOMON_H_ */
