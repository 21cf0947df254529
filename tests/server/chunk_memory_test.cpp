// The block allocator under the big arrays: what it maps is exactly what it frees, even
// after the kernel has put something else where a block's tail used to be.
#include "gnomon/server/chunk_memory.h"

#include <doctest/doctest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "../support/mappings.h"

namespace chunk_memory = gnomon::server::chunk_memory;
using chunk_memory::kBlockBytes;
using chunk_memory::kPageBytes;
using chunk_memory::MappedBlock;
using gnomon::test::IsMapped;
using gnomon::test::PlantedMapping;

TEST_CASE("a trimmed block frees only what it still maps; a mapping placed in its tail survives") {
  MappedBlock block = MappedBlock::Take();
  REQUIRE(block.base() != nullptr);
  CHECK(block.mapped_bytes() == kBlockBytes);
  std::memset(block.base(), 0x5A, kBlockBytes);
  char* const base = block.base();

  block.TrimTo(3 * kPageBytes - 100);  // rounded up to whole pages
  CHECK(block.mapped_bytes() == 3 * kPageBytes);
  CHECK(IsMapped(base, 3 * kPageBytes));
  CHECK_FALSE(IsMapped(base + 3 * kPageBytes, kPageBytes));
  CHECK(base[3 * kPageBytes - 1] == 0x5A);

  // What the kernel might do next: another mapping (another thread's block, a malloc
  // arena, a driver's buffer) lands in the hole.
  PlantedMapping planted(base + 3 * kPageBytes, kBlockBytes - 3 * kPageBytes);
  REQUIRE(planted.ok());

  block.TrimTo(kBlockBytes);  // a block never grows back
  CHECK(block.mapped_bytes() == 3 * kPageBytes);
  {
    MappedBlock moved = std::move(block);
    CHECK(block.mapped_bytes() == 0);
    CHECK(moved.base() == base);
  }  // freed here
  CHECK_FALSE(IsMapped(base, 3 * kPageBytes));
  CHECK(planted.is_intact());
}

TEST_CASE("a block trimmed to nothing and an empty block free nothing") {
  MappedBlock block = MappedBlock::Take();
  char* const base = block.base();
  block.TrimTo(0);
  CHECK(block.mapped_bytes() == 0);
  CHECK(block.base() == nullptr);
  CHECK_FALSE(IsMapped(base, kPageBytes));
  PlantedMapping planted(base, kBlockBytes);
  REQUIRE(planted.ok());
  block = MappedBlock::Take();  // assigning over the empty block frees nothing
  block = MappedBlock();
  MappedBlock empty;
  CHECK(empty.mapped_bytes() == 0);
  CHECK(planted.is_intact());
}

TEST_CASE("a reserve hands out blocks it touched ahead to the thread using it, and gives back the rest") {
  chunk_memory::BlockReserve reserve;
  CHECK(reserve.Take() == nullptr);
  REQUIRE(reserve.AddOne());
  REQUIRE(reserve.AddOne());
  void* first = reserve.Take();
  REQUIRE(first != nullptr);
  CHECK(IsMapped(first, kBlockBytes));
  CHECK(static_cast<const char*>(first)[kBlockBytes - 1] == 0);  // zeroed pages
  {
    MappedBlock fresh = MappedBlock::Take();  // no reserve in use: a fresh block
    CHECK(fresh.base() != first);
    const chunk_memory::UseBlockReserve use(reserve);
    MappedBlock block = MappedBlock::Take();  // the second one
    CHECK(reserve.Take() == nullptr);
    CHECK(block.mapped_bytes() == kBlockBytes);
    std::thread([&] {
      // Another thread does not draw on it.
      REQUIRE(reserve.AddOne());
      MappedBlock other = MappedBlock::Take();
      CHECK(other.base() != nullptr);
    }).join();
    MappedBlock third = MappedBlock::Take();  // the one the other thread touched
    CHECK(reserve.Take() == nullptr);
  }
  chunk_memory::Free(first, kBlockBytes);
  for (size_t i = 0; i < chunk_memory::BlockReserve::kMaxBlocks; ++i) CHECK(reserve.AddOne());
  CHECK_FALSE(reserve.AddOne());  // bounded
  reserve.Clear();
  CHECK(reserve.Take() == nullptr);
}

TEST_CASE("small pieces come from the heap, whole blocks are mappings of their own") {
  void* small = chunk_memory::Allocate(768);
  std::memset(small, 1, 768);
  chunk_memory::Free(small, 768);
  void* whole = chunk_memory::Allocate(kBlockBytes);
  CHECK(reinterpret_cast<uintptr_t>(whole) % kPageBytes == 0);
  CHECK(IsMapped(whole, kBlockBytes));
  chunk_memory::Free(whole, kBlockBytes);
  CHECK_FALSE(IsMapped(whole, kPageBytes));
}

TEST_CASE(
    "the page chooser measures each kind once, takes the cheaper, and tries the other every 16th block") {
  chunk_memory::PageChooser chooser;
  CHECK_FALSE(chooser.huge());
  CHECK(chooser.average_ns(false) == -1);
  REQUIRE_FALSE(chooser.NextForReserve());  // plain pages first
  chooser.Record(false, 1'000'000);
  CHECK_FALSE(chooser.huge());  // huge pages not measured yet
  REQUIRE(chooser.NextForReserve());
  chooser.Record(true, 200'000);
  CHECK(chooser.huge());
  CHECK(chooser.average_ns(true) == 200'000);

  int plain = 0;
  for (uint32_t i = 0; i < 2 * chunk_memory::PageChooser::kTrialEvery; ++i)
    plain += chooser.NextForReserve() ? 0 : 1;
  CHECK(plain == 2);

  // Huge pages turn dear (the host took them back): a few blocks and plain pages win.
  int blocks = 0;
  while (chooser.huge() && blocks < 10) {
    chooser.Record(true, 5'000'000);
    ++blocks;
  }
  CHECK_FALSE(chooser.huge());
  CHECK(blocks == 1);  // (3 * 200 + 5000) / 4 = 1400 us: past plain's 1000
  CHECK(chooser.average_ns(true) == 1'400'000);
  CHECK(chooser.measured() == 3);
}

TEST_CASE("a block for a huge page is 2 MiB aligned and whole, and frees as any block does") {
  void* block = chunk_memory::MapBlock(true);
  CHECK(reinterpret_cast<uintptr_t>(block) % kBlockBytes == 0);
  chunk_memory::Populate(block);
  CHECK(IsMapped(block, kBlockBytes));
  static_cast<char*>(block)[kBlockBytes - 1] = 7;
  chunk_memory::Free(block, kBlockBytes);
  CHECK_FALSE(IsMapped(block, kPageBytes));
  CHECK_FALSE(IsMapped(static_cast<char*>(block) + kBlockBytes - kPageBytes, kPageBytes));
}

TEST_CASE("a reserve times each block it populates, and both kinds are measured") {
  const uint64_t before = chunk_memory::Pages().measured();
  chunk_memory::BlockReserve reserve;
  REQUIRE(reserve.AddOne());
  REQUIRE(reserve.AddOne());
  CHECK(chunk_memory::Pages().measured() == before + 2);
  CHECK(chunk_memory::Pages().average_ns(false) > 0);
  CHECK(chunk_memory::Pages().average_ns(true) > 0);
}
