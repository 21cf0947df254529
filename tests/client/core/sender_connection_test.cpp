// The sender's connections (core/sender_connection.cpp), on real loopback TCP: the port
// it listens on, the hellos it answers (a server's, one of another version, one while a
// server is connected, bytes that are none), peers that say nothing or say too much,
// and the capture it connects out to (GNOMON_COLLECTOR). A sender of the test's own
// (tests/support/own_sender.h), whose thread's events the test writes.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../../support/fake_peers.h"
#include "../../support/own_sender.h"
#include "../../support/process.h"
#include "../../support/self_capture.h"
#include "../../support/worker_connection.h"
#include "gnomon/protocol/handshake.h"
#include "gnomon/server/worker.h"

using gnomon::protocol::HandshakeStatus;
using gnomon::server::TraceModel;
using gnomon::server::Worker;
using gnomon::test::FindThread;
using gnomon::test::OwnSender;
using gnomon::test::WaitForModel;

namespace {

std::vector<uint8_t> ServerHelloBytes(uint16_t version, uint16_t flags = 0, uint32_t reserved = 0) {
  gnomon::protocol::ServerHello hello{};
  std::memcpy(hello.magic, gnomon::protocol::kServerHelloMagic.data(), sizeof(hello.magic));
  hello.version = version;
  hello.flags = flags;
  hello.reserved = reserved;
  const auto* p = reinterpret_cast<const uint8_t*>(&hello);
  return {p, p + sizeof(hello)};
}

int ConnectTo(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  return fd;
}

// What a program answered to `bytes` sent as a server opens a connection: its
// ClientHello (none when it sent none), and whether it closed the connection then.
struct Reply {
  std::optional<gnomon::protocol::ParsedClientHello> hello;
  bool closed = false;
};

Reply Greet(uint16_t port, const std::vector<uint8_t>& bytes) {
  const int fd = ConnectTo(port);
  REQUIRE(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size()));
  Reply reply;
  uint8_t answer[sizeof(gnomon::protocol::ClientHello)];
  size_t got = 0;
  while (got < sizeof(answer)) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, 5000) != 1) break;
    const ssize_t n = recv(fd, answer + got, sizeof(answer) - got, 0);
    if (n <= 0) {
      reply.closed = true;
      break;
    }
    got += size_t(n);
  }
  if (got == sizeof(answer)) {
    reply.hello = gnomon::protocol::ParseClientHello(answer, got);
    pollfd pfd{fd, POLLIN, 0};
    uint8_t more;
    reply.closed = poll(&pfd, 1, 5000) == 1 && recv(fd, &more, 1, 0) == 0;
  }
  close(fd);
  return reply;
}

// A sender with a thread of `zones` zones, listening and started.
struct Program {
  OwnSender own;
  gnomon::client::ThreadState* thread = nullptr;
  uint32_t location = 0;
  explicit Program(int zones, const gnomon::client::Config& config = gnomon::test::QuietConfig())
      : own(config) {
    location = own.Location("connection zone");
    thread = own.AddThread("connection thread");
    own.WriteZones(thread, location, zones);
    own.Start();
  }
};

size_t ZonesOf(const TraceModel& m) {
  const auto* t = FindThread(m, "connection thread");
  return t == nullptr ? 0 : t->zones.size();
}

// A server connects to `port` and receives the thread's `zones` zones.
void CheckServerTakesIt(uint16_t port, size_t zones) {
  Worker worker(gnomon::test::OptionsFor(port));
  const auto connected = worker.Connect();
  REQUIRE_MESSAGE(connected.ok(), connected.message());
  worker.Start();
  CHECK(WaitForModel(worker, [zones](const TraceModel& m) { return ZonesOf(m) == zones; }));
}

}  // namespace

TEST_CASE("a hello of another protocol version is refused as such, a server of this one is taken") {
  Program program(100);
  const Reply reply = Greet(program.own.port(), ServerHelloBytes(gnomon::protocol::kProtocolVersion + 1));
  REQUIRE(reply.hello.has_value());
  CHECK(reply.hello->status == HandshakeStatus::kVersionMismatch);
  CHECK(reply.hello->version == gnomon::protocol::kProtocolVersion);  // says which it speaks
  CHECK(reply.closed);
  CheckServerTakesIt(program.own.port(), 100);
}

TEST_CASE("bytes that are no hello get no answer: the connection is closed, and the program goes on") {
  Program program(100);
  const std::string http = "GET / HTTP/1.1\r\n";
  const Reply reply = Greet(program.own.port(), std::vector<uint8_t>(http.begin(), http.end()));
  CHECK_FALSE(reply.hello.has_value());
  CHECK(reply.closed);
  CheckServerTakesIt(program.own.port(), 100);
}

