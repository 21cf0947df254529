#include "fake_peers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "gnomon/protocol/handshake.h"
#include "gnomon/protocol/messages.h"

namespace gnomon::test {

namespace {

// Reads the 16 bytes of a ServerHello (fewer when the peer stops); how many came.
size_t ReadHello(int fd, uint8_t (&hello)[sizeof(protocol::ServerHello)]) {
  size_t got = 0;
  while (got < sizeof(hello)) {
    const ssize_t n = recv(fd, hello + got, sizeof(hello) - got, 0);
    if (n <= 0) break;
    got += size_t(n);
  }
  return got;
}

void SendAll(int fd, const std::vector<uint8_t>& bytes) {
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += size_t(n);
  }
}

}  // namespace

FakeProgram::FakeProgram(std::vector<uint8_t> reply, std::vector<uint8_t> stream,
                         std::vector<std::vector<uint8_t>> lanes) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  listen(fd_, 16);
  socklen_t length = sizeof(address);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
  thread_ =
      std::thread([this, reply = std::move(reply), stream = std::move(stream), lanes = std::move(lanes)] {
        const int conn = accept(fd_, nullptr, nullptr);
        if (conn < 0) return;
        uint8_t hello[sizeof(protocol::ServerHello)];
        hello_ok_ = protocol::ParseServerHello(hello, ReadHello(conn, hello)).has_value();
        send(conn, reply.data(), reply.size(), MSG_NOSIGNAL);
        const uint32_t token = protocol::ParseClientHello(reply.data(), reply.size())->reserved;
        // Every lane answered first, then each sent on a thread of its own, beside the main
        // stream: a lane's stream may be more than its socket holds.
        std::vector<std::thread> senders;
        for (uint32_t lane = 1; lane <= lanes.size(); ++lane) {
          const int lane_fd = accept(fd_, nullptr, nullptr);
          if (lane_fd < 0) break;
          const size_t got = ReadHello(lane_fd, hello);
          const bool ok = protocol::ParseServerHello(hello, got) &&
                          (protocol::ServerHelloFlags(hello) & protocol::kServerLaneHello) != 0 &&
                          protocol::ServerHelloReserved(hello) == token;
          if (!ok) {
            close(lane_fd);
            continue;
          }
          SendAll(lane_fd, ClientHelloBytes(protocol::kProtocolVersion, 0, protocol::kCapLanes, lane));
          senders.emplace_back([lane_fd, &bytes = lanes[lane - 1]] {
            SendAll(lane_fd, bytes);
            close(lane_fd);
          });
        }
        SendAll(conn, stream);
        for (std::thread& sender : senders) sender.join();
        if (!lanes.empty()) {  // holds on, as a live program would, until the server has done
          pollfd pfd{conn, POLLIN, 0};
          uint8_t unread[64];
          while (poll(&pfd, 1, 5000) == 1 && recv(conn, unread, sizeof(unread), 0) > 0) {
          }
        }
        close(conn);
      });
}

FakeProgram::~FakeProgram() {
  shutdown(fd_, SHUT_RDWR);
  thread_.join();
  close(fd_);
}

IdlePeers::IdlePeers(uint16_t port, int burst, std::chrono::milliseconds period) : port_(port) {
  thread_ = std::thread([this, burst, period] {
    for (int i = 0; i < burst; ++i) ConnectOne();
    while (!stop_.load()) {
      std::this_thread::sleep_for(period);
      ConnectOne();
    }
    for (int fd : fds_) close(fd);
  });
}

IdlePeers::~IdlePeers() {
  stop_.store(true);
  thread_.join();
}

void IdlePeers::ConnectOne() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port_);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return;
  }
  fds_.push_back(fd);
  ++connected_;
}

StalledServer::StalledServer(uint16_t port) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  int small = 4096;
  setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  protocol::ServerHello hello{};
  std::memcpy(hello.magic, protocol::kServerHelloMagic.data(), sizeof(hello.magic));
  hello.version = protocol::kProtocolVersion;
  uint8_t reply[sizeof(protocol::ClientHello)];
  if (connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      send(fd_, &hello, sizeof(hello), MSG_NOSIGNAL) != ssize_t(sizeof(hello)) ||
      recv(fd_, reply, sizeof(reply), MSG_WAITALL) != ssize_t(sizeof(reply))) {
    close(fd_);
    fd_ = -1;
  }
}

void StalledServer::Send(const std::vector<uint8_t>& bytes) {
  send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}

bool StalledServer::WaitForClose(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<uint8_t> sink(1 << 16);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{fd_, POLLIN, 0};
    if (poll(&pfd, 1, 50) <= 0) continue;
    const ssize_t n = recv(fd_, sink.data(), sink.size(), 0);
    if (n <= 0) return true;
  }
  return false;
}

StalledServer::~StalledServer() {
  if (fd_ >= 0) close(fd_);
}

bool SpeakAsProgram(uint16_t port, const std::vector<uint8_t>& stream) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  uint8_t hello[sizeof(protocol::ServerHello)];
  ok = ok && protocol::ParseServerHello(hello, ReadHello(fd, hello)).has_value();
  if (ok) {
    SendAll(fd, ClientHelloBytes(protocol::kProtocolVersion, 0, protocol::kCapCpuZones));
    SendAll(fd, stream);
    shutdown(fd, SHUT_WR);
    uint8_t unread[64];
    while (recv(fd, unread, sizeof(unread), 0) > 0) {
    }
  }
  close(fd);
  return ok;
}

std::vector<uint8_t> ClientHelloBytes(uint16_t version, uint16_t status, uint64_t capabilities,
                                      uint32_t reserved) {
  protocol::ClientHello hello{};
  std::memcpy(hello.magic, protocol::kClientHelloMagic.data(), protocol::kClientHelloMagic.size());
  hello.version = version;
  hello.status = status;
  hello.reserved = reserved;
  hello.capabilities = capabilities;
  const auto* p = reinterpret_cast<const uint8_t*>(&hello);
  return {p, p + sizeof(hello)};
}

}  // namespace gnomon::test
