// A trace model built from a stream held in memory, as a worker builds it.
#pragma once

#include <cstddef>

#include "gnomon/server/trace_builder.h"
#include "stream_writer.h"

namespace gnomon::test {

// Decodes the whole messages of `w` into a new model; *consumed (when given) gets the
// bytes decoded.
inline server::TraceModel BuildModel(const StreamWriter& w, size_t* consumed = nullptr) {
  server::TraceModel model;
  server::TraceBuilder builder(model);
  const server::DecodeResult result = server::DecodeMessages(w.data(), w.size(), builder);
  if (consumed != nullptr) *consumed = result.consumed;
  return model;
}

}  // namespace gnomon::test
