#include "gnomon/server/worker.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/timex.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <asio.hpp>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/handshake.h"
#include "gnomon/server/text.h"
#include "ingest/stream_decoder.h"
#include "model/trace_builder.h"

namespace gnomon::server {
namespace {

using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr size_t kReceiveBufferBytes = 4u << 20;
// Bytes received while readers held the model, kept for when they let go; past this
// the receiving thread waits for them.
constexpr size_t kMaxBacklogBytes = 64u << 20;
constexpr int kPollMs = 200;
constexpr auto kHandshakeTimeout = std::chrono::seconds(3);

// The host clock exchanges of a live connection: the program's ClockReplies, kept for
// the worker to answer with its ClockSamples; and the refusal of a ClockSample the
// program itself sent (only a capture writes one).
struct ClockExchanges {
  std::vector<protocol::ClockReply> replies;
  bool writing_samples = false;  // the worker is decoding its own ClockSamples
  const char* Refuse(uint8_t type) const {
    if (writing_samples) return nullptr;
    if (type == uint8_t(protocol::MessageType::kClockSample))
      return "the program sent a ClockSample, which only a capture writes (a program that lies about its "
             "clock)";
    if (type == uint8_t(protocol::MessageType::kCaptureClock))
      return "the program sent a CaptureClock, which only a capture writes (a program that lies about the "
             "capture's clock)";
    return nullptr;
  }
};

// Counts what a capture needs for its progress line without building a model.
struct CountingHandler : ClockExchanges {
  uint64_t zones = 0;
  uint64_t dropped = 0;
  bool ended = false;
  std::string program_name;
  std::optional<uint32_t> context;  // the thread of the last ThreadContext
  // The packed field copied first: the optional would bind a reference to it.
  void OnThreadContext(const protocol::ThreadContext& m) { context = uint32_t{m.thread_id}; }
  void OnZoneBegin(const protocol::ZoneBegin&) { ++zones; }
  void OnLeafZone(uint32_t, uint64_t, uint64_t) { ++zones; }  // a begin and its end: one step
  void OnAppInfo(const protocol::AppInfo&, const protocol::AppInfoTail& t) {
    AssignUtf8(program_name, t.name);
  }
  void OnEndOfStream(const protocol::EndOfStream&) { ended = true; }
  void OnDroppedEvents(const protocol::DroppedEvents& m) {
    dropped = std::max(dropped, uint64_t{m.total_events});
  }
  void OnClockReply(const protocol::ClockReply& m) { replies.push_back(m); }
};

// A lane carries threads' events: what only the main connection says is refused there.
struct LaneHandler : CountingHandler {
  const char* Refuse(uint8_t type) const {
    switch (protocol::MessageType(type)) {
      case protocol::MessageType::kAppInfo:
      case protocol::MessageType::kClockReply:
      case protocol::MessageType::kEndOfStream:
        return "a lane carried a message only the main connection carries (AppInfo, ClockReply or "
               "EndOfStream)";
      default:
        return CountingHandler::Refuse(type);
    }
  }
};

// Pieces of a lane that wait for their turn in the merge, or take it, at most (TurnTaker):
// one is as fast as four on the 16-core host (docs/benchmarks.md), and each holds its
// paired zones.
constexpr size_t kPiecesInFlight = 1;

// A lane of a worker that builds a model: pairs the zones ahead of the builder, on the
// lane's thread (ZoneOps), and keeps the other messages' bytes. Into a ZoneOps of its
// own while those of the pieces in flight wait for their turn (Next).
struct ModelLaneHandler : LaneHandler {
  ModelLaneHandler() {
    for (ZoneOps& o : ring) o.UseKnownCallstacks(&known);
  }
  ModelLaneHandler(const ModelLaneHandler&) = delete;  // `ops` points into it
  ModelLaneHandler& operator=(const ModelLaneHandler&) = delete;
  std::array<ZoneOps, kPiecesInFlight + 1> ring;
  KnownCallstacks known;  // shared by the ring: each learns its piece's stacks at Clear()
  size_t next = 0;
  ZoneOps* ops = &ring[0];
  void Next() { ops = &ring[++next % ring.size()]; }
  // The zones' messages, and the others' bytes, to the current piece's ops (which count
  // the zones: zones stays 0).
  void OnLeafZone(uint32_t location, uint64_t begin, uint64_t end) { ops->OnLeafZone(location, begin, end); }
  void OnZoneBegin(const protocol::ZoneBegin& m) { ops->OnZoneBegin(m); }
  void OnZoneEnd(const protocol::ZoneEnd& m) { ops->OnZoneEnd(m); }
  void OnMessageBytes(const uint8_t* p, size_t size) { ops->OnMessageBytes(p, size); }
  void OnCallstack(const protocol::Callstack& m, const protocol::CallstackTail& t) { ops->OnCallstack(m, t); }
};

// TraceBuilder with the same progress view as CountingHandler.
struct BuildingHandler : TraceBuilder, ClockExchanges {
  explicit BuildingHandler(TraceModel& m) : TraceBuilder(m), model(m) {}
  void OnClockReply(const protocol::ClockReply& m) {
    TraceBuilder::OnClockReply(m);
    replies.push_back(m);
  }
  TraceModel& model;
};

int64_t MonotonicRawNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// This capture run, as its CaptureClock readings name it: a random id, and the boot id
// of the kernel whose CLOCK_REALTIME it reads (the host's name when there is none).
struct CaptureIdentity {
  uint64_t id = 0;
  std::string domain;
};
const CaptureIdentity& ThisCapture() {
  // Never destroyed: a worker's thread may still read it while the process exits (a
  // worker held by a static is joined after the statics made since are gone).
  static const CaptureIdentity& identity = *new CaptureIdentity([] {
    CaptureIdentity made;
    // Random where the kernel gives randomness; else the time and pid, still unlikely to
    // meet another capture's.
    if (getrandom(&made.id, sizeof(made.id), 0) != ssize_t(sizeof(made.id))) {
      timespec ts{};
      clock_gettime(CLOCK_REALTIME, &ts);
      made.id = (uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec)) ^ (uint64_t(getpid()) << 40);
    }
    if (made.id == 0) made.id = 1;
    std::ifstream boot_id("/proc/sys/kernel/random/boot_id");
    if (!std::getline(boot_id, made.domain) || made.domain.empty()) {
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      made.domain = std::string("host:") + host;
    }
    return made;
  }());
  return identity;
}

// Appends the capture's reading of the common reference (protocol: CaptureClock):
// CLOCK_REALTIME between two readings of its own clock, the tightest of five, with the
// error the kernel states for it.
void AppendCaptureClock(std::vector<uint8_t>& out) {
  protocol::CaptureClock reading{};
  reading.capture_id = ThisCapture().id;
  reading.reference = 1;
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const int64_t before = MonotonicRawNs();
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    const int64_t after = MonotonicRawNs();
    if (uint64_t(after - before) >= best) continue;
    best = uint64_t(after - before);
    reading.before_ns = uint64_t(before);
    reading.after_ns = uint64_t(after);
    reading.reference_ns = uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
  }
  // The kernel's stated error, but none where the clock is not synchronised: its maxerror
  // then stops growing at 16 s while the clock may be off by any amount.
  timex state{};  // modes 0: only read
  const int clock_state = adjtimex(&state);
  reading.reference_error_ns =
      clock_state < 0 || clock_state == TIME_ERROR || (state.status & STA_UNSYNC) != 0
          ? UINT64_MAX
          : uint64_t(std::max(0L, state.maxerror)) * 1000;
  const std::string_view domain = ThisCapture().domain;
  protocol::AppendMessage(out, reading, {.domain = domain.substr(0, protocol::kMaxStringBytes)});
}

