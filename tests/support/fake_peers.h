// Hand-made peers on real loopback TCP, for tests of broken and hostile connections.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace gnomon::test {

// A "program" that listens on a free loopback port; on connection it reads the server's
// hello, answers `reply`, sends `stream`, then closes. With `lanes`, it first takes that
// many lane connections (their hellos must bring `reply`'s token), answers each, sends
// each its bytes and closes it, and only then sends `stream`: a lane's batches arrive
// before the main bytes they need; then it holds the connection until the server closes
// it.
class FakeProgram {
 public:
  FakeProgram(std::vector<uint8_t> reply, std::vector<uint8_t> stream,
              std::vector<std::vector<uint8_t>> lanes = {});
  ~FakeProgram();
  uint16_t port() const { return port_; }
  bool hello_ok() const { return hello_ok_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> hello_ok_{false};
};

// A "server" that connects to a program, completes the handshake, then stops reading:
// a stalled network, as far as the program can tell.
class StalledServer {
 public:
  explicit StalledServer(uint16_t port);
  ~StalledServer();
  bool connected() const { return fd_ >= 0; }
  // Sends bytes a server never sends after its hello (a probe for the program's memory).
  void Send(const std::vector<uint8_t>& bytes);
  // Reads and discards until the program closes the connection; false on timeout.
  bool WaitForClose(int timeout_ms);

 private:
  int fd_ = -1;
};

// Connects to a program's port and says nothing, as a port scanner or a hostile user on
// the machine might: `burst` connections at once, then one more every `period` while it
// lives, all held open until it is destroyed.
class IdlePeers {
 public:
  IdlePeers(uint16_t port, int burst, std::chrono::milliseconds period);
  ~IdlePeers();
  IdlePeers(const IdlePeers&) = delete;
  IdlePeers& operator=(const IdlePeers&) = delete;
  int connected() const { return connected_.load(); }

 private:
  void ConnectOne();
  uint16_t port_;
  std::vector<int> fds_;  // used by the thread only, until it is joined
  std::atomic<int> connected_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A "program" started with GNOMON_COLLECTOR: connects to a capture's --listen port,
// answers its hello (zones only), sends `stream`, ends its side and reads until the
// capture closes. False when the capture never said hello.
bool SpeakAsProgram(uint16_t port, const std::vector<uint8_t>& stream);

// A ClientHello with the given fields.
std::vector<uint8_t> ClientHelloBytes(uint16_t version, uint16_t status, uint64_t capabilities,
                                      uint32_t reserved = 0);

}  // namespace gnomon::test
