// Connects to a profiled program and receives its event stream on a thread of its own.
//
// This is the server side of a live capture, shared by gnomon-capture and the viewer:
//
//   Worker worker({.host = "127.0.0.1", .port = kDefaultPort});
//   if (Status s = worker.Connect(); !s.ok()) { print(s.message()); return; }
//   worker.Start();
//   ... worker.WithModel([](const TraceModel& m) { draw(m); }); ...
//   worker.Join();   // returns once the program ended, vanished, or RequestStop()
//
// Every whole message received is decoded (into the TraceModel when build_model is set)
// and handed, in order, to the optional tracefile::TraceWriter. Readers of a live model take it
// through WithModel (a SharedModel): they never stall the receiving thread. A malformed stream closes the
// connection with an error naming the fault; everything decoded before it is kept.
//
// Glossary:
//   lane     a connection besides the main one that carries some threads' events, in
//            LaneBatches, each saying how much of the main stream it needs first;
//   piece    what one lane batch decodes to: its bytes, and its zones paired (ZoneOps);
//   turn     a piece's place in the merge, taken in the order the stream needs: its
//            bytes go to the writer, and into the model when one is built;
//   run      a thread's zones in a turn, stored after the turn (where nothing after
//            them touches that thread);
//   goodbye  the program's EndOfStream, which goes last, once every lane has ended.
//
// With lanes (Options::lanes, protocol/handshake.h) the worker opens more connections to
// the program, each received on a thread of its own ("gnomon-lane"), and merges them into
// the program's one stream: a lane's batch goes to the writer once the main
// connection's stream has gone there as far as the batch says, restating its thread
// first when another connection wrote in between; the goodbye goes last. A worker that
// builds a model with lanes builds it from that merged stream, in its order, so that the
// model holds what the file will: each lane pairs its zone begins and ends on its own
// thread (ZoneOps, trace_builder.h), and a second thread of its own ("gnomon-store")
// takes its turns and stores each turn's last run of them after the turn, beside the
// other lanes (each writes only its own threads' zones).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gnomon/protocol/settings.h"
#include "gnomon/server/chunk_memory.h"
#include "gnomon/server/shared_model.h"
#include "gnomon/server/status.h"
#include "gnomon/server/trace_model.h"
#include "gnomon/tracefile/trace_writer.h"

namespace gnomon::server {

inline constexpr uint16_t kDefaultPort = protocol::kDefaultPort;

class ZoneOps;  // trace_builder.h

class Worker {
 public:
  enum class State {
    kIdle,          // not connected yet
    kReceiving,     // connected, stream flowing
    kEnded,         // the program said goodbye (EndOfStream)
    kDisconnected,  // the connection closed without a goodbye
    kStopped,       // RequestStop() ended the capture
    kFailed,        // malformed stream; see error()
  };

  struct Options {
    std::string host = "127.0.0.1";
    uint16_t port = kDefaultPort;
    // How long Connect() keeps retrying a refused connection.
    std::chrono::milliseconds connect_timeout{5000};
    // false: a refused (or unreachable) connection fails Connect() at once, for someone
    // waiting to be told; the timeout then bounds only a connection that hangs.
    bool retry_refused = true;
    bool build_model = true;
    tracefile::TraceWriter::Stream* writer = nullptr;  // receives every whole message, in order
    // Probe the program's clock (host_clock_model.h): a 16-byte probe every 100 ms
    // (ten in the first 100 ms), each answered in the stream; the capture writes its
    // own readings after each answer. Only with a program that agrees.
    bool clock_probes = true;
    // Connections besides the main one that carry the program's threads' events, when
    // the program agrees (up to protocol::kMaxLanes). Only for a worker that connects
    // (not Adopt). DefaultLanes(build_model) is what this machine's cores call for.
    uint32_t lanes = 0;
  };

