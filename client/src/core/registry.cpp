#include "registry.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "inside_library.h"

namespace gnomon::client {

namespace {

// The registry's lock, taken as the library: what is allocated under it is not the
// program's (inside_library.h).
struct RegistryLock {
  explicit RegistryLock(std::mutex& mutex) : lock(mutex) {}
  InsideLibrary inside;
  std::lock_guard<std::mutex> lock;
};

std::vector<uint8_t> ThreadInfoBytes(uint32_t id, uint32_t os_thread_id, std::string_view name) {
  std::vector<uint8_t> bytes;
  protocol::AppendMessage(bytes, protocol::ThreadInfo{.thread_id = id, .os_thread_id = os_thread_id},
                          {.name = name});
  return bytes;
}

// Physical memory, or a container's limit (cgroup v2, then v1) when that is smaller.
uint64_t MachineMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  uint64_t bytes = pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : 0;
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    if (std::FILE* file = std::fopen(path, "r")) {
      unsigned long long limit = 0;
      if (std::fscanf(file, "%llu", &limit) == 1 && limit > 0 && limit < bytes) bytes = limit;
      std::fclose(file);
    }
  }
  return bytes;
}

}  // namespace

std::string_view ClampString(const char* text, size_t length, size_t max_bytes) {
  if (text == nullptr) return {};
  return {text, std::min(length, max_bytes)};
}

const char* BufferPolicyName(BufferPolicy policy) {
  switch (policy) {
    case BufferPolicy::kAuto:
      return "auto";
    case BufferPolicy::kDrop:
      return "drop";
    case BufferPolicy::kGrow:
      return "grow";
    case BufferPolicy::kWait:
      return "wait";
    case BufferPolicy::kRing:
      return "ring";
  }
  return "?";
}

Registry::Registry(const Config& config) : config_(config), pool_(0) {
  if (config_.buffer_ceiling_bytes == 0) config_.buffer_ceiling_bytes = MachineMemoryBytes() / 4;
  config_.buffer_ceiling_bytes = std::max(config_.buffer_ceiling_bytes, config_.buffer_budget_bytes);
  in_start_.store(config_.keep_start_ms > 0);
  pool_.SetLimit(BufferLimit(false));
}

uint64_t Registry::BufferLimit(bool connected) const {
  const bool in_start = in_start_.load(std::memory_order_acquire);
  // What the start may hold: a program that nobody captures keeps it, so less than the
  // ceiling a capture that falls behind may use (a host of many programs holds many).
  const uint64_t start_bytes =
      std::max(config_.buffer_budget_bytes, std::min(config_.buffer_ceiling_bytes, kMaxStartBytes));
  switch (config_.buffer_policy) {
    case BufferPolicy::kGrow:
      return UINT64_MAX;
    case BufferPolicy::kAuto:
      return connected ? config_.buffer_ceiling_bytes : in_start ? start_bytes : config_.buffer_budget_bytes;
    case BufferPolicy::kRing:
      return connected ? config_.buffer_ceiling_bytes : config_.buffer_budget_bytes;
    case BufferPolicy::kWait:
      return !connected && in_start ? start_bytes : config_.buffer_budget_bytes;
    case BufferPolicy::kDrop:
      break;
  }
  return config_.buffer_budget_bytes;
}

void Registry::EndStartIfDue(std::chrono::steady_clock::time_point now) {
  if (!in_start_.load(std::memory_order_relaxed) ||
      now - started_ < std::chrono::milliseconds(config_.keep_start_ms)) {
    return;
  }
  in_start_.store(false, std::memory_order_release);
  pool_.SetLimit(BufferLimit(is_connected()));
}

uint64_t Registry::dropped_events() {
  RegistryLock lock(mutex_);
  uint64_t total = dropped_events_.load(std::memory_order_relaxed);
  for (const ThreadState* thread : threads_) total += thread->dropped.load(std::memory_order_relaxed);
  return total;
}

