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
};

// Highest type value this build understands; larger tags are rejected.
inline constexpr uint8_t kLastMessageType = 19;

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

#pragma pack(pop)

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
    default:
      return 0;
  }
}

// Largest possible message: the biggest fixed part plus three maximal strings.
inline constexpr size_t kMaxMessageBytes = 64 + 3 * size_t{kMaxStringBytes};

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
  }
  return "unknown";
}

}  // namespace gnomon::protocol