// The probes in flight: when each left, by sequence (a ring: a reply later than 255
// newer probes is no use).
class ProbeLog {
 public:
  void Sent(uint32_t sequence, int64_t sent_ns) { slots_[sequence % slots_.size()] = {sequence, sent_ns}; }
  // When the probe left, once; -1 when unknown (never sent, answered already, too old).
  int64_t Take(uint32_t sequence) {
    Slot& slot = slots_[sequence % slots_.size()];
    if (slot.sequence != sequence || slot.sent_ns < 0) return -1;
    const int64_t sent = slot.sent_ns;
    slot.sent_ns = -1;
    return sent;
  }

 private:
  struct Slot {
    uint32_t sequence = 0;
    int64_t sent_ns = -1;
  };
  std::array<Slot, 256> slots_{};
};

uint64_t ZonesSoFar(const CountingHandler& h) { return h.zones; }
uint64_t ZonesSoFar(const BuildingHandler& h) { return h.model.zone_count; }
uint64_t DroppedSoFar(const CountingHandler& h) { return h.dropped; }
uint64_t DroppedSoFar(const BuildingHandler& h) { return h.model.diagnostics.client_dropped_events; }
bool Ended(const CountingHandler& h) { return h.ended; }
bool Ended(const BuildingHandler& h) { return h.model.diagnostics.ended_cleanly; }
const std::string& NameOf(const CountingHandler& h) { return h.program_name; }
const std::string& NameOf(const BuildingHandler& h) { return h.model.program.name; }
std::optional<uint32_t> ContextOf(const CountingHandler& h) { return h.context; }
std::optional<uint32_t> ContextOf(const BuildingHandler&) { return std::nullopt; }  // never with lanes

// Waits up to `timeout` for fd to be ready for `events`; false on timeout or error.
bool WaitFor(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd pfd{fd, events, 0};
  return poll(&pfd, 1, int(timeout.count())) == 1 && (pfd.revents & events) != 0;
}

}  // namespace

// A lane's runs of zones on threads nothing after them in its turn touches, stored once
// the turn is over (Worker::Emit).
struct Worker::LaterRuns {
  struct Held {
    ThreadTimeline* thread;
    std::vector<TraceBuilder::OpenZone>* open;
    ZoneOps::Run run;
  };
  std::vector<Held> runs;
};

// Building a model with lanes: the merged stream, decoded into the model as it goes to
// the writer. What comes while readers hold the model waits here, in order, for them to
// let go (up to kMaxBacklogBytes; past that the adding thread waits).
struct Worker::ModelSink {
  // The builder, and a goodbye that tidies every thread once no lane is storing.
  struct Handler : BuildingHandler {
    Handler(TraceModel& model, ModelSink& sink) : BuildingHandler(model), sink(sink) {}
    void OnEndOfStream(const protocol::EndOfStream& m) {
      sink.WaitStored(nullptr);
      BuildingHandler::OnEndOfStream(m);
    }
    ModelSink& sink;
  };
  explicit ModelSink(TraceModel& model) : handler(model, *this) {
    handler.writing_samples = true;  // the connections' handlers refused what the program may not send
  }
  // The bytes are whole messages their connection's handler decoded already.
  void Decode(const uint8_t* bytes, size_t size) {
    DecodeMessages(bytes, size, handler);
    handler.replies.clear();  // the main connection's handler answers them
  }
  void DecodeHeld() {
    if (!held.empty()) Decode(held.data(), held.size());
    held.clear();
  }
  Handler handler;  // written only while holding the model (alone, or joined in a turn)
  std::vector<uint8_t> held;
  // Threads whose runs lanes are storing now (under store_mutex), which a turn waits for
  // before it takes one (the thread gate); a stream that keeps each thread on its lane
  // never waits.
  std::mutex store_mutex;
  std::condition_variable stored;
  std::unordered_multiset<const ThreadTimeline*> storing;  // a batch may hold thousands
  void WaitStored(const ThreadTimeline* thread) {          // nullptr: every thread
    std::unique_lock lock(store_mutex);
    stored.wait(lock, [&] { return thread == nullptr ? storing.empty() : !storing.contains(thread); });
  }
};

uint32_t DefaultLanes(bool build_model) {
  const unsigned cores = tracefile::AllowedCores();
  if (cores < 16) return 0;
  return build_model ? 8 : 4;
}

const char* StateName(Worker::State state) {
  switch (state) {
    case Worker::State::kIdle:
      return "idle";
    case Worker::State::kReceiving:
      return "receiving";
    case Worker::State::kEnded:
      return "ended";
    case Worker::State::kDisconnected:
      return "disconnected";
    case Worker::State::kStopped:
      return "stopped";
    case Worker::State::kFailed:
      return "failed";
  }
  return "unknown";
}

