// Counts the bytes a test executable holds on the heap, so that tests can measure how
// much memory an input costs (linked into server_tests; it replaces operator new and
// delete for the whole executable).
#pragma once

#include <cstdint>

namespace gnomon::test {

// Bytes currently allocated through operator new, as the allocator sized them.
int64_t HeapBytes();
// The most HeapBytes() has been since the last ResetHeapPeak().
int64_t HeapPeakBytes();
void ResetHeapPeak();

}  // namespace gnomon::test
