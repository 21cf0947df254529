// A trace model built from a stream held in memory, as a worker builds it.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>

#include "stream_writer.h"
#include "trace_builder.h"

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

// The same, requiring every byte of `w` to be whole messages.
inline server::TraceModel BuildWholeModel(const StreamWriter& w) {
  size_t consumed = 0;
  server::TraceModel model = BuildModel(w, &consumed);
  REQUIRE(consumed == w.size());
  return model;
}

}  // namespace gnomon::test