TEST_CASE("while a server is connected another is answered busy, and so is a lane nobody asked for") {
  Program program(100);
  Worker worker(gnomon::test::OptionsFor(program.own.port()));
  REQUIRE(worker.Connect().ok());
  worker.Start();
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) { return ZonesOf(m) == 100; }));
  const Reply second = Greet(program.own.port(), ServerHelloBytes(gnomon::protocol::kProtocolVersion));
  REQUIRE(second.hello.has_value());
  CHECK(second.hello->status == HandshakeStatus::kBusy);
  CHECK(second.closed);
  const Reply lane = Greet(program.own.port(), ServerHelloBytes(gnomon::protocol::kProtocolVersion,
                                                                gnomon::protocol::kServerLaneHello, 12345));
  REQUIRE(lane.hello.has_value());
  CHECK(lane.hello->status == HandshakeStatus::kBusy);
  CHECK(lane.closed);
  // The first server was never disturbed.
  program.own.WriteZones(program.thread, program.location, 50);
  CHECK(WaitForModel(worker, [](const TraceModel& m) { return ZonesOf(m) == 150; }));
  CHECK(worker.state() == Worker::State::kReceiving);
}

TEST_CASE(
    "peers that connect and say nothing hold a slot each, never the port: a server still gets through") {
  Program program(100);
  gnomon::test::IdlePeers peers(program.own.port(), 20, std::chrono::milliseconds(20));
  for (int i = 0; i < 500 && peers.connected() < 20; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(peers.connected() >= 20);  // more than the handshakes the program waits for at once
  CheckServerTakesIt(program.own.port(), 100);
}

TEST_CASE("a server that sends anything but clock probes after its hello is cut off, the next one is taken") {
  Program program(100);
  {
    gnomon::test::StalledServer server(program.own.port());
    REQUIRE(server.connected());
    server.Send({1, 2, 3, 4});
    CHECK(server.WaitForClose(5000));
  }
  for (int i = 0; i < 500 && program.own.sender().is_connected(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK_FALSE(program.own.sender().is_connected());
  // What it had drained went to the server cut off; what comes after goes to the next.
  program.own.WriteZones(program.thread, program.location, 50);
  CheckServerTakesIt(program.own.port(), 50);
}

TEST_CASE(
    "the port: a free one for port 0, the next free one when its own is taken, written to the port file") {
  gnomon::test::ScratchDir dir;
  // A port another program holds.
  const int holder = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  REQUIRE(listen(holder, 1) == 0);
  socklen_t length = sizeof(address);
  getsockname(holder, reinterpret_cast<sockaddr*>(&address), &length);
  const uint16_t taken = ntohs(address.sin_port);
  gnomon::client::Config config = gnomon::test::QuietConfig();
  config.port = taken;
  config.port_file = dir.File("port");
  OwnSender own(config);
  REQUIRE(own.sender().Listen());
  CHECK(own.port() > taken);
  CHECK(own.port() < taken + 10);
  CHECK(gnomon::test::ReadFile(dir.File("port")) == std::to_string(own.port()) + "\n");
  close(holder);

  OwnSender any;  // port 0
  REQUIRE(any.sender().Listen());
  CHECK(any.port() != 0);
  CHECK(any.port() != own.port());
}

TEST_CASE("an address that is not numeric, or not of this machine, is not listened on") {
  // A machine that lets any address be bound (net.ipv4.ip_nonlocal_bind) listens on one.
  const bool nonlocal_binds = gnomon::test::ReadFile("/proc/sys/net/ipv4/ip_nonlocal_bind").starts_with("1");
  for (const char* address : {"localhost", "192.0.2.1"}) {
    CAPTURE(address);
    if (nonlocal_binds && std::string(address) == "192.0.2.1") continue;
    gnomon::client::Config config = gnomon::test::QuietConfig();
    config.address = address;
    OwnSender own(config);
    CHECK_FALSE(own.sender().Listen());
    CHECK(own.port() == 0);
  }
}

TEST_CASE("GNOMON_COLLECTOR: the program connects out to a capture listening, which takes it as a server") {
  // The capture's listening socket (gnomon-capture --listen).
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  REQUIRE(listen(listener, 4) == 0);
  socklen_t length = sizeof(address);
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  gnomon::client::Config config = gnomon::test::QuietConfig();
  config.collector_host = "127.0.0.1";
  config.collector_port = ntohs(address.sin_port);
  Program program(100, config);
  pollfd pfd{listener, POLLIN, 0};
  REQUIRE(poll(&pfd, 1, 10000) == 1);
  const int fd = accept(listener, nullptr, nullptr);
  REQUIRE(fd >= 0);
  close(listener);
  Worker worker(gnomon::test::OptionsFor(0));
  const auto adopted = worker.Adopt(fd, "the collector's program");
  REQUIRE_MESSAGE(adopted.ok(), adopted.message());
  worker.Start();
  CHECK(WaitForModel(worker, [](const TraceModel& m) { return ZonesOf(m) == 100; }));
  CHECK(program.own.sender().WaitForServer(std::chrono::seconds(5)));
}
