// The sender (sender.h), its connections: listening, the handshakes of accepted
// connections and of the collector's, taking a server, and its clock probes.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include "gnomon/client/thread_writer.h"
#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/handshake.h"
#include "gnomon/tracefile/trace_writer.h"
#include "inside_library.h"
#include "registry.h"
#include "sender.h"
#include "shipping.h"

namespace gnomon::client {

using protocol::StoreLe;
namespace {

constexpr auto kHandshakeTimeout = std::chrono::seconds(2);  // per connection, never blocking
constexpr auto kLanesWait = std::chrono::seconds(10);        // for all the lanes a server asked for
constexpr size_t kMaxPendingHandshakes = 16;                 // more: the oldest waiting one is dropped
constexpr auto kCollectorRetry = std::chrono::seconds(1);    // GNOMON_COLLECTOR: between attempts
constexpr int kListenBacklog = 64;
constexpr int kPortsToTry = 10;

}  // namespace

bool Sender::Listen() {
  const Config& config = registry_.config();
  if (!config.output_path.empty() && config.buffer_policy != BufferPolicy::kRing && OpenOwnFile()) {
    writes_own_file_ = true;
    return true;
  }
  const bool is_v6 = config.address.find(':') != std::string::npos;
  // Non-blocking: AcceptPending() takes connections until there are none left.
  listen_fd_ = socket(is_v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) {
    std::fprintf(stderr, "gnomon: cannot create a socket: %s\n", std::strerror(errno));
    return false;
  }
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage storage{};
  socklen_t length = 0;
  auto set_port = [&](uint16_t port) {
    if (is_v6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
      a->sin6_family = AF_INET6;
      a->sin6_port = htons(port);
      length = sizeof(*a);
      return inet_pton(AF_INET6, config.address.c_str(), &a->sin6_addr) == 1;
    }
    auto* a = reinterpret_cast<sockaddr_in*>(&storage);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    length = sizeof(*a);
    return inet_pton(AF_INET, config.address.c_str(), &a->sin_addr) == 1;
  };
  bool bound = false;
  for (int i = 0; i < (config.port == 0 ? 1 : kPortsToTry) && !bound; ++i) {
    const uint16_t port = config.port == 0 ? 0 : static_cast<uint16_t>(config.port + i);
    if (!set_port(port)) {
      std::fprintf(stderr,
                   "gnomon: '%s' is not a numeric IP address; set GNOMON_ADDRESS to one, "
                   "e.g. 127.0.0.1\n",
                   config.address.c_str());
      close(listen_fd_);  // not listening: nothing is ever accepted on it
      listen_fd_ = -1;
      return false;
    }
    bound = bind(listen_fd_, reinterpret_cast<sockaddr*>(&storage), length) == 0;
    if (!bound && errno != EADDRINUSE) break;
  }
  if (!bound || listen(listen_fd_, kListenBacklog) != 0) {
    const int error = errno;
    std::fprintf(stderr, "gnomon: cannot listen on %s port %u: %s; %s\n", config.address.c_str(), config.port,
                 std::strerror(error),
                 error == EADDRNOTAVAIL ? "set GNOMON_ADDRESS to an address of this machine, e.g. 127.0.0.1"
                                        : "set GNOMON_PORT to a free port");
    close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  length = sizeof(storage);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&storage), &length);
  port_ = ntohs(is_v6 ? reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port
                      : reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
  if (config.port != 0 && port_ != config.port) {
    std::fprintf(stderr, "gnomon: port %u is in use; listening on port %u\n", config.port, unsigned{port_});
  }
  if (!config.port_file.empty() &&
      !WriteFileAtomically(config.port_file, std::to_string(port_) + "\n", 0644)) {
    std::fprintf(stderr, "gnomon: cannot write the port file %s: %s\n", config.port_file.c_str(),
                 std::strerror(errno));
  }
  if (config.announce == AnnounceMode::kLan && (config.address == "0.0.0.0" || config.address == "::")) {
    std::fprintf(stderr,
                 "gnomon: GNOMON_ANNOUNCE=lan: listening on all interfaces, port %u: anyone who can reach it "
                 "can connect and read this program's events (GNOMON_ADDRESS=<an address of this machine> "
                 "limits it to one network)\n",
                 unsigned{port_});
  } else if (config.announce == AnnounceMode::kLan &&
             (config.address.starts_with("127.") || config.address == "::1")) {
    std::fprintf(stderr,
                 "gnomon: GNOMON_ANNOUNCE=lan, but GNOMON_ADDRESS=%s is reachable from this machine only; "
                 "the LAN is told of a program it cannot connect to\n",
                 config.address.c_str());
  }
  return true;
}

void Sender::ServiceConnections(std::chrono::microseconds timeout) {
  ConnectToCollector();
  if (listen_fd_ < 0 && conn_fd_ < 0 && collector_fd_ < 0 && pending_.empty()) {
    std::this_thread::sleep_for(timeout);
    return;
  }
  std::vector<pollfd> fds;
  fds.reserve(pending_.size() + lane_fds_.size() + 3);
  fds.push_back({listen_fd_, POLLIN, 0});  // a negative fd is ignored by poll
  fds.push_back({conn_fd_, POLLIN, 0});
  for (const PendingHandshake& pending : pending_) fds.push_back({pending.fd, POLLIN, 0});
  const size_t collector_index = fds.size();
  fds.push_back({collector_fd_, POLLOUT, 0});  // connected (or refused) once writable
  // Lanes taken while the others are awaited: the server sends nothing on them, so a
  // closed one means it gave up on them (it goes on over one connection).
  const size_t lanes_index = fds.size();
  for (const int fd : lane_fds_) fds.push_back({fd, POLLIN, 0});
  if (!pending_.empty()) {  // wake up for the nearest handshake deadline
    auto nearest = pending_.front().deadline;
    for (const PendingHandshake& pending : pending_) nearest = std::min(nearest, pending.deadline);
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(nearest - Clock::now());
    timeout = std::clamp(left + std::chrono::microseconds(1), std::chrono::microseconds(0), timeout);
  }
  const timespec wait{.tv_sec = time_t(timeout.count() / 1'000'000),
                      .tv_nsec = long(timeout.count() % 1'000'000) * 1000};
  if (ppoll(fds.data(), nfds_t(fds.size()), &wait, nullptr) < 0) return;
  if (conn_fd_ >= 0 && fds[1].revents != 0) PeerClosed();
  // Hellos first (the descriptors polled are pending_'s first entries), then new peers.
  const auto now = Clock::now();
  size_t i = 0;
  std::erase_if(pending_, [&](PendingHandshake& pending) {
    const short events = 2 + i < fds.size() ? fds[2 + i++].revents : 0;
    if (events != 0 && ContinueHandshake(pending)) return true;
    if (now < pending.deadline) return false;
    close(pending.fd);  // said nothing in time: not a Gnomon server, or a stalled one
    return true;
  });
  if (collector_fd_ >= 0 && fds[collector_index].revents != 0) FinishCollectorConnect();
  for (size_t lane = lanes_index; lane < fds.size(); ++lane) {
    if (fds[lane].revents == 0) continue;
    ForgetLanes();
    break;
  }
  if (fds[0].revents & POLLIN) AcceptPending();
}

void Sender::AcceptPending() {
  for (size_t accepted = 0; accepted < kMaxPendingHandshakes; ++accepted) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    AddPending(fd);
  }
}

