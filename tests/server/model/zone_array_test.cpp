// Zones packed in 12 bytes: every field comes back as it went in, including lengths past
// 32 bits, begins far from their page's base, depths at the limit, flags, and zones still open.
#include "gnomon/server/zone_array.h"

#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "../../support/mappings.h"

using gnomon::server::kOpenZone;
using gnomon::server::Zone;
using gnomon::server::ZoneArray;

TEST_CASE("a zone array gives back what it was given, 12 bytes a zone") {
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
  CHECK(zones.Close(2, base));                              // an end before the begin: clamped
  zones.AddFlags(1, gnomon::server::kZoneEndClamped);
  CHECK(zones[1].end_tick == base + 10 + 0xFFFF'FFFFull);
  CHECK(zones[1].flags == (gnomon::server::kZoneHasAttributes | gnomon::server::kZoneEndClamped));
  CHECK(zones[1].source_location == (1u << 18) - 1);
  CHECK(zones[2].begin_tick == base + 20);
  CHECK(zones[2].end_tick == base + 20);  // clamped to its begin, and flagged
  CHECK(zones[2].flags == gnomon::server::kZoneEndClamped);

  // Pages of 1,024 zones (12 KiB), carved from 2 MiB blocks after the first eight: never
  // more than one block beyond the zones, plus a pointer a page, a base tick per 64 zones
  // and the side table's entry for zone 1's long end.
  for (int i = 0; i < 1'000'000; ++i) zones.push_back({base + uint64_t(i), base + uint64_t(i) + 5, 1, 0, 0});
  const size_t pages = (zones.size() + 1023) / 1024;
  const size_t groups = (zones.size() + 63) / 64;
  CHECK(zones.capacity_bytes() <= pages * 12288 + (size_t{2} << 20) + 2 * (pages * 8 + groups * 8) + 24);
  CHECK(zones.capacity_bytes() >= zones.size() * 12 + pages * 8 + groups * 8);
  // Once nothing more is expected the untouched end of the last block goes back (each
  // full block keeps 8 KiB that no page fits in); growing again still works.
  zones.ShrinkToFit();
  const size_t blocks = (pages - 8 + 169) / 170;
  CHECK(zones.capacity_bytes() == pages * 12288 + (blocks - 1) * 8192 + pages * 8 + groups * 8 + 24);
  CHECK(double(zones.capacity_bytes()) / double(zones.size()) < 12.2);
  zones.push_back({base + 7, base + 9, 2, 1, 0});
  CHECK(zones[zones.size() - 1] == Zone{base + 7, base + 9, 2, 1, 0});
  CHECK(zones[zones.size() - 2] == Zone{base + 999'999, base + 999'999 + 5, 1, 0, 0});
  ZoneArray copy;
  for (size_t i = 0; i < zones.size(); ++i) copy.push_back(zones[i]);
  CHECK(copy == zones);
}

TEST_CASE("a thread of 60 zones a second keeps every begin inline") {
  // 2.6 GHz: 64 zones span 1.1 s, inside a group's 2^32-tick window, while a page of
  // 1,024 spans 17 s.
  ZoneArray zones;
  const uint64_t spacing = 2'600'000'000ull / 60;
  for (uint64_t i = 0; i < 3000; ++i)
    zones.push_back({1'000'000 + i * spacing, 1'000'000 + i * spacing + 500, 1, 0, 0});
  zones.ShrinkToFit();
  CHECK(zones.capacity_bytes() == 3 * 12288 + 3 * 8 + 47 * 8);  // three pages, 47 groups, no side-table entry
  for (uint64_t i = 0; i < 3000; ++i) {
    CHECK(zones[i] == Zone{1'000'000 + i * spacing, 1'000'000 + i * spacing + 500, 1, 0, 0});
  }
}

TEST_CASE("zones far from their group's base keep their begins: sparse threads, clocks stepping back") {
  ZoneArray zones;
  std::vector<Zone> expected;
  // A thread of one zone every 3 seconds of a 3 GHz counter: 2^32 ticks pass every few
  // zones, so most begins leave their page's window.
  uint64_t tick = 1000;
  for (int i = 0; i < 3000; ++i, tick += 9'000'000'000ull) expected.push_back({tick, tick + 100, 1, 0, 0});
  // Steps back: a little (inline, within the margin before the base), far (past it), to 0.
  expected.push_back({tick - 5000, tick, 2, 0, 0});
  expected.push_back({tick - (uint64_t{1} << 40), tick, 2, 0, 0});
  expected.push_back({0, 10, 2, 0, 0});
  expected.push_back({~uint64_t{0} - 1, kOpenZone, 2, 0, 0});
  for (const Zone& zone : expected) zones.push_back(zone);
  REQUIRE(zones.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) CHECK(zones[i] == expected[i]);
  // A far begin with a long end, then closed again shorter: the begin stays.
  const size_t last = zones.size() - 1;
  CHECK_FALSE(zones.Close(last, ~uint64_t{0}));
  zones.push_back({5, 5 + (uint64_t{1} << 33), 3, 1, 0});
  CHECK_FALSE(zones.Close(zones.size() - 1, 6));
  CHECK(zones[last].end_tick == ~uint64_t{0});
  CHECK(zones[zones.size() - 1] == Zone{5, 6, 3, 1, 0});
  // A dense thread whose pages each start after a jump of 2^40 ticks stays inline.
  ZoneArray dense;
  for (uint64_t i = 0; i < 5000; ++i)
    dense.push_back({(i / 1024) << 40 | i, ((i / 1024) << 40 | i) + 1, 1, 0, 0});
  dense.ShrinkToFit();
  CHECK(dense.capacity_bytes() == 5 * 12288 + 5 * 8 + 79 * 8);  // five pages, 79 groups, no side-table entry
  for (uint64_t i = 0; i < 5000; ++i) CHECK(dense[i].begin_tick == ((i / 1024) << 40 | i));
}

TEST_CASE("a small thread costs a small page, which grows to a full one zone by zone") {
  ZoneArray one;
  one.push_back({100, 200, 1, 0, 0});
  CHECK(one.capacity_bytes() == 64 * 12 + 8 + 8);  // room for a group, its page pointer and base
  ZoneArray zones;
  for (uint64_t i = 0; i < 2100; ++i) {
    zones.push_back({1000 + i * 50, 1000 + i * 50 + 7, uint32_t(i % 100), uint16_t(i % 3), 0});
    if (i == 63 || i == 64 || i == 511 || i == 1023 || i == 1024) {
      for (uint64_t k = 0; k <= i; ++k)
        REQUIRE(zones[k] == Zone{1000 + k * 50, 1000 + k * 50 + 7, uint32_t(k % 100), uint16_t(k % 3), 0});
    }
  }
  for (uint64_t k = 0; k < 2100; ++k) CHECK(zones[k].begin_tick == 1000 + k * 50);
  zones.ShrinkToFit();
  CHECK(zones.capacity_bytes() == 3 * 12288 + 3 * 8 + 33 * 8);
  ZoneArray moved = std::move(zones);
  CHECK(zones.empty());
  zones.push_back({5, 6, 1, 0, 0});  // a moved-from array starts over
  CHECK(zones[0] == Zone{5, 6, 1, 0, 0});
  CHECK(moved[2099].begin_tick == 1000 + 2099 * 50);
}

TEST_CASE("freeing a shrunk array leaves alone what the kernel put in the trimmed end of its block") {
  std::vector<std::unique_ptr<gnomon::test::PlantedMapping>> planted;
  {
    ZoneArray zones;
    for (uint64_t i = 0; i < 8192 + 3 * 1024; ++i) zones.push_back({i * 10, i * 10 + 5, 1, 0, 0});
    zones.ShrinkToFit();
    int blocks = 0;
    zones.ForEachBlock([&](const void* base, size_t mapped) {
      ++blocks;
      CHECK(mapped == 3 * 12288);
      auto* hole = const_cast<char*>(static_cast<const char*>(base)) + mapped;
      planted.push_back(std::make_unique<gnomon::test::PlantedMapping>(
          hole, gnomon::server::chunk_memory::kBlockBytes - mapped));
      REQUIRE(planted.back()->ok());
    });
    CHECK(blocks == 1);
    CHECK(zones[8192 + 3 * 1024 - 1].begin_tick == (8192 + 3 * 1024 - 1) * 10);
  }
  for (const auto& mapping : planted) CHECK(mapping->is_intact());
}
