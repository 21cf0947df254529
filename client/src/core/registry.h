// What the recording threads and the sender share: the configuration, the chunk pool and
// its drop count, the threads, and the definitions.
//
// Two kinds of data leave the program:
//  - per-thread event bytes, in each thread's chunk chain (ThreadState);
//  - the definitions (definition_log.h): source locations, strings, threads, locks, GPU
//    contexts and counter sets, modules, and clock samples. Kept for every new server,
//    so one that connects late still learns every name, and bounded by what the program
//    defines, never by how often it defines it again.
//
// The profiler (profiler.h) owns one registry and the sender (sender.h); the sender
// knows only the registry, so neither includes the other. Thread-safe: the log and the
// thread list are guarded by mutex(), the rest is atomic.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "announcer.h"
#include "chunk_pool.h"
#include "definition_log.h"
#include "gnomon/gnomon.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/protocol/settings.h"
#include "timer.h"

namespace gnomon::client {

struct ThreadState {
  uint32_t id = 0;
  uint32_t os_thread_id = 0;
  // Producer side.
  Chunk* write_chunk = nullptr;
  uint32_t drops_in_a_row = 0;  // asks for a chunk that found none, in a row (0: recording)
  // Events this thread dropped, and events it did not record because nobody asked for
  // them (on demand, no capture connected). Only the thread writes them (no
  // read-modify-write), so not recording costs no contended cache line however many
  // threads do it at once.
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> unrequested{0};
  // First chunk not yet drained, for the sender (until its first read: it follows the
  // chain from read_chunk after that); a ring moves it on when it recycles the chunk.
  std::atomic<Chunk*> head{nullptr};
  std::atomic<Chunk*> spare{nullptr};  // a drained chunk handed back by the sender
  std::atomic<bool> finished{false};   // the thread has exited
  // Sender side.
  Chunk* read_chunk = nullptr;
  uint32_t read_pos = 0;
};

// What the program does with events when its buffer is full (GNOMON_BUFFER_POLICY).
enum class BufferPolicy : uint8_t {
  kAuto = GNOMON_BUFFER_AUTO,  // the budget while nobody drains; up to the ceiling while a
                               // server does but falls behind, and at the start of the run
                               // until one comes (keep_start_ms); then drop, and say so
  kDrop = GNOMON_BUFFER_DROP,  // the budget, always; then drop
  kGrow = GNOMON_BUFFER_GROW,  // no bound
  kWait = GNOMON_BUFFER_WAIT,  // the budget; then the recording thread waits for the sender
                               // while a server is connected (drops when none is; keeps the
                               // start of the run as kAuto does)
  kRing = GNOMON_BUFFER_RING,  // the budget keeps the newest events while no server is
                               // connected (oldest chunks recycled); kAuto while one is
};
const char* BufferPolicyName(BufferPolicy policy);

// The most the start of a run (Config::keep_start_ms) may hold, within the ceiling.
inline constexpr uint64_t kMaxStartBytes = 1ull << 30;

struct Config {
  std::string address = "127.0.0.1";
  uint16_t port = protocol::kDefaultPort;
  uint64_t buffer_budget_bytes = 64ull << 20;
  BufferPolicy buffer_policy = BufferPolicy::kAuto;
  uint64_t buffer_ceiling_bytes = 0;     // kAuto's bound; 0: a quarter of the machine's memory
  uint32_t exit_flush_ms = 5000;         // longest wait at exit for a connected server to drain
  uint32_t exit_wait_for_server_ms = 0;  // wait at exit for a server to connect
  uint32_t start_wait_ms = 0;            // wait at start-up for a server to connect
  // kAuto and kWait: for this long after start-up, while no server has come yet, the
  // buffer may grow to the ceiling, so that a capture started a moment after the
  // program gets the start of its run.
  uint32_t keep_start_ms = 10000;                // and at most kMaxStartBytes
  std::string port_file;                         // when set, the bound port is written there
  std::string collector_host;                    // GNOMON_COLLECTOR: a capture to connect out to
  uint16_t collector_port = 0;                   // (gnomon-capture --listen), retried while unreachable
  AnnounceMode announce = AnnounceMode::kLocal;  // who learns that the program runs
  std::string announce_to;                       // kLan: IP[:PORT] (default: broadcast)
  bool on_demand = false;                        // record only while a server is connected
  std::string output_path;                       // the program writes its own trace file
  int save_signal = 0;                           // saves the recording (0: none)
  uint32_t callstack_depth = 0;                  // frames at every zone begin and allocation (0: none)
  uint32_t sampling_hz = 0;                      // statistical samples of every thread (0: none)
  bool context_switches = false;                 // when each thread runs and waits
};

class Registry {
 public:
  explicit Registry(const Config& config);
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  const Config& config() const { return config_; }
  ChunkPool& pool() { return pool_; }

