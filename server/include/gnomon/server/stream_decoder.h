// Decodes Gnomon's message stream (protocol/messages.h) into handler calls.
//
// Used for live connections and for trace files alike. The decoder checks structure
// only: known type tags and complete messages. What the messages mean (a zone end with
// no begin, an id never defined) is the handler's business.
//
//   struct MyHandler : gnomon::server::NullHandler { void OnZoneBegin(uint32_t, uint64_t); };
//   DecodeResult r = DecodeMessages(bytes, size, handler);
//   // r.consumed bytes were whole messages; keep the rest for the next call.
//
// A handler implements any of the On* functions of NullHandler; the decoder is a
// template so that the calls inline. A handler may also take OnLeafZone(location,
// begin, end): a begin followed at once by its end, which it must treat exactly as the
// two calls. Strings passed to handlers point into the input
// and are valid only during the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/messages.h"

namespace gnomon::server {

struct NullHandler {
  void OnThreadContext(uint32_t /*thread_id*/) {}
  void OnZoneBegin(uint32_t /*source_location*/, uint64_t /*tick*/) {}
  void OnZoneEnd(uint64_t /*tick*/) {}
  void OnZoneName(std::string_view /*name*/) {}
  void OnZoneText(std::string_view /*text*/) {}
  void OnZoneColor(uint32_t /*rgb*/) {}
  void OnZoneValue(uint64_t /*value*/) {}
  void OnFrame(protocol::MessageType /*type*/, uint32_t /*name_id*/, uint64_t /*tick*/) {}
  void OnLogMessage(uint64_t /*tick*/, uint8_t /*severity*/, std::string_view /*text*/) {}
  void OnPlotValue(uint32_t /*plot_id*/, uint64_t /*tick*/, double /*value*/) {}
  void OnCpuCalibration(const protocol::CpuCalibration& /*pair*/) {}
  void OnStringDef(uint32_t /*id*/, uint8_t /*kind*/, std::string_view /*text*/) {}
  void OnSourceLocationDef(const protocol::SourceLocationDef& /*def*/, std::string_view /*name*/,
                           std::string_view /*function*/, std::string_view /*file*/) {}
  void OnThreadInfo(uint32_t /*thread_id*/, uint32_t /*os_thread_id*/, std::string_view /*name*/) {}
  void OnAppInfo(const protocol::AppInfo& /*info*/, std::string_view /*name*/) {}
  void OnDroppedEvents(uint64_t /*total*/) {}
  void OnEndOfStream(uint64_t /*tick*/) {}
  void OnGpuContextDef(const protocol::GpuContextDef& /*def*/, std::string_view /*name*/) {}
  void OnGpuZoneBegin(uint32_t /*context*/, uint32_t /*query*/, uint32_t /*source_location*/, uint64_t /*cpu_tick*/) {}
  void OnGpuZoneEnd(uint32_t /*context*/, uint32_t /*query*/, uint64_t /*cpu_tick*/) {}
  void OnGpuTime(uint32_t /*context*/, uint32_t /*query*/, uint64_t /*gpu_ticks*/) {}
  void OnGpuCalibration(const protocol::GpuCalibration& /*calibration*/) {}
  void OnGpuResync(const protocol::GpuResync& /*resync*/) {}
  void OnGpuContextName(uint32_t /*context*/, std::string_view /*name*/) {}
  void OnCounterSetDef(const protocol::CounterSetDef& /*def*/, std::string_view /*name*/) {}
  void OnCounterDef(const protocol::CounterDef& /*def*/, std::string_view /*name*/, std::string_view /*description*/) {}
  // `values` holds result.value_count little-endian 8-byte values (unaligned).
  void OnCounterResult(const protocol::CounterResult& /*result*/, const uint8_t* /*values*/) {}
};

struct DecodeResult {
  size_t consumed = 0;   // bytes of whole messages decoded
  uint64_t messages = 0;  // messages decoded
  bool failed = false;   // an unknown type tag at `consumed`
  std::string error;     // one line when failed
};

// What is wrong with `size` leftover bytes at the end of a stream, or "" when none.
std::string DescribeTruncation(const uint8_t* data, size_t size);

template <typename Handler>
DecodeResult DecodeMessages(const uint8_t* data, size_t size, Handler& handler) {
  using protocol::LoadLe;
  using protocol::MessageType;
  DecodeResult result;
  size_t pos = 0;
  while (pos < size) {
    const uint8_t* p = data + pos;
    const uint8_t type = p[0];
    // Zone begins and ends are nearly every message of a big trace: straight through,
    // and a begin followed at once by its end in one step for a handler that can.
    if constexpr (requires { handler.OnLeafZone(uint32_t{0}, uint64_t{0}, uint64_t{0}); }) {
      constexpr size_t kLeaf = sizeof(protocol::ZoneBegin) + sizeof(protocol::ZoneEnd);
      if (type == uint8_t(MessageType::kZoneBegin) && size - pos >= kLeaf &&
          p[sizeof(protocol::ZoneBegin)] == uint8_t(MessageType::kZoneEnd)) {
        handler.OnLeafZone(LoadLe<uint32_t>(p + 1), LoadLe<uint64_t>(p + 5),
                           LoadLe<uint64_t>(p + sizeof(protocol::ZoneBegin) + 1));
        pos += kLeaf;
        result.messages += 2;
        continue;
      }
    }
    if (type == uint8_t(MessageType::kZoneBegin) && size - pos >= sizeof(protocol::ZoneBegin)) {
      handler.OnZoneBegin(LoadLe<uint32_t>(p + 1), LoadLe<uint64_t>(p + 5));
      pos += sizeof(protocol::ZoneBegin);
      ++result.messages;
      continue;
    }
    if (type == uint8_t(MessageType::kZoneEnd) && size - pos >= sizeof(protocol::ZoneEnd)) {
      handler.OnZoneEnd(LoadLe<uint64_t>(p + 1));
      pos += sizeof(protocol::ZoneEnd);
      ++result.messages;
      continue;
    }
    const size_t fixed = protocol::FixedSize(type);
    if (fixed == 0) {
      result.failed = true;
      result.error = "unknown message type " + std::to_string(type) +
                     " (the stream is corrupt, or comes from a newer Gnomon)";
      break;
    }
    const size_t left = size - pos;
    if (left < fixed) break;
    const size_t total = fixed + protocol::VariableSize(type, p);
    if (left < total) break;
    const char* tail = reinterpret_cast<const char*>(p + fixed);
    switch (static_cast<MessageType>(type)) {
      case MessageType::kZoneBegin:
        handler.OnZoneBegin(LoadLe<uint32_t>(p + 1), LoadLe<uint64_t>(p + 5));
        break;
      case MessageType::kZoneEnd:
        handler.OnZoneEnd(LoadLe<uint64_t>(p + 1));
        break;
      case MessageType::kThreadContext:
        handler.OnThreadContext(LoadLe<uint32_t>(p + 1));
        break;
      case MessageType::kZoneName:
        handler.OnZoneName({tail, total - fixed});
        break;
      case MessageType::kZoneText:
        handler.OnZoneText({tail, total - fixed});
        break;
      case MessageType::kZoneColor:
        handler.OnZoneColor(LoadLe<uint32_t>(p + 1));
        break;
      case MessageType::kZoneValue:
        handler.OnZoneValue(LoadLe<uint64_t>(p + 1));
        break;
      case MessageType::kFrameMark:
      case MessageType::kFrameBegin:
      case MessageType::kFrameEnd:
        handler.OnFrame(static_cast<MessageType>(type), LoadLe<uint32_t>(p + 1), LoadLe<uint64_t>(p + 5));
        break;
      case MessageType::kLogMessage:
        handler.OnLogMessage(LoadLe<uint64_t>(p + 1), p[9], {tail, total - fixed});
        break;
      case MessageType::kPlotValue:
        handler.OnPlotValue(LoadLe<uint32_t>(p + 1), LoadLe<uint64_t>(p + 5), LoadLe<double>(p + 13));
        break;
      case MessageType::kCpuCalibration:
        handler.OnCpuCalibration(LoadLe<protocol::CpuCalibration>(p));
        break;
      case MessageType::kStringDef:
        handler.OnStringDef(LoadLe<uint32_t>(p + 1), p[5], {tail, total - fixed});
        break;
      case MessageType::kSourceLocationDef: {
        const auto def = LoadLe<protocol::SourceLocationDef>(p);
        handler.OnSourceLocationDef(def, {tail, def.name_length},
                                    {tail + def.name_length, def.function_length},
                                    {tail + def.name_length + def.function_length, def.file_length});
        break;
      }
      case MessageType::kThreadInfo:
        handler.OnThreadInfo(LoadLe<uint32_t>(p + 1), LoadLe<uint32_t>(p + 5), {tail, total - fixed});
        break;
      case MessageType::kAppInfo:
        handler.OnAppInfo(LoadLe<protocol::AppInfo>(p), {tail, total - fixed});
        break;
      case MessageType::kDroppedEvents:
        handler.OnDroppedEvents(LoadLe<uint64_t>(p + 1));
        break;
      case MessageType::kEndOfStream:
        handler.OnEndOfStream(LoadLe<uint64_t>(p + 1));
        break;
      case MessageType::kGpuContextDef:
        handler.OnGpuContextDef(LoadLe<protocol::GpuContextDef>(p), {tail, total - fixed});
        break;
      case MessageType::kGpuZoneBegin:
        handler.OnGpuZoneBegin(LoadLe<uint32_t>(p + 1), LoadLe<uint32_t>(p + 5), LoadLe<uint32_t>(p + 9),
                               LoadLe<uint64_t>(p + 13));
        break;
      case MessageType::kGpuZoneEnd:
        handler.OnGpuZoneEnd(LoadLe<uint32_t>(p + 1), LoadLe<uint32_t>(p + 5), LoadLe<uint64_t>(p + 9));
        break;
      case MessageType::kGpuTime:
        handler.OnGpuTime(LoadLe<uint32_t>(p + 1), LoadLe<uint32_t>(p + 5), LoadLe<uint64_t>(p + 9));
        break;
      case MessageType::kGpuCalibration:
        handler.OnGpuCalibration(LoadLe<protocol::GpuCalibration>(p));
        break;
      case MessageType::kGpuResync:
        handler.OnGpuResync(LoadLe<protocol::GpuResync>(p));
        break;
      case MessageType::kGpuContextName:
        handler.OnGpuContextName(LoadLe<uint32_t>(p + 1), {tail, total - fixed});
        break;
      case MessageType::kCounterSetDef:
        handler.OnCounterSetDef(LoadLe<protocol::CounterSetDef>(p), {tail, total - fixed});
        break;
      case MessageType::kCounterDef: {
        const auto def = LoadLe<protocol::CounterDef>(p);
        handler.OnCounterDef(def, {tail, def.name_length}, {tail + def.name_length, def.description_length});
        break;
      }
      case MessageType::kCounterResult:
        handler.OnCounterResult(LoadLe<protocol::CounterResult>(p), p + fixed);
        break;
    }
    pos += total;
    ++result.messages;
  }
  result.consumed = pos;
  return result;
}

}  // namespace gnomon::server
