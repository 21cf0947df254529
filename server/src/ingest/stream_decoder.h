// Decodes Gnomon's message stream (protocol/messages.h) into handler calls.
//
// Used for live connections and for trace files alike. The decoder checks structure
// only: known type tags and complete messages. What the messages mean (a zone end with
// no begin, an id never defined) is the handler's business.
//
//   struct MyHandler {
//     void OnZoneBegin(const protocol::ZoneBegin& m) { ... m.srcloc_id, m.tick ... }
//     void OnZoneName(const protocol::ZoneName&, const protocol::ZoneNameTail& t) { ... t.name ... }
//   };
//   DecodeResult r = DecodeMessages(bytes, size, handler);
//   // r.consumed bytes were whole messages; keep the rest for the next call.
//
// For each message of the catalogue (messages.def) named X, the decoder calls
// handler.OnX(message, tail) or handler.OnX(message), whichever the handler has; a
// handler with neither for X ignores X, and one with an OnX that takes neither form
// fails to compile. The message is a packed struct: copy a field before anything takes
// it by reference (std::max, emplace_back), which on a misaligned field is undefined.
// A handler may also take OnAnyMessage(message, tail) (a template, or
// overloads) for every message it has no OnX for. The decoder is a template so that the
// calls inline. A handler may also take Refuse(type) -> const char*: a reason to stop
// at a message of that type (not a zone begin or end), or nullptr to take it.
// A handler may also take OnLeafZone(location, begin, end): a begin
// followed at once by its end, which it must treat exactly as the two calls. Strings in
// a tail point into the input and are valid only during the call.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/messages.h"

namespace gnomon::server {

// A handler that ignores every message.
struct NullHandler {};

struct DecodeResult {
  size_t consumed = 0;    // bytes of whole messages decoded
  uint64_t messages = 0;  // messages decoded
  bool failed = false;    // an unknown type tag at `consumed`
  std::string error;      // one line when failed
};

// What is wrong with `size` leftover bytes at the end of a stream, or "" when none.
std::string DescribeTruncation(const uint8_t* data, size_t size);

namespace decoder_detail {
// For each message X, DeliverX(p, handler) hands the whole message at p to the
// handler's OnX, in the form it takes.
#define GNOMON_WIRE_MESSAGE(TAG, NAME, SCOPE)                                                  \
  template <typename Handler>                                                                  \
  void Deliver##NAME(const uint8_t* p, Handler& handler) {                                     \
    using H = std::remove_cvref_t<Handler>;                                                    \
    const auto m = protocol::LoadLe<protocol::NAME>(p);                                        \
    if constexpr (requires(const protocol::NAME##Tail& t) { handler.On##NAME(m, t); }) {       \
      handler.On##NAME(m, protocol::ReadTail(m, p + sizeof(m)));                               \
    } else if constexpr (requires { handler.On##NAME(m); }) {                                  \
      handler.On##NAME(m);                                                                     \
    } else {                                                                                   \
      static_assert(                                                                           \
          !requires { &H::On##NAME; },                                                         \
          "On" #NAME " takes neither (const protocol::" #NAME "&, const protocol::" #NAME      \
          "Tail&) nor (const protocol::" #NAME "&)");                                          \
      if constexpr (requires(const protocol::NAME##Tail& t) { handler.OnAnyMessage(m, t); }) { \
        handler.OnAnyMessage(m, protocol::ReadTail(m, p + sizeof(m)));                         \
      }                                                                                        \
    }                                                                                          \
  }
#include "gnomon/protocol/messages.def"
}  // namespace decoder_detail

// Hands the whole message at p (of a known type) to the handler's OnX for its type.
template <typename Handler>
void DispatchMessage(const uint8_t* p, Handler& handler) {
  switch (static_cast<protocol::MessageType>(p[0])) {
#define GNOMON_WIRE_MESSAGE(TAG, NAME, SCOPE)  \
  case protocol::MessageType::k##NAME:         \
    decoder_detail::Deliver##NAME(p, handler); \
    break;
#include "gnomon/protocol/messages.def"
  }
}

template <typename Handler>
DecodeResult DecodeMessages(const uint8_t* data, size_t size, Handler& handler) {
  using protocol::LoadLe;
  using protocol::MessageType;
  DecodeResult result;
  size_t pos = 0;
  while (pos < size) {
    const uint8_t* p = data + pos;
    // Zone begins and ends are nearly every message of a big trace: a begin followed at
    // once by its end in one step, for a handler that can.
    if constexpr (requires { handler.OnLeafZone(uint32_t{0}, uint64_t{0}, uint64_t{0}); }) {
      constexpr size_t kBegin = sizeof(protocol::ZoneBegin);
      if (p[0] == uint8_t(MessageType::kZoneBegin) && size - pos >= kBegin + sizeof(protocol::ZoneEnd) &&
          p[kBegin] == uint8_t(MessageType::kZoneEnd)) {
        // Field by field: the packed struct copied to the stack and read back stalls on
        // every zone.
        handler.OnLeafZone(LoadLe<uint32_t>(p + offsetof(protocol::ZoneBegin, srcloc_id)),
                           LoadLe<uint64_t>(p + offsetof(protocol::ZoneBegin, tick)),
                           LoadLe<uint64_t>(p + kBegin + offsetof(protocol::ZoneEnd, tick)));
        pos += kBegin + sizeof(protocol::ZoneEnd);
        result.messages += 2;
        continue;
      }
    }
    // A begin or end alone (nested zones) goes straight to its handler too.
    if (p[0] == uint8_t(MessageType::kZoneBegin) && size - pos >= sizeof(protocol::ZoneBegin)) {
      decoder_detail::DeliverZoneBegin(p, handler);
      pos += sizeof(protocol::ZoneBegin);
      ++result.messages;
      continue;
    }
    if (p[0] == uint8_t(MessageType::kZoneEnd) && size - pos >= sizeof(protocol::ZoneEnd)) {
      decoder_detail::DeliverZoneEnd(p, handler);
      pos += sizeof(protocol::ZoneEnd);
      ++result.messages;
      continue;
    }
    const protocol::MessageSpan span = protocol::MeasureMessage(p, size - pos);
    if (span.status == protocol::MessageSpan::kUnknownType) {
      result.failed = true;
      result.error = "unknown message type " + std::to_string(p[0]) +
                     " (the stream is corrupt, or comes from a newer Gnomon)";
      break;
    }
    if (span.status == protocol::MessageSpan::kCutShort) break;
    // A handler may refuse a kind of message (a live capture: what only a capture writes).
    if constexpr (requires {
                    { handler.Refuse(p[0]) } -> std::convertible_to<const char*>;
                  }) {
      if (const char* why = handler.Refuse(p[0])) {
        result.failed = true;
        result.error = why;
        break;
      }
    }
    // A handler may keep the bytes of the messages it does not pair (ZoneOps).
    if constexpr (requires { handler.OnMessageBytes(p, size_t{0}); }) handler.OnMessageBytes(p, span.size);
    DispatchMessage(p, handler);
    pos += span.size;
    ++result.messages;
  }
  result.consumed = pos;
  return result;
}

}  // namespace gnomon::server
