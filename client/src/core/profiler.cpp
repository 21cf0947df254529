#include "profiler.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "callstack.h"
#include "gnomon/client/thread_writer.h"
#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/settings.h"
#include "inside_library.h"
#include "sampler.h"
#include "sender.h"
#include "timer.h"

namespace gnomon::detail {
constinit thread_local ThreadWriter tls_writer;
constinit std::atomic<bool> g_profiler_started{false};
// A line of its own: written once per chunk drained, it must not share one with what
// the recording path reads on every event (g_timer_is_tsc).
alignas(64) constinit std::atomic<uint32_t> g_buffer_epoch{0};
}  // namespace gnomon::detail

namespace gnomon::client {

constinit thread_local uint32_t tls_inside_library = 0;

namespace {

constinit std::mutex g_start_mutex;
constinit std::atomic<Profiler*> g_profiler{nullptr};
Config* g_pending_config = nullptr;  // guarded by g_start_mutex

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
  for (BufferPolicy policy : {BufferPolicy::kAuto, BufferPolicy::kDrop, BufferPolicy::kGrow,
                              BufferPolicy::kWait, BufferPolicy::kRing}) {
    if (text == BufferPolicyName(policy)) return {policy, ""};
  }
  return {std::nullopt, protocol::IsNot(text, "one of auto, drop, grow, wait, ring")};
}

protocol::Parsed<bool> ParseSwitch(std::string_view text) {
  if (text == "1" || text == "on" || text == "yes" || text == "true") return {true, ""};
  if (text == "0" || text == "off" || text == "no" || text == "false") return {false, ""};
  return {std::nullopt, protocol::IsNot(text, "1 or 0")};
}

// A signal by name (USR1, SIGUSR1) or number; only those a program may catch and that
// nothing else in it is likely to need.
protocol::Parsed<int> ParseSaveSignal(std::string_view text) {
  static constexpr std::pair<std::string_view, int> kSignals[] = {
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT}, {"URG", SIGURG}};
  const std::string_view name = text.starts_with("SIG") ? text.substr(3) : text;
  for (const auto& [signal_name, number] : kSignals) {
    if (name == signal_name) return {number, ""};
  }
  const auto number = protocol::ParseUnsigned(text, 1, uint64_t(SIGRTMAX));
  if (number && (int(*number) >= SIGRTMIN ||
                 std::any_of(std::begin(kSignals), std::end(kSignals),
                             [&](const auto& known) { return known.second == int(*number); }))) {
    return {int(*number), ""};
  }
  return {std::nullopt,
          protocol::IsNot(text, "one of USR1, USR2, HUP, QUIT, URG or a real-time signal's number")};
}

protocol::Parsed<AnnounceMode> ParseAnnounceMode(std::string_view text) {
  if (text == "off") return {AnnounceMode::kOff, ""};
  if (text == "local") return {AnnounceMode::kLocal, ""};
  if (text == "lan") return {AnnounceMode::kLan, ""};
  return {std::nullopt, protocol::IsNot(text, "one of off, local, lan")};
}

