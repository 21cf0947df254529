// The worker's main connection against a fake program on real loopback TCP: the receive
// loop's ends (a goodbye, garbage, a program that lies about clocks, one that vanishes),
// and what comes while readers hold the model.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../../support/stream_writer.h"
#include "../../support/worker_connection.h"
#include "gnomon/protocol/handshake.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/worker.h"

using namespace gnomon::server;
using gnomon::test::FakeProgram;
using gnomon::test::Hello;
using gnomon::test::kOk;
using gnomon::test::OptionsFor;
using gnomon::test::StreamWriter;

namespace {

std::vector<uint8_t> ValidStart() {
  StreamWriter w;
  w.AppInfo("fake").SourceLocation(1, "Z", "f", "x.cpp", 1).ThreadContext(1);
  for (int i = 0; i < 100; ++i) w.ZoneBegin(1, uint64_t(i) * 10).ZoneEnd(uint64_t(i) * 10 + 5);
  return w.bytes();
}

// Receives `stream` from a program that answers the handshake, until the stream ends.
std::unique_ptr<Worker> Receive(const std::vector<uint8_t>& stream) {
  FakeProgram program(Hello(gnomon::protocol::kProtocolVersion, kOk), stream);
  auto worker = std::make_unique<Worker>(OptionsFor(program.port()));
  REQUIRE(worker->Connect().ok());
  worker->Start();
  worker->Join();
  return worker;
}

}  // namespace

TEST_CASE("a clean stream ends with the program's goodbye") {
  std::vector<uint8_t> stream = ValidStart();
  StreamWriter end;
  end.End(2000);
  stream.insert(stream.end(), end.bytes().begin(), end.bytes().end());
  FakeProgram program(Hello(gnomon::protocol::kProtocolVersion, kOk), stream);
  Worker worker(OptionsFor(program.port()));
  REQUIRE(worker.Connect().ok());
  worker.Start();
  worker.Join();
  CHECK(program.hello_ok());
  CHECK(worker.state() == Worker::State::kEnded);
  CHECK(worker.model().zone_count == 100);
  CHECK(worker.program_name() == "fake");
}

TEST_CASE("garbage after the handshake closes the connection and keeps what came before") {
  std::vector<uint8_t> stream = ValidStart();
  stream.insert(stream.end(), {0xFE, 0xFE, 0xFE, 0xFE});
  const auto worker = Receive(stream);
  CHECK(worker->state() == Worker::State::kFailed);
  CHECK(worker->error().find("unknown message type 254") != std::string::npos);
  CHECK(worker->model().zone_count == 100);
}

TEST_CASE("a program that writes a ClockSample (only a capture does) is cut off, what came before stays") {
  StreamWriter w;
  w.Add(gnomon::protocol::ClockReply{.sequence = 1, .receive_ns = 100, .send_ns = 200});
  w.Add(gnomon::protocol::ClockSample{.sequence = 1, .probe_sent_ns = 50, .reply_received_ns = 250});
  w.ThreadContext(1).ZoneBegin(1, 2000).ZoneEnd(2005);
  std::vector<uint8_t> stream = ValidStart();
  stream.insert(stream.end(), w.bytes().begin(), w.bytes().end());
  const auto worker = Receive(stream);
  CHECK(worker->state() == Worker::State::kFailed);
  CHECK(worker->error().find("ClockSample, which only a capture writes") != std::string::npos);
  CHECK(worker->model().zone_count == 100);
  CHECK(worker->model().host_clock_exchanges.empty());
}

TEST_CASE("a program that writes a CaptureClock (only a capture does) is cut off, what came before stays") {
  gnomon::protocol::CaptureClock reading{};
  reading.capture_id = 5;
  reading.reference = 1;
  reading.before_ns = 10;
  reading.reference_ns = 1000;
  reading.after_ns = 20;
  StreamWriter w;
  w.Add(reading, {.domain = "forged"}).ThreadContext(1).ZoneBegin(1, 2000).ZoneEnd(2005);
  std::vector<uint8_t> stream = ValidStart();
  stream.insert(stream.end(), w.bytes().begin(), w.bytes().end());
  const auto worker = Receive(stream);
  CHECK(worker->state() == Worker::State::kFailed);
  CHECK(worker->error().find("CaptureClock, which only a capture writes") != std::string::npos);
  CHECK(worker->model().zone_count == 100);
  CHECK(worker->model().capture.capture_id != 5);
}

TEST_CASE("a program that vanishes mid-message leaves everything before it") {
  std::vector<uint8_t> stream = ValidStart();
  StreamWriter partial;
  partial.Message(1, 2, "a message that will be cut");
  stream.insert(stream.end(), partial.bytes().begin(), partial.bytes().begin() + 10);
  const auto worker = Receive(stream);
  CHECK(worker->state() == Worker::State::kDisconnected);
  CHECK(worker->error().find("inside a LogMessage") != std::string::npos);
  CHECK(worker->model().zone_count == 100);
}

TEST_CASE("a reader that holds the model never stalls the receiving thread, the model catches up after") {
  StreamWriter w;
  w.AppInfo("fake").SourceLocation(1, "Z", "f", "x.cpp", 1).ThreadContext(1);
  constexpr int kZones = 1'000'000;  // 22 MB, more than the socket and the receive buffer hold
  for (int i = 0; i < kZones; ++i) w.ZoneBegin(1, uint64_t(i) * 10).ZoneEnd(uint64_t(i) * 10 + 5);
  w.End(uint64_t(kZones) * 10);
  FakeProgram program(Hello(gnomon::protocol::kProtocolVersion, kOk), w.bytes());
  Worker worker(OptionsFor(program.port()));
  REQUIRE(worker.Connect().ok());
  uint64_t received_while_held = 0;
  uint64_t zones_while_held = 0;
  worker.WithModel([&](const TraceModel& m) {
    worker.Start();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (worker.bytes_received() < w.size() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    received_while_held = worker.bytes_received();
    zones_while_held = m.zone_count;
  });
  CHECK(received_while_held == w.size());  // all of it arrived while the model was held
  CHECK(zones_while_held == 0);            // and none of it was decoded under the reader
  worker.Join();
  CHECK(worker.state() == Worker::State::kEnded);
  CHECK(worker.model().zone_count == uint64_t(kZones));
}
