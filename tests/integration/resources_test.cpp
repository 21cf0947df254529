// Memory and locks from a real program over real TCP: exact counts (the program's
// events are all known, see resource_program.cpp), through the report and its JSON.
#include <doctest/doctest.h>

#include <sstream>

#include "../support/json_check.h"
#include "capture_helper.h"
#include "gnomon/server/json_report.h"
#include "gnomon/server/lock_statistics.h"
#include "gnomon/server/memory_statistics.h"

using gnomon::server::TraceModel;
using gnomon::test::CaptureProgram;

namespace {

const gnomon::server::MemoryPoolStatistics* FindPool(
    const std::vector<gnomon::server::MemoryPoolStatistics>& stats, const std::string& name) {
  for (const auto& s : stats) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// Allocations in the default pool of exactly `size` bytes: (made, never freed).
std::pair<uint64_t, uint64_t> AllocationsOfSize(const TraceModel& m, uint64_t size) {
  uint64_t made = 0, leaked = 0;
  const auto& pool = m.memory_pools.at(0);
  for (size_t i = 0; i < pool.allocations.size(); ++i) {
    if (pool.allocations[i].size_bytes != size) continue;
    ++made;
    if (!pool.allocations[i].is_freed()) ++leaked;
  }
  return {made, leaked};
}

}  // namespace

TEST_CASE("memory: allocations of known sizes with known leaks, named pools, operator new, an unknown free") {
  auto capture = CaptureProgram({GNOMON_TEST_RESOURCES, "memory"}, {}, 0);
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  // The thread named before its first event, with every operator new tracked: one
  // thread, named, holding every event.
  REQUIRE(m.threads.size() == 1);
  CHECK(m.threads[0].name == "main");
  CHECK(m.diagnostics.events_without_thread == 0);
  const auto stats = gnomon::server::ComputeMemoryStatistics(m);
  const auto* meshes = FindPool(stats, "meshes");
  const auto* scratch = FindPool(stats, "scratch");
  const auto* defaults = FindPool(stats, "default");
  REQUIRE(meshes != nullptr);
  REQUIRE(scratch != nullptr);
  REQUIRE(defaults != nullptr);
  CHECK(meshes->allocations == 100);
  CHECK(meshes->frees == 50);
  CHECK(meshes->leaked_allocations == 50);
  CHECK(meshes->leaked_bytes == 50 * 4096);
  CHECK(meshes->peak_bytes == 100 * 4096);
  CHECK(scratch->allocations == 1);
  CHECK(scratch->frees == 1);
  // GNOMON_ALLOC of 16 * (i + 1) bytes: every size from 16 to 16,000 once; the last 37
  // never freed. operator new: 5 of 12,345 bytes, 2 never deleted. The default pool also
  // holds the program's other operator news (the standard library's).
  uint64_t sized = 0, sized_leaked = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    const auto [made, leaked] = AllocationsOfSize(m, 16 * (i + 1));
    sized += made >= 1;
    sized_leaked += leaked >= 1 && i >= 1000 - 37;
  }
  CHECK(sized == 1000);
  CHECK(sized_leaked == 37);
  CHECK(AllocationsOfSize(m, 12345) == std::pair<uint64_t, uint64_t>{5, 2});
  CHECK(defaults->unmatched_frees >= 1);  // the pointer never allocated
  CHECK(defaults->leaked_bytes >= 37 * 16 * (1000 - 18) + 2 * 12345);

  std::ostringstream json;
  gnomon::server::WriteJsonReport(m, json);
  gnomon::test::JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(json.str(), root, error), error);
  bool found = false;
  for (const auto& pool : root.Find("memory")->array) {
    if (pool.Find("pool")->string != "meshes") continue;
    found = true;
    CHECK(pool.Find("allocations")->number == 100);
    CHECK(pool.Find("leaked_allocations")->number == 50);
    CHECK(pool.Find("peak_bytes")->number == 409600);
  }
  CHECK(found);
}

TEST_CASE("locks: a lock made to contend a known number of times, and every kind of lock") {
  auto capture = CaptureProgram({GNOMON_TEST_RESOURCES, "locks"}, {}, 0);
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  int failed_tries = -1;
  const size_t at = capture.log.find("contended ");
  REQUIRE(at != std::string::npos);
  failed_tries = std::atoi(capture.log.c_str() + at + 10);
  CHECK(failed_tries >= 10);  // the second thread asked while the first held it, most rounds
  const TraceModel& m = capture.model();
  std::map<std::string, gnomon::server::LockStatistics> by_name;
  for (const auto& s : gnomon::server::ComputeLockStatistics(m)) by_name[s.name] = s;
  REQUIRE(by_name.size() == 7);
  const auto& contended = by_name.at("contended");
  CHECK(contended.acquisitions == 40);
  CHECK(contended.contended == uint64_t(failed_tries));
  CHECK(contended.threads == 2);
  CHECK(contended.wait_total_ns > 0);
  CHECK(by_name.at("quiet").acquisitions == 100);
  CHECK(by_name.at("quiet").contended == 0);
  CHECK(by_name.at("table").acquisitions == 11);
  CHECK(by_name.at("table").shared == 10);
  CHECK(by_name.at("nested").acquisitions == 10);
  CHECK(by_name.at("pair a").acquisitions >= 3);
  CHECK(by_name.at("pair b").acquisitions >= 3);
  CHECK(by_name.at("c lock").acquisitions == 4);
  CHECK(by_name.at("c lock").contended == 1);
  CHECK(m.diagnostics.lock_releases_without_hold == 0);
  for (const auto& [id, lock] : m.locks) {
    for (size_t i = 0; i < lock.holds.size(); ++i) CHECK(lock.holds[i].is_released());
  }
}
