// The C API for memory and locks (core/memory_lock_api.cpp): allocations and frees in
// named pools, and the waits, holds and releases of locks, through the real client to
// a worker connected to this process.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <gnomon/gnomon.hpp>
#include <string>
#include <thread>

#include "../../support/self_capture.h"
#include "core/inside_library.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/worker.h"

using gnomon::server::TraceModel;
using gnomon::server::Worker;
using gnomon::test::FindThread;
using gnomon::test::WaitForModel;

namespace {

const gnomon::server::MemoryPool* FindPool(const TraceModel& m, const std::string& name) {
  for (const auto& [id, pool] : m.memory_pools) {
    if (pool.name == name) return &pool;
  }
  return nullptr;
}

// The allocation of `pool` at `address`, or nullptr.
const gnomon::server::MemoryAllocation* FindAllocation(const gnomon::server::MemoryPool& pool,
                                                       const void* address) {
  for (size_t i = 0; i < pool.allocations.size(); ++i) {
    if (pool.allocations[i].address == reinterpret_cast<uintptr_t>(address)) return &pool.allocations[i];
  }
  return nullptr;
}

// Addresses for the allocations: recorded, never read or written.
alignas(16) char g_blocks[8][64];

}  // namespace

TEST_CASE("allocations and frees go to their named pool, NULL is ignored, and no name is the default pool") {
  Worker& worker = gnomon::test::SelfCapture();
  uint64_t at = 0;
  std::thread([&at] {
    gnomon::SetThreadName("memory api");
    gnomon_alloc(g_blocks[0], 64, "unit pool");
    gnomon_alloc(g_blocks[1], 32, "unit pool");
    gnomon_free(g_blocks[0], "unit pool");
    gnomon_alloc(nullptr, 10, "unit pool");  // nothing
    gnomon_free(nullptr, "unit pool");
    {
      gnomon::client::InsideLibrary inside;  // the library's own allocations are not the program's
      gnomon_alloc(g_blocks[7], 128, "unit pool");
      gnomon_free(g_blocks[7], "unit pool");
    }
    gnomon_alloc(g_blocks[2], 16, nullptr);
    gnomon_free(g_blocks[2], "default");
    // One buffer holding another name is another pool.
    char name[32];
    std::strcpy(name, "unit pool A");
    gnomon_alloc(g_blocks[3], 8, name);
    std::strcpy(name, "unit pool B");
    gnomon_alloc(g_blocks[4], 24, name);
    // Learnt after the fact: at a time already past.
    at = gnomon_now() - 1000;
    gnomon_alloc_at(g_blocks[5], 48, "unit pool at", at);
    gnomon_free_at(g_blocks[5], "unit pool at", at + 500);
  }).join();
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    const auto* unit = FindPool(m, "unit pool");
    const auto* at_pool = FindPool(m, "unit pool at");
    return unit != nullptr && unit->frees == 1 && FindPool(m, "unit pool A") != nullptr &&
           FindPool(m, "unit pool B") != nullptr && at_pool != nullptr && at_pool->frees == 1 &&
           m.memory_pools.contains(0) && FindAllocation(m.memory_pools.at(0), g_blocks[2]) != nullptr &&
           FindAllocation(m.memory_pools.at(0), g_blocks[2])->is_freed();
  }));
  worker.WithModel([&](const TraceModel& m) {
    const auto* thread = FindThread(m, "memory api");
    REQUIRE(thread != nullptr);
    const auto& unit = *FindPool(m, "unit pool");
    CHECK(unit.allocations.size() == 2);
    CHECK(unit.unmatched_frees == 0);
    const auto* first = FindAllocation(unit, g_blocks[0]);
    const auto* second = FindAllocation(unit, g_blocks[1]);
    REQUIRE(first != nullptr);
    REQUIRE(second != nullptr);
    CHECK(first->size_bytes == 64);
    CHECK(first->is_freed());
    CHECK(first->free_tick >= first->alloc_tick);
    CHECK(first->alloc_thread == thread->id);
    CHECK(second->size_bytes == 32);
    CHECK_FALSE(second->is_freed());
    CHECK(FindAllocation(unit, g_blocks[7]) == nullptr);
    CHECK(m.memory_pools.at(0).name == "default");
    CHECK(FindAllocation(m.memory_pools.at(0), g_blocks[2])->size_bytes == 16);
    const auto& a = *FindPool(m, "unit pool A");
    const auto& b = *FindPool(m, "unit pool B");
    REQUIRE(a.allocations.size() == 1);
    REQUIRE(b.allocations.size() == 1);
    CHECK(a.allocations[0].size_bytes == 8);
    CHECK(b.allocations[0].size_bytes == 24);
    const auto& past = *FindPool(m, "unit pool at");
    REQUIRE(past.allocations.size() == 1);
    CHECK(past.allocations[0].alloc_tick == at);
    CHECK(past.allocations[0].free_tick == at + 500);
  });
}

TEST_CASE("a lock's waits, holds and releases, a reader's hold flagged, a destroyed lock's id is reused") {
  Worker& worker = gnomon::test::SelfCapture();
  uint32_t lock = 0, reused = 0, unnamed = 0;
  std::thread([&] {
    gnomon::SetThreadName("lock api");
    lock = gnomon_lock_create("unit lock");
    gnomon_lock_wait(lock);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // it waited
    gnomon_lock_obtain(lock);
    gnomon_lock_release(lock);
    gnomon_lock_obtain_shared(lock);  // no wait: uncontended
    gnomon_lock_release(lock);
    gnomon_lock_destroy(lock);
    reused = gnomon_lock_create("unit lock");
    unnamed = gnomon_lock_create(nullptr);
    gnomon_lock_obtain(unnamed);
    gnomon_lock_release(unnamed);
  }).join();
  REQUIRE(lock != 0);
  CHECK(reused == lock);
  CHECK(unnamed != lock);
  REQUIRE(WaitForModel(worker, [&](const TraceModel& m) {
    const auto it = m.locks.find(lock);
    const auto other = m.locks.find(unnamed);
    return it != m.locks.end() && it->second.holds.size() == 2 && it->second.holds[1].is_released() &&
           other != m.locks.end() && other->second.holds.size() == 1;
  }));
  worker.WithModel([&](const TraceModel& m) {
    const auto* thread = FindThread(m, "lock api");
    REQUIRE(thread != nullptr);
    const auto& l = m.locks.at(lock);
    CHECK(l.name == "unit lock");
    const auto& waited = l.holds[0];
    CHECK(waited.is_contended());
    CHECK(waited.wait_tick < waited.obtain_tick);
    CHECK(waited.is_released());
    CHECK(waited.release_tick >= waited.obtain_tick);
    CHECK(waited.thread_id == thread->id);
    CHECK((waited.flags & gnomon::protocol::kLockShared) == 0);
    const auto& read = l.holds[1];
    CHECK_FALSE(read.is_contended());
    CHECK((read.flags & gnomon::protocol::kLockShared) != 0);
    CHECK(read.obtain_tick >= waited.release_tick);
    CHECK(m.locks.at(unnamed).name == "lock");
  });
}
