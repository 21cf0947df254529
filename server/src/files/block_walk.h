// Walking a trace file's decompressed blocks message by message, for the readers that
// go over a file without building a model (gnomon-cut, StreamZoneStatistics).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "gnomon/protocol/messages.h"
#include "gnomon/tracefile/block_codec.h"

namespace gnomon::server {

// A message's fixed part, copied out. Its fields are packed: copy a field into a
// variable before anything takes it by reference (a container's key, a pair).
template <typename M>
M ReadMessage(const uint8_t* message) {
  M m;
  std::memcpy(&m, message, sizeof(M));
  return m;
}

// Walks a decompressed block of a file of `format` into `walker`: in a compact block
// (format 3 on) zone begins and ends go to walker.Begin(location, tick) and
// walker.End(tick) (a zone with nothing inside it to walker.Leaf(location, begin,
// end) when the walker has one), every other message whole to walker.Message(bytes, size); in older
// blocks every message, zones included, goes to Message. False (with `error`) when a
// record cannot be read: the messages before it were walked.
template <typename Walker>
bool WalkBlock(uint8_t* block, size_t size, uint16_t format, Walker& walker, std::string& error) {
  if (format >= 3) {
    const tracefile::CompactWalk walk = tracefile::WalkCompactBlock(
        block, size, format,
        [&](uint32_t location, uint64_t tick) __attribute__((always_inline)) {
          walker.Begin(location, tick);
          return true;
        },
        [&](uint64_t tick) __attribute__((always_inline)) {
          walker.End(tick);
          return true;
        },
        [&](uint32_t location, uint64_t begin_tick, uint64_t end_tick) __attribute__((always_inline)) {
          if constexpr (requires { walker.Leaf(location, begin_tick, end_tick); }) {
            walker.Leaf(location, begin_tick, end_tick);
          } else {
            walker.Begin(location, begin_tick);
            walker.End(end_tick);
          }
          return true;
        },
        [&](const uint8_t* message, size_t length) {
          walker.Message(message, length);
          return true;
        });
    if (walk.ok && walk.stopped_at == size) return true;
    error = walk.ok ? "a message does not decode" : walk.error;
    return false;
  }
  if (format == 2) tracefile::DecodeTickDeltas(block, size);
  for (size_t at = 0; at < size;) {
    const protocol::MessageSpan span = protocol::MeasureMessage(block + at, size - at);
    if (span.status != protocol::MessageSpan::kWhole) {
      error = "a message does not decode at byte " + std::to_string(at) + " of the block";
      return false;
    }
    walker.Message(block + at, span.size);
    at += span.size;
  }
  return true;
}

// A whole message (WalkBlock's walker.Message) as the zone walkers take it: a thread
// switch to on_thread(thread id); in an older block (formats 1 and 2), a zone's begin
// to on_begin(location, tick) and its end to on_end(tick); any other is not theirs.
template <typename OnThread, typename OnBegin, typename OnEnd>
void WalkZoneMessage(const uint8_t* m, OnThread&& on_thread, OnBegin&& on_begin, OnEnd&& on_end) {
  switch (protocol::MessageType(m[0])) {
    case protocol::MessageType::kThreadContext:
      return on_thread(ReadMessage<protocol::ThreadContext>(m).thread_id);
    case protocol::MessageType::kZoneBegin: {
      const auto begin = ReadMessage<protocol::ZoneBegin>(m);
      return on_begin(begin.srcloc_id, begin.tick);
    }
    case protocol::MessageType::kZoneEnd:
      return on_end(ReadMessage<protocol::ZoneEnd>(m).tick);
    default:
      return;
  }
}

}  // namespace gnomon::server
