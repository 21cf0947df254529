// A trace model built from a stream held in memory, as a worker builds it.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>

#include "gnomon/tracefile/trace_writer.h"
#include "model/trace_builder.h"
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

// The same, requiring every byte of `w` to be whole messages.
inline server::TraceModel BuildWholeModel(const StreamWriter& w) {
  size_t consumed = 0;
  server::TraceModel model = BuildModel(w, &consumed);
  REQUIRE(consumed == w.size());
  return model;
}

// Appends `w` to `stream` in message-aligned pieces of about 3,000 bytes, as a worker
// does.
inline void AppendPieces(tracefile::TraceWriter::Stream& stream, const StreamWriter& w) {
  size_t pos = 0;
  while (pos < w.size()) {
    server::NullHandler ignore;
    const size_t piece = std::min<size_t>(w.size() - pos, 3000);
    const auto decoded = server::DecodeMessages(w.data() + pos, piece, ignore);
    const size_t take = decoded.consumed > 0 ? decoded.consumed : w.size() - pos;
    stream.Append(w.data() + pos, take);
    pos += take;
  }
}

}  // namespace gnomon::test
