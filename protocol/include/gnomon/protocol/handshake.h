// The handshake that opens every connection between a server and a profiled program.
//
// The program listens; the server connects and speaks first:
//   server -> program  ServerHello  (16 bytes)
//   program -> server  ClientHello  (24 bytes)
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
};
inline constexpr uint64_t kKnownCapabilities = kCapCpuZones | kCapGpu;

#pragma pack(push, 1)
struct ServerHello {
  char magic[8];
  uint16_t version;
  uint16_t flags;     // 0
  uint32_t reserved;  // 0
};

struct ClientHello {
  char magic[8];
  uint16_t version;
  uint16_t status;  // HandshakeStatus
  uint32_t reserved;
  uint64_t capabilities;
};
#pragma pack(pop)

static_assert(sizeof(ServerHello) == 16);
static_assert(sizeof(ClientHello) == 24);

// The version a ServerHello announces, or nullopt when the bytes are not a ServerHello.
inline std::optional<uint16_t> ParseServerHello(const uint8_t* bytes, size_t size) {
  if (size < sizeof(ServerHello) || std::memcmp(bytes, kServerMagic, sizeof(kServerMagic)) != 0)
    return std::nullopt;
  return LoadLe<uint16_t>(bytes + offsetof(ServerHello, version));
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