  explicit Worker(Options options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Connects and performs the handshake. Blocks up to options.connect_timeout.
  Status Connect();
  // Performs the handshake on a connection a program made to us (gnomon-capture
  // --listen), which the worker then owns; `where` names the program in messages.
  Status Adopt(int fd, const std::string& where);
  // After a failed Connect() or Adopt(): the peer said nothing before the handshake's
  // time ran out or RequestStop() ended the wait (a port scanner, a stalled program).
  bool peer_was_silent() const { return peer_was_silent_; }
  // Where the stream goes, when it was not known at construction (a --listen capture
  // takes a stream once the program answered); before Start().
  void SetWriter(tracefile::TraceWriter::Stream* writer) { options_.writer = writer; }
  // Receives on a new thread until the stream ends, fails, or RequestStop().
  void Start();
  void RequestStop() { stop_requested_.store(true); }
  void Join();

  State state() const { return state_.load(); }
  bool is_finished() const;
  // Waits until the receiving thread is done or `timeout` passed; is_finished().
  bool WaitFinished(std::chrono::milliseconds timeout);
  // Why the capture ended, when it was not a clean goodbye; "" otherwise.
  std::string error() const;

  uint64_t bytes_received() const { return bytes_received_.load(std::memory_order_relaxed); }
  uint64_t messages_received() const { return messages_received_.load(std::memory_order_relaxed); }
  uint64_t zones_received() const { return zones_received_.load(std::memory_order_relaxed); }
  // Events the program said it dropped (its buffer was full; GNOMON_BUFFER_POLICY).
  uint64_t program_dropped() const { return program_dropped_.load(std::memory_order_relaxed); }
  std::string program_name() const;
  // Lanes open besides the main connection (0 when none were asked for, the program did
  // not take them, or they are still opening: they open once Start() runs).
  uint32_t lanes() const { return lanes_up_.load(); }
  // Of bytes_received(), those that came over the lanes.
  uint64_t lane_bytes_received() const { return lane_bytes_received_.load(std::memory_order_relaxed); }
  // The batches those came in (a program ships one once it holds at least 64 KiB of
  // events, or 1 ms after it drained the first of them).
  uint64_t lane_batches_received() const { return lane_batches_received_.load(std::memory_order_relaxed); }
  // The reads on the main connection that returned bytes (a program ships its events
  // there, without lanes, in batches as a lane does).
  uint64_t main_reads() const { return main_reads_.load(std::memory_order_relaxed); }

  // Runs f(const TraceModel&) with the model held for reading; safe while receiving.
  // The receiving thread never waits for a reader: what arrives meanwhile is decoded
  // once the readers are done (up to 64 MiB of it; past that it waits).
  template <typename F>
  decltype(auto) WithModel(F&& f) const {
    return model_.Read(std::forward<F>(f));
  }
  // The model itself; only once Join() returned.
  TraceModel& model() { return model_.unshared(); }

 private:
  template <typename Handler>
  void ReceiveLoop(Handler& handler);
  // Sends ServerHello on `fd` (a connected socket, owned from here) and checks the answer;
  // asks for lanes when `lanes` (the program then gives lane_token_).
  Status Handshake(int fd, const std::string& where, uint32_t lanes);
  // Opens options_.lanes lanes to the main connection's peer; none (and why) on failure.
  Status OpenLanes();
  // The lanes' thread: opens them, then receives them (one here, the others each on a
  // thread of its own).
  void RunLanes();
  class LaneBuffer;  // what a lane receives into (worker.cpp)
  template <typename Handler>
  void LaneLoop(size_t index, Handler& handler, LaneBuffer& buffer);
  // Under append_mutex_: `bytes` from connection `from` (0 main, lanes from 1) to the
  // writer, after its thread's ThreadContext when another connection wrote last. `ops`:
  // the same bytes with their zones paired ahead, for the model; runs on threads nothing
  // after them touches may be left in `later`, for StoreLaterRuns.
  struct LaterRuns;
  // (`owner`: keeps `bytes` where they are until the writer, which refers to them there
  // rather than copy them, is done with them: a lane's receive buffer.)
  void AppendFrom(int from, std::optional<uint32_t> context, const uint8_t* bytes, size_t size,
                  ZoneOps* ops = nullptr, LaterRuns* later = nullptr,
                  const std::shared_ptr<const void>& owner = nullptr);
  // Under append_mutex_: `before` (a restated thread) and `bytes` to the writer (`bytes`
  // referred to there, when they have an `owner`), and into the model when it is built
  // from the merged stream (model_sink_), `bytes` as `ops` when given.
  void Emit(const uint8_t* bytes, size_t size, ZoneOps* ops = nullptr, LaterRuns* later = nullptr,
            std::span<const uint8_t> before = {}, const std::shared_ptr<const void>& owner = nullptr);
  // Outside append_mutex_: stores the runs Emit left, beside the other lanes, and lets
  // go of the model.
  void StoreLaterRuns(LaterRuns& later);
  // Under append_mutex_: decodes what the model sink holds back (readers held the model
  // when it came); waits for them when `may_wait`.
  void DrainModelSink(bool may_wait);
  // The main connection's end: the lanes add what they can, then end (see there).
  void EndLanes();
  void Fail(State state, std::string error);

  Options options_;
  int fd_ = -1;
  std::thread thread_;
  // Building a model: blocks for its zones, faulted in ahead by a thread of their own
  // ("gnomon-prefault") so that the receiving thread's stores find their pages there.
  chunk_memory::BlockReserve reserve_;
  std::thread prefault_;
  std::atomic<State> state_{State::kIdle};
  std::atomic<bool> stop_requested_{false};
  std::atomic<uint64_t> bytes_received_{0};
  std::atomic<uint64_t> lane_bytes_received_{0};
  std::atomic<uint64_t> lane_batches_received_{0};
  std::atomic<uint64_t> main_reads_{0};
  std::atomic<uint64_t> messages_received_{0};
  std::atomic<uint64_t> zones_received_{0};
  std::atomic<uint64_t> program_dropped_{0};
  bool program_answers_probes_ = false;
  bool peer_was_silent_ = false;
  // Lanes: the token the program gave, their connections and threads, and the merge.
  std::string where_;  // the program, as messages name it
  uint32_t lane_token_ = 0;
  std::vector<int> lane_fds_;  // set once, under append_mutex_
  std::atomic<uint32_t> lanes_up_{0};
  std::thread lanes_thread_;
  std::mutex append_mutex_;
  std::condition_variable appended_;
  uint64_t main_appended_ = 0;  // bytes of the main stream gone to the writer
  bool main_final_ = false;     // the main stream adds nothing more before the lanes end
  uint32_t lanes_open_ = 0;     // lane threads still receiving
  int last_appender_ = -1;      // the connection that wrote last (0 main, lanes from 1)
  uint64_t lane_appends_ = 0;   // appends from the lanes, so far
  std::atomic<bool> lanes_stop_{false};
  std::atomic<bool> lane_failed_{false};  // a lane's stream was malformed: error() says
  // Building a model with lanes: what decodes the merged stream into it (worker.cpp).
  struct ModelSink;
  std::unique_ptr<ModelSink> model_sink_;
  std::string program_name_;
  std::mutex finished_mutex_;
  std::condition_variable finished_;
  mutable std::mutex error_mutex_;
  std::string error_;
  SharedModel model_;
};

const char* StateName(Worker::State state);

// The lanes a worker asks for when not told: each takes a thread on both sides, so only
// where there are cores to spare: none below 16 cores; from 16, 4 for a capture, and 8
// for a worker that builds a model, whose lanes also pair and store the zones (the
// measurements behind both: docs/benchmarks.md).
uint32_t DefaultLanes(bool build_model);

// Checks a program's ClientHello (`size` bytes as received from `where`): ok, or the
// one-line reason the connection cannot go on.
Status CheckClientHello(const uint8_t* bytes, size_t size, const std::string& where);

}  // namespace gnomon::server
