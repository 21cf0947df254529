// What a trace's memory pools hold, from a model built of allocations and frees: counts,
// the peak of bytes in use and when, what was never freed, and the bytes in use over time.
#include "gnomon/server/memory_statistics.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../../support/build_model.h"

using gnomon::protocol::StringKind;
using gnomon::server::ComputeMemoryStatistics;
using gnomon::server::MemoryUsage;
using gnomon::server::TraceModel;
using gnomon::test::StreamWriter;

namespace {

TraceModel Build(const StreamWriter& w) { return gnomon::test::BuildWholeModel(w); }

const gnomon::server::MemoryPoolStatistics& PoolStats(
    const std::vector<gnomon::server::MemoryPoolStatistics>& stats, const std::string& name) {
  for (const auto& s : stats) {
    if (s.name == name) return s;
  }
  FAIL("no pool " << name);
  return stats.front();
}

}  // namespace

TEST_CASE("allocations of known sizes, some never freed: exact counts, peak and leaks per pool") {
  StreamWriter w;
  w.String(5, StringKind::kMemoryPool, "textures").ThreadContext(1);
  // Default pool: 10 blocks of 100 * (i + 1) bytes; the last 3 never freed.
  for (uint64_t i = 0; i < 10; ++i) w.Alloc(0, 0x1000 + i * 0x100, 100 * (i + 1), 10 + i);
  for (uint64_t i = 0; i < 7; ++i) w.Free(0, 0x1000 + i * 0x100, 100 + i);
  // "textures": one 1 MiB block, freed, then the address reused for 2 MiB, freed.
  w.Alloc(5, 0x9000, 1 << 20, 20).Free(5, 0x9000, 30).Alloc(5, 0x9000, 2 << 20, 40).Free(5, 0x9000, 50);
  const TraceModel m = Build(w);
  const auto stats = ComputeMemoryStatistics(m);
  REQUIRE(stats.size() == 2);
  const auto& d = PoolStats(stats, "default");
  CHECK(d.allocations == 10);
  CHECK(d.frees == 7);
  CHECK(d.unmatched_frees == 0);
  CHECK(d.allocated_bytes == 5500);
  CHECK(d.peak_bytes == 5500);  // all ten live between tick 19 and 100
  CHECK(d.peak_tick == 19);
  CHECK(d.leaked_allocations == 3);
  CHECK(d.leaked_bytes == 800 + 900 + 1000);
  const auto& t = PoolStats(stats, "textures");
  CHECK(t.allocations == 2);
  CHECK(t.frees == 2);
  CHECK(t.peak_bytes == 2u << 20);
  CHECK(t.leaked_allocations == 0);
  // Bytes in use over time, in time order.
  const auto usage = MemoryUsage(m.memory_pools.at(5));
  REQUIRE(usage.size() == 4);
  CHECK(usage[0] == std::pair<uint64_t, uint64_t>{20, 1u << 20});
  CHECK(usage[1] == std::pair<uint64_t, uint64_t>{30, 0});
  CHECK(usage[3] == std::pair<uint64_t, uint64_t>{50, 0});
  CHECK(m.last_tick == 106);
}

TEST_CASE(
    "bytes in use count an allocation before a free at the same tick, and the peak is when first reached") {
  StreamWriter w;
  w.ThreadContext(1);
  // 100 bytes at 10, freed at 20 as 50 more are allocated; those freed at 30; the same
  // 150 bytes again from 40 to 50.
  w.Alloc(0, 0xA, 100, 10).Free(0, 0xA, 20).Alloc(0, 0xB, 50, 20).Free(0, 0xB, 30);
  w.Alloc(0, 0xC, 150, 40).Free(0, 0xC, 50);
  const TraceModel m = Build(w);
  using Usage = std::vector<std::pair<uint64_t, uint64_t>>;
  CHECK(MemoryUsage(m.memory_pools.at(0)) ==
        Usage{{10, 100}, {20, 150}, {20, 50}, {30, 0}, {40, 150}, {50, 0}});
  const auto stats = ComputeMemoryStatistics(m);
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].pool_id == 0);
  CHECK(stats[0].allocations == 3);
  CHECK(stats[0].frees == 3);
  CHECK(stats[0].allocated_bytes == 300);
  CHECK(stats[0].peak_bytes == 150);
  CHECK(stats[0].peak_tick == 20);  // reached again at 40: still the first time
  CHECK(stats[0].leaked_allocations == 0);
  CHECK(stats[0].leaked_bytes == 0);
}
