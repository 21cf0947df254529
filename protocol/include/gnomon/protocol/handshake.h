// The handshake that opens every connection between a server and a profiled program.
//
// The program listens; the server connects and speaks first:
//   server -> program  ServerHello  (16 bytes)
//   program -> server  ClientHello  (24 bytes)
//   server -> program  ClockProbe   (16 bytes, any number, only when both agreed)
// When ClientHello.status is kOk the program's message stream (messages.h) follows,
// starting with AppInfo. Otherwise the program closes the connection, and the status
// says why, so both ends can print an error that tells the user what to do.
//
// Lanes: one connection carries about 100 M zones a second (one thread each side), so a
// server may ask for more. Its ServerHello sets kServerWantsLanes with the number it
// wants in `reserved`; a program that agrees announces kCapLanes and a token in its
// ClientHello's `reserved`. The server then opens that many more connections, each
// saying a ServerHello with kServerLaneHello and the token; the program answers each
// with a ClientHello (kCapLanes, the lane's number from 1 in `reserved`). Once all are
// in, the threads' events go over the lanes (a thread always over the same one) as
// LaneBatch-framed runs of whole messages, and the main connection keeps everything
// else (AppInfo, the definitions, clock replies, drops, the goodbye). Each batch names
// how much of the main connection's stream it needs first (its definitions): the server
// adds it to the program's one stream only after that much of the main stream, and
// adds the goodbye only once every lane has closed. A program closes its lanes before it
// says goodbye.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include "gnomon/protocol/byte_io.h"

namespace gnomon::protocol {

inline constexpr char kServerMagic[8] = {'G', 'N', 'O', 'M', 'O', 'N', 'S', 'V'};
inline constexpr char kClientMagic[8] = {'G', 'N', 'O', 'M', 'O', 'N', 'C', 'L'};

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

#pragma pack(push, 1)
struct ServerHello {
  char magic[8];
  uint16_t version;
  uint16_t flags;     // ServerFlag bits
  uint32_t reserved;  // 0
};

// Server -> program, any number after the handshake when both agreed: asks the program
// for a ClockReply. Fixed size; a program that reads anything else closes the connection.
struct ClockProbe {
  char magic[4];  // kClockProbeMagic
  uint32_t sequence;
  uint64_t reserved;  // 0
};

struct ClientHello {
  char magic[8];
  uint16_t version;
  uint16_t status;    // HandshakeStatus
  uint32_t reserved;  // with kCapLanes: the lanes' token (main), the lane's number (lane)
  uint64_t capabilities;
};

// Program -> server on a lane, before each run of whole messages of `size` bytes (1 to
// kMaxLaneBatchBytes). `after`: the bytes of the main connection's stream (from its
// first message) the server must have taken before these; never less than the lane's
// previous batch said.
struct LaneBatch {
  char magic[4];  // kLaneBatchMagic
  uint32_t size;
  uint64_t after;
};
#pragma pack(pop)

inline constexpr char kClockProbeMagic[4] = {'G', 'N', 'C', 'P'};
inline constexpr char kLaneBatchMagic[4] = {'G', 'N', 'L', 'B'};

static_assert(sizeof(ServerHello) == 16);
static_assert(sizeof(ClockProbe) == 16);
static_assert(sizeof(ClientHello) == 24);
static_assert(sizeof(LaneBatch) == 16);

// The version a ServerHello announces, or nullopt when the bytes are not a ServerHello.
inline std::optional<uint16_t> ParseServerHello(const uint8_t* bytes, size_t size) {
  if (size < sizeof(ServerHello) || std::memcmp(bytes, kServerMagic, sizeof(kServerMagic)) != 0)
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
  if (std::memcmp(bytes, kClockProbeMagic, sizeof(kClockProbeMagic)) != 0) return std::nullopt;
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
  if (size < sizeof(ClientHello) || std::memcmp(bytes, kClientMagic, sizeof(kClientMagic)) != 0)
    return std::nullopt;
  return ParsedClientHello{
      LoadLe<uint16_t>(bytes + offsetof(ClientHello, version)),
      static_cast<HandshakeStatus>(LoadLe<uint16_t>(bytes + offsetof(ClientHello, status))),
      LoadLe<uint64_t>(bytes + offsetof(ClientHello, capabilities)),
      LoadLe<uint32_t>(bytes + offsetof(ClientHello, reserved))};
}

}  // namespace gnomon::protocol
