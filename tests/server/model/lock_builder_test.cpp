// Lock waits, obtains and releases turned into holds: contention, nesting, readers, and
// releases without a hold counted.
#include "model/lock_builder.h"

#include <doctest/doctest.h>

#include "../../support/build_model.h"
#include "gnomon/server/lock_statistics.h"

using gnomon::server::ComputeLockStatistics;
using gnomon::server::TraceModel;
using gnomon::test::StreamWriter;

namespace {
TraceModel Build(const StreamWriter& w) { return gnomon::test::BuildWholeModel(w); }
}  // namespace

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