Status CheckClientHello(const uint8_t* bytes, size_t size, const std::string& where) {
  const auto hello = protocol::ParseClientHello(bytes, size);
  if (!hello) return Status::Error(where + " answered with something other than a Gnomon handshake");
  if (hello->status == protocol::HandshakeStatus::kVersionMismatch ||
      hello->version != protocol::kProtocolVersion) {
    return Status::Error("protocol version mismatch: the program speaks version " +
                         std::to_string(hello->version) + ", this server speaks " +
                         std::to_string(protocol::kProtocolVersion) +
                         "; use the same Gnomon release on both sides");
  }
  if (hello->status == protocol::HandshakeStatus::kBusy) {
    return Status::Error("the program at " + where +
                         " already has a server connected (another capture or viewer); stop that one first");
  }
  if (hello->status != protocol::HandshakeStatus::kOk) {
    return Status::Error("the program refused the connection (status " +
                         std::to_string(uint16_t(hello->status)) + ")");
  }
  if ((hello->capabilities & ~protocol::kKnownCapabilities) != 0) {
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(hello->capabilities));
    return Status::Error(std::string("the program uses features this server does not know (capabilities 0x") +
                         hex + "); use a newer Gnomon");
  }
  return Status::Ok();
}

Worker::Worker(Options options) : options_(std::move(options)) {}

Worker::~Worker() {
  RequestStop();
  Join();
  if (fd_ >= 0) ::close(fd_);
  for (const int fd : lane_fds_) ::close(fd);
}

bool Worker::is_finished() const {
  const State s = state_.load();
  return s != State::kIdle && s != State::kReceiving;
}

bool Worker::WaitFinished(std::chrono::milliseconds timeout) {
  std::unique_lock lock(finished_mutex_);
  return finished_.wait_for(lock, timeout, [this] { return is_finished(); });
}

std::string Worker::error() const {
  std::lock_guard lock(error_mutex_);
  return error_;
}

std::string Worker::program_name() const {
  std::lock_guard lock(error_mutex_);
  return program_name_;
}

void Worker::Fail(State state, std::string error) {
  std::lock_guard lock(error_mutex_);
  if (is_finished()) return;  // the first ending stands (a lane's and the main thread's may race)
  error_ = std::move(error);
  state_.store(state);
}

// Runs `io` until `done()` or `until`, a slice at a time, so that `stop` (RequestStop(),
// a signal handler's Ctrl-C) ends the wait.
template <typename Done>
void RunUntil(asio::io_context& io, const std::atomic<bool>& stop, Done done, Clock::time_point until) {
  while (!done() && !stop.load() && Clock::now() < until) {
    io.restart();
    io.run_for(std::min<Clock::duration>(std::chrono::milliseconds(100), until - Clock::now()));
  }
}

Status Worker::Connect() {
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  asio::io_context io;
  tcp::socket socket(io);
  // No wait is longer than the longest duration a setting can hold (about 31 years).
  const auto timeout =
      std::min<std::chrono::milliseconds>(options_.connect_timeout, std::chrono::seconds(1'000'000'000));
  const auto deadline = Clock::now() + timeout;
  auto run_until = [&](auto done, Clock::time_point until) { RunUntil(io, stop_requested_, done, until); };
  asio::error_code last_error;
  bool connected = false;
  while (!connected) {
    if (stop_requested_.load()) return Status::Error("stopped before " + where + " answered");
    tcp::resolver resolver(io);
    auto endpoints = resolver.resolve(options_.host, std::to_string(options_.port), last_error);
    if (last_error) {
      return Status::Error("cannot resolve '" + options_.host + "': " + last_error.message());
    }
    asio::error_code result = asio::error::would_block;
    asio::async_connect(socket, endpoints,
                        [&](const asio::error_code& ec, const tcp::endpoint&) { result = ec; });
    run_until([&] { return result != asio::error::would_block; },
              std::max(deadline, Clock::now() + std::chrono::milliseconds(100)));
    if (result == asio::error::would_block) {
      socket.close();
      io.restart();
      io.poll();  // lets the cancelled connect finish before `result` goes out of scope
      if (stop_requested_.load()) return Status::Error("stopped before " + where + " answered");
      return Status::Error("connecting to " + where + " timed out; is the address right and reachable?");
    }
    if (!result) {
      connected = true;
      break;
    }
    last_error = result;
    socket.close();
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!connected) {
    return Status::Error("cannot connect to " + where + ": " + last_error.message() +
                         "; is the program running with Gnomon, and listening on this port "
                         "(GNOMON_PORT)?");
  }
  asio::error_code released;
  return Handshake(socket.release(released), where, std::min(options_.lanes, protocol::kMaxLanes));
}

Status Worker::Adopt(int fd, const std::string& where) { return Handshake(fd, where, 0); }

Status Worker::OpenLanes() {
  sockaddr_storage peer{};
  socklen_t length = sizeof(peer);
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&peer), &length) != 0)
    return Status::Error(std::string("cannot open lanes: ") + std::strerror(errno));
  protocol::ServerHello hello{};
  std::memcpy(hello.magic, protocol::kServerMagic, sizeof(hello.magic));
  hello.version = protocol::kProtocolVersion;
  hello.flags = protocol::kServerLaneHello;
  hello.reserved = lane_token_;
  std::vector<int> opened;
  uint32_t lane = 1;
  auto fail = [&](const std::string& why) {
    for (const int fd : opened) ::close(fd);
    return Status::Error("cannot open lane " + std::to_string(lane) + " to " + where_ + ": " + why);
  };
  // All of them within the handshake's time, a slice at a time so that a stop ends it.
  const auto deadline = Clock::now() + kHandshakeTimeout;
  auto wait_for = [&](int fd, short events) {
    while (!lanes_stop_.load() && !stop_requested_.load() && Clock::now() < deadline) {
      if (WaitFor(fd, events, std::chrono::milliseconds(100))) return true;
    }
    return false;
  };
  for (; lane <= std::min(options_.lanes, protocol::kMaxLanes); ++lane) {
    const int fd = socket(peer.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return fail(std::strerror(errno));
    opened.push_back(fd);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&peer), length) != 0 && errno != EINPROGRESS)
      return fail(std::strerror(errno));
    int error = 0;
    socklen_t error_length = sizeof(error);
    if (!wait_for(fd, POLLOUT) || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_length) != 0 ||
        error != 0)
      return fail(error != 0 ? std::strerror(error) : "no answer");
    if (send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) != ssize_t(sizeof(hello)))
      return fail("the hello did not go");
    uint8_t reply[sizeof(protocol::ClientHello)];
    size_t got = 0;
    while (got < sizeof(reply) && wait_for(fd, POLLIN)) {
      const ssize_t n = recv(fd, reply + got, sizeof(reply) - got, 0);
      if (n <= 0) break;
      got += size_t(n);
    }
    const auto answer = protocol::ParseClientHello(reply, got);
    if (answer && answer->status == protocol::HandshakeStatus::kBusy)
      return fail("the program refused it (it gave up waiting for its lanes)");
    if (Status s = CheckClientHello(reply, got, where_); !s.ok()) return fail(s.message());
    if ((answer->capabilities & protocol::kCapLanes) == 0)
      return fail("the program did not take it as a lane");
  }
  for (const int fd : opened) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::lock_guard lock(append_mutex_);
  lane_fds_ = std::move(opened);
  lanes_up_.store(uint32_t(lane_fds_.size()));
  return Status::Ok();
}

