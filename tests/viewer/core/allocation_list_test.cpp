// The Memory window's list of allocations (src/core/allocation_list.cpp).
#include "gnomon/viewer/allocation_list.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "../../support/build_model.h"
#include "../../support/stream_writer.h"

TEST_CASE("allocations alive at a time, or never freed, biggest first") {
  gnomon::test::StreamWriter w;
  w.ThreadContext(1).Alloc(0, 0x1, 10, 100).Alloc(0, 0x2, 30, 200).Alloc(0, 0x3, 20, 300);
  w.Free(0, 0x2, 400).Alloc(0, 0x4, 30, 500);
  const gnomon::server::TraceModel model = gnomon::test::BuildModel(w);
  const auto& pool = model.memory_pools.at(0);
  const auto at_350 = gnomon::viewer::ListAllocations(pool, false, 350);
  CHECK(at_350.indexes == std::vector<uint64_t>{1, 2, 0});  // 30, 20, 10 bytes
  CHECK(at_350.bytes == 60);
  const auto at_450 = gnomon::viewer::ListAllocations(pool, false, 450);
  CHECK(at_450.indexes == std::vector<uint64_t>{2, 0});
  const auto leaks = gnomon::viewer::ListAllocations(pool, true, 0);
  CHECK(leaks.indexes == std::vector<uint64_t>{3, 2, 0});  // 30 (the later), 20, 10
  CHECK(leaks.bytes == 60);
}
