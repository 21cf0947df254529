#include "profiler.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gnomon/client/thread_writer.h"
#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/settings.h"
#include "sender.h"
#include "timer.h"

namespace gnomon::detail {
constinit thread_local ThreadWriter tls_writer;
}

namespace gnomon::client {


namespace {

constinit std::mutex g_start_mutex;
constinit std::atomic<Profiler*> g_profiler{nullptr};
Config* g_pending_config = nullptr;  // guarded by g_start_mutex

// How often a thread in drop mode asks the pool for a chunk again.
constexpr uint32_t kDropRetryInterval = 64;

// Reads a setting from the environment when it is set; a value that does not parse is
// ignored, and the program says so (and why) on stderr.
template <typename T, typename Parse>
void ReadEnvSetting(const char* name, T& out, Parse parse) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return;
  const auto parsed = parse(std::string_view(text));
  if (!parsed) {
    std::fprintf(stderr, "gnomon: ignoring %s: %s\n", name, parsed.error.c_str());
    return;
  }
  out = static_cast<T>(*parsed);
}

auto Unsigned(uint64_t min, uint64_t max) {
  return [=](std::string_view text) { return protocol::ParseUnsigned(text, min, max); };
}

protocol::Parsed<BufferPolicy> ParseBufferPolicy(std::string_view text) {
  for (BufferPolicy policy : {BufferPolicy::kAuto, BufferPolicy::kDrop, BufferPolicy::kGrow, BufferPolicy::kWait}) {
    if (text == BufferPolicyName(policy)) return {policy, ""};
  }
  return {std::nullopt, "'" + std::string(text) + "' is not one of auto, drop, grow, wait"};
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

Config& PendingConfig() {
  if (g_pending_config == nullptr) {
    g_pending_config = new Config;
    Config& config = *g_pending_config;
    if (const char* address = std::getenv("GNOMON_ADDRESS"); address && *address) config.address = address;
    if (const char* file = std::getenv("GNOMON_PORT_FILE"); file && *file) config.port_file = file;
    ReadEnvSetting("GNOMON_PORT", config.port,
                   [](std::string_view text) { return protocol::ParsePort(text, protocol::PortZero::kAllowed); });
    uint64_t megabytes = config.buffer_budget_bytes >> 20;
    ReadEnvSetting("GNOMON_BUFFER_MB", megabytes, Unsigned(1, uint64_t{1} << 30));
    config.buffer_budget_bytes = megabytes << 20;
    ReadEnvSetting("GNOMON_BUFFER_POLICY", config.buffer_policy, ParseBufferPolicy);
    uint64_t ceiling_megabytes = 0;
    ReadEnvSetting("GNOMON_BUFFER_MAX_MB", ceiling_megabytes, Unsigned(1, uint64_t{1} << 30));
    config.buffer_ceiling_bytes = ceiling_megabytes << 20;
    ReadEnvSetting("GNOMON_EXIT_FLUSH_MS", config.exit_flush_ms, Unsigned(0, UINT32_MAX));
    ReadEnvSetting("GNOMON_WAIT_FOR_SERVER_MS", config.exit_wait_for_server_ms, Unsigned(0, UINT32_MAX));
  }
  return *g_pending_config;
}

void ShutdownAtExit() { Profiler::Get().Shutdown(); }

// Marks the thread's buffer finished when the thread exits.
struct ThreadExit {
  ThreadState* state = nullptr;
  ~ThreadExit();
};

constinit thread_local ThreadState* tls_state = nullptr;
constinit thread_local bool tls_exited = false;
thread_local ThreadExit tls_exit;

ThreadExit::~ThreadExit() {
  tls_exited = true;
  detail::tls_writer = {};
  if (state != nullptr) state->finished.store(true, std::memory_order_release);
}

ThreadState* CurrentThread(Profiler& profiler) {
  if (tls_state == nullptr && !tls_exited) {
    tls_state = profiler.RegisterThread();
    tls_exit.state = tls_state;
  }
  return tls_state;
}

void AppendThreadInfo(std::vector<uint8_t>& out, const ThreadState& thread, std::string_view name) {
  protocol::AppendMessage(out, protocol::ThreadInfo{.thread_id = thread.id, .os_thread_id = thread.os_thread_id},
                          {.name = name});
}

}  // namespace

std::string_view ClampString(const char* text, size_t length, size_t max_bytes) {
  if (text == nullptr) return {};
  return {text, std::min(length, max_bytes)};
}

const char* BufferPolicyName(BufferPolicy policy) {
  switch (policy) {
    case BufferPolicy::kAuto: return "auto";
    case BufferPolicy::kDrop: return "drop";
    case BufferPolicy::kGrow: return "grow";
    case BufferPolicy::kWait: return "wait";
  }
  return "?";
}

Profiler::Profiler(const Config& config) : config_(config), pool_(0), sender_(new Sender(*this)) {
  if (config_.buffer_ceiling_bytes == 0) config_.buffer_ceiling_bytes = MachineMemoryBytes() / 4;
  config_.buffer_ceiling_bytes = std::max(config_.buffer_ceiling_bytes, config_.buffer_budget_bytes);
  pool_.SetLimit(BufferLimit(false));
}

uint64_t Profiler::BufferLimit(bool connected) const {
  switch (config_.buffer_policy) {
    case BufferPolicy::kGrow: return UINT64_MAX;
    case BufferPolicy::kAuto: return connected ? config_.buffer_ceiling_bytes : config_.buffer_budget_bytes;
    case BufferPolicy::kDrop:
    case BufferPolicy::kWait: break;
  }
  return config_.buffer_budget_bytes;
}

Chunk* Profiler::WaitForChunk() {
  while (sender_->is_connected() && !is_shut_down()) {
    if (Chunk* chunk = pool_.AcquireOrWait(std::chrono::milliseconds(100))) return chunk;
  }
  return nullptr;
}

void Profiler::NoteBufferFull() {
  if (!sender_->is_connected() || said_buffer_full_.exchange(true, std::memory_order_relaxed)) return;
  std::fprintf(stderr,
               "gnomon: the event buffer is full (%llu MiB, GNOMON_BUFFER_POLICY=%s): events are dropped and "
               "counted until the capture catches up\n",
               static_cast<unsigned long long>(pool_.limit_bytes() >> 20), BufferPolicyName(config_.buffer_policy));
}

Profiler& Profiler::Get() {
  if (Profiler* running = g_profiler.load(std::memory_order_acquire)) return *running;
  std::lock_guard lock(g_start_mutex);
  if (Profiler* running = g_profiler.load(std::memory_order_acquire)) return *running;
  InitTimer();
  auto* profiler = new Profiler(PendingConfig());
  profiler->listen_ok_ = profiler->sender_->Listen();
  g_profiler.store(profiler, std::memory_order_release);
  profiler->sender_->Start();
  std::atexit(ShutdownAtExit);
  return *profiler;
}

bool Profiler::IsStarted() { return g_profiler.load(std::memory_order_acquire) != nullptr; }

bool Profiler::Configure(const std::function<void(Config&)>& change) {
  std::lock_guard lock(g_start_mutex);
  if (g_profiler.load() != nullptr) return false;
  change(PendingConfig());
  return true;
}

ThreadState* Profiler::RegisterThread() {
  auto* thread = new ThreadState;
  thread->os_thread_id = static_cast<uint32_t>(syscall(SYS_gettid));
  std::lock_guard lock(mutex_);
  thread->id = next_thread_id_++;
  threads_.push_back(thread);
  AppendThreadInfo(global_log_, *thread, {});
  return thread;
}

uint32_t Profiler::RegisterSourceLocation(gnomon_source_location* location) {
  std::atomic_ref<uint32_t> id_ref(location->id);
  std::lock_guard lock(mutex_);
  if (const uint32_t existing = id_ref.load(std::memory_order_acquire)) return existing;
  const uint32_t id = next_source_location_id_++;
  const std::string_view function = ClampString(location->function, location->function ? std::strlen(location->function) : 0, protocol::kMaxStringBytes);
  const std::string_view name = location->name ? ClampString(location->name, std::strlen(location->name), protocol::kMaxStringBytes) : function;
  const std::string_view file = ClampString(location->file, location->file ? std::strlen(location->file) : 0, protocol::kMaxStringBytes);
  protocol::AppendMessage(global_log_, protocol::SourceLocationDef{.id = id, .line = location->line, .color = location->color},
                          {.name = name, .function = function, .file = file});
  id_ref.store(id, std::memory_order_release);
  return id;
}

uint32_t Profiler::RegisterString(protocol::StringKind kind, const char* name) {
  const std::string_view text = ClampString(name, name ? std::strlen(name) : 0, protocol::kMaxStringBytes);
  std::string key(1, static_cast<char>(kind));
  key.append(text);
  std::lock_guard lock(mutex_);
  auto [it, inserted] = strings_.try_emplace(std::move(key), 0);
  if (!inserted) return it->second;
  it->second = next_string_id_++;
  protocol::AppendMessage(global_log_, protocol::StringDef{.id = it->second, .kind = static_cast<uint8_t>(kind)},
                          {.text = text});
  return it->second;
}

void Profiler::SetThreadName(ThreadState* thread, const char* name) {
  if (thread == nullptr) return;
  const std::string_view text = ClampString(name, name ? std::strlen(name) : 0, protocol::kMaxStringBytes);
  std::lock_guard lock(mutex_);
  AppendThreadInfo(global_log_, *thread, text);
}

void Profiler::AppendGlobal(const uint8_t* bytes, size_t size) {
  std::lock_guard lock(mutex_);
  global_log_.insert(global_log_.end(), bytes, bytes + size);
}

void Profiler::NoteCalibration(const CalibrationPair& pair) {
  std::lock_guard lock(mutex_);
  if (!has_pair_) first_pair_ = pair;
  latest_pair_ = pair;
  has_pair_ = true;
}

uint64_t Profiler::HostNsToTicks(bool is_monotonic_raw, int64_t host_ns) {
  std::lock_guard lock(mutex_);
  if (!has_pair_) return uint64_t(host_ns);
  const int64_t raw_ns = is_monotonic_raw ? host_ns : host_ns + (latest_pair_.monotonic_raw_ns - latest_pair_.monotonic_ns);
  if (CurrentTimerKind() == protocol::TimerKind::kMonotonicRaw) return uint64_t(raw_ns);
  const int64_t span_ns = latest_pair_.monotonic_raw_ns - first_pair_.monotonic_raw_ns;
  const double ticks_per_ns = span_ns > 0 ? double(latest_pair_.tick - first_pair_.tick) / double(span_ns) : 1.0;
  return latest_pair_.tick + uint64_t(std::llround(double(raw_ns - latest_pair_.monotonic_raw_ns) * ticks_per_ns));
}

void Profiler::Shutdown() {
  if (shut_down_.exchange(true, std::memory_order_acq_rel)) return;
  sender_->Stop();
}

ThreadState* CurrentThreadState() {
  Profiler& profiler = Profiler::Get();
  return profiler.is_shut_down() ? nullptr : CurrentThread(profiler);
}

}  // namespace gnomon::client

