// The Messages window's rows, as plain data: the messages a filter keeps, in order.
//
//   MessageQuery q{.min_severity = 3, .thread = 2};          // warnings and worse, thread 2
//   std::vector<uint32_t> rows = SelectMessages(model, q, text_passes);
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::viewer {

struct MessageQuery {
  uint8_t min_severity = 0;                                  // protocol::Severity: this one and worse
  std::optional<uint32_t> thread = {};                       // only this thread's (program thread id)
  std::optional<std::pair<int64_t, int64_t>> range_ns = {};  // only those inside (trace-relative)
};

// Indexes into model.messages of those the query keeps and whose text `text_passes`
// (every text when empty), in the order they were recorded.
std::vector<uint32_t> SelectMessages(const server::TraceModel& model, const MessageQuery& query,
                                     const std::function<bool(const std::string&)>& text_passes = {});

// The threads that sent messages, each once, in the order they first did.
std::vector<uint32_t> MessageThreads(const server::TraceModel& model);

}  // namespace gnomon::viewer
