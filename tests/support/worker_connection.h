// What the worker's tests share: the hello a fake program (fake_peers.h) answers with,
// and a worker's options to connect to it.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "fake_peers.h"
#include "gnomon/protocol/handshake.h"
#include "gnomon/server/worker.h"

namespace gnomon::test {

inline constexpr auto kOk = protocol::HandshakeStatus::kOk;

// A ClientHello of `version` and `status`, as a program answers the server's hello.
inline std::vector<uint8_t> Hello(uint16_t version, protocol::HandshakeStatus status, uint64_t caps = 1,
                                  uint32_t reserved = 0) {
  return ClientHelloBytes(version, uint16_t(status), caps, reserved);
}

// A worker's options to connect to a program on loopback `port`.
inline server::Worker::Options OptionsFor(uint16_t port) {
  server::Worker::Options options;
  options.port = port;
  options.connect_timeout = std::chrono::milliseconds(2000);
  return options;
}

}  // namespace gnomon::test
