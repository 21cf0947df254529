#include "gnomon/server/tick_delta.h"

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/messages.h"

namespace gnomon::server {
namespace {

// Offset of the CPU tick in a message of `type`, or 0 when it has none.
size_t TickOffset(uint8_t type) {
  using protocol::MessageType;
  switch (static_cast<MessageType>(type)) {
    case MessageType::kZoneBegin: return offsetof(protocol::ZoneBegin, tick);
    case MessageType::kZoneEnd: return offsetof(protocol::ZoneEnd, tick);
    case MessageType::kFrameMark:
    case MessageType::kFrameBegin:
    case MessageType::kFrameEnd: return offsetof(protocol::FrameEvent, tick);
    case MessageType::kLogMessage: return offsetof(protocol::LogMessage, tick);
    case MessageType::kPlotValue: return offsetof(protocol::PlotValue, tick);
    case MessageType::kGpuZoneBegin: return offsetof(protocol::GpuZoneBegin, cpu_tick);
    case MessageType::kGpuZoneEnd: return offsetof(protocol::GpuZoneEnd, cpu_tick);
    case MessageType::kEndOfStream: return offsetof(protocol::EndOfStream, tick);
    default: return 0;
  }
}

template <typename Rewrite>
void ForEachTick(uint8_t* block, size_t size, Rewrite rewrite) {
  size_t pos = 0;
  while (pos < size) {
    uint8_t* p = block + pos;
    const size_t fixed = protocol::FixedSize(p[0]);
    if (fixed == 0 || size - pos < fixed) return;
    const size_t total = fixed + protocol::VariableSize(p[0], p);
    if (size - pos < total) return;
    if (const size_t offset = TickOffset(p[0])) rewrite(p + offset);
    pos += total;
  }
}

}  // namespace

void EncodeTickDeltas(uint8_t* block, size_t size) {
  uint64_t previous = 0;
  ForEachTick(block, size, [&previous](uint8_t* field) {
    const uint64_t tick = protocol::LoadLe<uint64_t>(field);
    const int64_t delta = static_cast<int64_t>(tick - previous);
    protocol::StoreLe<uint64_t>(field, (uint64_t(delta) << 1) ^ uint64_t(delta >> 63));
    previous = tick;
  });
}

void DecodeTickDeltas(uint8_t* block, size_t size) {
  uint64_t previous = 0;
  ForEachTick(block, size, [&previous](uint8_t* field) {
    const uint64_t zigzag = protocol::LoadLe<uint64_t>(field);
    const uint64_t delta = (zigzag >> 1) ^ (0 - (zigzag & 1));
    previous += delta;
    protocol::StoreLe<uint64_t>(field, previous);
  });
}

}  // namespace gnomon::server
