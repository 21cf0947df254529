#include "ingest/stream_decoder.h"

namespace gnomon::server {

std::string DescribeTruncation(const uint8_t* data, size_t size) {
  if (size == 0) return "";
  const protocol::MessageSpan span = protocol::MeasureMessage(data, size);
  if (span.status == protocol::MessageSpan::kUnknownType)
    return "unknown message type " + std::to_string(data[0]);
  return std::string("the stream ends inside a ") + protocol::MessageTypeName(data[0]) + " message (" +
         std::to_string(size) + " of its " + std::to_string(span.size) + " bytes arrived)";
}

}  // namespace gnomon::server
