#include "gnomon/server/export_filter.h"

#include <charconv>
#include <cmath>

#include "gnomon/protocol/settings.h"
#include "gnomon/server/text.h"

namespace gnomon::server {
namespace {

// A time as ns: a number of milliseconds, or of the unit after it (ns, us, ms, s, min);
// false when not a finite number of a known unit.
bool ParseTime(std::string_view text, int64_t& ns) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || !std::isfinite(value)) return false;
  const std::string_view unit(end, size_t(text.data() + text.size() - end));
  double ns_per_unit = 0;
  if (unit.empty() || unit == "ms") {
    ns_per_unit = 1e6;
  } else if (unit == "ns") {
    ns_per_unit = 1;
  } else if (unit == "us") {
    ns_per_unit = 1e3;
  } else if (unit == "s") {
    ns_per_unit = 1e9;
  } else if (unit == "min") {
    ns_per_unit = 60e9;
  } else {
    return false;
  }
  const double result = value * ns_per_unit;
  if (std::abs(result) > 1e18) return false;
  ns = std::llround(result);
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
  if (colon == std::string_view::npos) return protocol::IsNot(text, "A:B (milliseconds, or 4.5s:5s)");
  const std::string_view from = text.substr(0, colon), to = text.substr(colon + 1);
  int64_t begin = begin_ns, end = end_ns;
  constexpr const char* kTime = "a time (milliseconds, or a number and ns, us, ms, s or min)";
  if (!from.empty() && !ParseTime(from, begin)) return protocol::IsNot(from, kTime);
  if (!to.empty() && !ParseTime(to, end)) return protocol::IsNot(to, kTime);
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
