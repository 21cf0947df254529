// The unwinder's splice of its walk with the kernel's (core/unwinder.cpp SpliceWalks):
// the kernel's frame-pointer walk loses callers of code without frame pointers, and the
// walk over the stack's copy ends where the copy does.
#include "core/unwinder.h"

#include <doctest/doctest.h>

#include <vector>

using gnomon::client::SpliceWalks;

namespace {

size_t SpliceDepth(const std::vector<uint64_t>& walked, bool complete, std::vector<uint64_t> kernel,
                   size_t capacity) {
  const size_t depth = kernel.size();
  kernel.resize(std::max(depth, capacity));
  return SpliceWalks(walked, complete, kernel.data(), depth, capacity);
}

std::vector<uint64_t> SpliceExact(const std::vector<uint64_t>& walked, bool complete,
                                  std::vector<uint64_t> kernel, size_t capacity = 16) {
  const size_t depth = kernel.size();
  kernel.resize(std::max(depth, capacity));
  kernel.resize(SpliceWalks(walked, complete, kernel.data(), depth, capacity));
  return kernel;
}

}  // namespace

TEST_CASE("the kernel's walk goes on after the last frame both walks found") {
  // The kernel lost b (a function without a frame pointer's caller); the copy ended at b.
  CHECK(SpliceExact({1, 2, 3}, false, {1, 2, 4, 5}) == std::vector<uint64_t>{1, 2, 3, 4, 5});
  // Found later in the kernel's walk: what came before it there is dropped (it was wrong).
  CHECK(SpliceExact({1, 2, 3}, false, {1, 9, 3, 5}) == std::vector<uint64_t>{1, 2, 3, 5});
  // No frame but the first in common: the kernel's follow the walk.
  CHECK(SpliceExact({1, 7}, false, {1, 8, 9}) == std::vector<uint64_t>{1, 7, 8, 9});
  // A recursion repeats addresses: matched in order, never twice.
  CHECK(SpliceExact({1, 5, 5}, false, {1, 5, 5, 5, 6}) == std::vector<uint64_t>{1, 5, 5, 5, 6});
}

TEST_CASE("a walk to the outermost frame stands alone, and a walk ending on zero does not") {
  CHECK(SpliceExact({1, 2, 3, 4}, true, {1, 9, 9}) == std::vector<uint64_t>{1, 2, 3, 4});
  CHECK(SpliceExact({1, 2, 0}, true, {1, 2, 3}) == std::vector<uint64_t>{1, 2, 3});
  // Nothing walked: the kernel's walk as it was.
  CHECK(SpliceExact({}, false, {1, 2, 3}) == std::vector<uint64_t>{1, 2, 3});
}

TEST_CASE("the splice keeps within the capacity") {
  CHECK(SpliceDepth({1, 2, 3}, false, {1, 2, 4, 5, 6, 7}, 4) == 4);
  CHECK(SpliceExact({1, 2, 3}, false, {1, 2, 4, 5, 6, 7}, 4) == std::vector<uint64_t>{1, 2, 3, 4});
  CHECK(SpliceExact({1, 2, 3, 4, 5}, false, {1, 2}, 3) == std::vector<uint64_t>{1, 2, 3});
  CHECK(SpliceDepth({1, 2}, false, {}, 0) == 0);
}
