// The C API for memory and locks: allocations and frees in named pools, and the waits,
// holds and releases of the program's locks. gnomon::Lockable (gnomon.hpp) records
// inline; these calls are for C and bindings.
#include <cstring>

#include "callstack.h"
#include "gnomon/gnomon.h"
#include "gnomon/gnomon.hpp"
#include "inside_library.h"
#include "profiler.h"

namespace {

using gnomon::client::Profiler;
namespace protocol = gnomon::protocol;

template <typename M>
void WriteEvent(const M& m) {
  uint8_t* p = gnomon::detail::Reserve(sizeof(M));
  if (p != nullptr) gnomon::detail::Commit(protocol::WriteMessage(p, m));
}

// Pool names seen last by this thread, by pointer and text (a buffer reused for another
// name misses): most calls pass a literal, and find its id without a lock.
struct PoolName {
  const char* pointer = nullptr;
  uint32_t id = 0;
  char text[64] = {};  // room for the GPU pools' names ("Vulkan heap 1 (host), <device>")
};
constexpr size_t kPoolNamesCached = 8;
constinit thread_local PoolName tls_pool_names[kPoolNamesCached] = {};

// 0 (the default pool) for NULL or "default".
uint32_t PoolId(const char* name) {
  if (name == nullptr) return 0;
  PoolName& cached = tls_pool_names[(reinterpret_cast<uintptr_t>(name) >> 3) % kPoolNamesCached];
  if (cached.pointer == name && std::strncmp(cached.text, name, sizeof(cached.text)) == 0) return cached.id;
  const size_t length = std::strlen(name);
  const uint32_t id = std::strcmp(name, "default") == 0 ? 0
                                                        : Profiler::Get().registry().RegisterString(
                                                              protocol::StringKind::kMemoryPool, name);
  if (length < sizeof(cached.text)) {
    cached.pointer = name;
    cached.id = id;
    std::memcpy(cached.text, name, length + 1);
  }
  return id;
}

}  // namespace

extern "C" {

void gnomon_alloc(const void* ptr, size_t size, const char* name) {
  if (ptr == nullptr || gnomon::client::IsInsideLibrary()) return;
  Profiler::Get();  // the timer is chosen at start-up
  const protocol::MemAlloc alloc{.pool_id = PoolId(name),
                                 .address = reinterpret_cast<uintptr_t>(ptr),
                                 .size_bytes = size,
                                 .tick = gnomon::detail::Now()};
  const uint32_t depth = gnomon::detail::g_callstack_depth;
  if (depth == 0) {
    WriteEvent(alloc);
    return;
  }
  // With its call stack, in the same reservation: the stack follows its allocation.
  uint64_t frames[gnomon::detail::kMaxCallstackDepth];
  const size_t n = gnomon::client::CaptureCallstack(frames, depth, 0);
  const protocol::CallstackTail tail{.frames = {reinterpret_cast<const uint8_t*>(frames), n}};
  uint8_t* p = gnomon::detail::Reserve(sizeof(alloc) + protocol::WireSize<protocol::Callstack>(tail));
  if (p == nullptr) return;
  p = protocol::WriteMessage(p, alloc);
  gnomon::detail::Commit(protocol::WriteMessage(p, protocol::Callstack{}, tail));
}

void gnomon_free(const void* ptr, const char* name) {
  if (ptr == nullptr || gnomon::client::IsInsideLibrary()) return;
  Profiler::Get();
  WriteEvent(protocol::MemFree{
      .pool_id = PoolId(name), .address = reinterpret_cast<uintptr_t>(ptr), .tick = gnomon::detail::Now()});
}

// No check for the library's own code: these are called by collectors, never by the
// allocation hooks.
void gnomon_alloc_at(const void* ptr, size_t size, const char* name, uint64_t cpu_time) {
  if (ptr == nullptr) return;
  Profiler::Get();
  WriteEvent(protocol::MemAlloc{.pool_id = PoolId(name),
                                .address = reinterpret_cast<uintptr_t>(ptr),
                                .size_bytes = size,
                                .tick = cpu_time});
}

void gnomon_free_at(const void* ptr, const char* name, uint64_t cpu_time) {
  if (ptr == nullptr) return;
  Profiler::Get();
  WriteEvent(protocol::MemFree{
      .pool_id = PoolId(name), .address = reinterpret_cast<uintptr_t>(ptr), .tick = cpu_time});
}

uint32_t gnomon_lock_create(const char* name) {
  return Profiler::Get().registry().RegisterLock(name != nullptr ? name : "lock");
}

void gnomon_lock_destroy(uint32_t lock) {
  if (lock != 0 && gnomon::client::Profiler::IsStarted()) Profiler::Get().registry().ReleaseLock(lock);
}

void gnomon_lock_wait(uint32_t lock) {
  Profiler::Get();
  WriteEvent(protocol::LockWait{.lock_id = lock, .tick = gnomon::detail::Now()});
}

void gnomon_lock_obtain(uint32_t lock) {
  Profiler::Get();
  WriteEvent(protocol::LockObtain{.lock_id = lock, .flags = 0, .tick = gnomon::detail::Now()});
}

void gnomon_lock_obtain_shared(uint32_t lock) {
  Profiler::Get();
  WriteEvent(
      protocol::LockObtain{.lock_id = lock, .flags = protocol::kLockShared, .tick = gnomon::detail::Now()});
}

void gnomon_lock_release(uint32_t lock) {
  Profiler::Get();
  WriteEvent(protocol::LockRelease{.lock_id = lock, .tick = gnomon::detail::Now()});
}

}  // extern "C"
