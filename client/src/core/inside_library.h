// Marks where the library itself runs on a thread, so that allocation tracking does not
// record (and re-enter) the library's own allocations.
//
// A program that tracks every operator new (gnomon/new_delete.hpp) has its allocations
// recorded through gnomon_alloc(), which records into the thread's buffer. When the
// library itself allocates -- a chunk's refill, a definition appended under the
// registry's lock, the sender's work -- recording that allocation would re-enter the
// code that is allocating, possibly under a lock it holds. gnomon_alloc() and
// gnomon_free() therefore record nothing while the calling thread is inside the
// library: InsideLibrary scopes mark the slow paths that allocate, and the library's
// own threads are marked for good when they start.
#pragma once

#include <cstdint>

namespace gnomon::client {

extern constinit thread_local uint32_t tls_inside_library;

class InsideLibrary {
 public:
  InsideLibrary() { ++tls_inside_library; }
  ~InsideLibrary() { --tls_inside_library; }
  InsideLibrary(const InsideLibrary&) = delete;
  InsideLibrary& operator=(const InsideLibrary&) = delete;
};

// For a thread of the library's own (the sender, a collector's worker): nothing it
// allocates is the program's.
inline void MarkLibraryThread() { tls_inside_library = 1u << 30; }

inline bool IsInsideLibrary() { return tls_inside_library != 0; }

}  // namespace gnomon::client