void Sender::AddPending(int fd) {
  if (pending_.size() >= kMaxPendingHandshakes) {  // the one waiting longest gives way
    close(pending_.front().fd);
    pending_.erase(pending_.begin());
  }
  PendingHandshake& pending = pending_.emplace_back();
  pending.fd = fd;
  pending.deadline = Clock::now() + kHandshakeTimeout;
  if (ContinueHandshake(pending)) pending_.pop_back();  // a hello may already be there
}

bool Sender::ResolveCollector() {
  const Config& config = registry_.config();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(config.collector_port);
  // On the sender thread (a slow name server delays nobody else), and again at each
  // attempt until it resolves.
  if (const int error = getaddrinfo(config.collector_host.c_str(), port.c_str(), &hints, &found);
      error != 0) {
    if (!collector_unresolved_said_) {
      std::fprintf(stderr,
                   "gnomon: cannot resolve GNOMON_COLLECTOR host '%s': %s; trying again each second\n",
                   config.collector_host.c_str(), gai_strerror(error));
    }
    collector_unresolved_said_ = true;
    return false;
  }
  collector_addresses_.clear();
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    sockaddr_storage address{};
    std::memcpy(&address, a->ai_addr, std::min<size_t>(a->ai_addrlen, sizeof(address)));
    collector_addresses_.emplace_back(address, a->ai_addrlen);
  }
  freeaddrinfo(found);
  return !collector_addresses_.empty();
}