Status Worker::Handshake(int fd, const std::string& where, uint32_t lanes) {
  where_ = where;
  asio::io_context io;
  tcp::socket socket(io);
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  asio::error_code error;
  if (fd >= 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
    socket.assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, error);
  } else {
    error = asio::error_code(errno, asio::system_category());
  }
  if (error) {
    if (fd >= 0) ::close(fd);
    return Status::Error("cannot take the connection to " + where + ": " + error.message());
  }
  auto run_until = [&](auto done, Clock::time_point until) { RunUntil(io, stop_requested_, done, until); };
  protocol::ServerHello hello{};
  std::memcpy(hello.magic, protocol::kServerMagic, sizeof(hello.magic));
  hello.version = protocol::kProtocolVersion;
  hello.flags = options_.clock_probes ? protocol::kServerSendsClockProbes : 0;
  if (lanes > 0) {
    hello.flags |= protocol::kServerWantsLanes;
    hello.reserved = lanes;
  }
  uint8_t reply[sizeof(protocol::ClientHello)];
  asio::error_code write_error = asio::error::would_block;
  asio::error_code read_error = asio::error::would_block;
  asio::async_write(socket, asio::buffer(&hello, sizeof(hello)),
                    [&](const asio::error_code& ec, size_t) { write_error = ec; });
  asio::async_read(socket, asio::buffer(reply), [&](const asio::error_code& ec, size_t) { read_error = ec; });
  run_until([&] { return read_error != asio::error::would_block; }, Clock::now() + kHandshakeTimeout);
  if (read_error == asio::error::would_block) {
    peer_was_silent_ = true;
    socket.close();
    io.restart();
    io.poll();  // the cancelled operations finish before their results go out of scope
    if (stop_requested_.load()) return Status::Error("stopped before " + where + " answered");
    return Status::Error(where + " accepted the connection but did not answer the handshake within " +
                         std::to_string(kHandshakeTimeout.count()) +
                         " s: the program may be stalled, or it is not a Gnomon program");
  }
  if (write_error || read_error) {
    return Status::Error(where + " closed the connection during the handshake (" +
                         (read_error ? read_error : write_error).message() +
                         "); it is not a Gnomon program, or it refused us");
  }
  if (Status hello_status = CheckClientHello(reply, sizeof(reply), where); !hello_status.ok())
    return hello_status;
  const auto answer = protocol::ParseClientHello(reply, sizeof(reply));
  program_answers_probes_ = options_.clock_probes && (answer->capabilities & protocol::kCapClockReplies) != 0;
  lane_token_ = lanes > 0 && (answer->capabilities & protocol::kCapLanes) != 0 ? answer->reserved : 0;
  fd_ = ::dup(socket.native_handle());
  if (fd_ < 0) return Status::Error(std::string("cannot keep the connection: ") + std::strerror(errno));
  state_.store(State::kReceiving);
  return Status::Ok();
}

void Worker::Start() {
  if (options_.build_model && lane_token_ != 0) {
    model_sink_ = std::make_unique<ModelSink>(model_.unshared());
    model_sink_->handler.SetThreadGate(
        [sink = model_sink_.get()](const ThreadTimeline& t) { sink->WaitStored(&t); });
  }
  if (lane_token_ != 0) {
    // Opened while the main connection is received: a program with much buffered is
    // sending it, and answers the lanes' hellos only between its sends.
    lanes_open_ = std::min(options_.lanes, protocol::kMaxLanes);
    lanes_thread_ = std::thread([this] { RunLanes(); });
  }
  if (options_.build_model) {
    // A few blocks ahead (16 MiB): a quiet program's model holds no more than that.
    prefault_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "gnomon-prefault");
      while (!is_finished()) {
        if (!reserve_.AddOne(8)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "gnomon-receive");
    const chunk_memory::UseBlockReserve use_reserve(reserve_);
    if (options_.build_model && !model_sink_) {
      BuildingHandler handler(model_.unshared());  // written only inside model_.Write
      ReceiveLoop(handler);
    } else {
      CountingHandler handler;
      ReceiveLoop(handler);
    }
    EndLanes();
    if (model_sink_) {
      std::lock_guard lock(append_mutex_);
      DrainModelSink(true);
    }
    // Its last block goes to the file now, and its buffer back, not when the whole
    // capture ends: a capture of programs that come and go holds only the live ones'.
    if (options_.writer != nullptr) options_.writer->Close();
    std::lock_guard lock(finished_mutex_);
    finished_.notify_all();
  });
}

void Worker::Join() {
  if (thread_.joinable()) thread_.join();  // it ended the lanes
  if (prefault_.joinable()) prefault_.join();
  reserve_.Clear();
  if (fd_ >= 0 && is_finished()) {  // the connection is done with: a long capture keeps no descriptor
    ::close(fd_);
    fd_ = -1;
  }
}

