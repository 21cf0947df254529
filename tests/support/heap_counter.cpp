#include "heap_counter.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace gnomon::test {
namespace {

std::atomic<int64_t> g_bytes{0};
std::atomic<int64_t> g_peak{0};

void* Count(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  const int64_t now = g_bytes.fetch_add(int64_t(malloc_usable_size(p)), std::memory_order_relaxed) +
                      int64_t(malloc_usable_size(p));
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return p;
}

void Release(void* p) {
  if (p == nullptr) return;
  g_bytes.fetch_sub(int64_t(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}

}  // namespace

int64_t HeapBytes() { return g_bytes.load(std::memory_order_relaxed); }
int64_t HeapPeakBytes() { return g_peak.load(std::memory_order_relaxed); }
void ResetHeapPeak() { g_peak.store(g_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed); }

}  // namespace gnomon::test

void* operator new(std::size_t size) { return gnomon::test::Count(std::malloc(size == 0 ? 1 : size)); }
void* operator new(std::size_t size, std::align_val_t align) {
  const std::size_t a = static_cast<std::size_t>(align);
  return gnomon::test::Count(std::aligned_alloc(a, (size + a - 1) / a * a));
}
// The nothrow forms too: the standard library allocates through them (std::stable_sort's
// buffer), and every form that allocates must pair with one of these deletes.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  void* p = std::malloc(size == 0 ? 1 : size);
  return p == nullptr ? nullptr : gnomon::test::Count(p);
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  const std::size_t a = static_cast<std::size_t>(align);
  void* p = std::aligned_alloc(a, (size + a - 1) / a * a);
  return p == nullptr ? nullptr : gnomon::test::Count(p);
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new[](std::size_t size, std::align_val_t align) { return operator new(size, align); }
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t& tag) noexcept {
  return operator new(size, align, tag);
}
void operator delete(void* p) noexcept { gnomon::test::Release(p); }
void operator delete(void* p, std::size_t) noexcept { gnomon::test::Release(p); }
void operator delete(void* p, std::align_val_t) noexcept { gnomon::test::Release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { gnomon::test::Release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { gnomon::test::Release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { gnomon::test::Release(p); }
void operator delete[](void* p) noexcept { gnomon::test::Release(p); }
void operator delete[](void* p, std::size_t) noexcept { gnomon::test::Release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { gnomon::test::Release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { gnomon::test::Release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { gnomon::test::Release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  gnomon::test::Release(p);
}
