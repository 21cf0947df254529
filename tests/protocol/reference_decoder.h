// A deliberately simple decoder of the Gnomon message stream, written from
// docs/protocol.md alone: it reads field by field with a byte cursor and shares no code
// with the fast decoder (server/stream_decoder.h), which the tests check against it.
//
// Each message becomes one line of text, e.g. "ZoneBegin location=3 tick=100".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gnomon::test {

struct ReferenceDecodeResult {
  std::vector<std::string> messages;
  size_t consumed = 0;
  bool unknown_type = false;
};

ReferenceDecodeResult ReferenceDecode(const uint8_t* data, size_t size);

}  // namespace gnomon::test