void Registry::RetireThread(ThreadState* thread) {
  RegistryLock lock(mutex_);
  std::erase(threads_, thread);
  definitions_.ForgetThread(thread->id);
  dropped_events_.fetch_add(thread->dropped.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

Chunk* Registry::WaitForChunk() {
  while (is_connected() && !is_shut_down()) {
    if (Chunk* chunk = pool_.AcquireOrWait(std::chrono::milliseconds(100))) return chunk;
  }
  return nullptr;
}

void Registry::NoteBufferFull(const ThreadState& thread) {
  if (thread.write_chunk == nullptr && !said_budget_too_small_.load(std::memory_order_relaxed) &&
      !said_budget_too_small_.exchange(true, std::memory_order_relaxed)) {
    size_t threads = 0;
    {
      RegistryLock lock(mutex_);
      threads = threads_.size();
    }
    std::fprintf(
        stderr,
        "gnomon: the buffer budget (%llu MiB: %llu chunks of 64 KiB) is too small for one chunk per "
        "thread (%zu threads record); a thread without one drops its events: raise GNOMON_BUFFER_MB\n",
        static_cast<unsigned long long>(pool_.limit_bytes() >> 20),
        static_cast<unsigned long long>(pool_.limit_bytes() / sizeof(Chunk)), threads);
  }
  // A load first: the exchange writes a line every dropping thread would share.
  if (!is_connected() || said_buffer_full_.load(std::memory_order_relaxed) ||
      said_buffer_full_.exchange(true, std::memory_order_relaxed)) {
    return;
  }
  std::fprintf(stderr,
               "gnomon: the event buffer is full (%llu MiB, GNOMON_BUFFER_POLICY=%s): events are dropped and "
               "counted until the capture catches up\n",
               static_cast<unsigned long long>(pool_.limit_bytes() >> 20),
               BufferPolicyName(config_.buffer_policy));
}

Chunk* Registry::RecycleOldestChunk() {
  RegistryLock lock(mutex_);
  if (ring_frozen_ || is_connected()) return nullptr;
  ThreadState* owner = nullptr;
  Chunk* oldest = nullptr;
  for (ThreadState* thread : threads_) {
    Chunk* first =
        thread->read_chunk != nullptr ? thread->read_chunk : thread->head.load(std::memory_order_acquire);
    // A chunk whose successor is linked is one its thread will never write again; so is
    // every chunk of a thread that exited.
    if (first == nullptr || (first->next.load(std::memory_order_acquire) == nullptr &&
                             !thread->finished.load(std::memory_order_acquire))) {
      continue;
    }
    if (oldest == nullptr || first->sequence < oldest->sequence) {
      oldest = first;
      owner = thread;
    }
  }
  if (oldest == nullptr) return nullptr;
  Chunk* next = oldest->next.load(std::memory_order_acquire);
  if (next == nullptr) {  // an exited thread's last chunk: its chain is empty now
    owner->read_chunk = nullptr;
    owner->read_pos = 0;
    owner->head.store(nullptr, std::memory_order_release);
  } else if (owner->read_chunk != nullptr) {
    owner->read_chunk = next;
    owner->read_pos = 0;
  } else {
    owner->head.store(next, std::memory_order_release);
  }
  return oldest;
}

void Registry::FreezeRing(bool frozen) {
  {
    RegistryLock lock(mutex_);
    ring_frozen_ = frozen;
  }
  if (!frozen) AdvanceBufferEpoch();  // threads that found nothing to recycle meanwhile
}

ThreadState* Registry::RegisterThread() {
  auto* thread = new ThreadState;
  thread->os_thread_id = static_cast<uint32_t>(syscall(SYS_gettid));
  RegistryLock lock(mutex_);
  thread->id = next_thread_id_++;
  threads_.push_back(thread);
  definitions_.SetName(DefinitionLog::Named::kThread, thread->id,
                       ThreadInfoBytes(thread->id, thread->os_thread_id, {}));
  return thread;
}

uint32_t Registry::RegisterSourceLocation(gnomon_source_location* location) {
  std::atomic_ref<uint32_t> id_ref(location->id);
  RegistryLock lock(mutex_);
  if (const uint32_t existing = id_ref.load(std::memory_order_acquire)) return existing;
  const uint32_t id = next_source_location_id_++;
  const std::string_view function =
      ClampString(location->function, location->function ? std::strlen(location->function) : 0,
                  protocol::kMaxStringBytes);
  const std::string_view name =
      location->name ? ClampString(location->name, std::strlen(location->name), protocol::kMaxStringBytes)
                     : function;
  const std::string_view file = ClampString(location->file, location->file ? std::strlen(location->file) : 0,
                                            protocol::kMaxStringBytes);
  std::vector<uint8_t> bytes;
  protocol::AppendMessage(
      bytes, protocol::SourceLocationDef{.id = id, .line = location->line, .color = location->color},
      {.name = name, .function = function, .file = file});
  definitions_.AddDefinition(bytes.data(), bytes.size());
  id_ref.store(id, std::memory_order_release);
  return id;
}

uint32_t Registry::RegisterString(protocol::StringKind kind, const char* name) {
  const std::string_view text = ClampString(name, name ? std::strlen(name) : 0, protocol::kMaxStringBytes);
  std::string key(1, static_cast<char>(kind));
  key.append(text);
  RegistryLock lock(mutex_);
  auto [it, inserted] = strings_.try_emplace(std::move(key), 0);
  if (!inserted) return it->second;
  it->second = next_string_id_++;
  std::vector<uint8_t> bytes;
  protocol::AppendMessage(bytes, protocol::StringDef{.id = it->second, .kind = static_cast<uint8_t>(kind)},
                          {.text = text});
  definitions_.AddDefinition(bytes.data(), bytes.size());
  return it->second;
}

uint32_t Registry::RegisterLock(const char* name) {
  const std::string_view text = ClampString(name, name ? std::strlen(name) : 0, protocol::kMaxStringBytes);
  RegistryLock lock(mutex_);
  if (const auto free = free_locks_.find(std::string(text));
      free != free_locks_.end() && !free->second.empty()) {
    const uint32_t id = free->second.back();
    free->second.pop_back();
    lock_names_[id].is_free = false;
    return id;
  }
  const uint32_t id = next_string_id_++;
  lock_names_.emplace(id, LockName{std::string(text), false});
  std::vector<uint8_t> bytes;
  protocol::AppendMessage(
      bytes, protocol::StringDef{.id = id, .kind = static_cast<uint8_t>(protocol::StringKind::kLockName)},
      {.text = text});
  definitions_.AddDefinition(bytes.data(), bytes.size());
  return id;
}

void Registry::ReleaseLock(uint32_t id) {
  RegistryLock lock(mutex_);
  const auto named = lock_names_.find(id);
  if (named == lock_names_.end() || named->second.is_free) return;  // not a lock, or destroyed twice
  named->second.is_free = true;
  free_locks_[named->second.name].push_back(id);
}

void Registry::SetThreadName(ThreadState* thread, const char* name, bool library) {
  if (thread == nullptr) return;
  InsideLibrary inside;  // its bytes are the library's
  const std::string_view text = ClampString(name, name ? std::strlen(name) : 0, protocol::kMaxStringBytes);
  std::vector<uint8_t> bytes = ThreadInfoBytes(thread->id, thread->os_thread_id, text);
  if (library) protocol::AppendMessage(bytes, protocol::LibraryThread{.thread_id = thread->id});
  RegistryLock lock(mutex_);
  definitions_.SetName(DefinitionLog::Named::kThread, thread->id, bytes);
}

void Registry::NameQuietLibraryThread(const char* name) {
  InsideLibrary inside;
  const auto os_thread_id = static_cast<uint32_t>(syscall(SYS_gettid));
  const std::string_view text = ClampString(name, std::strlen(name), protocol::kMaxStringBytes);
  RegistryLock lock(mutex_);
  // One id per name: the lanes a later connection starts again take their predecessors'
  // definitions over, so that reconnecting never grows what a capture is sent.
  const auto [it, added] = quiet_threads_.try_emplace(std::string(text), next_thread_id_);
  if (added) ++next_thread_id_;
  const uint32_t id = it->second;
  std::vector<uint8_t> bytes = ThreadInfoBytes(id, os_thread_id, text);
  protocol::AppendMessage(bytes, protocol::LibraryThread{.thread_id = id});
  definitions_.SetName(DefinitionLog::Named::kThread, id, bytes);
}

void Registry::SetGpuContextName(uint32_t context, const uint8_t* bytes, size_t size) {
  InsideLibrary inside;
  const std::vector<uint8_t> kept(bytes, bytes + size);
  RegistryLock lock(mutex_);
  definitions_.SetName(DefinitionLog::Named::kGpuContext, context, kept);
}

void Registry::AddDefinition(const uint8_t* bytes, size_t size) {
  RegistryLock lock(mutex_);
  definitions_.AddDefinition(bytes, size);
}

void Registry::AddClockSample(uint64_t clock, const uint8_t* bytes, size_t size) {
  RegistryLock lock(mutex_);
  definitions_.AddClockSample(clock, bytes, size);
}

void Registry::NoteCalibration(const CalibrationPair& pair) {
  RegistryLock lock(mutex_);
  if (!has_pair_) first_pair_ = pair;
  latest_pair_ = pair;
  has_pair_ = true;
}

uint64_t Registry::HostNsToTicks(bool is_monotonic_raw, int64_t host_ns) {
  CalibrationPair first, latest;
  {
    RegistryLock lock(mutex_);
    if (!has_pair_) return uint64_t(host_ns);
    first = first_pair_;
    latest = latest_pair_;
  }
  const int64_t raw_ns =
      is_monotonic_raw ? host_ns : host_ns + (latest.monotonic_raw_ns - latest.monotonic_ns);
  if (CurrentTimerKind() == protocol::TimerKind::kMonotonicRaw) return uint64_t(raw_ns);
  // The rate from the first pair to the latest; early in the run, when they are close
  // (or one), to a pair read now instead: a rate from a short span would scale every
  // interval wrongly.
  constexpr int64_t kShortSpanNs = 100'000'000;
  if (latest.monotonic_raw_ns - first.monotonic_raw_ns < kShortSpanNs) latest = ReadCalibrationPair();
  const int64_t span_ns = latest.monotonic_raw_ns - first.monotonic_raw_ns;
  const double ticks_per_ns = span_ns > 0 ? double(latest.tick - first.tick) / double(span_ns) : 1.0;
  return latest.tick + uint64_t(std::llround(double(raw_ns - latest.monotonic_raw_ns) * ticks_per_ns));
}

void Registry::SetConnected(bool connected) {
  {
    // Under the lock: once a server is connected, no ring recycles what it reads.
    RegistryLock lock(mutex_);
    connected_.store(connected, std::memory_order_release);
    if (connected) in_start_.store(false, std::memory_order_release);  // the start was kept for it
  }
  pool_.SetLimit(BufferLimit(connected));  // also tells waiting threads to look again
}

}  // namespace gnomon::client
