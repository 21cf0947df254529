// Lock waits, obtains and releases turned into holds: contention, nesting, readers, and
// releases without a hold counted.
#include "model/lock_builder.h"

#include <doctest/doctest.h>

#include "../../support/build_model.h"
#include "gnomon/server/lock_statistics.h"

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

TEST_CASE("recursive holds nest, readers share, and a release with no hold is counted") {
  StreamWriter w;
  w.ThreadContext(1).LockObtain(9, 10).LockObtain(9, 20).LockRelease(9, 30).LockRelease(9, 40);
  w.ThreadContext(2).LockObtain(9, 50, gnomon::protocol::kLockShared);
  w.ThreadContext(3).LockObtain(9, 55, gnomon::protocol::kLockShared).LockRelease(9, 60);
  w.ThreadContext(2).LockRelease(9, 70).LockRelease(9, 80);
  w.ThreadContext(4).LockWait(9, 90);  // waits until the end: no hold
  const TraceModel m = Build(w);
  const auto& lock = m.locks.at(9);
  REQUIRE(lock.holds.size() == 4);
  CHECK(lock.holds[0].release_tick == 40);  // the outer hold, released last
  CHECK(lock.holds[1].release_tick == 30);
  CHECK(lock.holds[2].release_tick == 70);
  CHECK(lock.name == "lock 9");
  CHECK(m.diagnostics.lock_releases_without_hold == 1);
  const auto stats = ComputeLockStatistics(m);
  CHECK(stats[0].shared == 2);
  CHECK(stats[0].threads == 3);
}