void Sender::ConnectToCollector() {
  if (registry_.config().collector_host.empty() || conn_fd_ >= 0 || collector_fd_ >= 0) return;
  // A connection made and still in its handshake (a slow capture): not a second one.
  if (std::any_of(pending_.begin(), pending_.end(),
                  [&](const PendingHandshake& p) { return p.fd == collector_pending_fd_; })) {
    return;
  }
  const auto now = Clock::now();
  if (now < next_collector_attempt_) return;
  next_collector_attempt_ = now + kCollectorRetry;
  if (collector_addresses_.empty() && !ResolveCollector()) return;
  // Each of the name's addresses in turn (localhost may be ::1 first, the capture on
  // 127.0.0.1).
  const auto& [address, length] = collector_addresses_[collector_next_++ % collector_addresses_.size()];
  const int fd = socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), length) == 0) {
    collector_pending_fd_ = fd;
    AddPending(fd);  // the collector speaks first, as a server that connected does
  } else if (errno == EINPROGRESS) {
    collector_fd_ = fd;
  } else {
    close(fd);  // refused: no capture listening yet; tried again in a second
  }
}

void Sender::FinishCollectorConnect() {
  int error = 0;
  socklen_t length = sizeof(error);
  const int fd = std::exchange(collector_fd_, -1);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
    close(fd);
    return;
  }
  collector_pending_fd_ = fd;
  AddPending(fd);
}