namespace {

// Bytes received and not yet decoded. Not zero-filled: a quiet program's connection
// touches only the pages its bytes reach, so a capture of many programs, a buffer each,
// holds what they send rather than 4 MiB apiece.
class ReceiveBuffer {
 public:
  explicit ReceiveBuffer(size_t size) : data_(new uint8_t[size]), size_(size) {}
  uint8_t* data() { return data_.get(); }
  size_t size() const { return size_; }
  // Grows to `size`, keeping the first `keep` bytes.
  void Grow(size_t size, size_t keep) {
    std::unique_ptr<uint8_t[]> grown(new uint8_t[size]);
    std::memcpy(grown.get(), data_.get(), keep);
    data_ = std::move(grown);
    size_ = size;
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_;
};

// The lanes' receive buffers (4 MiB, not zero-filled), given back by whoever lets go of
// one last, a lane or a compressing thread done with what the writer kept of it: the
// next lane to want one takes it rather than fault in fresh pages. Kept until a lane
// goes quiet (Trim).
class SlabPool : public std::enable_shared_from_this<SlabPool> {
 public:
  std::shared_ptr<uint8_t> Take(size_t size) {
    std::unique_ptr<uint8_t[]> bytes;
    if (size == kReceiveBufferBytes) {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        bytes = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (bytes == nullptr) bytes.reset(new uint8_t[size]);
    return std::shared_ptr<uint8_t>(bytes.release(),
                                    [pool = shared_from_this(), size](uint8_t* p) { pool->Give(p, size); });
  }
  // Frees what is kept for later: the program went quiet.
  void Trim() {
    std::vector<std::unique_ptr<uint8_t[]>> freed;
    std::lock_guard lock(mutex_);
    freed.swap(free_);
  }

 private:
  // As many as the blocks a writer holds can keep, about: 128 MiB.
  static constexpr size_t kMaxFree = 32;
  void Give(uint8_t* p, size_t size) {
    std::unique_ptr<uint8_t[]> bytes(p);
    if (size != kReceiveBufferBytes) return;
    std::lock_guard lock(mutex_);
    if (free_.size() < kMaxFree) free_.push_back(std::move(bytes));
  }
  std::mutex mutex_;
  std::vector<std::unique_ptr<uint8_t[]>> free_;
};

// A lane's piece of decoded bytes, for its turn in the merge.
struct LanePiece {
  const uint8_t* bytes = nullptr;
  size_t size = 0;
  uint64_t after = 0;                 // what of the main stream it needs first
  std::optional<uint32_t> context;    // the lane's thread before it
  ZoneOps* ops = nullptr;             // its zones, paired
  std::shared_ptr<const void> owner;  // keeps `bytes` where they are
  uint64_t zones = 0;                 // received in it, counted once it has its place
  uint64_t messages = 0;
};

// Takes a model-building lane's turns in the merge, and stores their runs, on a thread
// of its own ("gnomon-store"), in the order handed: the lane receives and pairs the next
// pieces meanwhile, up to kPiecesInFlight ahead. The two halves of a lane's work then
// overlap, and on a host whose cores are all busy the lane's work gets two threads'
// share of them rather than one.
class TurnTaker {
 public:
  // turn(piece) takes the piece's turn; false: the piece has no place, and no piece after
  // it is taken.
  TurnTaker(chunk_memory::BlockReserve& reserve, std::function<bool(LanePiece&)> turn)
      : turn_(std::move(turn)), thread_([this, &reserve] { Run(reserve); }) {}
  ~TurnTaker() { Finish(); }
  TurnTaker(const TurnTaker&) = delete;
  TurnTaker& operator=(const TurnTaker&) = delete;

  // Hands a piece, once fewer than kPiecesInFlight are; false when one before had no
  // place (this one is not taken).
  bool Hand(LanePiece piece) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return pieces_.size() < kPiecesInFlight; });
    if (refused_.load()) return false;
    pieces_.push_back(std::move(piece));
    changed_.notify_all();
    return true;
  }
  // A piece had no place: the lane stops.
  bool refused() const { return refused_.load(); }
  // Waits for every piece handed to take its turn, and ends the thread.
  void Finish() {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return pieces_.empty(); });
      stop_ = true;
      changed_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Run(chunk_memory::BlockReserve& reserve) {
    pthread_setname_np(pthread_self(), "gnomon-store");
    const chunk_memory::UseBlockReserve use_reserve(reserve);  // the runs' zones are stored here
    std::unique_lock lock(mutex_);
    while (true) {
      changed_.wait(lock, [this] { return !pieces_.empty() || stop_; });
      if (pieces_.empty()) return;
      LanePiece& piece = pieces_.front();  // stays in flight, its ZoneOps untouched, until done
      const bool after_refused = refused_.load();
      lock.unlock();
      // None after a piece with no place takes a turn: the lane's stream has a hole there.
      const bool placed = !after_refused && turn_(piece);
      lock.lock();
      if (!placed) refused_.store(true);
      pieces_.pop_front();  // its buffer may go back to the pool
      changed_.notify_all();
    }
  }
  std::function<bool(LanePiece&)> turn_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<LanePiece> pieces_;  // handed, the first taking its turn
  bool stop_ = false;
  std::atomic<bool> refused_{false};  // a piece had no place: none after it takes a turn
  std::thread thread_;                // last: starts once the rest is made
};

}  // namespace

// A lane's receive buffer. The writer reads the bytes a lane gives it where they were
// received (tracefile::TraceWriter::Stream::Refer), so nothing it shared moves or is received
// over: the lane receives after it, and the bytes left to decode move to a fresh buffer
// once room runs low.
class Worker::LaneBuffer {
 public:
  explicit LaneBuffer(std::shared_ptr<SlabPool> pool)
      : pool_(std::move(pool)), slab_(pool_->Take(kReceiveBufferBytes)), size_(kReceiveBufferBytes) {}
  uint8_t* data() const { return slab_.get(); }
  size_t size() const { return size_; }
  // The lane is idle: the pool lets go of the buffers it keeps.
  void Idle() { pool_->Trim(); }
  // What keeps the buffer's bytes where they are, for the writer.
  std::shared_ptr<const void> Share() {
    shared_ = true;
    return slab_;
  }
  // Room to receive after [begin, filled), the bytes left to decode, which move to the
  // front (of a fresh buffer when this one is shared or too small: a bigger one for a
  // message bigger than a buffer). Returns where they begin now.
  size_t MakeRoom(size_t begin, size_t& filled) {
    const size_t rest = filled - begin;
    if (!shared_) {
      std::memmove(slab_.get(), slab_.get() + begin, rest);
      begin = 0;
      filled = rest;
    }
    if (size_ - filled >= kReceiveBufferBytes / 4) return begin;
    const size_t size = rest + kReceiveBufferBytes / 4 <= kReceiveBufferBytes ? kReceiveBufferBytes
                                                                              : rest + kReceiveBufferBytes;
    std::shared_ptr<uint8_t> fresh = pool_->Take(size);
    std::memcpy(fresh.get(), slab_.get() + begin, rest);
    slab_ = std::move(fresh);
    size_ = size;
    shared_ = false;
    filled = rest;
    return 0;
  }

 private:
  std::shared_ptr<SlabPool> pool_;
  std::shared_ptr<uint8_t> slab_;
  size_t size_;
  bool shared_ = false;
};

