// What an export keeps of a trace (gnomon-report --range, --threads, --zones):
//  - a time range, in ns from the trace's first event: events that overlap it (a zone
//    that began before it and ends inside is kept whole; a counter's value set before
//    it is given at its beginning);
//  - threads, by name or OS thread id: only their zones, messages, lock holds and
//    waits, and only GPU zones they recorded; frames, plots, memory and GPU counters
//    stay (in range);
//  - a zone name: only the CPU and GPU zones whose name holds it, in any case.
// An empty filter keeps everything.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::server {

struct ExportFilter {
  int64_t begin_ns = std::numeric_limits<int64_t>::min();
  int64_t end_ns = std::numeric_limits<int64_t>::max();
  std::vector<std::string> threads;  // names or OS thread ids; empty: every thread
  std::string zones;                 // empty: every zone

  bool Overlaps(int64_t begin_ns_from_start, int64_t end_ns_from_start) const {
    return begin_ns_from_start <= end_ns && end_ns_from_start >= begin_ns;
  }
  bool Contains(int64_t ns_from_start) const { return Overlaps(ns_from_start, ns_from_start); }
  bool KeepsThread(const ThreadTimeline& thread) const;
  bool KeepsZone(std::string_view name) const;

  // "A:B" in milliseconds, or each with its unit ("4.5s:5s"; ns, us, ms, s, min),
  // either side may be left out ("A:" or ":B"); "" when it parsed, else what is wrong.
  std::string ParseRange(std::string_view text);
  // "main,worker 0,4242": names or OS thread ids, comma-separated.
  void ParseThreads(std::string_view text);
};

}  // namespace gnomon::server