bool Sender::ContinueHandshake(PendingHandshake& pending) {
  const ssize_t n =
      recv(pending.fd, pending.hello + pending.received, sizeof(pending.hello) - pending.received, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  if (n <= 0) {
    close(pending.fd);
    return true;
  }
  pending.received += size_t(n);
  if (pending.received < sizeof(pending.hello)) return false;
  const std::optional<uint16_t> server_version =
      protocol::ParseServerHello(pending.hello, sizeof(pending.hello));
  if (!server_version) {
    close(pending.fd);  // not a Gnomon server
  } else if (*server_version != protocol::kProtocolVersion) {
    Answer(pending.fd, protocol::HandshakeStatus::kVersionMismatch);
    std::fprintf(stderr,
                 "gnomon: refused a server speaking protocol version %u (this program speaks "
                 "%u); use a matching Gnomon release\n",
                 unsigned{*server_version}, unsigned{protocol::kProtocolVersion});
    close(pending.fd);
  } else if ((protocol::ServerHelloFlags(pending.hello) & protocol::kServerLaneHello) != 0) {
    if (!TakeLane(pending.fd, protocol::ServerHelloReserved(pending.hello))) {
      Answer(pending.fd, protocol::HandshakeStatus::kBusy);
      close(pending.fd);
    }
  } else if (conn_fd_ >= 0) {
    Answer(pending.fd, protocol::HandshakeStatus::kBusy);
    close(pending.fd);
  } else {
    const uint16_t flags = protocol::ServerHelloFlags(pending.hello);
    const bool probes = (flags & protocol::kServerSendsClockProbes) != 0;
    // Lanes connect to the listening socket: none for a program that has none.
    lanes_wanted_ = (flags & protocol::kServerWantsLanes) != 0 && listen_fd_ >= 0
                        ? std::min(protocol::ServerHelloReserved(pending.hello), protocol::kMaxLanes)
                        : 0;
    lane_token_ = 0;
    while (lanes_wanted_ > 0 && lane_token_ == 0) {
      if (getrandom(&lane_token_, sizeof(lane_token_), GRND_NONBLOCK) != ssize_t(sizeof(lane_token_)))
        lane_token_ = uint32_t(Clock::now().time_since_epoch().count()) ^ uint32_t(getpid());
    }
    Answer(pending.fd, protocol::HandshakeStatus::kOk,
           (probes ? uint64_t{protocol::kCapClockReplies} : 0) |
               (lanes_wanted_ > 0 ? uint64_t{protocol::kCapLanes} : 0),
           lane_token_);
    lanes_deadline_ = Clock::now() + kLanesWait;
    lanes_pending_.store(lanes_wanted_ > 0);
    answers_probes_ = probes;  // before Promote: such a server also knows HostInfo
    probe_filled_ = 0;
    probes_this_second_ = 0;
    Promote(pending.fd);
  }
  return true;
}

void Sender::Answer(int fd, protocol::HandshakeStatus status, uint64_t capabilities, uint32_t reserved) {
  uint8_t reply[sizeof(protocol::ClientHello)] = {};
  std::memcpy(reply, protocol::kClientHelloMagic.data(), protocol::kClientHelloMagic.size());
  StoreLe<uint16_t>(reply + offsetof(protocol::ClientHello, version), protocol::kProtocolVersion);
  StoreLe<uint16_t>(reply + offsetof(protocol::ClientHello, status), static_cast<uint16_t>(status));
  if (status == protocol::HandshakeStatus::kOk) {
    StoreLe<uint64_t>(reply + offsetof(protocol::ClientHello, capabilities),
                      uint64_t{protocol::kCapCpuZones} | uint64_t{protocol::kCapGpu} | capabilities);
    StoreLe<uint32_t>(reply + offsetof(protocol::ClientHello, reserved), reserved);
  }
  send(fd, reply, sizeof(reply), MSG_NOSIGNAL);  // 24 bytes into an empty socket buffer
}

void Sender::Promote(int fd) {
  MakeShipping(fd);
  conn_fd_ = fd;
  main_sent_ = 0;
  current_context_ = 0;
  dropped_sent_ = 0;
  AppendAppInfo(out_, answers_probes_);
  BeginDefinitions();
  registry_.SetConnected(true);
  announcer_.SetConnected(true);
}

bool Sender::PeerClosed() {
  if (answers_probes_) return ReadClockProbes();
  uint8_t byte;
  const ssize_t n = recv(conn_fd_, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  // End of stream, an error, or bytes a server never sends after its hello.
  Disconnect(nullptr);
  return true;
}

bool Sender::ReadClockProbes() {
  // A few probes a call, the rest left in the socket for the next: shipping events
  // comes first. A server probing far faster than a capture does is cut off.
  constexpr int kProbesPerCall = 4;
  constexpr uint32_t kMaxProbesPerSecond = 100;
  for (int answered = 0;;) {
    const ssize_t n = recv(conn_fd_, probe_ + probe_filled_, sizeof(probe_) - probe_filled_, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
    if (n <= 0) break;  // end of stream, or an error
    const int64_t received_ns = ReadClockNs(CLOCK_MONOTONIC_RAW);
    probe_filled_ += size_t(n);
    if (probe_filled_ < sizeof(probe_)) continue;
    probe_filled_ = 0;
    const std::optional<uint32_t> sequence = protocol::ParseClockProbe(probe_);
    if (!sequence) break;  // bytes a server never sends
    if (received_ns - probe_second_start_ns_ >= 1'000'000'000) {
      probe_second_start_ns_ = received_ns;
      probes_this_second_ = 0;
    }
    if (++probes_this_second_ > kMaxProbesPerSecond) {
      Disconnect("the server sent more than 100 clock probes in a second; disconnected it");
      return true;
    }
    AnswerClockProbe(*sequence, received_ns);
    ++answered;
    if (conn_fd_ < 0) return true;
    if (answered == kProbesPerCall) return false;  // the rest for the next call
  }
  Disconnect(nullptr);
  return true;
}

// The reply goes out at once, ahead of the batch held (whole messages, none of which it
// depends on; but after AppInfo, which opens the stream) and behind whatever the socket
// already holds: its send time is read just before, so the capture's bracket stays
// honest (only wider) whatever waits.
void Sender::AnswerClockProbe(uint32_t sequence, int64_t received_ns) {
  std::lock_guard lock(main_mutex_);
  const size_t held = out_.size();
  protocol::AppendMessage(out_, protocol::ClockReply{.sequence = sequence,
                                                     .receive_ns = uint64_t(received_ns),
                                                     .send_ns = uint64_t(ReadClockNs(CLOCK_MONOTONIC_RAW))});
  if (main_sent_ > 0) std::rotate(out_.begin(), out_.begin() + static_cast<ptrdiff_t>(held), out_.end());
  Flush();
}

}  // namespace gnomon::client