  // ---- definitions (definition_log.h) ----
  ThreadState* RegisterThread();
  uint32_t RegisterSourceLocation(gnomon_source_location* location);
  // The id of a name of this kind, the same for every call with it.
  uint32_t RegisterString(protocol::StringKind kind, const char* name);
  // A lock's id (a string of kind kLockName): one no live lock has, reusing that of a
  // lock of the same name that is gone (ReleaseLock), so that locks made and destroyed
  // by the million cost as many definitions as were ever alive at once.
  uint32_t RegisterLock(const char* name);
  void ReleaseLock(uint32_t id);
  // `library`: the thread is the library's own (LibraryThread follows its ThreadInfo,
  // in the stream and in what a late capture is sent).
  void SetThreadName(ThreadState* thread, const char* name, bool library = false);
  // Names the calling thread, one of the library's that records nothing (the sender and
  // its lanes): it gets a thread id and a definition, but no buffer, so that a trace's
  // context switches say whose it is. A name given before keeps its id (a lane started
  // again on a later connection): the definition then names the new thread.
  void NameQuietLibraryThread(const char* name);
  // A GPU context's name (GpuContextName): the latest is kept.
  void SetGpuContextName(uint32_t context, const uint8_t* bytes, size_t size);
  // A definition kept for good (a GPU context, a counter set, a module).
  void AddDefinition(const uint8_t* bytes, size_t size);
  // A clock sample (CpuCalibration; GpuCalibration, GpuResync, GpuTimeBracket) of clock
  // `clock`: 0 the CPU's, a GPU context's id + 1. The newest of each are kept.
  void AddClockSample(uint64_t clock, const uint8_t* bytes, size_t size);
  uint32_t NextGpuContextId() { return next_gpu_context_id_.fetch_add(1, std::memory_order_relaxed); }
  // Numbers chunks in the order threads start them (the ring recycles the lowest).
  uint64_t NextChunkSequence() { return next_chunk_sequence_.fetch_add(1, std::memory_order_relaxed); }
  uint32_t NextCounterSetId() { return next_counter_set_id_.fetch_add(1, std::memory_order_relaxed); }

  // Calibration pairs the sender takes; HostNsToTicks() converts through them.
  void NoteCalibration(const CalibrationPair& pair);
  uint64_t HostNsToTicks(bool is_monotonic_raw, int64_t host_ns);

  // ---- the buffer ----
  // Counts one dropped event: in the thread's own counter, or (no thread) the shared one.
  void CountDrop(ThreadState* thread) {
    if (thread == nullptr) {
      dropped_events_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    detail::AddToOwnCounter(thread->dropped, 1);
  }
  // Every event dropped so far, by every thread (the live ones and those retired).
  uint64_t dropped_events();
  // Takes an exited, drained thread off the list; its drops stay counted.
  void RetireThread(ThreadState* thread);
  // The most bytes of chunks the buffer policy allows, with or without a server (and,
  // without one, at the start of the run: see Config::keep_start_ms).
  uint64_t BufferLimit(bool connected) const;
  // Ends the start of the run once Config::keep_start_ms has passed with no server come:
  // the buffer is bounded by the budget from then on (what it holds stays for a capture
  // to take). Called periodically by the sender.
  void EndStartIfDue(std::chrono::steady_clock::time_point now);
  // Under the wait policy: a chunk, once the sender returns one, or nullptr when no
  // server is connected (or the profiler is shutting down).
  Chunk* WaitForChunk();
  // A thread found the buffer full: says so on stderr, once, while a server is connected
  // or when the thread never had a chunk (the budget is too small for the threads).
  void NoteBufferFull(const ThreadState& thread);
  // Under the ring policy, while no server is connected and no save reads the buffer:
  // the oldest chunk any thread has moved past, taken off its chain for `thread` to
  // reuse; nullptr when there is none.
  Chunk* RecycleOldestChunk();
  // Stops (true) or lets go on (false) the ring's recycling, while a save reads the
  // chains; Freeze waits for a recycling in progress.
  void FreezeRing(bool frozen);
  // Whether events are recorded now: always, except on demand while no server is
  // connected.
  bool is_recording() const { return !config_.on_demand || is_connected(); }

  // ---- state both sides watch ----
  // A server is connected and drains the buffer (set by the sender).
  bool is_connected() const { return connected_.load(std::memory_order_acquire); }
  void SetConnected(bool connected);
  bool is_shut_down() const { return shut_down_.load(std::memory_order_acquire); }
  // True the first time only.
  bool MarkShutDown() { return !shut_down_.exchange(true, std::memory_order_acq_rel); }

  // The sender's view, under mutex(): the threads and the definitions.
  std::mutex& mutex() { return mutex_; }
  std::vector<ThreadState*>& threads() { return threads_; }
  DefinitionLog& definitions() { return definitions_; }

 private:
  Config config_;
  ChunkPool pool_;
  std::atomic<uint64_t> dropped_events_{0};  // by no thread, or by threads retired
  std::atomic<bool> connected_{false};
  // The start of the run (Config::keep_start_ms): until a server first connects, or
  // the time is up.
  std::atomic<bool> in_start_{true};
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> said_buffer_full_{false};
  std::atomic<bool> said_budget_too_small_{false};
  std::atomic<uint32_t> next_gpu_context_id_{1};
  std::atomic<uint64_t> next_chunk_sequence_{1};
  std::atomic<uint32_t> next_counter_set_id_{1};

  std::mutex mutex_;  // guards everything below
  std::vector<ThreadState*> threads_;
  DefinitionLog definitions_;
  std::map<std::string, uint32_t, std::less<>> quiet_threads_;  // NameQuietLibraryThread's ids, by name
  bool ring_frozen_ = false;
  uint32_t next_thread_id_ = 1;
  uint32_t next_source_location_id_ = 1;
  uint32_t next_string_id_ = 1;
  std::unordered_map<std::string, uint32_t> strings_;  // kind byte + name -> id
  struct LockName {
    std::string name;
    bool is_free = false;  // its lock was destroyed: the next of its name takes the id
  };
  std::unordered_map<uint32_t, LockName> lock_names_;                  // every lock id ever made
  std::unordered_map<std::string, std::vector<uint32_t>> free_locks_;  // name -> ids of locks gone
  CalibrationPair first_pair_;
  CalibrationPair latest_pair_;
  bool has_pair_ = false;
};

// Cuts a string to what one message carries.
std::string_view ClampString(const char* text, size_t length, size_t max_bytes);

}  // namespace gnomon::client
