// The zones of a model that overlap a time range, as a set to compare: what a cut of a
// trace must hold exactly.
#pragma once

#include <cstdint>
#include <set>
#include <tuple>

#include "gnomon/server/trace_model.h"

namespace gnomon::test {

// A zone by its thread (the program's id), begin and end ticks.
using ZoneSpan = std::tuple<uint32_t, uint64_t, uint64_t>;

// The zones that overlap [from_ns, to_ns], in ns from the model's first event.
inline std::multiset<ZoneSpan> ZonesOverlapping(const server::TraceModel& model, int64_t from_ns,
                                                int64_t to_ns) {
  std::multiset<ZoneSpan> found;
  for (const auto& thread : model.threads) {
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const auto zone = thread.zones[i];
      if (model.RelativeNs(zone.begin_tick) <= to_ns && model.RelativeNs(zone.end_tick) >= from_ns)
        found.emplace(thread.id, zone.begin_tick, zone.end_tick);
    }
  }
  return found;
}
// Every zone of the model.
inline std::multiset<ZoneSpan> AllZones(const server::TraceModel& model) {
  return ZonesOverlapping(model, INT64_MIN / 4, INT64_MAX / 4);
}

}  // namespace gnomon::test
