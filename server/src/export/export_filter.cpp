#include "gnomon/server/export_filter.h"

#include <charconv>
#include <cmath>

#include "gnomon/protocol/settings.h"
#include "gnomon/server/text.h"

namespace gnomon::server {
namespace {

// Milliseconds as ns; nullopt-like false when not a finite number.
bool ParseMs(std::string_view text, int64_t& ns) {
  double ms = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(ms) || std::abs(ms) > 1e12)
    return false;
  ns = std::llround(ms * 1e6);
  return true;
}

}  // namespace

bool ExportFilter::KeepsThread(const ThreadTimeline& thread) const {
  if (threads.empty()) return true;
  const std::string tid = std::to_string(thread.os_thread_id);
  for (const std::string& wanted : threads) {
    if (wanted == thread.name || wanted == tid) return true;
  }
  return false;
}

bool ExportFilter::KeepsZone(std::string_view name) const {
  return zones.empty() || ContainsText(name, zones);
}

std::string ExportFilter::ParseRange(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return protocol::IsNot(text, "A:B (milliseconds)");
  const std::string_view from = text.substr(0, colon), to = text.substr(colon + 1);
  int64_t begin = begin_ns, end = end_ns;
  if (!from.empty() && !ParseMs(from, begin)) return protocol::IsNot(from, "a number of milliseconds");
  if (!to.empty() && !ParseMs(to, end)) return protocol::IsNot(to, "a number of milliseconds");
  if (end < begin) return "the range ends before it begins";
  begin_ns = begin;
  end_ns = end;
  return "";
}

void ExportFilter::ParseThreads(std::string_view text) {
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    if (!item.empty()) threads.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace gnomon::server
