// A deliberately simple decoder of the Gnomon message stream that knows nothing but what
// docs/protocol.md says: it takes its layouts from the page's tables (protocol_doc.h),
// reads field by field with a byte cursor and shares no code with the fast decoder
// (server/stream_decoder.h), which the tests check against it.
//
// Each message becomes one line of text: its name, then each field but the tag as
// name=value in order ("ZoneBegin srcloc_id=3 tick=100"); strings as name='text',
// values as name=[1,2], doubles with 17 significant digits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol_doc.h"

namespace gnomon::test {

struct ReferenceDecodeResult {
  std::vector<std::string> messages;
  size_t consumed = 0;
  bool unknown_type = false;
};

ReferenceDecodeResult ReferenceDecode(const ProtocolDoc& doc, const uint8_t* data, size_t size);

// The path of docs/protocol.md in the source tree.
std::string ProtocolDocPath();

}  // namespace gnomon::test
