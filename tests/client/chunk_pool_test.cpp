#include "chunk_pool.h"

#include <doctest/doctest.h>

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
