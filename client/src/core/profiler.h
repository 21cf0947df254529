// The process-wide profiler: the registry (registry.h) and the sender (sender.h).
//
// Started on the first event (or gnomon_startup()), never destroyed: threads may record
// until the very end of the process. An atexit handler ships what is left to a
// connected server and stops the sender (Shutdown()).
#pragma once

#include <functional>
#include <memory>

#include "registry.h"

namespace gnomon::client {

class Sender;
class Sampler;

class Profiler {
 public:
  // The running profiler, started on first use.
  static Profiler& Get();
  // Whether Get() has been called.
  static bool IsStarted();
  // Configuration for the next start; false once started.
  static bool Configure(const std::function<void(Config&)>& change);

  Registry& registry() { return registry_; }
  Sender& sender() { return *sender_; }
  bool listen_ok() const { return listen_ok_; }

  // Ships what is left (bounded by config().exit_flush_ms) and stops the sender.
  void Shutdown();

 private:
  explicit Profiler(const Config& config);

  Registry registry_;
  Sender* sender_ = nullptr;    // never destroyed, like the profiler
  Sampler* sampler_ = nullptr;  // with GNOMON_SAMPLING_HZ or GNOMON_CONTEXT_SWITCHES
  bool listen_ok_ = false;
};

// The calling thread's state, registered on first use; nullptr after the thread's
// exit handlers ran or after shutdown.
ThreadState* CurrentThreadState();

// Names the calling thread as one of the library's own (LibraryThread): the sampler's,
// the CUDA collector's, CUPTI's buffer thread. Readers show such threads apart.
void NameLibraryThread(const char* name);

}  // namespace gnomon::client
