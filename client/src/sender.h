// The background thread that ships events to a server.
//
// It owns the listening socket (loopback by default) and at most one connection. While
// no server is connected it only takes calibration pairs; events wait in the threads'
// chunks, bounded by the buffer budget. When a server connects and the handshake
// succeeds it sends AppInfo, replays the global log, and then drains every thread's
// published bytes, each run prefixed by a ThreadContext. The server never sends
// anything after its hello, so nothing it says can make the program read its memory.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "timer.h"

namespace gnomon::client {

class Profiler;
struct ThreadState;

class Sender {
 public:
  explicit Sender(Profiler& profiler);
  ~Sender();

  // Opens the listening socket; false (with a message on stderr) when it cannot.
  bool Listen();
  void Start();
  // Drains to a connected server (bounded), sends EndOfStream, joins the thread.
  void Stop();

  uint16_t port() const { return port_.load(); }
  bool is_connected() const { return connected_.load(); }
  bool WaitForServer(std::chrono::milliseconds timeout);

 private:
  void Run();
  void TakeCalibration();
  bool AcceptAndHandshake(int timeout_ms);
  void RejectBusy();
  // Sends everything pending; returns the number of event bytes sent, -1 on failure.
  int64_t Pump();
  // Appends thread's published bytes to out_; true when the thread exited and is empty.
  bool DrainThread(ThreadState& thread);
  void ReleaseThread(ThreadState* thread);
  bool Flush();
  bool SendAll(const uint8_t* data, size_t size);
  bool PeerClosed();
  void Disconnect(const char* reason);
  void SendAppInfo();

  Profiler& profiler_;
  int listen_fd_ = -1;
  int conn_fd_ = -1;
  std::atomic<uint16_t> port_{0};
  std::atomic<bool> connected_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;

  std::vector<uint8_t> out_;
  size_t global_sent_ = 0;
  uint32_t current_context_ = 0;
  uint64_t dropped_sent_ = 0;
  std::chrono::steady_clock::time_point next_calibration_;
  std::chrono::steady_clock::time_point stop_deadline_;
  CalibrationPair first_pair_;
  double ticks_per_second_ = 0;
  int64_t start_unix_ns_ = 0;
};

}  // namespace gnomon::client
