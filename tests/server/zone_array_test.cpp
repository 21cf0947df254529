// Zones packed in 16 bytes: every field comes back as it went in, including lengths past
// 32 bits, depths at the limit, flags, and zones still open.
#include "gnomon/server/zone_array.h"

#include <doctest/doctest.h>

using gnomon::server::kOpenZone;
using gnomon::server::Zone;
using gnomon::server::ZoneArray;

TEST_CASE("a zone array gives back what it was given, 16 bytes a zone") {
  ZoneArray zones;
  const uint64_t base = 0x0123'4567'89AB'CDEFull;  // a TSC value after long uptime
  zones.push_back({base, base + 1000, 7, 0, 0});
  zones.push_back({base + 10, kOpenZone, (1u << 18) - 1, 1, gnomon::server::kZoneHasAttributes});
  zones.push_back({base + 20, base + 20 + (uint64_t{1} << 40), 3, 2, 0});  // far past 32 bits
  zones.push_back({base + 30, base + 30 + 0xFFFF'FFFDull, 3, 5000, 0});    // the longest inline length; deep
  REQUIRE(zones.size() == 4);
  CHECK(zones[0] == Zone{base, base + 1000, 7, 0, 0});
  CHECK(zones[1].is_open());
  CHECK(zones[1].source_location == (1u << 18) - 1);
  CHECK(zones[1].flags == gnomon::server::kZoneHasAttributes);
  CHECK(zones[2].end_tick == base + 20 + (uint64_t{1} << 40));
  CHECK(zones[3].end_tick == base + 30 + 0xFFFF'FFFDull);
  CHECK(zones[3].depth == ZoneArray::kMaxDepth);  // deeper nesting is stored at the limit

  CHECK_FALSE(zones.Close(1, base + 10 + 0xFFFF'FFFFull));  // closing later, past the inline range
  CHECK(zones.Close(2, base));                                 // an end before the begin: clamped
  zones.AddFlags(1, gnomon::server::kZoneEndClamped);
  CHECK(zones[1].end_tick == base + 10 + 0xFFFF'FFFFull);
  CHECK(zones[1].flags == (gnomon::server::kZoneHasAttributes | gnomon::server::kZoneEndClamped));
  CHECK(zones[1].source_location == (1u << 18) - 1);
  CHECK(zones[2].begin_tick == base + 20);
  CHECK(zones[2].end_tick == base + 20);  // clamped to its begin, and flagged
  CHECK(zones[2].flags == gnomon::server::kZoneEndClamped);

  // Chunks double up to 2 MiB, then stay there: past that, never more than one chunk
  // beyond the zones (plus the side table's entry for zone 1's long end).
  for (int i = 0; i < 1'000'000; ++i) zones.push_back({base + uint64_t(i), base + uint64_t(i) + 5, 1, 0, 0});
  CHECK(zones.capacity_bytes() <= zones.size() * 16 + (size_t{2} << 20) + 16);
  CHECK(zones.capacity_bytes() >= zones.size() * 16);
  // Once nothing more is expected the slack goes back; growing again still works.
  zones.ShrinkToFit();
  CHECK(zones.capacity_bytes() == zones.size() * 16 + 16);  // and zone 1's long end
  zones.push_back({base + 7, base + 9, 2, 1, 0});
  CHECK(zones[zones.size() - 1] == Zone{base + 7, base + 9, 2, 1, 0});
  CHECK(zones[zones.size() - 2] == Zone{base + 999'999, base + 999'999 + 5, 1, 0, 0});
  ZoneArray copy;
  for (size_t i = 0; i < zones.size(); ++i) copy.push_back(zones[i]);
  CHECK(copy == zones);
}
