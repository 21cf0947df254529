#include "gnomon/viewer/message_list.h"

#include <algorithm>
#include <unordered_set>

namespace gnomon::viewer {

std::vector<uint32_t> SelectMessages(const server::TraceModel& model, const MessageQuery& query,
                                     const std::function<bool(const std::string&)>& text_passes) {
  const int64_t origin = model.clock.TickToNs(model.first_tick);
  std::vector<uint32_t> rows;
  for (size_t i = 0; i < model.messages.size(); ++i) {
    const server::LogMessage& m = model.messages[i];
    if (m.severity < query.min_severity) continue;
    if (query.thread && m.thread_id != *query.thread) continue;
    if (query.range_ns) {
      const int64_t at = model.clock.TickToNs(m.tick) - origin;
      if (at < query.range_ns->first || at > query.range_ns->second) continue;
    }
    if (text_passes && !text_passes(m.text)) continue;
    rows.push_back(uint32_t(i));
  }
  return rows;
}

std::vector<uint32_t> MessageThreads(const server::TraceModel& model) {
  std::vector<uint32_t> threads;
  std::unordered_set<uint32_t> seen;
  for (const server::LogMessage& m : model.messages) {
    if (seen.insert(m.thread_id).second) threads.push_back(m.thread_id);
  }
  return threads;
}

}  // namespace gnomon::viewer
