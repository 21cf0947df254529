// The block allocator under the big arrays: what it maps is exactly what it frees, even
// after the kernel has put something else where a block's tail used to be.
#include "gnomon/server/chunk_memory.h"

#include <doctest/doctest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "../../support/mappings.h"

namespace chunk_memory = gnomon::server::chunk_memory;
using chunk_memory::kBlockBytes;
using chunk_memory::kPageBytes;
using chunk_memory::MappedBlock;
using gnomon::test::IsMapped;
using gnomon::test::PlantedMapping;

TEST_CASE("a trimmed block frees only what it still maps, a mapping placed in its tail survives") {
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
  chooser.Record(true, 1'000'000);
  CHECK_FALSE(chooser.huge());  // as dear: plain pages
  chooser.Record(true, 0);      // (3 * 1000 + 0) / 4 = 750 us
  CHECK(chooser.huge());
  CHECK(chooser.average_ns(true) == 750'000);

  std::vector<int> plain_at;  // which of the next 32 blocks are trials of plain pages
  for (int i = 1; i <= 32; ++i) {
    if (!chooser.NextForReserve()) plain_at.push_back(i);
  }
  CHECK(plain_at == std::vector<int>{16, 32});

  // Huge pages turn dear (the host took them back): plain pages win again.
  chooser.Record(true, 2'000'000);  // (3 * 750 + 2000) / 4 = 1062.5 us: past plain's 1000
  CHECK_FALSE(chooser.huge());
  CHECK(chooser.average_ns(true) == 1'062'500);
  CHECK(chooser.measured(false) == 1);
  CHECK(chooser.measured(true) == 3);
}

TEST_CASE("where huge pages are off the chooser offers none") {
  chunk_memory::PageChooser chooser(false);
  for (int i = 0; i < 40; ++i) {
    REQUIRE_FALSE(chooser.NextForReserve());
    chooser.Record(false, 1'000'000);
  }
  CHECK_FALSE(chooser.huge());
  CHECK(chooser.measured(true) == 0);
}

TEST_CASE("a block for a huge page is cut aligned from twice the room, what is around it given back") {
  // Room for the test's mapping one page past a 2 MiB boundary: never aligned.
  void* area = mmap(nullptr, 4 * kBlockBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(area != MAP_FAILED);
  const uintptr_t boundary =
      (reinterpret_cast<uintptr_t>(area) + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
  char* const start = reinterpret_cast<char*>(boundary + kPageBytes);
  munmap(area, 4 * kBlockBytes);
  void* room = mmap(start, 2 * kBlockBytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  REQUIRE(room == start);

  char* const block = static_cast<char*>(chunk_memory::KeepAlignedBlock(room, 2 * kBlockBytes));
  CHECK(reinterpret_cast<uintptr_t>(block) % kBlockBytes == 0);
  CHECK(block == start + kBlockBytes - kPageBytes);  // the top one: the next mapping below joins it
  CHECK(IsMapped(block, kBlockBytes));
  CHECK_FALSE(IsMapped(start, kPageBytes));  // below it, given back
  CHECK_FALSE(IsMapped(block - kPageBytes, kPageBytes));
  CHECK_FALSE(IsMapped(block + kBlockBytes, kPageBytes));  // above it, given back
  CHECK_FALSE(IsMapped(start + 2 * kBlockBytes - kPageBytes, kPageBytes));
  chunk_memory::Free(block, kBlockBytes);
  CHECK_FALSE(IsMapped(block, kPageBytes));

  void* huge = chunk_memory::MapBlock(true);  // whichever way the kernel placed it
  CHECK(reinterpret_cast<uintptr_t>(huge) % kBlockBytes == 0);
  chunk_memory::Populate(huge);
  CHECK(IsMapped(huge, kBlockBytes));
  chunk_memory::Free(huge, kBlockBytes);
}

TEST_CASE("a reserve times each block it populates") {
  auto measured = [] { return chunk_memory::Pages().measured(false) + chunk_memory::Pages().measured(true); };
  const uint64_t before = measured();
  chunk_memory::BlockReserve reserve;
  REQUIRE(reserve.AddOne());
  REQUIRE(reserve.AddOne());
  CHECK(measured() == before + 2);
}