template <typename Handler>
void Worker::ReceiveLoop(Handler& handler) {
  (void)ThisCapture();  // its first call reads /proc: here, not under the model's lock
  ReceiveBuffer buffer(kReceiveBufferBytes);
  size_t filled = 0;
  size_t undecoded = 0;        // bytes at the end of buffer[0, filled) not yet offered to the decoder
  uint64_t stream_offset = 0;  // of buffer[0] in the stream
  // Clock probes: when the next leaves, and the capture's readings of those in flight.
  ProbeLog probes;
  uint32_t probe_sequence = 0;
  auto next_probe = Clock::now();
  int64_t received_ns = 0;       // when the latest bytes arrived: no reply came later
  uint64_t zones_counted = 0;    // of ZonesSoFar(handler), added to zones_received_
  bool end_placed = false;       // the goodbye went to the writer (after the lanes)
  std::vector<uint8_t> samples;  // the ClockSamples for the replies just decoded, and CaptureClocks
  auto next_reference = Clock::now();
  auto send_probe = [&] {
    protocol::ClockProbe probe{};
    std::memcpy(probe.magic, protocol::kClockProbeMagic, sizeof(probe.magic));
    probe.sequence = ++probe_sequence;
    const int64_t sent_ns = MonotonicRawNs();
    const ssize_t n = send(fd_, &probe, sizeof(probe), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == ssize_t(sizeof(probe))) {
      probes.Sent(probe.sequence, sent_ns);
    } else if (n > 0) {
      program_answers_probes_ = false;  // a probe cut in two: the program waits for the rest forever
    }
    // From now, not from when it was due: after a stall, one probe, not a burst.
    next_probe = std::max(next_probe, Clock::now()) +
                 (probe_sequence < 10 ? std::chrono::milliseconds(10) : std::chrono::milliseconds(100));
  };
  // Decodes, then answers each ClockReply with the capture's ClockSample (decoded too,
  // and written after the bytes that held the reply).
  auto decode_with_samples = [&] {
    DecodeResult result = DecodeMessages(buffer.data(), filled, handler);
    samples.clear();
    for (const protocol::ClockReply& reply : handler.replies) {
      const int64_t sent_ns = probes.Take(reply.sequence);
      if (sent_ns < 0) continue;
      protocol::AppendMessage(samples, protocol::ClockSample{.sequence = reply.sequence,
                                                             .probe_sent_ns = uint64_t(sent_ns),
                                                             .reply_received_ns = uint64_t(received_ns)});
    }
    handler.replies.clear();
    if (program_answers_probes_ && Clock::now() >= next_reference) {
      AppendCaptureClock(samples);
      next_reference = Clock::now() + std::chrono::seconds(1);
    }
    if (!samples.empty()) {
      handler.writing_samples = true;
      DecodeMessages(samples.data(), samples.size(), handler);
      handler.writing_samples = false;
    }
    return result;
  };
  // Decodes what the buffer holds, unless readers hold the model and `may_wait` is
  // false: then the bytes wait for the next turn. False once the stream failed.
  auto decode = [&](bool may_wait) {
    const std::optional<uint32_t> context = ContextOf(handler);  // the thread the bytes start on
    DecodeResult result;
    if constexpr (std::is_same_v<Handler, BuildingHandler>) {
      auto build = [&](TraceModel&) { result = decode_with_samples(); };
      if (!model_.TryWrite(build)) {
        if (!may_wait && filled < kMaxBacklogBytes) return true;
        model_.Write(build);
      }
    } else {
      result = decode_with_samples();
    }
    undecoded = 0;
    // With lanes the goodbye waits for them: what they still hold goes before it.
    size_t before_end = result.consumed;
    if (lane_token_ != 0 && !end_placed && Ended(handler)) {
      protocol::WalkMessages(buffer.data(), result.consumed, [&](const uint8_t* p, size_t) {
        if (p[0] != uint8_t(protocol::MessageType::kEndOfStream)) return true;
        before_end = size_t(p - buffer.data());
        return false;
      });
      end_placed = true;
    }
    {
      std::unique_lock lock(append_mutex_);
      AppendFrom(0, context, buffer.data(), before_end);
      if (!samples.empty()) Emit(samples.data(), samples.size());
      main_appended_ = stream_offset + before_end;
      if (before_end < result.consumed) {
        main_final_ = true;
        appended_.notify_all();
        // The program closed its lanes before its goodbye: they end once they have added
        // what they hold. One that adds nothing for 5 s is not waited for.
        uint64_t seen = lane_appends_;
        auto progress = Clock::now();
        while (lanes_open_ > 0 && !stop_requested_.load() && !lane_failed_.load() &&
               Clock::now() - progress < std::chrono::seconds(5)) {
          appended_.wait_for(lock, std::chrono::milliseconds(100));
          if (lane_appends_ != seen) {
            seen = lane_appends_;
            progress = Clock::now();
          }
        }
        AppendFrom(0, context, buffer.data() + before_end, result.consumed - before_end);
        main_appended_ = stream_offset + result.consumed;
      }
      appended_.notify_all();
    }
    messages_received_.fetch_add(result.messages, std::memory_order_relaxed);
    zones_received_.fetch_add(ZonesSoFar(handler) - zones_counted, std::memory_order_relaxed);
    zones_counted = ZonesSoFar(handler);
    program_dropped_.store(DroppedSoFar(handler), std::memory_order_relaxed);
    if (!NameOf(handler).empty()) {
      std::lock_guard lock(error_mutex_);
      if (program_name_.empty()) program_name_ = NameOf(handler);
    }
    if (result.failed) {
      Fail(State::kFailed, "malformed stream at byte " + std::to_string(stream_offset + result.consumed) +
                               ": " + result.error + "; closed the connection, kept everything before it");
      return false;
    }
    std::memmove(buffer.data(), buffer.data() + result.consumed, filled - result.consumed);
    filled -= result.consumed;
    stream_offset += result.consumed;
    return true;
  };
  while (true) {
    if (lane_failed_.load()) break;  // it said why
    if (stop_requested_.load()) {
      if (undecoded > 0) decode(true);
      Fail(State::kStopped, "");
      break;
    }
    int timeout_ms = kPollMs;
    if (program_answers_probes_ && !Ended(handler)) {
      if (Clock::now() >= next_probe) send_probe();
      const auto wait =
          std::chrono::duration_cast<std::chrono::milliseconds>(next_probe - Clock::now()).count();
      timeout_ms = int(std::clamp<int64_t>(wait + 1, 0, kPollMs));
    }
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = poll(&pfd, 1, timeout_ms);
    if (ready == 0) {
      if (undecoded > 0 && !decode(false)) break;
      if (model_sink_) {
        std::lock_guard lock(append_mutex_);
        DrainModelSink(false);
      }
      if (options_.writer != nullptr) options_.writer->FlushIfOld();
      continue;
    }
    if (buffer.size() - filled < kReceiveBufferBytes / 4)
      buffer.Grow(buffer.size() + kReceiveBufferBytes, filled);
    const ssize_t n = ready < 0 ? -1 : recv(fd_, buffer.data() + filled, buffer.size() - filled, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      if (lane_failed_.load()) break;  // it closed this connection, and said why
      if (undecoded > 0 && !decode(true)) break;
      if (Ended(handler)) {
        Fail(State::kEnded, "");
      } else if (filled > 0) {
        Fail(State::kDisconnected, "the connection closed mid-message at stream byte " +
                                       std::to_string(stream_offset) + ": " +
                                       DescribeTruncation(buffer.data(), filled));
      } else {
        Fail(State::kDisconnected,
             // A program that dies with clock probes unread resets the connection.
             n == 0 || errno == ECONNRESET
                 ? "the program closed the connection without saying goodbye (killed or crashed?)"
                 : std::string("connection lost: ") + std::strerror(errno));
      }
      break;
    }
    received_ns = MonotonicRawNs();
    filled += static_cast<size_t>(n);
    undecoded += static_cast<size_t>(n);
    bytes_received_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    main_reads_.fetch_add(1, std::memory_order_relaxed);
    if (!decode(false)) break;
    if (undecoded == 0 && Ended(handler) && filled == 0) {
      Fail(State::kEnded, "");
      break;
    }
  }
  ::shutdown(fd_, SHUT_RDWR);
}

