// Allocations and frees into pools: pairing (also when threads' messages arrive out of
// time order), what never was freed, the peak, and the stream's oddities counted.
#include "model/memory_builder.h"

#include <doctest/doctest.h>

#include "../../support/build_model.h"
#include "gnomon/server/memory_statistics.h"

using gnomon::server::ComputeMemoryStatistics;
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

TEST_CASE("a free that arrives before its allocation (another thread's chunk came later) still pairs") {
  StreamWriter w;
  // Thread 2 frees at tick 50 what thread 1 allocated at tick 40; thread 2's chunk
  // arrives first. Thread 1 also allocates the address again at 60.
  w.ThreadContext(2).Free(0, 0xABC, 50);
  w.ThreadContext(1).Alloc(0, 0xABC, 64, 40).Alloc(0, 0xABC, 32, 60);
  const TraceModel m = Build(w);
  const auto& pool = m.memory_pools.at(0);
  REQUIRE(pool.allocations.size() == 2);
  CHECK(pool.allocations[0].free_tick == 50);
  CHECK(pool.allocations[0].free_thread == 2);
  CHECK(pool.allocations[0].alloc_thread == 1);
  CHECK_FALSE(pool.allocations[1].is_freed());
  CHECK(pool.frees == 1);
  CHECK(pool.unmatched_frees == 0);
  CHECK(m.diagnostics.memory_allocations_over_live == 0);
}

TEST_CASE("frees of unknown pointers, absurd sizes and a live address allocated again are counted") {
  StreamWriter w;
  w.ThreadContext(1);
  w.Free(0, 0x1, 5);                                             // allocated before profiling
  w.Alloc(0, 0x2, uint64_t(1) << 60, 6).Free(0, 0x2, 7);         // absurd: taken as 0
  w.Alloc(0, 0x3, 10, 8).Alloc(0, 0x3, 20, 9).Free(0, 0x3, 10);  // the first stays unfreed
  w.Free(0, 0x4, 11).Free(0, 0x4, 12);                           // two unknown frees of one address
  w.Alloc(7, 0x5, 10, 13);                                       // a pool never named
  const TraceModel m = Build(w);
  const auto& pool = m.memory_pools.at(0);
  CHECK(pool.unmatched_frees == 3);
  CHECK(pool.frees == 2);
  CHECK(m.diagnostics.memory_absurd_sizes == 1);
  CHECK(m.diagnostics.memory_allocations_over_live == 1);
  const auto stats = ComputeMemoryStatistics(m);
  CHECK(PoolStats(stats, "default").leaked_allocations == 1);
  CHECK(PoolStats(stats, "default").leaked_bytes == 10);
  CHECK(PoolStats(stats, "default").peak_bytes == 30);
  CHECK(PoolStats(stats, "pool 7").allocations == 1);
}

TEST_CASE("memory events before any thread are counted, not kept") {
  StreamWriter w;
  w.Alloc(0, 0x1, 10, 1).Free(0, 0x1, 2);
  const TraceModel m = Build(w);
  CHECK(m.memory_pools.empty());
  CHECK(m.diagnostics.events_without_thread == 2);
}

TEST_CASE(
    "an address reused by another thread before the first free arrives: every free finds its allocation") {
  StreamWriter w;
  // Thread 1 allocates X at 10 (its chunk arrives) and frees it at 20 (in a chunk that
  // arrives last); thread 2 allocates X at 30 and frees it at 40, arriving in between.
  w.ThreadContext(1).Alloc(0, 0x77, 8, 10);
  w.ThreadContext(2).Alloc(0, 0x77, 16, 30).Free(0, 0x77, 40);
  w.ThreadContext(1).Free(0, 0x77, 20);
  const TraceModel m = Build(w);
  const auto& pool = m.memory_pools.at(0);
  REQUIRE(pool.allocations.size() == 2);
  CHECK(pool.allocations[0].free_tick == 20);
  CHECK(pool.allocations[1].free_tick == 40);
  CHECK(pool.frees == 2);
  CHECK(pool.unmatched_frees == 0);
  CHECK(m.diagnostics.memory_allocations_over_live == 0);  // another thread's: not a double allocation
  CHECK(ComputeMemoryStatistics(m)[0].leaked_allocations == 0);
}

TEST_CASE("one address allocated without end is bounded: the oldest live ones are let go") {
  StreamWriter w;
  w.ThreadContext(1);
  for (uint64_t i = 0; i < 1000; ++i) w.Alloc(0, 0x5, 1, 10 + i);
  const TraceModel m = Build(w);
  CHECK(m.memory_pools.at(0).allocations.size() == 1000);
  CHECK(m.diagnostics.memory_allocations_over_live == 999);
}
