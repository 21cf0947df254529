// The background thread that ships events to a server, or to the program's own trace
// file (GNOMON_OUTPUT), and saves the recording on request (SaveRecording).
//
// It owns the listening socket (loopback by default) and at most one connection. While
// no server is connected it only takes calibration pairs; events wait in the threads'
// chunks, bounded by the buffer budget. When a server connects and the handshake
// succeeds it sends AppInfo, replays the global log, and then drains every thread's
// published bytes, each run prefixed by a ThreadContext. The server never sends
// anything after its hello, so nothing it says can make the program read its memory.
//
// Handshakes never block the thread: accepted connections wait, several at once, for
// their 16-byte hello, each for at most a couple of seconds, while the thread goes on
// accepting and shipping. A peer that connects and says nothing (or many of them) only
// holds a slot, so a real server still gets through; a hello that arrives while a
// server is connected gets a "busy" answer.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "announcer.h"
#include "callstack.h"
#include "gnomon/protocol/handshake.h"
#include "timer.h"

namespace gnomon::server {
class TraceWriter;
}

namespace gnomon::client {

class Registry;
struct ThreadState;

// An accepted connection whose ServerHello has not fully arrived.
struct PendingHandshake {
  int fd = -1;
  std::chrono::steady_clock::time_point deadline;
  uint8_t hello[sizeof(protocol::ServerHello)] = {};
  size_t received = 0;
};

class Sender {
 public:
  explicit Sender(Registry& registry);
  ~Sender();

  // Opens the program's own trace file (GNOMON_OUTPUT, not under the ring policy) or,
  // without one or when it cannot be written, the listening socket; false (with a
  // message on stderr) when neither can be had.
  bool Listen();
  void Start();
  // Drains to a connected server (bounded), sends EndOfStream, joins the thread.
  void Stop();

  uint16_t port() const { return port_.load(); }
  bool is_connected() const;
  bool WaitForServer(std::chrono::milliseconds timeout);
  // Writes what the buffer holds to a trace file at `path` ("": the default path), on
  // the sender's thread; waits for it. False, with the reason on stderr, when it cannot.
  // Not from a signal handler (it waits): RequestSave() is for those.
  bool SaveRecording(const std::string& path);
  // Asks for a save to the default path, as the save signal does; async-signal-safe.
  static void RequestSave();

 private:
  void Run();
  // Publishes the program's announcement (from the sender's thread).
  void Announce();
  void TakeCalibration();
  // ModuleDefs for the modules loaded since the last call (with call stacks or samples).
  void AnnounceModules();
  // Waits up to timeout_ms for the listening socket, the handshakes pending and (when
  // connected) the connection, then accepts, reads hellos, answers them, and notices a
  // server that left. Sets conn_fd_ when a handshake succeeds.
  void ServiceConnections(int timeout_ms);
  void AcceptPending();
  // Reads what arrived of a pending hello; true when the connection is done with
  // (answered, refused or gone).
  bool ContinueHandshake(struct PendingHandshake& pending);
  bool OpenOwnFile();
  // Writes the recording to a file now (on the sender's thread); the error, or "".
  std::string WriteRecording(const std::string& path);
  // Takes a save asked for by SaveRecording() or the save signal.
  void ServeSaveRequests();
  void Answer(int fd, protocol::HandshakeStatus status, bool clock_replies = false);
  void Promote(int fd);
  // Sends everything pending; returns the number of event bytes sent, -1 on failure.
  int64_t Pump();
  // Appends thread's published bytes to out_; true when the thread exited and is empty.
  bool DrainThread(ThreadState& thread);
  void ReleaseThread(ThreadState* thread);
  // Ships out_ (to the server, or into the own file).
  bool Flush();
  bool SendAll(const uint8_t* data, size_t size);
  // A server is connected, or the program writes its own file.
  bool has_sink() const { return conn_fd_ >= 0 || own_file_ != nullptr; }
  // Reads what the connected server sent: clock probes, each answered at once with a
  // ClockReply, when both agreed to them. True when the server left (or sent anything
  // else): then the connection is closed.
  bool PeerClosed();
  bool ReadClockProbes();  // PeerClosed() for a server that sends probes
  void AnswerClockProbe(uint32_t sequence, int64_t received_ns);
  void Disconnect(const char* reason);
  // GNOMON_COLLECTOR: resolves it (false, said once on stderr, when it cannot be).
  bool ResolveCollector();
  // Starts a connection to the collector when none is up or being made and it is time;
  // a connection made becomes a pending handshake, as an accepted one does.
  void ConnectToCollector();
  void FinishCollectorConnect();
  // Waits for `fd`'s ServerHello (an accepted connection, or one made to the collector).
  void AddPending(int fd);
  // AppInfo, and HostInfo when `host_info` (a file, or a server that knows it).
  void AppendAppInfo(std::vector<uint8_t>& out, bool host_info = true) const;

  Registry& registry_;
  Announcer announcer_;
  int listen_fd_ = -1;
  int conn_fd_ = -1;
  std::unique_ptr<server::TraceWriter> own_file_;  // GNOMON_OUTPUT, written as it goes
  bool writes_own_file_ = false;                   // set before the thread starts
  std::vector<PendingHandshake> pending_;          // accepted, hello not complete yet
  // GNOMON_COLLECTOR: its address (resolved once), the connection being made to it, and
  // when to try again after one failed or ended.
  std::vector<std::pair<sockaddr_storage, socklen_t>> collector_addresses_;  // resolved, tried in turn
  size_t collector_next_ = 0;
  bool collector_unresolved_said_ = false;
  int collector_fd_ = -1;          // connecting
  int collector_pending_fd_ = -1;  // connected, its handshake maybe still in pending_
  std::chrono::steady_clock::time_point next_collector_attempt_{};
  bool answers_probes_ = false;  // the connected server sends ClockProbes
  uint8_t probe_[sizeof(protocol::ClockProbe)] = {};
  size_t probe_filled_ = 0;
  int64_t probe_second_start_ns_ = 0;  // the flood guard's window
  uint32_t probes_this_second_ = 0;
  std::atomic<uint16_t> port_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::thread::id thread_id_;
  std::atomic<bool> running_{false};  // Start() ran

  std::vector<uint8_t> out_;
  size_t global_sent_ = 0;
  uint32_t current_context_ = 0;
  uint64_t dropped_sent_ = 0;
  std::chrono::steady_clock::time_point next_calibration_;
  // Modules announced for call stacks and samples (refreshed every second: dlopen).
  ModuleMap module_map_;
  std::chrono::steady_clock::time_point next_modules_;
  std::chrono::steady_clock::time_point stop_deadline_;
  CalibrationPair first_pair_;
  double ticks_per_second_ = 0;
  int64_t start_unix_ns_ = 0;

  // SaveRecording() asks, the sender's thread answers.
  struct SaveRequest {
    std::string path;
    bool done = false;
    std::string error;
  };
  std::mutex save_mutex_;
  std::condition_variable save_done_;
  SaveRequest* save_request_ = nullptr;  // guarded by save_mutex_
};

}  // namespace gnomon::client
