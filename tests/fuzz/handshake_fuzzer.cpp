// Fuzzes both halves of the handshake: the program parsing a ServerHello, the server
// checking a ClientHello. Neither may crash, read past the input, or accept garbage.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "gnomon/protocol/handshake.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/worker.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto version = gnomon::protocol::ParseServerHello(data, size);
  if (version && (size < sizeof(gnomon::protocol::ServerHello))) std::abort();
  const auto status = gnomon::server::CheckClientHello(data, size, "fuzz");
  if (status.ok()) {
    // Accepted: it must really be a current, OK, known-capability hello.
    const auto hello = gnomon::protocol::ParseClientHello(data, size);
    if (!hello || hello->version != gnomon::protocol::kProtocolVersion ||
        hello->status != gnomon::protocol::HandshakeStatus::kOk ||
        (hello->capabilities & ~gnomon::protocol::kKnownCapabilities) != 0) {
      std::abort();
    }
  } else if (status.message().empty()) {
    std::abort();  // every refusal says why
  }
  return 0;
}
