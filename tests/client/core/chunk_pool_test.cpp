#include "core/chunk_pool.h"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

using gnomon::client::Chunk;
using gnomon::client::ChunkPool;

TEST_CASE("the pool never holds more than its budget and reuses released chunks") {
  ChunkPool pool(3 * sizeof(Chunk) + 100);
  Chunk* a = pool.Acquire();
  Chunk* b = pool.Acquire();
  Chunk* c = pool.Acquire();
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  REQUIRE(c != nullptr);
  CHECK(pool.Acquire() == nullptr);
  CHECK(pool.allocated_bytes() == 3 * sizeof(Chunk));
  b->committed.store(77);
  pool.Release(b);
  Chunk* again = pool.Acquire();
  CHECK(again == b);
  CHECK(again->committed.load() == 0);
  CHECK(pool.Acquire() == nullptr);
  pool.Release(a);
  pool.Release(again);
  pool.Release(c);
}

TEST_CASE("the limit moves: raised it hands out more, lowered it frees chunks as they come back") {
  ChunkPool pool(2 * sizeof(Chunk));
  Chunk* a = pool.Acquire();
  Chunk* b = pool.Acquire();
  REQUIRE(b != nullptr);
  CHECK(pool.Acquire() == nullptr);
  pool.SetLimit(4 * sizeof(Chunk));  // a capture drains: the buffer may grow
  Chunk* c = pool.Acquire();
  Chunk* d = pool.Acquire();
  REQUIRE(d != nullptr);
  CHECK(pool.Acquire() == nullptr);
  CHECK(pool.allocated_bytes() == 4 * sizeof(Chunk));
  pool.SetLimit(2 * sizeof(Chunk));  // it left: back to the budget
  pool.Release(c);
  pool.Release(d);
  CHECK(pool.allocated_bytes() == 2 * sizeof(Chunk));  // freed, not kept
  CHECK(pool.Acquire() == nullptr);
  pool.Release(a);  // within the limit again: kept for reuse
  CHECK(pool.allocated_bytes() == 2 * sizeof(Chunk));
  CHECK(pool.Acquire() == a);
  pool.Release(a);
  pool.Release(b);
}

TEST_CASE("a thread that may wait gets the next chunk returned, or nothing after its timeout") {
  ChunkPool pool(sizeof(Chunk));
  Chunk* only = pool.Acquire();
  REQUIRE(only != nullptr);
  CHECK(pool.AcquireOrWait(std::chrono::milliseconds(20)) == nullptr);
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pool.Release(only);
  });
  Chunk* waited = pool.AcquireOrWait(std::chrono::seconds(10));
  sender.join();
  CHECK(waited == only);
  pool.Release(waited);
}
