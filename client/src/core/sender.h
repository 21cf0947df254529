// The background thread that ships events to a server, or to the program's own trace
// file (GNOMON_OUTPUT), and saves the recording on request (SaveRecording).
//
// It owns the listening socket (loopback by default) and at most one connection. While
// no server is connected it only takes calibration pairs; events wait in the threads'
// chunks, bounded by the buffer budget. When a server connects and the handshake
// succeeds it sends AppInfo, the definitions kept (definition_log.h), and then drains every thread's
// published bytes, each run prefixed by a ThreadContext. The server never sends
// anything after its hello, so nothing it says can make the program read its memory.
//
// A server that asks for lanes (protocol/handshake.h) gets them once all have connected:
// a thread of its own each ("gnomon-lane"), draining the threads whose id falls to it
// and sending them as LaneBatches, each stamped with how much of the main connection's
// stream it needs first. The main connection then carries the new definitions, drops
// and clock replies only.
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
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "announcer.h"
#include "callstack.h"
#include "environment.h"
#include "gnomon/protocol/handshake.h"
#include "timer.h"

namespace gnomon::tracefile {
class TraceWriter;
}

namespace gnomon::client {

class Registry;
struct ThreadState;

// A lane's connection and its thread's state.
struct Lane {
  int fd = -1;
  uint32_t index = 0;  // 0 to lanes - 1; the threads whose id % lanes is this
  std::thread thread;
  std::vector<uint8_t> out;  // a LaneBatch header, then what was drained
  uint32_t context = 0;
};

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
  // Waits up to `timeout` for the listening socket, the handshakes pending and (when
  // connected) the connection, then accepts, reads hellos, answers them, answers clock
  // probes, and notices a server that left. Sets conn_fd_ when a handshake succeeds.
  void ServiceConnections(std::chrono::microseconds timeout);
  void AcceptPending();
  // Reads what arrived of a pending hello; true when the connection is done with
  // (answered, refused or gone).
  bool ContinueHandshake(struct PendingHandshake& pending);
  bool OpenOwnFile();
  // Catches GNOMON_SAVE_SIGNAL `number`, unless the program handles it itself (said).
  static void InstallSaveSignal(int number);
  // Writes the recording to a file now (on the sender's thread); the error, or "".
  std::string WriteRecording(const std::string& path);
  // Takes a save asked for by SaveRecording() or the save signal.
  void ServeSaveRequests();
  // `capabilities` beside zones and GPU; `reserved` as ClientHello says.
  void Answer(int fd, protocol::HandshakeStatus status, uint64_t capabilities = 0, uint32_t reserved = 0);
  void Promote(int fd);
  // Every definition kept into out_, for a server (or file) that starts now; from then
  // on Pump takes what is new.
  void BeginDefinitions();
  // Drains the log and the threads into out_ and ships it, unless it holds a small batch
  // (holding_) not yet 1 ms old; returns the number of event bytes drained, -1 on failure.
  int64_t Pump();
  // Appends thread's published bytes to `out`, after a ThreadContext when `context` (the
  // thread `out`'s stream is on) is another; true when the thread exited and is empty.
  bool DrainThread(ThreadState& thread, std::vector<uint8_t>& out, uint32_t& context);
  void ReleaseThread(ThreadState* thread);
  // Ships out_ (to the server, or into the own file).
  bool Flush();
  bool SendAll(const uint8_t* data, size_t size);
  // Sends all of it on fd (the connection, or a lane), adding to *sent what went; false
  // when it failed, or when the peer takes nothing more and `give_up` is set or the
  // stop's deadline passed.
  bool SendFully(int fd, const uint8_t* data, size_t size, uint64_t* sent, const std::atomic<bool>* give_up);

  // Lanes (protocol/handshake.h). A lane's hello, answered; true when it was taken.
  bool TakeLane(int fd, uint32_t token);
  void StartLanes();
  void RunLane(Lane& lane);
  // Sends what the lane drained, as one LaneBatch.
  bool ShipLane(Lane& lane);
  // Sends the new definitions on the connection; how much of its stream has gone
  // (what a lane batch drained before the call needs), or nullopt when it failed.
  std::optional<uint64_t> SyncMainStream();
  // At a stop: the lanes drain what is left (until the stop's deadline), end, and close
  // for writing.
  void FinishLanes();
  // Ends the lanes' threads and closes them; after it, only the connection drains.
  void JoinLanes();
  // Lanes connected but not started: closed, and no more are taken.
  void ForgetLanes();
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
  // Read when the profiler starts: the environment is not read on the sender's thread,
  // where a setenv of the program's could move it meanwhile.
  const ProgramEnvironmentInfo environment_ = ReadProgramEnvironment();
  Announcer announcer_;
  int listen_fd_ = -1;
  int conn_fd_ = -1;
  std::unique_ptr<tracefile::TraceWriter> own_file_;  // GNOMON_OUTPUT, written as it goes
  std::string own_path_;                              // where: GNOMON_OUTPUT, or a variant of it
  std::set<std::string> saved_paths_;                 // the recording was saved there (sender's thread)
  bool writes_own_file_ = false;                      // set before the thread starts
  std::vector<PendingHandshake> pending_;             // accepted, hello not complete yet
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

  // Guards the connection and its stream (conn_fd_'s closing, out_,
  // main_sent_) from the lanes. Recursive: Disconnect() takes it, and may run under it.
  std::recursive_mutex main_mutex_;
  std::vector<uint8_t> out_;
  std::chrono::steady_clock::time_point held_since_;  // when the bytes held in out_ were drained first
  bool holding_ = false;                              // out_ holds a small batch (Pump)
  uint64_t main_sent_ = 0;  // bytes of the connection's stream sent, from AppInfo on
  uint32_t current_context_ = 0;
  // Lanes: what the server asked for, the token they must bring, those connected and
  // not started, and those running (their threads drain the program's threads).
  uint32_t lanes_wanted_ = 0;
  uint32_t lane_token_ = 0;
  std::vector<int> lane_fds_;
  std::chrono::steady_clock::time_point lanes_deadline_;  // not all in by then: none
  std::vector<std::unique_ptr<Lane>> lanes_;
  bool threads_on_lanes_ = false;           // only lanes drain threads, until JoinLanes()
  std::atomic<bool> lanes_stop_{false};     // give up now (the connection is gone)
  std::atomic<bool> lanes_finish_{false};   // drain what is left, then end
  std::atomic<bool> lanes_failed_{false};   // a lane lost its connection
  std::atomic<bool> lanes_pending_{false};  // asked for, neither all started nor given up on
  uint64_t dropped_sent_ = 0;
  std::chrono::steady_clock::time_point next_calibration_;
  // Modules announced for call stacks and samples (refreshed every second: dlopen).
  ModuleMap module_map_;
  std::chrono::steady_clock::time_point next_modules_;
  std::atomic<std::chrono::steady_clock::time_point> stop_deadline_{};  // lanes read it
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
