#include "gnomon/server/stream_decoder.h"

namespace gnomon::server {

std::string DescribeTruncation(const uint8_t* data, size_t size) {
  if (size == 0) return "";
  const uint8_t type = data[0];
  const size_t fixed = protocol::FixedSize(type);
  if (fixed == 0) return "unknown message type " + std::to_string(type);
  size_t needed = fixed;
  if (size >= fixed) needed += protocol::VariableSize(type, data);
  return std::string("the stream ends inside a ") + protocol::MessageTypeName(type) + " message (" +
         std::to_string(size) + " of its " + std::to_string(needed) + " bytes arrived)";
}

}  // namespace gnomon::server
