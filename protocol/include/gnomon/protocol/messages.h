// Gnomon wire messages: the stream a profiled program sends after the handshake.
//
// The stream is a sequence of messages. Each message starts with a one-byte type tag
// followed by a fixed-layout, packed, little-endian body. Some messages end with
// strings or values whose lengths are fields of the fixed body, so the size of every
// message is known once its fixed part has arrived. There are no pointers and no
// implicit padding: the structs below *are* the byte layout (docs/protocol.md).
//
// Every message is declared once, in the catalogue (messages.def); this header turns
// that list into what code uses:
//
//   protocol::ZoneBegin m{.srcloc_id = id, .tick = now};  // a packed struct per message;
//                                                         // `type` is preset to its tag
//   uint8_t* end = protocol::WriteMessage(out, m);        // typed writers (they fill the
//   protocol::WriteMessage(out, protocol::ZoneName{},     // length fields from the tail)
//                          {.name = "label"});
//   protocol::MeasureMessage(p, left)                     // whole, cut short or unknown
//   protocol::FindMessage(tag)->name                      // the catalogue, by tag
//
// Events that belong to a thread (zones, messages, GPU zones) follow a ThreadContext
// message naming that thread; the context holds until the next one. Trace files store
// the same stream in compressed blocks, so one decoder serves both.
//
// Timestamps are raw CPU ticks of the program's timer (see AppInfo::timer_kind); the
// server maps them to nanoseconds with the CpuCalibration pairs the program sends.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "gnomon/protocol/byte_io.h"