void Worker::AppendFrom(int from, std::optional<uint32_t> context, const uint8_t* bytes, size_t size,
                        ZoneOps* ops, LaterRuns* later, const std::shared_ptr<const void>& owner) {
  if ((options_.writer == nullptr && !model_sink_) || size == 0) return;
  uint8_t restate[sizeof(protocol::ThreadContext)];
  size_t restate_size = 0;
  if (last_appender_ != from && last_appender_ >= 0 && context) {
    protocol::StoreLe(restate, protocol::ThreadContext{.thread_id = *context});
    restate_size = sizeof(restate);
  }
  Emit(bytes, size, ops, later, {restate, restate_size}, owner);
  last_appender_ = from;
  if (from > 0) ++lane_appends_;
}

void Worker::Emit(const uint8_t* bytes, size_t size, ZoneOps* ops, LaterRuns* later,
                  std::span<const uint8_t> before, const std::shared_ptr<const void>& owner) {
  if (options_.writer != nullptr && owner != nullptr) {
    options_.writer->Refer(before, bytes, size, owner);
  } else if (options_.writer != nullptr) {
    if (!before.empty()) options_.writer->Append(before.data(), before.size());
    options_.writer->Append(bytes, size);
  }
  if (!model_sink_) return;
  ModelSink& sink = *model_sink_;
  const bool room = sink.held.size() + before.size() + size <= kMaxBacklogBytes;
  if (ops == nullptr) {
    auto build = [&](TraceModel&) {
      sink.DecodeHeld();
      if (!before.empty()) sink.Decode(before.data(), before.size());
      sink.Decode(bytes, size);
    };
    if (model_.TryWrite(build)) return;
    if (!room) {
      model_.Write(build);
      return;
    }
  } else {
    // A lane's paired zones: beside the other lanes storing their threads' zones.
    if (model_.TryJoinWriters() || (!room && (model_.JoinWriters(), true))) {
      // Left when the turn is over, unless runs are left to store (StoreLaterRuns leaves).
      struct Joined {
        SharedModel& model;
        const LaterRuns& later;
        ~Joined() {
          if (later.runs.empty()) model.LeaveWriters();
        }
      } joined{model_, *later};
      // Other lanes may be storing their threads' zones: the builder takes a thread again
      // through the gate (and a goodbye, which tidies them all, waits for every store).
      sink.handler.ForgetThread();
      sink.DecodeHeld();
      if (!before.empty()) sink.Decode(before.data(), before.size());
      // The runs on threads nothing after them touches (in a lane's batch, each thread's
      // last), it stores once the merge's turn is over.
      ops->Replay(
          sink.handler, [&](const uint8_t* p, size_t n) { sink.Decode(p, n); },
          [&](const ZoneOps::Run& run) {
            LaterRuns::Held held{nullptr, nullptr, run};
            if (!sink.handler.HoldRun(run, held.thread, held.open)) return false;
            std::lock_guard lock(sink.store_mutex);
            sink.storing.insert(held.thread);
            later->runs.push_back(held);
            return true;
          });
      return;
    }
  }
  sink.held.insert(sink.held.end(), before.begin(), before.end());
  sink.held.insert(sink.held.end(), bytes, bytes + size);
}

void Worker::StoreLaterRuns(LaterRuns& later) {
  if (later.runs.empty()) return;
  ModelSink& sink = *model_sink_;
  for (const LaterRuns::Held& held : later.runs) {
    TraceBuilder::StoreRun(held.run, *held.thread, *held.open);
    {
      std::lock_guard lock(sink.store_mutex);
      sink.storing.erase(sink.storing.find(held.thread));
    }
    sink.stored.notify_all();
  }
  later.runs.clear();
  model_.LeaveWriters();
}

void Worker::DrainModelSink(bool may_wait) {
  ModelSink& sink = *model_sink_;
  if (sink.held.empty()) return;
  auto build = [&](TraceModel&) { sink.DecodeHeld(); };
  if (!model_.TryWrite(build) && may_wait) model_.Write(build);
}

void Worker::RunLanes() {
  pthread_setname_np(pthread_self(), "gnomon-lane");
  if (Status s = OpenLanes(); !s.ok()) {
    // The program keeps everything on the main connection while not all have come.
    if (!lanes_stop_.load() && !stop_requested_.load())
      std::fprintf(stderr, "gnomon: %s; receiving over one connection\n", s.message().c_str());
    std::lock_guard lock(append_mutex_);
    lanes_open_ = 0;
    appended_.notify_all();
    return;
  }
  const auto slabs = std::make_shared<SlabPool>();
  auto receive = [this, &slabs](size_t lane) {
    LaneBuffer buffer(slabs);
    if (model_sink_) {
      ModelLaneHandler handler;
      LaneLoop(lane, handler, buffer);
    } else {
      LaneHandler handler;
      LaneLoop(lane, handler, buffer);
    }
  };
  std::vector<std::thread> others;
  for (size_t lane = 1; lane < lane_fds_.size(); ++lane) others.emplace_back(receive, lane);
  receive(0);
  for (std::thread& other : others) other.join();
}

