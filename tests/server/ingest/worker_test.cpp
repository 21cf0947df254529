// The worker's connection against a fake program on real loopback TCP: handshakes that
// fail say what is wrong.
#include "gnomon/server/worker.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "../../support/worker_connection.h"
#include "gnomon/protocol/handshake.h"
#include "gnomon/protocol/messages.h"

using namespace gnomon::server;
using gnomon::test::FakeProgram;
using gnomon::test::Hello;
using gnomon::test::kOk;
using gnomon::test::OptionsFor;

TEST_CASE("handshake failures say what is wrong") {
  SUBCASE("version mismatch") {
    FakeProgram program(Hello(77, gnomon::protocol::HandshakeStatus::kVersionMismatch), {});
    Worker worker(OptionsFor(program.port()));
    const Status s = worker.Connect();
    CHECK(s.message().find("protocol version mismatch: the program speaks version 77") != std::string::npos);
  }
  SUBCASE("busy") {
    FakeProgram program(Hello(gnomon::protocol::kProtocolVersion, gnomon::protocol::HandshakeStatus::kBusy),
                        {});
    Worker worker(OptionsFor(program.port()));
    CHECK(worker.Connect().message().find("already has a server connected") != std::string::npos);
  }
  SUBCASE("not a Gnomon program") {
    FakeProgram program({'H', 'T', 'T', 'P',  '/',  '1',  '.',  '1', ' ', '2', '0', '0',
                         ' ', 'O', 'K', '\r', '\n', '\r', '\n', 'x', 'x', 'x', 'x', 'x'},
                        {});
    Worker worker(OptionsFor(program.port()));
    CHECK(worker.Connect().message().find("something other than a Gnomon handshake") != std::string::npos);
  }
  SUBCASE("unknown capabilities") {
    FakeProgram program(Hello(gnomon::protocol::kProtocolVersion, kOk, 1u << 30), {});
    Worker worker(OptionsFor(program.port()));
    CHECK(worker.Connect().message().find("features this server does not know") != std::string::npos);
  }
  SUBCASE("nobody listening") {
    uint16_t port = 0;
    {
      FakeProgram program({}, {});
      port = program.port();
    }
    Worker::Options options = OptionsFor(port);
    options.connect_timeout = std::chrono::milliseconds(300);
    Worker worker(options);
    CHECK(worker.Connect().message().find("cannot connect to 127.0.0.1:") != std::string::npos);
  }
}