Config& PendingConfig() {
  if (g_pending_config == nullptr) {
    g_pending_config = new Config;
    Config& config = *g_pending_config;
    if (const char* address = std::getenv("GNOMON_ADDRESS"); address && *address) config.address = address;
    if (const char* file = std::getenv("GNOMON_PORT_FILE"); file && *file) config.port_file = file;
    protocol::HostPort collector;
    ReadEnvSetting("GNOMON_COLLECTOR", collector, [](std::string_view text) {
      return protocol::ParseHostPort(text, protocol::kDefaultPort);
    });
    config.collector_host = collector.host;
    config.collector_port = collector.port;
    ReadEnvSetting("GNOMON_PORT", config.port, [](std::string_view text) {
      return protocol::ParsePort(text, protocol::PortZero::kAllowed);
    });
    uint64_t megabytes = config.buffer_budget_bytes >> 20;
    ReadEnvSetting("GNOMON_BUFFER_MB", megabytes, Unsigned(1, uint64_t{1} << 30));
    config.buffer_budget_bytes = megabytes << 20;
    ReadEnvSetting("GNOMON_BUFFER_POLICY", config.buffer_policy, ParseBufferPolicy);
    uint64_t ceiling_megabytes = 0;
    ReadEnvSetting("GNOMON_BUFFER_MAX_MB", ceiling_megabytes, Unsigned(1, uint64_t{1} << 30));
    config.buffer_ceiling_bytes = ceiling_megabytes << 20;
    ReadEnvSetting("GNOMON_EXIT_FLUSH_MS", config.exit_flush_ms, Unsigned(0, UINT32_MAX));
    ReadEnvSetting("GNOMON_WAIT_FOR_SERVER_MS", config.exit_wait_for_server_ms, Unsigned(0, UINT32_MAX));
    ReadEnvSetting("GNOMON_START_WAIT_MS", config.start_wait_ms, Unsigned(0, 3'600'000));
    uint32_t keep_start_s = config.keep_start_ms / 1000;
    ReadEnvSetting("GNOMON_KEEP_START_S", keep_start_s, Unsigned(0, 3600));
    config.keep_start_ms = keep_start_s * 1000;
    ReadEnvSetting("GNOMON_ANNOUNCE", config.announce, ParseAnnounceMode);
    ReadEnvSetting("GNOMON_ON_DEMAND", config.on_demand, ParseSwitch);
    if (const char* output = std::getenv("GNOMON_OUTPUT"); output && *output) {
      // "%p" is the program's pid: one file per process, for many started with one name.
      config.output_path = output;
      for (size_t at = config.output_path.find("%p"); at != std::string::npos;
           at = config.output_path.find("%p", at))
        config.output_path.replace(at, 2, std::to_string(getpid()));
    }
    ReadEnvSetting("GNOMON_SAVE_SIGNAL", config.save_signal, ParseSaveSignal);
    ReadEnvSetting("GNOMON_CALLSTACK_DEPTH", config.callstack_depth, Unsigned(0, detail::kMaxCallstackDepth));
    ReadEnvSetting("GNOMON_SAMPLING_HZ", config.sampling_hz, Unsigned(0, 100000));
    ReadEnvSetting("GNOMON_CONTEXT_SWITCHES", config.context_switches, ParseSwitch);
    if (const char* to = std::getenv("GNOMON_ANNOUNCE_TO"); to && *to) {
      if (ParseAnnounceDestination(to)) {
        config.announce_to = to;
      } else if (config.announce == AnnounceMode::kLan) {
        std::fprintf(stderr,
                     "gnomon: ignoring GNOMON_ANNOUNCE=lan: GNOMON_ANNOUNCE_TO '%s' is not IPv4[:PORT] (e.g. "
                     "192.168.1.255 or 10.0.0.5:%u); announcing on this machine only\n",
                     to, unsigned{protocol::kAnnouncePort});
        config.announce = AnnounceMode::kLocal;
      }
    }
    // Announcing on the LAN is for being connected to from it: all interfaces, unless
    // the user chose an address.
    const char* address = std::getenv("GNOMON_ADDRESS");
    if (config.announce == AnnounceMode::kLan && (address == nullptr || *address == '\0')) {
      config.address = "0.0.0.0";
    }
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
  // Once finished, the sender may free the state: later events (from other thread-local
  // destructors) are dropped and counted without it.
  tls_state = nullptr;
  if (state != nullptr) state->finished.store(true, std::memory_order_release);
}

ThreadState* CurrentThread(Registry& registry) {
  if (tls_state == nullptr && !tls_exited) {
    tls_state = registry.RegisterThread();
    tls_exit.state = tls_state;
  }
  return tls_state;
}

}  // namespace

Profiler::Profiler(const Config& config) : registry_(config), sender_(new Sender(registry_)) {}

Profiler& Profiler::Get() {
  if (Profiler* running = g_profiler.load(std::memory_order_acquire)) return *running;
  InsideLibrary inside;
  std::lock_guard lock(g_start_mutex);
  if (Profiler* running = g_profiler.load(std::memory_order_acquire)) return *running;
  InitTimer();
  auto* profiler = new Profiler(PendingConfig());
  const Config& config = profiler->registry_.config();
  if (config.callstack_depth != 0) {  // before any thread can see the profiler started
    WarmUpCallstacks();
    detail::g_callstack_depth = config.callstack_depth;
  }
  profiler->listen_ok_ = profiler->sender_->Listen();
  g_profiler.store(profiler, std::memory_order_release);
  detail::g_profiler_started.store(true, std::memory_order_release);
  profiler->sender_->Start();
  if (config.sampling_hz != 0 || config.context_switches) {
    profiler->sampler_ = new Sampler(profiler->registry_);
    profiler->sampler_->Start(config.sampling_hz, config.context_switches);
  }
  std::atexit(ShutdownAtExit);
  // Started by a capture (gnomon-capture -- PROGRAM): the first event waits for it.
  if (config.start_wait_ms != 0 &&
      !profiler->sender_->WaitForServer(std::chrono::milliseconds(config.start_wait_ms))) {
    std::fprintf(stderr,
                 "gnomon: no capture connected within GNOMON_START_WAIT_MS=%u ms; recording goes on for one "
                 "that comes later\n",
                 config.start_wait_ms);
  }
  return *profiler;
}

bool Profiler::IsStarted() { return g_profiler.load(std::memory_order_acquire) != nullptr; }