template <typename Handler>
void Worker::LaneLoop(size_t index, Handler& handler, LaneBuffer& buffer) {
  pthread_setname_np(pthread_self(), "gnomon-lane");          // the first lane's is RunLanes()'s
  const chunk_memory::UseBlockReserve use_reserve(reserve_);  // a model is built here too
  const int fd = lane_fds_[index];
  const int from = int(index) + 1;
  constexpr bool kPairs = std::is_same_v<Handler, ModelLaneHandler>;
  // A piece's turn in the merge; then, beside the next lane's turn, the runs left to
  // store, and the blocks the turn filled to the compressing threads (whose lock, under
  // a turn, held up every lane). False: it has no place.
  auto take_turn = [this, from](LanePiece& piece, LaterRuns& later) {
    {
      std::unique_lock lock(append_mutex_);
      while (main_appended_ < piece.after && !main_final_ && !lanes_stop_.load())
        appended_.wait_for(lock, std::chrono::milliseconds(100));
      if (main_appended_ < piece.after) return false;  // the main connection ended first
      // The writer reads the bytes where they are: no copy in the turn, nor after it.
      AppendFrom(from, piece.context, piece.bytes, piece.size, piece.ops, &later,
                 options_.writer != nullptr ? piece.owner : nullptr);
    }
    zones_received_.fetch_add(piece.zones, std::memory_order_relaxed);
    messages_received_.fetch_add(piece.messages, std::memory_order_relaxed);
    StoreLaterRuns(later);
    if (options_.writer != nullptr) options_.writer->HandOver();
    return true;
  };
  LaterRuns later;  // a lane that takes its own turns
  std::optional<TurnTaker> taker;
  if constexpr (kPairs) {
    taker.emplace(reserve_, [take_turn, later = LaterRuns{}](LanePiece& piece) mutable {
      return take_turn(piece, later);
    });
  }
  size_t begin = 0;  // in the buffer: the first byte not taken yet
  size_t filled = 0;
  uint64_t batch_left = 0;  // bytes of the current batch not taken yet
  uint64_t after = 0;       // what of the main stream the current batch needs first
  uint64_t lane_offset = 0;
  uint64_t zones_counted = 0;
  std::string error;
  bool placeable = true;  // false once a batch needs main bytes that never came
  while (error.empty() && placeable && !lanes_stop_.load() && !(taker && taker->refused())) {
    size_t pos = begin;
    while (error.empty()) {
      if (batch_left == 0) {
        if (filled - pos < sizeof(protocol::LaneBatch)) break;
        const auto header = protocol::LoadLe<protocol::LaneBatch>(buffer.data() + pos);
        const uint32_t size = header.size;  // packed: copied before use
        const uint64_t needs = header.after;
        if (std::memcmp(header.magic, protocol::kLaneBatchMagic, sizeof(header.magic)) != 0) {
          error = "not a lane batch";
        } else if (size == 0 || size > protocol::kMaxLaneBatchBytes) {
          error = "a lane batch of " + std::to_string(size) + " bytes (1 to 16 MiB)";
        } else if (needs < after) {
          error = "a lane batch goes back in the main stream";
        }
        if (!error.empty()) break;
        after = needs;
        batch_left = size;
        lane_batches_received_.fetch_add(1, std::memory_order_relaxed);
        pos += sizeof(header);
        lane_offset += sizeof(header);
        continue;
      }
      const size_t available = size_t(std::min<uint64_t>(batch_left, filled - pos));
      const std::optional<uint32_t> context = handler.context;
      // The turn taker is done with it: Hand returns once no piece is in flight, and the
      // ring holds one more ZoneOps than that.
      if constexpr (kPairs) handler.ops->Clear();
      const DecodeResult result = DecodeMessages(buffer.data() + pos, available, handler);
      if (result.failed) {
        error = result.error;
      } else if (result.consumed == 0) {
        if (available == batch_left) error = "a lane batch ends inside a message";
        break;
      }
      // The buffer's bytes stay where they are until the piece's turn is over: the
      // writer's, and a model-building lane's, taken by another thread.
      LanePiece piece{buffer.data() + pos,
                      result.consumed,
                      after,
                      context,
                      nullptr,
                      kPairs || options_.writer != nullptr ? buffer.Share() : nullptr,
                      0,
                      result.messages};
      if constexpr (kPairs) {
        piece.zones = handler.ops->zone_count();
        piece.ops = handler.ops;
        placeable = taker->Hand(std::move(piece));
        handler.Next();
      } else {
        piece.zones = handler.zones - zones_counted;
        zones_counted = handler.zones;
        placeable = take_turn(piece, later);
      }
      if (!placeable) break;
      pos += result.consumed;
      batch_left -= result.consumed;
      lane_offset += result.consumed;
    }
    begin = buffer.MakeRoom(pos, filled);
    if (!error.empty() || !placeable) break;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, kPollMs);
    if (ready == 0) {
      buffer.Idle();
      if (model_sink_) {
        std::lock_guard lock(append_mutex_);
        DrainModelSink(false);
      }
      continue;
    }
    const ssize_t n = ready < 0 ? -1 : recv(fd, buffer.data() + filled, buffer.size() - filled, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // the program closed it: it ends, or it left (the main connection says which)
    filled += size_t(n);
    bytes_received_.fetch_add(uint64_t(n), std::memory_order_relaxed);
    lane_bytes_received_.fetch_add(uint64_t(n), std::memory_order_relaxed);
  }
  if (taker) taker->Finish();  // every piece handed takes its turn before the lane ends
  if (!error.empty()) {
    Fail(State::kFailed, "malformed stream on lane " + std::to_string(from) + " at byte " +
                             std::to_string(lane_offset) + ": " + error +
                             "; closed the connection, kept everything before it");
    lane_failed_.store(true);
    ::shutdown(fd_, SHUT_RDWR);  // the main thread wakes, and ends
  }
  std::lock_guard lock(append_mutex_);
  --lanes_open_;
  appended_.notify_all();
}

void Worker::EndLanes() {
  if (!lanes_thread_.joinable()) return;
  {
    // What the lanes hold that the main stream allows still goes to the writer; a lane
    // the program keeps open past that is not waited for long.
    std::unique_lock lock(append_mutex_);
    main_final_ = true;
    appended_.notify_all();
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    while (lanes_open_ > 0 && !stop_requested_.load() && Clock::now() < deadline)
      appended_.wait_for(lock, std::chrono::milliseconds(100));
  }
  {
    std::lock_guard lock(append_mutex_);  // the lanes may still be opening
    lanes_stop_.store(true);
    for (const int fd : lane_fds_) ::shutdown(fd, SHUT_RDWR);
    appended_.notify_all();
  }
  lanes_thread_.join();
}

}  // namespace gnomon::server
