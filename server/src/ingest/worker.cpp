// The worker (worker.h): its life, its connection and the handshake.
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
#include "ingest/worker_parts.h"
#include "model/trace_builder.h"

namespace gnomon::server {

using namespace ingest;

namespace {

using asio::ip::tcp;

// Runs `io` until `done()` or `until`, a slice at a time, so that `stop` (RequestStop(),
// a signal handler's Ctrl-C) ends the wait.
template <typename Done>
void RunUntil(asio::io_context& io, const std::atomic<bool>& stop, Done done, Clock::time_point until) {
  while (!done() && !stop.load() && Clock::now() < until) {
    io.restart();
    io.run_for(std::min<Clock::duration>(std::chrono::milliseconds(100), until - Clock::now()));
  }
}

}  // namespace

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
    if (!options_.retry_refused || Clock::now() >= deadline) break;
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
  std::memcpy(hello.magic, protocol::kServerHelloMagic.data(), sizeof(hello.magic));
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

}  // namespace gnomon::server
