// Gnomon wire messages: the stream a profiled program sends after the handshake.
//
// The stream is a sequence of messages. Each message starts with a one-byte type tag
// followed by a fixed-layout, packed, little-endian body. Some messages end with
// variable-length strings whose lengths are fields of the fixed body, so the size of
// every message is known once its fixed part has arrived. There are no pointers and no
// implicit padding: the structs below *are* the byte layout (see docs/protocol.md), and
// their sizes are checked at compile time.
//
// Events that belong to a thread (zones, messages, plots, frame marks) follow a
// ThreadContext message naming that thread; the context holds until the next one.
// Trace files store the same stream in compressed blocks, so one decoder serves both.
//
// Timestamps are raw CPU ticks of the program's timer (see AppInfo::timer_kind); the
// server maps them to nanoseconds with the CpuCalibration pairs the program sends.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gnomon/protocol/byte_io.h"

namespace gnomon::protocol {

inline constexpr uint16_t kProtocolVersion = 1;

enum class MessageType : uint8_t {
  kThreadContext = 1,
  kZoneBegin = 2,
  kZoneEnd = 3,
  kZoneName = 4,
  kZoneText = 5,
  kZoneColor = 6,
  kZoneValue = 7,
  kFrameMark = 8,
  kFrameBegin = 9,
  kFrameEnd = 10,
  kLogMessage = 11,
  kPlotValue = 12,
  kCpuCalibration = 13,
  kStringDef = 14,
  kSourceLocationDef = 15,
  kThreadInfo = 16,
  kAppInfo = 17,
  kDroppedEvents = 18,
  kEndOfStream = 19,
  kGpuContextDef = 20,
  kGpuZoneBegin = 21,
  kGpuZoneEnd = 22,
  kGpuTime = 23,
  kGpuCalibration = 24,
  kGpuResync = 25,
  kGpuContextName = 26,
  kCounterSetDef = 27,
  kCounterDef = 28,
  kCounterResult = 29,
};

// Highest type value this build understands; larger tags are rejected.
inline constexpr uint8_t kLastMessageType = 29;

// Longest string that travels in one message. Strings are bytes (UTF-8 by convention),
// not NUL-terminated.
inline constexpr uint32_t kMaxStringBytes = 0xFFFF;

// Colour value meaning "no colour chosen; derive one from the source location".
inline constexpr uint32_t kNoColor = 0xFF000000u;

// What a StringDef names.
enum class StringKind : uint8_t {
  kFrameName = 1,
  kPlotName = 2,
};

enum class TimerKind : uint8_t {
  kTsc = 1,              // x86 invariant time-stamp counter
  kMonotonicRaw = 2,     // CLOCK_MONOTONIC_RAW nanoseconds (ticks are ns)
};

enum class GpuApi : uint8_t {
  kUnknown = 0,
  kVulkan = 1,
  kOpenGL = 2,
  kCuda = 3,
};

// The clock a CPU time in a GPU message is read on. Vulkan's calibrated timestamps give
// CLOCK_MONOTONIC_RAW (or CLOCK_MONOTONIC) nanoseconds: passing them as they are keeps
// the pair exact.
enum class CpuTimeDomain : uint8_t {
  kTicks = 0,         // the program's timer, as in every other message
  kMonotonicRaw = 1,  // CLOCK_MONOTONIC_RAW ns
  kMonotonic = 2,     // CLOCK_MONOTONIC ns
};

enum GpuContextFlags : uint16_t {
  kGpuContextCalibrated = 1 << 0,          // pairs come from a simultaneous-read API
  kGpuContextFallbackCalibration = 1 << 1,  // pairs come from a submit/fence bracket
};

enum class Severity : uint8_t {
  kTrace = 0,
  kDebug = 1,
  kInfo = 2,
  kWarning = 3,
  kError = 4,
  kFatal = 5,
};

#pragma pack(push, 1)

// Switches the thread that subsequent thread-bound events belong to.
struct ThreadContext {
  uint8_t type;
  uint32_t thread_id;  // program-assigned, 1-based, never reused within a run
};

struct ZoneBegin {
  uint8_t type;
  uint32_t srcloc_id;  // defined by a SourceLocationDef, possibly later in the stream
  uint64_t tick;
};

struct ZoneEnd {
  uint8_t type;
  uint64_t tick;
};

// ZoneName and ZoneText attach to the innermost open zone of the current thread.
struct ZoneString {
  uint8_t type;
  uint16_t length;  // bytes that follow
};

struct ZoneColor {
  uint8_t type;
  uint32_t rgb;  // 0x00RRGGBB
};

struct ZoneValue {
  uint8_t type;
  uint64_t value;
};

// FrameMark ends one frame of a continuous series and starts the next; name_id 0 is the
// main frame series. FrameBegin/FrameEnd bracket a discontinuous named frame.
struct FrameEvent {
  uint8_t type;
  uint32_t name_id;  // 0, or a StringDef of kind kFrameName
  uint64_t tick;
};

struct LogMessage {
  uint8_t type;
  uint64_t tick;
  uint8_t severity;  // Severity
  uint16_t length;   // bytes of text that follow
};

struct PlotValue {
  uint8_t type;
  uint32_t plot_id;  // a StringDef of kind kPlotName
  uint64_t tick;
  double value;
};

// One simultaneous reading of the program's timer and the system clocks.
struct CpuCalibration {
  uint8_t type;
  uint64_t tick;
  int64_t monotonic_raw_ns;
  int64_t monotonic_ns;
  uint32_t uncertainty_ns;  // width of the bracket the pair was read in
};

struct StringDef {
  uint8_t type;
  uint32_t id;
  uint8_t kind;     // StringKind
  uint16_t length;  // bytes that follow
};

// Followed by name, function and file bytes, in that order.
struct SourceLocationDef {
  uint8_t type;
  uint32_t id;
  uint32_t line;
  uint32_t color;  // 0x00RRGGBB or kNoColor
  uint16_t name_length;
  uint16_t function_length;
  uint16_t file_length;
};

// Followed by the thread name; sent again when the name changes.
struct ThreadInfo {
  uint8_t type;
  uint32_t thread_id;
  uint32_t os_thread_id;
  uint16_t name_length;
};

// First message of every stream. Followed by the program name.
struct AppInfo {
  uint8_t type;
  uint32_t pid;
  uint8_t timer_kind;      // TimerKind
  uint64_t ticks_per_second_estimate;  // start-up estimate; calibration pairs rule
  int64_t start_unix_ns;   // wall clock when the program's profiler started
  uint64_t start_tick;
  uint16_t name_length;
};

// Running total of events the program dropped (buffer budget exhausted).
struct DroppedEvents {
  uint8_t type;
  uint64_t total_events;
};

// The program shuts down cleanly; nothing follows.
struct EndOfStream {
  uint8_t type;
  uint64_t tick;
};

// A GPU context (a device queue, a GL context, a CUDA device): a clock domain of its
// own. Followed by the device name. Sent once, before or after its first use.
struct GpuContextDef {
  uint8_t type;
  uint32_t context_id;           // program-assigned, from 1
  uint8_t api;                   // GpuApi
  uint8_t valid_bits;            // of the GPU timestamp counter, 1..64
  uint16_t flags;                // GpuContextFlags
  uint64_t period_numerator_ns;  // tick period = numerator / denominator ns, exactly
  uint64_t period_denominator;
  uint64_t gpu_ticks;            // an initial pair: GPU ticks...
  uint64_t cpu_time;             // ...and the CPU time at the same instant
  uint8_t cpu_domain;            // CpuTimeDomain of cpu_time
  uint32_t uncertainty_ns;       // of the initial pair
  uint16_t name_length;
};

// A GPU zone recorded on the current thread: its begin and end timestamps arrive later,
// as GpuTime messages for begin_query and end_query. Zones nest per thread and context.
struct GpuZoneBegin {
  uint8_t type;
  uint32_t context_id;
  uint32_t query_id;   // the timestamp query written at the zone's begin
  uint32_t srcloc_id;
  uint64_t cpu_tick;   // when the CPU recorded it
};

struct GpuZoneEnd {
  uint8_t type;
  uint32_t context_id;
  uint32_t query_id;   // the timestamp query written at the zone's end
  uint64_t cpu_tick;
};

// The GPU's value for a query, raw (not unwrapped, not scaled).
struct GpuTime {
  uint8_t type;
  uint32_t context_id;
  uint32_t query_id;
  uint64_t gpu_ticks;
};

// GPU ticks and the CPU time read at the same instant.
struct GpuCalibration {
  uint8_t type;
  uint32_t context_id;
  uint64_t gpu_ticks;
  uint64_t cpu_time;
  int64_t cpu_delta_ns;     // CPU ns since this context's previous calibration
  uint32_t uncertainty_ns;  // e.g. Vulkan's maxDeviation, or a bracket width
  uint8_t cpu_domain;       // CpuTimeDomain of cpu_time
};

// The GPU clock jumped (device reset, clock change): re-anchor at this pair.
struct GpuResync {
  uint8_t type;
  uint32_t context_id;
  uint64_t gpu_ticks;
  uint64_t cpu_time;
  uint32_t uncertainty_ns;
  uint8_t cpu_domain;
};

// Followed by the name shown for the context.
struct GpuContextName {
  uint8_t type;
  uint32_t context_id;
  uint16_t length;
};

// GPU counters follow the performance-query model: a counter set (a query type) groups
// counters that are measured together; an instance of the set is begun and ended around
// GPU work, and its result holds one value per counter.

// Kinds of counter, as in GL_INTEL_performance_query.
enum class CounterType : uint8_t {
  kEvent = 0,         // a number of events (invocations, primitives)
  kDurationNorm = 1,  // busy clocks; divided by the set's render clocks, a fraction of time
  kDurationRaw = 2,   // a duration in the counter's own unit
  kThroughput = 3,    // bytes moved; divided by the zone's duration, a rate per second
  kRaw = 4,           // a value shown as it is
  kTimestamp = 5,
};

enum class CounterDataType : uint8_t {
  kUint32 = 0,
  kUint64 = 1,
  kFloat = 2,
  kDouble = 3,
  kBool32 = 4,
};

enum CounterResultFlags : uint8_t {
  kCounterFrequencyChanged = 1 << 0,  // the render clock changed during the measurement
  kCounterSplitOccurred = 1 << 1,     // the work was split or preempted
};

// What a counter result measured.
enum class CounterTarget : uint8_t {
  kGpuZone = 0,  // the GPU zone whose begin query is target_id, on context_id
  kFrame = 1,    // frame target_id (0-based) of the main frame series
};

// A counter set of a GPU context, sent once before its counters and results. Followed
// by the set's name.
struct CounterSetDef {
  uint8_t type;
  uint32_t context_id;
  uint32_t set_id;         // program-assigned, from 1
  uint16_t counter_count;  // CounterDef messages that follow, index 0..count-1
  uint16_t name_length;
};

// One counter of a set. Followed by its name, then its description.
struct CounterDef {
  uint8_t type;
  uint32_t set_id;
  uint16_t index;
  uint8_t counter_type;  // CounterType
  uint8_t data_type;     // CounterDataType
  uint32_t offset;       // in the source's result structure (informative)
  uint32_t size;         // bytes, in that structure
  uint64_t raw_max;      // largest value in one second, 0 when not known
  uint16_t name_length;
  uint16_t description_length;
};

// One instance's values. Followed by value_count 8-byte little-endian values, one per
// counter by index: integers (and bool32) as uint64, float and double as the bits of a
// double.
struct CounterResult {
  uint8_t type;
  uint32_t context_id;
  uint32_t set_id;
  uint8_t target;  // CounterTarget
  uint8_t flags;   // CounterResultFlags
  uint32_t target_id;
  uint16_t value_count;
};

// Most counters one set may have (and values one result may carry).
inline constexpr uint16_t kMaxCounters = 4096;

#pragma pack(pop)

static_assert(sizeof(CounterSetDef) == 13);
static_assert(sizeof(CounterDef) == 29);
static_assert(sizeof(CounterResult) == 17);
static_assert(sizeof(GpuContextDef) == 48);
static_assert(sizeof(GpuZoneBegin) == 21);
static_assert(sizeof(GpuZoneEnd) == 17);
static_assert(sizeof(GpuTime) == 17);
static_assert(sizeof(GpuCalibration) == 34);
static_assert(sizeof(GpuResync) == 26);
static_assert(sizeof(GpuContextName) == 7);
static_assert(sizeof(ThreadContext) == 5);
static_assert(sizeof(ZoneBegin) == 13);
static_assert(sizeof(ZoneEnd) == 9);
static_assert(sizeof(ZoneString) == 3);
static_assert(sizeof(ZoneColor) == 5);
static_assert(sizeof(ZoneValue) == 9);
static_assert(sizeof(FrameEvent) == 13);
static_assert(sizeof(LogMessage) == 12);
static_assert(sizeof(PlotValue) == 21);
static_assert(sizeof(CpuCalibration) == 29);
static_assert(sizeof(StringDef) == 8);
static_assert(sizeof(SourceLocationDef) == 19);
static_assert(sizeof(ThreadInfo) == 11);
static_assert(sizeof(AppInfo) == 32);
static_assert(sizeof(DroppedEvents) == 9);
static_assert(sizeof(EndOfStream) == 9);

// Size of the fixed part of a message of type `type` (tag included), or 0 when the tag
// is not a known message type.
constexpr size_t FixedSize(uint8_t type) {
  switch (static_cast<MessageType>(type)) {
    case MessageType::kThreadContext: return sizeof(ThreadContext);
    case MessageType::kZoneBegin: return sizeof(ZoneBegin);
    case MessageType::kZoneEnd: return sizeof(ZoneEnd);
    case MessageType::kZoneName:
    case MessageType::kZoneText: return sizeof(ZoneString);
    case MessageType::kZoneColor: return sizeof(ZoneColor);
    case MessageType::kZoneValue: return sizeof(ZoneValue);
    case MessageType::kFrameMark:
    case MessageType::kFrameBegin:
    case MessageType::kFrameEnd: return sizeof(FrameEvent);
    case MessageType::kLogMessage: return sizeof(LogMessage);
    case MessageType::kPlotValue: return sizeof(PlotValue);
    case MessageType::kCpuCalibration: return sizeof(CpuCalibration);
    case MessageType::kStringDef: return sizeof(StringDef);
    case MessageType::kSourceLocationDef: return sizeof(SourceLocationDef);
    case MessageType::kThreadInfo: return sizeof(ThreadInfo);
    case MessageType::kAppInfo: return sizeof(AppInfo);
    case MessageType::kDroppedEvents: return sizeof(DroppedEvents);
    case MessageType::kEndOfStream: return sizeof(EndOfStream);
    case MessageType::kGpuContextDef: return sizeof(GpuContextDef);
    case MessageType::kGpuZoneBegin: return sizeof(GpuZoneBegin);
    case MessageType::kGpuZoneEnd: return sizeof(GpuZoneEnd);
    case MessageType::kGpuTime: return sizeof(GpuTime);
    case MessageType::kGpuCalibration: return sizeof(GpuCalibration);
    case MessageType::kGpuResync: return sizeof(GpuResync);
    case MessageType::kGpuContextName: return sizeof(GpuContextName);
    case MessageType::kCounterSetDef: return sizeof(CounterSetDef);
    case MessageType::kCounterDef: return sizeof(CounterDef);
    case MessageType::kCounterResult: return sizeof(CounterResult);
  }
  return 0;
}

// Bytes that follow the fixed part of a message, read from that fixed part. `fixed`
// must point at FixedSize(type) readable bytes of a message of a known type.
inline size_t VariableSize(uint8_t type, const uint8_t* fixed) {
  switch (static_cast<MessageType>(type)) {
    case MessageType::kZoneName:
    case MessageType::kZoneText:
      return LoadLe<uint16_t>(fixed + offsetof(ZoneString, length));
    case MessageType::kLogMessage:
      return LoadLe<uint16_t>(fixed + offsetof(LogMessage, length));
    case MessageType::kStringDef:
      return LoadLe<uint16_t>(fixed + offsetof(StringDef, length));
    case MessageType::kSourceLocationDef:
      return size_t{LoadLe<uint16_t>(fixed + offsetof(SourceLocationDef, name_length))} +
             LoadLe<uint16_t>(fixed + offsetof(SourceLocationDef, function_length)) +
             LoadLe<uint16_t>(fixed + offsetof(SourceLocationDef, file_length));
    case MessageType::kThreadInfo:
      return LoadLe<uint16_t>(fixed + offsetof(ThreadInfo, name_length));
    case MessageType::kAppInfo:
      return LoadLe<uint16_t>(fixed + offsetof(AppInfo, name_length));
    case MessageType::kGpuContextDef:
      return LoadLe<uint16_t>(fixed + offsetof(GpuContextDef, name_length));
    case MessageType::kGpuContextName:
      return LoadLe<uint16_t>(fixed + offsetof(GpuContextName, length));
    case MessageType::kCounterSetDef:
      return LoadLe<uint16_t>(fixed + offsetof(CounterSetDef, name_length));
    case MessageType::kCounterDef:
      return size_t{LoadLe<uint16_t>(fixed + offsetof(CounterDef, name_length))} +
             LoadLe<uint16_t>(fixed + offsetof(CounterDef, description_length));
    case MessageType::kCounterResult:
      return size_t{LoadLe<uint16_t>(fixed + offsetof(CounterResult, value_count))} * 8;
    default:
      return 0;
  }
}

// Largest possible message: the biggest fixed part plus three maximal strings, or a
// counter result with 65,535 values.
inline constexpr size_t kMaxMessageBytes = 64 + 8 * size_t{0xFFFF};

// Human-readable name of a message type, for errors and docs; "unknown" otherwise.
constexpr const char* MessageTypeName(uint8_t type) {
  switch (static_cast<MessageType>(type)) {
    case MessageType::kThreadContext: return "ThreadContext";
    case MessageType::kZoneBegin: return "ZoneBegin";
    case MessageType::kZoneEnd: return "ZoneEnd";
    case MessageType::kZoneName: return "ZoneName";
    case MessageType::kZoneText: return "ZoneText";
    case MessageType::kZoneColor: return "ZoneColor";
    case MessageType::kZoneValue: return "ZoneValue";
    case MessageType::kFrameMark: return "FrameMark";
    case MessageType::kFrameBegin: return "FrameBegin";
    case MessageType::kFrameEnd: return "FrameEnd";
    case MessageType::kLogMessage: return "LogMessage";
    case MessageType::kPlotValue: return "PlotValue";
    case MessageType::kCpuCalibration: return "CpuCalibration";
    case MessageType::kStringDef: return "StringDef";
    case MessageType::kSourceLocationDef: return "SourceLocationDef";
    case MessageType::kThreadInfo: return "ThreadInfo";
    case MessageType::kAppInfo: return "AppInfo";
    case MessageType::kDroppedEvents: return "DroppedEvents";
    case MessageType::kEndOfStream: return "EndOfStream";
    case MessageType::kGpuContextDef: return "GpuContextDef";
    case MessageType::kGpuZoneBegin: return "GpuZoneBegin";
    case MessageType::kGpuZoneEnd: return "GpuZoneEnd";
    case MessageType::kGpuTime: return "GpuTime";
    case MessageType::kGpuCalibration: return "GpuCalibration";
    case MessageType::kGpuResync: return "GpuResync";
    case MessageType::kGpuContextName: return "GpuContextName";
    case MessageType::kCounterSetDef: return "CounterSetDef";
    case MessageType::kCounterDef: return "CounterDef";
    case MessageType::kCounterResult: return "CounterResult";
  }
  return "unknown";
}

}  // namespace gnomon::protocol