bool Profiler::Configure(const std::function<void(Config&)>& change) {
  std::lock_guard lock(g_start_mutex);
  if (g_profiler.load() != nullptr) return false;
  change(PendingConfig());
  return true;
}

void Profiler::Shutdown() {
  if (!registry_.MarkShutDown()) return;
  if (sampler_ != nullptr) sampler_->Stop();  // its last records go out with the rest
  sender_->Stop();
}

ThreadState* CurrentThreadState() {
  InsideLibrary inside;  // registering the thread allocates its state
  Registry& registry = Profiler::Get().registry();
  return registry.is_shut_down() ? nullptr : CurrentThread(registry);
}

void NameLibraryThread(const char* name) {
  Profiler::Get().registry().SetThreadName(CurrentThreadState(), name, /*library=*/true);
}

}  // namespace gnomon::client

namespace gnomon::detail {

namespace {

// Points the thread's writer elsewhere; the zones it has open stay as they were.
void ReplaceWriter(ThreadWriter next) {
  next.unrecorded_depth = tls_writer.unrecorded_depth;
  tls_writer = next;
}

// The thread records nothing until the buffer's epoch moves on from `epoch`: Reserve()
// counts each event in `counter` (this one included) without calling here.
uint8_t* StopRecording(uint32_t epoch, std::atomic<uint64_t>& counter) {
  ReplaceWriter({.not_recorded = &counter, .epoch = epoch});
  AddToOwnCounter(counter, 1);
  return nullptr;
}

}  // namespace

uint8_t* Refill(size_t bytes) {
  using client::BufferPolicy;
  using client::Chunk;
  client::InsideLibrary inside;
  client::Registry& registry = client::Profiler::Get().registry();
  // Read before looking for a chunk: a chunk returned after this changes it, so the
  // next event asks again.
  const uint32_t epoch = g_buffer_epoch.load(std::memory_order_acquire);
  client::ThreadState* thread = registry.is_shut_down() ? nullptr : client::CurrentThread(registry);
  if (thread == nullptr || bytes > Chunk::kDataBytes) {
    registry.CountDrop(thread);
    return nullptr;
  }
  if (!registry.is_recording()) return StopRecording(epoch, thread->unrequested);
  Chunk* chunk = thread->spare.exchange(nullptr, std::memory_order_acq_rel);
  // While dropping, the pool's lock is taken only when it may have a chunk: many threads
  // retrying at once would otherwise queue on it for every retry.
  if (chunk == nullptr && (thread->drops_in_a_row == 0 || registry.pool().MayAcquire())) {
    chunk = registry.pool().Acquire();
  }
  const BufferPolicy policy = registry.config().buffer_policy;
  if (chunk == nullptr && policy == BufferPolicy::kRing) {
    chunk = registry.RecycleOldestChunk();
    // Past the limit (a capture that let the buffer grow has left): free one chunk for
    // every one recycled, so the ring comes back to its budget.
    if (chunk != nullptr && registry.pool().allocated_bytes() > registry.pool().limit_bytes()) {
      registry.pool().Release(chunk);
      chunk = registry.RecycleOldestChunk();
    }
  }
  if (chunk == nullptr && policy == BufferPolicy::kWait) chunk = registry.WaitForChunk();
  if (chunk == nullptr) {
    ++thread->drops_in_a_row;
    registry.NoteBufferFull(*thread);
    return StopRecording(epoch, thread->dropped);
  }
  thread->drops_in_a_row = 0;
  chunk->Reset();
  chunk->sequence = registry.NextChunkSequence();
  if (thread->write_chunk != nullptr) {
    thread->write_chunk->next.store(chunk, std::memory_order_release);
  } else {
    thread->head.store(chunk, std::memory_order_release);
  }
  thread->write_chunk = chunk;
  // A thread whose chain had no chunk to give may find one to recycle now.
  if (policy == BufferPolicy::kRing) client::AdvanceBufferEpoch();
  ReplaceWriter({.cursor = chunk->data,
                 .limit = chunk->data + Chunk::kDataBytes,
                 .base = chunk->data,
                 .committed = &chunk->committed});
  return chunk->data;
}

void CountNotRecordedSlow() {
  client::InsideLibrary inside;
  client::Registry& registry = client::Profiler::Get().registry();
  client::ThreadState* thread = registry.is_shut_down() ? nullptr : client::CurrentThread(registry);
  // A recording thread's event not recorded is the end of a zone begun while it did not
  // record: on demand, before the capture came.
  if (thread != nullptr && registry.config().on_demand) {
    AddToOwnCounter(thread->unrequested, 1);
  } else {
    registry.CountDrop(thread);
  }
}

uint32_t RegisterSourceLocation(gnomon_source_location* location) {
  return client::Profiler::Get().registry().RegisterSourceLocation(location);
}

}  // namespace gnomon::detail