namespace gnomon::protocol {

inline constexpr uint16_t kProtocolVersion = 1;

// Longest string that travels in one message. Strings are bytes (UTF-8 by convention),
// not NUL-terminated.
inline constexpr uint32_t kMaxStringBytes = 0xFFFF;

// Colour value meaning "no colour chosen; derive one from the source location".
inline constexpr uint32_t kNoColor = 0xFF000000u;

// What a StringDef names.
enum class StringKind : uint8_t {
  kFrameName = 1,
  kPlotName = 2,
  kMemoryPool = 3,
  kLockName = 4,  // one StringDef per lock: two locks of one name have ids of their own
};

enum LockFlags : uint8_t {
  kLockShared = 1 << 0,  // a reader's hold of a shared lock
};

enum class ContextSwitchKind : uint8_t {
  kOut = 0,  // the thread stopped running: it blocked (a sleep, a lock, I/O), or the kernel did not say
  kIn = 1,   // the thread started running
  kOutPreempted = 2,  // the thread stopped running while it could run on: another took its CPU
};
inline constexpr bool IsSwitchOut(uint8_t kind) {
  return kind == uint8_t(ContextSwitchKind::kOut) || kind == uint8_t(ContextSwitchKind::kOutPreempted);
}

enum class TimerKind : uint8_t {
  kTsc = 1,           // x86 invariant time-stamp counter
  kMonotonicRaw = 2,  // CLOCK_MONOTONIC_RAW nanoseconds (ticks are ns)
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
  kGpuContextCalibrated = 1 << 0,           // pairs come from a simultaneous-read API
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

// "trace", "debug", ... "fatal"; "unknown" for a value past kFatal.
constexpr const char* SeverityName(uint8_t severity) {
  constexpr const char* kNames[] = {"trace", "debug", "info", "warning", "error", "fatal"};
  return severity < std::size(kNames) ? kNames[severity] : "unknown";
}

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

// Most counters one set may have (and values one result may carry).
inline constexpr uint16_t kMaxCounters = 4096;

// ---- What the catalogue makes ------------------------------------------------------

enum class MessageType : uint8_t {
#define GNOMON_WIRE_MESSAGE(TAG, NAME, SCOPE) k##NAME = TAG,
#include "gnomon/protocol/messages.def"
};

namespace catalogue_detail {
using WireU8 = uint8_t;
using WireU16 = uint16_t;
using WireU32 = uint32_t;
using WireU64 = uint64_t;
using WireI64 = int64_t;
using WireF64 = double;
using WireTICK = uint64_t;
}  // namespace catalogue_detail

// The values after a message's fixed part, as they lie there: unaligned little-endian
// 8-byte words. For writing, `bytes` may point at an array of uint64_t.
struct LeValues {
  const uint8_t* bytes = nullptr;
  size_t count = 0;
  uint64_t operator[](size_t i) const { return LoadLe<uint64_t>(bytes + 8 * i); }
};

// For each message, NameTail: the strings and values after its fixed part (empty for
// most messages). Strings point into the bytes they were read from.
#define GNOMON_WIRE_MESSAGE(TAG, NAME, SCOPE) struct NAME##Tail {
#define GNOMON_WIRE_STRING(LEN, TAIL) std::string_view TAIL;
#define GNOMON_WIRE_VALUES(COUNT, TAIL) LeValues TAIL;
// clang-format off
#define GNOMON_WIRE_END() };
// clang-format on
#include "gnomon/protocol/messages.def"

// The packed structs. Length and count fields start at 0; WriteMessage sets them.
#pragma pack(push, 1)
#define GNOMON_WIRE_MESSAGE(TAG, NAME, SCOPE)                  \
  struct NAME {                                                \
    static constexpr MessageType kType = MessageType::k##NAME; \
    using Tail = NAME##Tail;                                   \
    uint8_t type = TAG;
#define GNOMON_WIRE_FIELD(KIND, FIELD) catalogue_detail::Wire##KIND FIELD;
#define GNOMON_WIRE_STRING(LEN, TAIL) uint16_t LEN = 0;
#define GNOMON_WIRE_VALUES(COUNT, TAIL) uint16_t COUNT = 0;
// clang-format off
#define GNOMON_WIRE_END() };
// clang-format on
#include "gnomon/protocol/messages.def"
#pragma pack(pop)

// A fixed field's role, as the catalogue gives it (docs/protocol.md's "type" column).
enum class FieldKind : uint8_t { kTag, kU8, kU16, kU32, kU64, kI64, kF64, kTick, kStringLength, kValueCount };

struct FieldInfo {
  const char* name;  // as in the struct
  FieldKind kind;
  uint8_t offset;         // in the message, tag at 0
  uint8_t size;           // bytes
  const char* tail_name;  // for kStringLength and kValueCount: what follows; else nullptr
};

namespace catalogue_detail {
constexpr FieldKind kKindU8 = FieldKind::kU8;
constexpr FieldKind kKindU16 = FieldKind::kU16;
constexpr FieldKind kKindU32 = FieldKind::kU32;
constexpr FieldKind kKindU64 = FieldKind::kU64;
constexpr FieldKind kKindI64 = FieldKind::kI64;
constexpr FieldKind kKindF64 = FieldKind::kF64;
constexpr FieldKind kKindTICK = FieldKind::kTick;

#define GNOMON_WIRE_MESSAGE(TAG, NAME, SCOPE) \
  struct NAME##Fields {                       \
    using M = NAME;                           \
    static constexpr FieldInfo kList[] = {{"type", FieldKind::kTag, 0, 1, nullptr},
#define GNOMON_WIRE_FIELD(KIND, FIELD) {#FIELD, kKind##KIND, offsetof(M, FIELD), sizeof(M::FIELD), nullptr},
#define GNOMON_WIRE_STRING(LEN, TAIL) {#LEN, FieldKind::kStringLength, offsetof(M, LEN), 2, #TAIL},
#define GNOMON_WIRE_VALUES(COUNT, TAIL) {#COUNT, FieldKind::kValueCount, offsetof(M, COUNT), 2, #TAIL},
// clang-format off
#define GNOMON_WIRE_END() }; };
// clang-format on
#include "gnomon/protocol/messages.def"
}  // namespace catalogue_detail

// Most tails one message has (SourceLocationDef: name, function and file).
inline constexpr size_t kMaxTails = 3;

struct MessageInfo {
  const char* name = nullptr;  // nullptr: no message has this tag
  uint8_t tag = 0;
  bool is_thread_bound = false;  // belongs to the thread of the last ThreadContext
  uint8_t fixed_size = 0;        // tag included
  uint8_t tick_offset = 0;       // of the TICK field; 0: none
  uint8_t tail_count = 0;
  struct Tail {
    uint8_t length_offset;  // of the u16 length or count
    uint8_t unit_bytes;     // 1 for a string, 8 for values
  };
  std::array<Tail, kMaxTails> tails{};
  const FieldInfo* fields = nullptr;
  uint8_t field_count = 0;
  size_t max_size = 0;  // with every tail at its largest
};

namespace catalogue_detail {
template <size_t N>
constexpr MessageInfo Describe(const char* name, uint8_t tag, bool is_thread_bound, size_t fixed_size,
                               const FieldInfo (&fields)[N]) {
  MessageInfo info;
  info.name = name;
  info.tag = tag;
  info.is_thread_bound = is_thread_bound;
  info.fixed_size = uint8_t(fixed_size);
  info.fields = fields;
  info.field_count = uint8_t(N);
  info.max_size = fixed_size;
  for (const FieldInfo& field : fields) {
    if (field.kind == FieldKind::kTick) info.tick_offset = field.offset;
    if (field.kind == FieldKind::kStringLength || field.kind == FieldKind::kValueCount) {
      const uint8_t unit = field.kind == FieldKind::kStringLength ? 1 : 8;
      info.tails[info.tail_count++] = {field.offset, unit};
      info.max_size += size_t{unit} * 0xFFFF;
    }
  }
  return info;
}

constexpr bool kScopeTHREAD = true;
constexpr bool kScopeSTREAM = false;

constexpr std::array<MessageInfo, 256> MakeCatalogue() {
  std::array<MessageInfo, 256> table{};
#define GNOMON_WIRE_MESSAGE(TAG, NAME, SCOPE) \
  table[TAG] = Describe(#NAME, TAG, kScope##SCOPE, sizeof(NAME), NAME##Fields::kList);
#include "gnomon/protocol/messages.def"
  return table;
}
}  // namespace catalogue_detail

// Every message, by tag.
inline constexpr std::array<MessageInfo, 256> kCatalogue = catalogue_detail::MakeCatalogue();

// The catalogue's entry for `type`, or nullptr when no message has that tag.
constexpr const MessageInfo* FindMessage(uint8_t type) {
  return kCatalogue[type].name != nullptr ? &kCatalogue[type] : nullptr;
}

// Size of the fixed part of a message of type `type` (tag included), or 0 when the tag
// is not a known message type.
constexpr size_t FixedSize(uint8_t type) { return kCatalogue[type].fixed_size; }

// Human-readable name of a message type, for errors and docs; "unknown" otherwise.
constexpr const char* MessageTypeName(uint8_t type) {
  return kCatalogue[type].name != nullptr ? kCatalogue[type].name : "unknown";
}

// Bytes that follow the fixed part of a message, read from that fixed part. `fixed`
// must point at FixedSize(type) readable bytes of a message of a known type.
inline size_t VariableSize(uint8_t type, const uint8_t* fixed) {
  const MessageInfo& info = kCatalogue[type];
  size_t bytes = 0;
  for (size_t i = 0; i < info.tail_count; ++i) {
    bytes += size_t{LoadLe<uint16_t>(fixed + info.tails[i].length_offset)} * info.tails[i].unit_bytes;
  }
  return bytes;
}

namespace catalogue_detail {
constexpr uint8_t LastTag() {
  uint8_t last = 0;
  for (const MessageInfo& info : kCatalogue) last = info.name != nullptr ? info.tag : last;
  return last;
}
constexpr size_t LargestMessage() {
  size_t largest = 0;
  for (const MessageInfo& info : kCatalogue) largest = info.max_size > largest ? info.max_size : largest;
  return largest;
}
}  // namespace catalogue_detail

// Highest type value this build understands; larger tags are rejected.
inline constexpr uint8_t kLastMessageType = catalogue_detail::LastTag();

// Largest possible message: a CounterResult with 65,535 values.
inline constexpr size_t kMaxMessageBytes = catalogue_detail::LargestMessage();

// Where a message starts at p, with `left` bytes readable from p: whole (its `size`),
// cut short (`size` is what it needs, as far as the bytes there tell), or of an unknown
// type. Every walk over messages -- the decoder, the trace file's block codec, the
// diagnostics of a cut stream -- measures with this.
struct MessageSpan {
  enum Status : uint8_t { kWhole, kCutShort, kUnknownType } status;
  size_t size;
};

inline MessageSpan MeasureMessage(const uint8_t* p, size_t left) {
  const MessageInfo& info = kCatalogue[p[0]];
  if (info.fixed_size == 0) return {MessageSpan::kUnknownType, 0};
  if (left < info.fixed_size) return {MessageSpan::kCutShort, info.fixed_size};
  const size_t total = info.fixed_size + (info.tail_count != 0 ? VariableSize(p[0], p) : 0);
  return {left < total ? MessageSpan::kCutShort : MessageSpan::kWhole, total};
}

// Calls visit(p, size) for each whole message in [data, data + size) until it returns
// false or a message is cut short or unknown; the span of that message (kWhole with
// size 0 when the walk reached the end or visit stopped it) and the bytes walked.
struct MessageWalk {
  size_t walked = 0;
  MessageSpan stop{MessageSpan::kWhole, 0};
};

template <typename Visit>
MessageWalk WalkMessages(const uint8_t* data, size_t size, Visit&& visit) {
  MessageWalk walk;
  while (walk.walked < size) {
    const MessageSpan span = MeasureMessage(data + walk.walked, size - walk.walked);
    if (span.status != MessageSpan::kWhole) {
      walk.stop = span;
      break;
    }
    if (!visit(data + walk.walked, span.size)) break;
    walk.walked += span.size;
  }
  return walk;
}

// ---- Reading and writing tails, from the catalogue ---------------------------------

// The tail of message m, which lies at `p` (right after m's fixed part) and is whole.
#define GNOMON_WIRE_MESSAGE(TAG, NAME, SCOPE)                                                     \
  inline NAME##Tail ReadTail([[maybe_unused]] const NAME& m, [[maybe_unused]] const uint8_t* p) { \
    NAME##Tail t;
#define GNOMON_WIRE_STRING(LEN, TAIL)                 \
  t.TAIL = {reinterpret_cast<const char*>(p), m.LEN}; \
  p += m.LEN;
#define GNOMON_WIRE_VALUES(COUNT, TAIL) \
  t.TAIL = {p, m.COUNT};                \
  p += 8 * size_t{m.COUNT};
#define GNOMON_WIRE_END() \
  return t;               \
  }
#include "gnomon/protocol/messages.def"

// Sets m's length and count fields from `t`. Each string is at most kMaxStringBytes and
// each value list at most 65,535 long: callers clamp what they take from users.
#define GNOMON_WIRE_MESSAGE(TAG, NAME, SCOPE) \
  inline void SetTailLengths([[maybe_unused]] NAME& m, [[maybe_unused]] const NAME##Tail& t) {
#define GNOMON_WIRE_STRING(LEN, TAIL)                                      \
  assert(t.TAIL.size() <= kMaxStringBytes && "a string longer than fits"); \
  m.LEN = uint16_t(t.TAIL.size());
#define GNOMON_WIRE_VALUES(COUNT, TAIL)                     \
  assert(t.TAIL.count <= 0xFFFF && "more values than fit"); \
  m.COUNT = uint16_t(t.TAIL.count);
#define GNOMON_WIRE_END() }
#include "gnomon/protocol/messages.def"

// Copies `t` to `out` and returns the end.
#define GNOMON_WIRE_MESSAGE(TAG, NAME, SCOPE) \
  inline uint8_t* WriteTail(uint8_t* out, [[maybe_unused]] const NAME##Tail& t) {
#define GNOMON_WIRE_STRING(LEN, TAIL)                                  \
  if (!t.TAIL.empty()) std::memcpy(out, t.TAIL.data(), t.TAIL.size()); \
  out += t.TAIL.size();
#define GNOMON_WIRE_VALUES(COUNT, TAIL)                                    \
  if (t.TAIL.count != 0) std::memcpy(out, t.TAIL.bytes, 8 * t.TAIL.count); \
  out += 8 * t.TAIL.count;
#define GNOMON_WIRE_END() \
  return out;             \
  }
#include "gnomon/protocol/messages.def"

// Bytes of the tail `t`.
#define GNOMON_WIRE_MESSAGE(TAG, NAME, SCOPE)                     \
  inline size_t TailBytes([[maybe_unused]] const NAME##Tail& t) { \
    size_t bytes = 0;
#define GNOMON_WIRE_STRING(LEN, TAIL) bytes += t.TAIL.size();
#define GNOMON_WIRE_VALUES(COUNT, TAIL) bytes += 8 * t.TAIL.count;
#define GNOMON_WIRE_END() \
  return bytes;           \
  }
#include "gnomon/protocol/messages.def"

// Calls f(name, part) for each part of the tail `t`, in order: a std::string_view for a
// string, LeValues for values. For generic readers (a text dump, tests).
#define GNOMON_WIRE_MESSAGE(TAG, NAME, SCOPE) \
  template <typename F>                       \
  void ForEachTailPart([[maybe_unused]] const NAME##Tail& t, [[maybe_unused]] F&& f) {
#define GNOMON_WIRE_STRING(LEN, TAIL) f(#TAIL, t.TAIL);
#define GNOMON_WIRE_VALUES(COUNT, TAIL) f(#TAIL, t.TAIL);
#define GNOMON_WIRE_END() }
#include "gnomon/protocol/messages.def"

// Bytes that message m with tail t takes on the wire.
template <typename M>
size_t WireSize(const typename M::Tail& t = {}) {
  return sizeof(M) + TailBytes(t);
}

// Writes m (its type and length fields set from the catalogue and `t`) and its tail to
// `out`, which has room for WireSize<M>(t) bytes; returns the end.
template <typename M>
uint8_t* WriteMessage(uint8_t* out, M m, const typename M::Tail& t = {}) {
  m.type = uint8_t(M::kType);
  SetTailLengths(m, t);
  std::memcpy(out, &m, sizeof(M));
  return WriteTail(out + sizeof(M), t);
}

// Appends m and its tail to `out`.
template <typename M>
void AppendMessage(std::vector<uint8_t>& out, const M& m, const typename M::Tail& t = {}) {
  const size_t at = out.size();
  out.resize(at + WireSize<M>(t));
  WriteMessage(out.data() + at, m, t);
}

}  // namespace gnomon::protocol
