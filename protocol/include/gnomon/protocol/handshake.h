// The handshake that opens every connection between a server and a profiled program.
//
// The program listens; the server connects and speaks first:
//   server -> program  ServerHello  (16 bytes)
//   program -> server  ClientHello  (24 bytes)
//   server -> program  ClockProbe   (16 bytes, any number, only when both agreed)
// When ClientHello.status is kOk the program's message stream (messages.h) follows,
// starting with AppInfo. Otherwise the program closes the connection, and the status
// says why, so both ends can print an error that tells the user what to do.
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
};
inline constexpr uint64_t kKnownCapabilities = kCapCpuZones | kCapGpu | kCapClockReplies;

// ServerHello.flags.
enum ServerFlag : uint16_t {
  // The server will send ClockProbes after the handshake, to a program that announces
  // kCapClockReplies. Nothing else ever goes from server to program.
  kServerSendsClockProbes = 1u << 0,
};

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
  uint16_t status;  // HandshakeStatus
  uint32_t reserved;
  uint64_t capabilities;
};
#pragma pack(pop)

inline constexpr char kClockProbeMagic[4] = {'G', 'N', 'C', 'P'};

static_assert(sizeof(ServerHello) == 16);
static_assert(sizeof(ClockProbe) == 16);
static_assert(sizeof(ClientHello) == 24);

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

// The sequence of a ClockProbe, or nullopt when the 16 bytes are not one.
inline std::optional<uint32_t> ParseClockProbe(const uint8_t* bytes) {
  if (std::memcmp(bytes, kClockProbeMagic, sizeof(kClockProbeMagic)) != 0) return std::nullopt;
  return LoadLe<uint32_t>(bytes + offsetof(ClockProbe, sequence));
}

struct ParsedClientHello {
  uint16_t version;
  HandshakeStatus status;  // as sent; unknown values are possible
  uint64_t capabilities;
};

// The fields of a ClientHello, or nullopt when the bytes are not one.
inline std::optional<ParsedClientHello> ParseClientHello(const uint8_t* bytes, size_t size) {
  if (size < sizeof(ClientHello) || std::memcmp(bytes, kClientMagic, sizeof(kClientMagic)) != 0)
    return std::nullopt;
  return ParsedClientHello{
      LoadLe<uint16_t>(bytes + offsetof(ClientHello, version)),
      static_cast<HandshakeStatus>(LoadLe<uint16_t>(bytes + offsetof(ClientHello, status))),
      LoadLe<uint64_t>(bytes + offsetof(ClientHello, capabilities))};
}

}  // namespace gnomon::protocol
