// The handshake that opens every connection between a server and a profiled program,
// and the other fixed-size frames outside the message stream. Each frame is declared
// once, in handshake.def; docs/protocol.md ("Connection and handshake") says how they are
// exchanged and is checked against that catalogue.
//
//   server -> program  ServerHello
//   program -> server  ClientHello; with status kOk the message stream (messages.h)
//                      follows, starting with AppInfo; otherwise the program closes
//   server -> program  ClockProbe, any number, only when both agreed
//   program -> server  LaneBatch headers, on the extra connections of a program that
//                      agreed to lanes
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "gnomon/protocol/byte_io.h"

namespace gnomon::protocol {

enum class HandshakeStatus : uint16_t {
  kOk = 0,
  kVersionMismatch = 1,  // the program speaks another protocol version
  kBusy = 2,             // another server is already connected
};

// Capability bits a program announces: the kinds of messages its stream may contain.
// A server refuses a program announcing bits it does not know.
enum Capability : uint64_t {
  kCapCpuZones = 1u << 0,
  kCapGpu = 1u << 1,
  // It answers clock probes (ClockReply); announced only to a server that said it
  // sends them, so that an older server never sees the bit.
  kCapClockReplies = 1u << 2,
  // It takes lanes (above); announced only to a server that asked for them.
  kCapLanes = 1u << 3,
};
inline constexpr uint64_t kKnownCapabilities = kCapCpuZones | kCapGpu | kCapClockReplies | kCapLanes;

// ServerHello.flags.
enum ServerFlag : uint16_t {
  // The server will send ClockProbes after the handshake, to a program that announces
  // kCapClockReplies. Nothing else ever goes from server to program.
  kServerSendsClockProbes = 1u << 0,
  // The server asks for ServerHello.reserved lanes (1 to kMaxLanes) besides this
  // connection.
  kServerWantsLanes = 1u << 1,
  // This connection is a lane: ServerHello.reserved is the token the program gave.
  kServerLaneHello = 1u << 2,
};

// The most lanes a program opens, besides its main connection.
inline constexpr uint32_t kMaxLanes = 8;
// The most bytes one LaneBatch carries.
inline constexpr uint32_t kMaxLaneBatchBytes = 16u << 20;

// The frames' magics, as std::array<char, N> without a terminating zero:
// kServerHelloMagic, kClientHelloMagic, kClockProbeMagic, kLaneBatchMagic.
namespace handshake_detail {
template <size_t N>
constexpr std::array<char, N - 1> Magic(const char (&text)[N]) {
  std::array<char, N - 1> bytes{};
  for (size_t i = 0; i + 1 < N; ++i) bytes[i] = text[i];
  return bytes;
}
using U16 = uint16_t;
using U32 = uint32_t;
using U64 = uint64_t;
}  // namespace handshake_detail

#define GNOMON_FRAME(NAME, MAGIC) inline constexpr auto k##NAME##Magic = handshake_detail::Magic(MAGIC);
#include "gnomon/protocol/handshake.def"

// The packed structs: the byte layout on the wire.
#pragma pack(push, 1)
#define GNOMON_FRAME(NAME, MAGIC) \
  struct NAME {                   \
    char magic[sizeof(MAGIC) - 1];
#define GNOMON_FRAME_FIELD(KIND, FIELD) handshake_detail::KIND FIELD;
#define GNOMON_FRAME_END() \
  }                        \
  ;
#include "gnomon/protocol/handshake.def"
#pragma pack(pop)

// What the catalogue says of each frame, for the tests that hold docs/protocol.md to it.
struct FrameField {
  const char* name;
  size_t offset;
  size_t size;
};
struct FrameInfo {
  const char* name;
  std::string_view magic;
  size_t size;
  std::vector<FrameField> fields;  // the magic first
};
inline std::vector<FrameInfo> HandshakeFrames() {
  std::vector<FrameInfo> frames;
#define GNOMON_FRAME(NAME, MAGIC)                                                     \
  {                                                                                   \
    using F = NAME;                                                                   \
    frames.push_back({#NAME,                                                          \
                      std::string_view(k##NAME##Magic.data(), k##NAME##Magic.size()), \
                      sizeof(F),                                                      \
                      {{"magic", 0, sizeof(F::magic)}}});
#define GNOMON_FRAME_FIELD(KIND, FIELD) \
  frames.back().fields.push_back({#FIELD, offsetof(F, FIELD), sizeof(F::FIELD)});
#define GNOMON_FRAME_END() }
#include "gnomon/protocol/handshake.def"
  return frames;
}

// The version a ServerHello announces, or nullopt when the bytes are not a ServerHello.
inline std::optional<uint16_t> ParseServerHello(const uint8_t* bytes, size_t size) {
  if (size < sizeof(ServerHello) ||
      std::memcmp(bytes, kServerHelloMagic.data(), kServerHelloMagic.size()) != 0)
    return std::nullopt;
  return LoadLe<uint16_t>(bytes + offsetof(ServerHello, version));
}

// The flags of a ServerHello (ParseServerHello said it is one).
inline uint16_t ServerHelloFlags(const uint8_t* bytes) {
  return LoadLe<uint16_t>(bytes + offsetof(ServerHello, flags));
}

// Its `reserved` field: the lanes wanted, or a lane's token (ServerFlag).
inline uint32_t ServerHelloReserved(const uint8_t* bytes) {
  return LoadLe<uint32_t>(bytes + offsetof(ServerHello, reserved));
}

// The sequence of a ClockProbe, or nullopt when the 16 bytes are not one.
inline std::optional<uint32_t> ParseClockProbe(const uint8_t* bytes) {
  if (std::memcmp(bytes, kClockProbeMagic.data(), kClockProbeMagic.size()) != 0) return std::nullopt;
  return LoadLe<uint32_t>(bytes + offsetof(ClockProbe, sequence));
}

struct ParsedClientHello {
  uint16_t version;
  HandshakeStatus status;  // as sent; unknown values are possible
  uint64_t capabilities;
  uint32_t reserved;
};

// The fields of a ClientHello, or nullopt when the bytes are not one.
inline std::optional<ParsedClientHello> ParseClientHello(const uint8_t* bytes, size_t size) {
  if (size < sizeof(ClientHello) ||
      std::memcmp(bytes, kClientHelloMagic.data(), kClientHelloMagic.size()) != 0)
    return std::nullopt;
  return ParsedClientHello{
      LoadLe<uint16_t>(bytes + offsetof(ClientHello, version)),
      static_cast<HandshakeStatus>(LoadLe<uint16_t>(bytes + offsetof(ClientHello, status))),
      LoadLe<uint64_t>(bytes + offsetof(ClientHello, capabilities)),
      LoadLe<uint32_t>(bytes + offsetof(ClientHello, reserved))};
}

}  // namespace gnomon::protocol
