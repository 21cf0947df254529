// Records every global operator new and delete of a C++ program in the default memory
// pool. Include it in exactly one source file of the program (it defines the
// replacement operators; a second definition would not link):
//
//   // main.cpp
//   #include <gnomon/new_delete.hpp>
//
// Allocations are recorded from the profiler's start (the first Gnomon call, or
// gnomon_startup() at the top of main); memory allocated before it and freed after is
// counted as freed-unknown, never an error. The library's own allocations are not
// recorded. Memory comes from malloc / posix_memalign, as the default operators'.
// With GNOMON_DISABLE the header defines nothing.
#pragma once

#ifndef GNOMON_DISABLE

#include <cstdlib>
#include <new>

#include "gnomon/gnomon.hpp"

namespace gnomon::detail {

// While this thread records an allocation, the ones that recording makes are not.
inline thread_local bool tls_recording_new_delete = false;

// Recording never throws out of an operator (delete is noexcept): out of memory for a
// buffer chunk, the event is lost, not the program.
inline void NoteNew(void* p, std::size_t size) {
  if (!g_profiler_started.load(std::memory_order_relaxed) || tls_recording_new_delete) return;
  tls_recording_new_delete = true;
  try {
    gnomon_alloc(p, size, nullptr);
  } catch (...) {
  }
  tls_recording_new_delete = false;
}

inline void NoteDelete(void* p) {
  if (p == nullptr || !g_profiler_started.load(std::memory_order_relaxed) || tls_recording_new_delete) return;
  tls_recording_new_delete = true;
  try {
    gnomon_free(p, nullptr);
  } catch (...) {
  }
  tls_recording_new_delete = false;
}

inline void* AllocateOrNull(std::size_t size, std::size_t alignment) {
  if (size == 0) size = 1;
  void* p = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    p = std::malloc(size);
  } else if (posix_memalign(&p, alignment, size) != 0) {
    p = nullptr;
  }
  if (p != nullptr) NoteNew(p, size);
  return p;
}

inline void* AllocateOrThrow(std::size_t size, std::size_t alignment) {
  for (;;) {
    if (void* p = AllocateOrNull(size, alignment)) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

inline void Deallocate(void* p) {
  NoteDelete(p);
  std::free(p);
}

}  // namespace gnomon::detail

void* operator new(std::size_t size) { return gnomon::detail::AllocateOrThrow(size, 0); }
void* operator new[](std::size_t size) { return gnomon::detail::AllocateOrThrow(size, 0); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return gnomon::detail::AllocateOrNull(size, 0);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return gnomon::detail::AllocateOrNull(size, 0);
}
void* operator new(std::size_t size, std::align_val_t alignment) {
  return gnomon::detail::AllocateOrThrow(size, std::size_t(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return gnomon::detail::AllocateOrThrow(size, std::size_t(alignment));
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return gnomon::detail::AllocateOrNull(size, std::size_t(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return gnomon::detail::AllocateOrNull(size, std::size_t(alignment));
}
void operator delete(void* p) noexcept { gnomon::detail::Deallocate(p); }
void operator delete[](void* p) noexcept { gnomon::detail::Deallocate(p); }
void operator delete(void* p, std::size_t) noexcept { gnomon::detail::Deallocate(p); }
void operator delete[](void* p, std::size_t) noexcept { gnomon::detail::Deallocate(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { gnomon::detail::Deallocate(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { gnomon::detail::Deallocate(p); }
void operator delete(void* p, std::align_val_t) noexcept { gnomon::detail::Deallocate(p); }
void operator delete[](void* p, std::align_val_t) noexcept { gnomon::detail::Deallocate(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { gnomon::detail::Deallocate(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { gnomon::detail::Deallocate(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  gnomon::detail::Deallocate(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  gnomon::detail::Deallocate(p);
}

#endif  // GNOMON_DISABLE
