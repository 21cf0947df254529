// Per lock, from a model built of lock events: acquisitions, contention, readers, threads,
// and how long the waits and holds were; the most waited-for first.
#include "gnomon/server/lock_statistics.h"

#include <doctest/doctest.h>

#include "../../support/build_model.h"

using gnomon::protocol::StringKind;
using gnomon::server::ComputeLockStatistics;
using gnomon::server::TraceModel;
using gnomon::test::StreamWriter;

namespace {
TraceModel Build(const StreamWriter& w) { return gnomon::test::BuildWholeModel(w); }
}  // namespace

TEST_CASE("a lock made to contend: who held it, who waited and how long") {
  StreamWriter w;
  // The timer runs at 1 tick per ns once two calibration pairs say so.
  w.Calibration(0, 0, 0, 1).Calibration(1'000'000, 1'000'000, 1'000'000, 1);
  w.String(3, StringKind::kLockName, "job queue").String(4, StringKind::kLockName, "job queue");
  // Thread 1 holds lock 3 from 100 to 500; thread 2 waits from 200 and holds it 500..600.
  w.ThreadContext(1).LockObtain(3, 100).LockRelease(3, 500);
  w.ThreadContext(2).LockWait(3, 200).LockObtain(3, 500).LockRelease(3, 600);
  // Uncontended again, and a second lock of the same name.
  w.ThreadContext(1).LockObtain(3, 700).LockRelease(3, 710).LockObtain(4, 800).LockRelease(4, 900);
  const TraceModel m = Build(w);
  REQUIRE(m.locks.size() == 2);
  const auto& lock = m.locks.at(3);
  CHECK(lock.name == "job queue");
  REQUIRE(lock.holds.size() == 3);
  CHECK_FALSE(lock.holds[0].is_contended());
  CHECK(lock.holds[1].is_contended());
  CHECK(lock.holds[1].wait_tick == 200);
  CHECK(lock.holds[1].thread_id == 2);
  const auto stats = ComputeLockStatistics(m);
  REQUIRE(stats.size() == 2);
  CHECK(stats[0].lock_id == 3);  // most waited-for first
  CHECK(stats[0].acquisitions == 3);
  CHECK(stats[0].contended == 1);
  CHECK(stats[0].threads == 2);
  CHECK(stats[0].wait_total_ns == 300);
  CHECK(stats[0].wait_max_ns == 300);
  CHECK(stats[0].hold_total_ns == 400 + 100 + 10);
  CHECK(stats[0].hold_max_ns == 400);
  CHECK(stats[1].acquisitions == 1);
  CHECK(stats[1].contended == 0);
}

TEST_CASE(
    "locks nobody waited for keep their id order, and a hold never released counts as taken, not held") {
  StreamWriter w;
  w.Calibration(0, 0, 0, 1).Calibration(1'000'000, 1'000'000, 1'000'000, 1);
  // Lock 5 held 50 ns; lock 2 held 60 ns, then taken again and never released.
  w.ThreadContext(1).LockObtain(5, 100).LockRelease(5, 150);
  w.LockObtain(2, 200).LockRelease(2, 260).LockObtain(2, 300);
  w.ThreadContext(2).LockObtain(5, 400).LockRelease(5, 420);
  const auto stats = ComputeLockStatistics(Build(w));
  REQUIRE(stats.size() == 2);
  CHECK(stats[0].lock_id == 2);  // no waits on either: by id
  CHECK(stats[0].name == "lock 2");
  CHECK(stats[0].acquisitions == 2);
  CHECK(stats[0].contended == 0);
  CHECK(stats[0].shared == 0);
  CHECK(stats[0].threads == 1);
  CHECK(stats[0].wait_total_ns == 0);
  CHECK(stats[0].wait_max_ns == 0);
  CHECK(stats[0].hold_total_ns == 60);  // the hold still open at the end is not a hold time
  CHECK(stats[0].hold_max_ns == 60);
  CHECK(stats[1].lock_id == 5);
  CHECK(stats[1].acquisitions == 2);
  CHECK(stats[1].threads == 2);
  CHECK(stats[1].hold_total_ns == 50 + 20);
  CHECK(stats[1].hold_max_ns == 50);
}