namespace gnomon::detail {

uint8_t* Refill(size_t bytes) {
  using client::Chunk;
  using client::Profiler;
  if (bytes > Chunk::kDataBytes) return nullptr;
  Profiler& profiler = Profiler::Get();
  client::ThreadState* thread = profiler.is_shut_down() ? nullptr : client::CurrentThread(profiler);
  if (thread == nullptr) {
    profiler.CountDrop();
    return nullptr;
  }
  if (thread->drops_in_a_row != 0 && thread->drops_in_a_row % client::kDropRetryInterval != 0) {
    ++thread->drops_in_a_row;
    profiler.CountDrop();
    return nullptr;
  }
  Chunk* chunk = thread->spare.exchange(nullptr, std::memory_order_acq_rel);
  if (chunk == nullptr) chunk = profiler.pool().Acquire();
  if (chunk == nullptr && profiler.config().buffer_policy == client::BufferPolicy::kWait) {
    chunk = profiler.WaitForChunk();
  }
  if (chunk == nullptr) {
    ++thread->drops_in_a_row;
    tls_writer = {};
    profiler.CountDrop();
    profiler.NoteBufferFull();
    return nullptr;
  }
  thread->drops_in_a_row = 0;
  chunk->Reset();
  if (thread->write_chunk != nullptr) {
    thread->write_chunk->next.store(chunk, std::memory_order_release);
  } else {
    thread->head.store(chunk, std::memory_order_release);
  }
  thread->write_chunk = chunk;
  tls_writer = {chunk->data, chunk->data + Chunk::kDataBytes, chunk->data, &chunk->committed};
  return chunk->data;
}

uint32_t RegisterSourceLocation(gnomon_source_location* location) {
  return client::Profiler::Get().RegisterSourceLocation(location);
}

}  // namespace gnomon::detail
