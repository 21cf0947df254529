// Hostile and broken peers: streams that lie, programs that vanish, captures that are
// killed, networks that stall. Each gets a clear error and bounded memory; the worker
// survives; what arrived before the fault is kept (and saved, by the capture tool).
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "../support/build_model.h"
#include "../support/fake_peers.h"
#include "../support/process.h"
#include "gnomon/protocol/handshake.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/protocol/settings.h"
#include "gnomon/server/report.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/worker.h"
#include "model/trace_builder.h"

using gnomon::server::TraceModel;
using gnomon::server::Worker;
using gnomon::test::StreamWriter;

namespace {

std::vector<uint8_t> OkHello() {
  return gnomon::test::ClientHelloBytes(gnomon::protocol::kProtocolVersion, 0,
                                        gnomon::protocol::kCapCpuZones);
}

StreamWriter ValidStart(int zones) {
  StreamWriter w;
  w.AppInfo("hostile").SourceLocation(1, "Good", "f", "x.cpp", 1).ThreadContext(1);
  for (int i = 0; i < zones; ++i) w.ZoneBegin(1, uint64_t(i) * 10).ZoneEnd(uint64_t(i) * 10 + 5);
  return w;
}

TraceModel Decode(const StreamWriter& w) { return gnomon::test::BuildModel(w); }

// Connects to the program at `port` and captures it until its stream ends.
std::unique_ptr<Worker> CaptureToEnd(uint16_t port) {
  Worker::Options options;
  options.port = port;
  auto worker = std::make_unique<Worker>(options);
  REQUIRE(worker->Connect().ok());
  worker->Start();
  worker->Join();
  return worker;
}

// Connects to the program at `port` as a server and says `flags` and `reserved` in its
// hello: the open socket, and the program's answer (nullopt when it answers nothing
// within two seconds).
std::pair<int, std::optional<gnomon::protocol::ParsedClientHello>> Hello(uint16_t port, uint16_t flags,
                                                                         uint32_t reserved) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  gnomon::protocol::ServerHello hello{};
  std::memcpy(hello.magic, gnomon::protocol::kServerHelloMagic.data(), sizeof(hello.magic));
  hello.version = gnomon::protocol::kProtocolVersion;
  hello.flags = flags;
  hello.reserved = reserved;
  uint8_t reply[sizeof(gnomon::protocol::ClientHello)];
  size_t got = 0;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) == ssize_t(sizeof(hello))) {
    pollfd pfd{fd, POLLIN, 0};
    while (got < sizeof(reply) && poll(&pfd, 1, 2000) == 1) {
      const ssize_t n = recv(fd, reply + got, sizeof(reply) - got, 0);
      if (n <= 0) break;
      got += size_t(n);
    }
  }
  return {fd, gnomon::protocol::ParseClientHello(reply, got)};
}

// Says a lane's hello to the program at `port` with `token`: the status it answers, or
// -1 when it answers nothing (within two seconds) and closes.
int LaneHelloStatus(uint16_t port, uint32_t token) {
  const auto [fd, answer] = Hello(port, gnomon::protocol::kServerLaneHello, token);
  close(fd);
  return answer ? int(answer->status) : -1;
}

}  // namespace

TEST_CASE(
    "maximal declared string lengths with the connection gone: a clear error, bounded memory, data kept") {
  StreamWriter w = ValidStart(50);
  // A SourceLocationDef declaring three 65,535-byte strings, then only 100 bytes of them.
  gnomon::protocol::SourceLocationDef lying{.id = 9, .line = 1, .color = 0};
  lying.name_length = lying.function_length = lying.file_length = 0xFFFF;
  w.RawMessage(lying);
  for (int i = 0; i < 100; ++i) w.Raw({'x'});
  gnomon::test::FakeProgram program(OkHello(), w.bytes());
  const auto worker = CaptureToEnd(program.port());
  CHECK(worker->state() == Worker::State::kDisconnected);
  CHECK(worker->error().find("inside a SourceLocationDef message (119 of its 196624 bytes arrived)") !=
        std::string::npos);
  CHECK(worker->model().zone_count == 50);
}

TEST_CASE("ids never defined and absurd or backward timestamps are counted, never fatal") {
  StreamWriter w;
  w.ThreadContext(3).ZoneBegin(77, 100).ZoneEnd(200);      // location 77 is never defined
  w.ZoneBegin(1, (uint64_t(1) << 63) + 12345).ZoneEnd(7);  // absurd begin, end before it
  w.ZoneBegin(1, ~uint64_t{0}).ZoneEnd(~uint64_t{0});      // the largest tick
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, 5)
      .Frame(gnomon::protocol::MessageType::kFrameMark, 0, 3);
  w.Plot(9, ~uint64_t{0}, 1e308).Message(~uint64_t{0}, 200, "severity out of range");
  const TraceModel m = Decode(w);
  CHECK(m.zone_count == 3);
  CHECK(m.diagnostics.clamped_zone_ends == 1);
  const auto stats = gnomon::server::ComputeZoneStatistics(m);
  std::ostringstream out;
  gnomon::server::PrintSummary(m, out);
  gnomon::server::PrintStatisticsTable(m, stats, out);
  CHECK(out.str().find("<unknown>") != std::string::npos);
  for (const auto& s : stats) CHECK(s.min_ns >= 0);
}

TEST_CASE("a flood of source-location definitions is bounded") {
  StreamWriter w;
  for (uint32_t i = 0; i < 300000; ++i) w.SourceLocation(1 + i * 7, "flood", "f", "f.cpp", i);
  const TraceModel m = Decode(w);
  CHECK(m.source_locations.size() <= gnomon::server::kMaxSourceLocationId);
  CHECK(m.diagnostics.invalid_ids > 250000);
}

TEST_CASE("the capture tool keeps and saves everything before a malformed message") {
  gnomon::test::ScratchDir dir;
  StreamWriter w = ValidStart(200);
  w.Raw({0xEE, 0xEE, 0xEE});
  gnomon::test::FakeProgram program(OkHello(), w.bytes());
  std::string output;
  const int rc =
      gnomon::test::RunCommand(std::string(GNOMON_CAPTURE) + " -q -p " + std::to_string(program.port()) +
                                   " -o " + dir.File("bad.gnomon"),
                               &output);
  CHECK(rc == 5);
  CHECK(output.find("unknown message type 238") != std::string::npos);
  TraceModel model;
  auto loaded = gnomon::server::LoadTrace(dir.File("bad.gnomon"), model);
  REQUIRE(loaded.ok());
  CHECK(model.zone_count == 200);
}

TEST_CASE("a capture killed with SIGKILL leaves a file that loads, and the program carries on") {
  gnomon::test::ScratchDir dir;
  gnomon::test::ChildProcess demo({GNOMON_DEMO, "--seconds", "5"},
                                  {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}},
                                  dir.File("demo.log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  gnomon::test::ChildProcess capture(
      {GNOMON_CAPTURE, "-q", "-p", std::to_string(port), "-o", dir.File("killed.gnomon")}, {},
      dir.File("capture.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // at least two 1 s blocks reach the disk
  capture.Signal(SIGKILL);
  CHECK(capture.Wait() == 128 + SIGKILL);
  CHECK(demo.Wait(std::chrono::seconds(20)) == 0);  // the program noticed, and finished its run
  TraceModel model;
  auto loaded = gnomon::server::LoadTrace(dir.File("killed.gnomon"), model);
  REQUIRE(loaded.ok());
  CHECK(loaded->warning.find("end marker") != std::string::npos);
  CHECK(model.zone_count > 1000);
}

namespace {

// `zones` zones (22 bytes of events each) recorded while a stalled server is connected,
// under a buffer policy; how many the program dropped, and its log.
struct StalledRun {
  uint64_t dropped = 0;
  std::string log;
  double seconds = 0;
};
StalledRun RunAgainstStalledServer(const std::map<std::string, std::string>& env, long zones = 400000) {
  gnomon::test::ScratchDir dir;
  std::map<std::string, std::string> all = env;
  all.insert({{"GNOMON_PORT", "0"},
              {"GNOMON_PORT_FILE", dir.File("port")},
              {"GNOMON_BUFFER_MB", "2"},
              {"GNOMON_EXIT_FLUSH_MS", "500"}});
  gnomon::test::ChildProcess program({GNOMON_TEST_PROGRAM, "flood-after-connect", std::to_string(zones)}, all,
                                     dir.File("log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  gnomon::test::StalledServer server(port);
  REQUIRE(server.connected());
  const auto start = std::chrono::steady_clock::now();
  CHECK(program.Wait(std::chrono::seconds(20)) == 0);
  StalledRun run;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.log = gnomon::test::ReadFile(dir.File("log"));
  CHECK(run.log.find("recorded " + std::to_string(zones) + " zones") != std::string::npos);
  const size_t at = run.log.find(", dropped ");
  REQUIRE(at != std::string::npos);
  run.dropped = std::stoull(run.log.substr(at + 10));
  return run;
}

}  // namespace

TEST_CASE("a stalled network never blocks the program's threads, and the exit wait is bounded") {
  const StalledRun run = RunAgainstStalledServer({{"GNOMON_BUFFER_POLICY", "drop"}});
  CHECK(run.seconds < 5.0);  // 400,000 zones, plus at most GNOMON_EXIT_FLUSH_MS at exit
  CHECK(run.dropped > 0);    // 8.8 MB of events against a 2 MB budget that nobody drains
}

TEST_CASE("buffer policies: auto grows to its ceiling then drops and says so, grow drops nothing") {
  constexpr long kZones = 1'000'000;  // 22 MB of events, nobody draining them
  const StalledRun fixed = RunAgainstStalledServer({{"GNOMON_BUFFER_POLICY", "drop"}}, kZones);
  const StalledRun ceiling =
      RunAgainstStalledServer({{"GNOMON_BUFFER_MAX_MB", "6"}}, kZones);  // auto: the default
  CHECK(ceiling.dropped > 0);
  CHECK(ceiling.dropped + 4 * (1 << 20) / 22 < fixed.dropped);  // 6 MB held instead of 2
  CHECK(ceiling.log.find("the event buffer is full (6 MiB, GNOMON_BUFFER_POLICY=auto)") != std::string::npos);
  CHECK(fixed.log.find("GNOMON_BUFFER_POLICY=drop") != std::string::npos);
  const StalledRun unbounded = RunAgainstStalledServer({{"GNOMON_BUFFER_POLICY", "grow"}}, kZones);
  CHECK(unbounded.dropped == 0);
  CHECK(unbounded.log.find("event buffer is full") == std::string::npos);
}

TEST_CASE("the program listens on loopback only, unless told otherwise") {
  gnomon::test::ScratchDir dir;
  gnomon::test::ChildProcess program({GNOMON_TEST_PROGRAM, "before-connect"},
                                     {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}},
                                     dir.File("log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  // /proc/net/tcp: "sl local_address rem_address st ...", addresses as hex ip:port.
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  bool found = false;
  char wanted[16];
  std::snprintf(wanted, sizeof(wanted), ":%04X", port);
  while (std::getline(tcp, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state == "0A" && local.size() > 8 && local.substr(8) == wanted) {
      CHECK(local.substr(0, 8) == "0100007F");  // 127.0.0.1
      found = true;
    }
  }
  CHECK(found);
  CaptureToEnd(port);  // lets the program finish
}

TEST_CASE("a server that sends anything after its hello is disconnected, the program goes on") {
  gnomon::test::ScratchDir dir;
  // It records until told to stop: were it to finish while the hostile server is still
  // connected, it would flush to that one and exit, whoever asks after.
  gnomon::test::ChildProcess program(
      {GNOMON_TEST_PROGRAM, "hold", dir.File("stop")},
      {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}, {"GNOMON_WAIT_FOR_SERVER_MS", "20000"}},
      dir.File("log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  {
    gnomon::test::StalledServer probe(port);
    REQUIRE(probe.connected());
    // What a "send me your memory at this address" request might look like; the protocol
    // has no such message, and any byte from a server ends its connection.
    probe.Send({0x01, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF});
    CHECK(probe.WaitForClose(3000));
  }
  // The program still serves a proper server afterwards (it waits at exit for one).
  std::ofstream(dir.File("stop")).put('\n');
  const auto worker = CaptureToEnd(port);
  CHECK(worker->state() == Worker::State::kEnded);
  CHECK(program.Wait() == 0);
}

TEST_CASE("the port file is written in one step, through no link a stranger planted") {
  gnomon::test::ScratchDir dir;
  std::ofstream(dir.File("victim")) << "not yours";
  for (const char* planted : {"port.tmp", "port.XXXXXX"}) {
    std::filesystem::create_symlink(dir.File("victim"), dir.File(planted));
  }
  gnomon::test::ChildProcess program({GNOMON_TEST_PROGRAM, "before-connect"},
                                     {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}},
                                     dir.File("log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  CHECK(gnomon::test::ReadFile(dir.File("victim")) == "not yours");
  CHECK(gnomon::test::ReadFile(dir.File("port")) == std::to_string(port) + "\n");
  CHECK_FALSE(std::filesystem::is_symlink(dir.File("port")));
  CaptureToEnd(port);  // lets the program finish
  CHECK(program.Wait() == 0);
}

TEST_CASE("a program ignores a port or a size it cannot use, and says why") {
  gnomon::test::ScratchDir dir;
  gnomon::test::ChildProcess program(
      {GNOMON_TEST_PROGRAM, "before-connect"},
      {{"GNOMON_PORT", "70000"}, {"GNOMON_BUFFER_MB", "-3"}, {"GNOMON_PORT_FILE", dir.File("port")}},
      dir.File("log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  CHECK(port >= gnomon::protocol::kDefaultPort);  // the default (or the next free one), not 70000 - 65536
  const std::string log = gnomon::test::ReadFile(dir.File("log"));
  CHECK(log.find("ignoring GNOMON_PORT: '70000' is not a port number (1-65535, or 0 for any free port)") !=
        std::string::npos);
  CHECK(log.find("ignoring GNOMON_BUFFER_MB: '-3' is not a whole number") != std::string::npos);
  CaptureToEnd(port);  // lets the program finish
  CHECK(program.Wait() == 0);
}

TEST_CASE("a program that cannot listen at its address says what to change, and waits for no server") {
  // 192.0.2.1 (TEST-NET-1) is no address of this machine, unless the kernel lets any
  // address be bound (net.ipv4.ip_nonlocal_bind).
  const bool nonlocal_binds = gnomon::test::ReadFile("/proc/sys/net/ipv4/ip_nonlocal_bind").starts_with("1");
  for (const auto& [address_text, said] :
       {std::pair<std::string, std::string>{"nonsense",
                                            "gnomon: 'nonsense' is not a numeric IP address; set "
                                            "GNOMON_ADDRESS to one"},
        {"192.0.2.1", "; set GNOMON_ADDRESS to an address of this machine, e.g. 127.0.0.1"}}) {
    const std::string& address = address_text;  // CAPTURE's lambda takes it
    CAPTURE(address);
    if (address == "192.0.2.1" && nonlocal_binds) {
      MESSAGE("skipped: this kernel binds addresses that are not its own");
      continue;
    }
    gnomon::test::ScratchDir dir;
    // With nowhere to listen and no collector, nothing can connect: gnomon_wait_for_server
    // says no at once rather than after its 20 s, and the program ends without waiting.
    gnomon::test::ChildProcess program({GNOMON_TEST_PROGRAM, "before-connect"},
                                       {{"GNOMON_ADDRESS", address}, {"GNOMON_PORT", "0"}}, dir.File("log"));
    CHECK(program.Wait(std::chrono::seconds(10)) == 3);
    const std::string log = gnomon::test::ReadFile(dir.File("log"));
    CHECK_MESSAGE(log.find(said) != std::string::npos, log);
    CHECK(log.find("no server connected") != std::string::npos);
  }
}

TEST_CASE("peers that connect and say nothing cannot lock a capture out") {
  for (const auto& [burst_size, period_ms] : {std::pair{0, 300}, std::pair{50, 100}}) {
    const int burst = burst_size;  // CAPTURE's lambda takes it
    CAPTURE(burst);
    gnomon::test::ScratchDir dir;
    // The program records until "release" exists, so it is still there for the second capture.
    gnomon::test::ChildProcess program({GNOMON_TEST_PROGRAM, "hold", dir.File("release")},
                                       {{"GNOMON_PORT", "0"},
                                        {"GNOMON_PORT_FILE", dir.File("port")},
                                        {"GNOMON_WAIT_FOR_SERVER_MS", "20000"}},
                                       dir.File("log"));
    const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
    REQUIRE(port != 0);
    gnomon::test::IdlePeers idle(port, burst, std::chrono::milliseconds(period_ms));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // they hold the program's slots
    REQUIRE(idle.connected() >= std::min(burst, 1) + 4);
    Worker::Options options;
    options.port = port;
    options.connect_timeout = std::chrono::seconds(5);
    Worker worker(options);
    const gnomon::server::Status connected = worker.Connect();
    REQUIRE_MESSAGE(connected.ok(), connected.message());
    worker.Start();
    // A second capture while the first is connected is told the program is busy.
    Worker second(options);
    const gnomon::server::Status refused = second.Connect();
    CHECK_MESSAGE(refused.message().find("already has a server connected") != std::string::npos,
                  refused.message());
    std::ofstream(dir.File("release")) << "done";
    worker.Join();
    CHECK(worker.state() == Worker::State::kEnded);
    CHECK(worker.model().zone_count > 0);
    CHECK(program.Wait() == 0);
  }
}

namespace {

// gnomon-capture --listen on a free port, writing `file`: the process, and its port once
// it says it listens (0 when it never did).
uint16_t StartListening(const gnomon::test::ScratchDir& dir, const std::string& file,
                        std::unique_ptr<gnomon::test::ChildProcess>& capture,
                        const std::vector<std::string>& more = {}) {
  std::vector<std::string> argv = {GNOMON_CAPTURE, "-q", "--listen", "0", "-o", file};
  argv.insert(argv.end(), more.begin(), more.end());
  capture = std::make_unique<gnomon::test::ChildProcess>(argv, std::map<std::string, std::string>{},
                                                         dir.File("capture.log"));
  const std::string said = "listening on 127.0.0.1:";
  for (int i = 0; i < 1000; ++i) {
    const std::string log = gnomon::test::ReadFile(dir.File("capture.log"));
    if (const size_t at = log.find(said); at != std::string::npos && log.find(';', at) != std::string::npos)
      return uint16_t(std::stoi(log.substr(at + said.size())));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

// The resident memory of process `pid` in bytes, from /proc.
uint64_t ResidentBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmRSS:")) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

}  // namespace

TEST_CASE("a flood of connections that say nothing cannot lock a program out of a --listen capture") {
  gnomon::test::ScratchDir dir;
  std::unique_ptr<gnomon::test::ChildProcess> capture;
  const uint16_t port = StartListening(dir, dir.File("flood.gnomon"), capture, {"-s", "12"});
  REQUIRE(port != 0);
  // 100 silent connections a second, each held open, from before the program starts.
  gnomon::test::IdlePeers idle(port, 64, std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  REQUIRE(idle.connected() >= 64);  // as many as the capture once had room for
  // The program looks for its collector once a second, and waits at exit (5 s) for one.
  gnomon::test::ChildProcess program(
      {GNOMON_TEST_PROGRAM, "zones"},
      {{"GNOMON_COLLECTOR", "127.0.0.1:" + std::to_string(port)}, {"GNOMON_WAIT_FOR_SERVER_MS", "5000"}},
      dir.File("program.log"));
  CHECK(program.Wait() == 0);
  CHECK(capture->Wait() == 0);
  const std::string log = gnomon::test::ReadFile(dir.File("capture.log"));
  CHECK_MESSAGE(log.find("no program connected") == std::string::npos, log);
  TraceModel model;
  auto loaded = gnomon::server::LoadTrace(dir.File("flood.gnomon"), model);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message(), "\n", log);
  CHECK(model.zone_count > 400);
  CHECK(model.diagnostics.ended_cleanly);
}

TEST_CASE("a --listen capture keeps only counters for a program that ended, not its worker") {
  gnomon::test::ScratchDir dir;
  std::unique_ptr<gnomon::test::ChildProcess> capture;
  const uint16_t port = StartListening(dir, dir.File("many.gnomon"), capture);
  REQUIRE(port != 0);
  StreamWriter w;
  w.AppInfo("short").SourceLocation(1, "Work", "f", "x.cpp", 1).ThreadContext(1);
  for (uint64_t i = 0; i < 20; ++i) w.ZoneBegin(1, 100 + i * 10).ZoneEnd(105 + i * 10);
  w.End(1000);
  auto run = [&](int programs) {
    for (int i = 0; i < programs; ++i) REQUIRE(gnomon::test::SpeakAsProgram(port, w.bytes()));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // each one's end noticed
  };
  run(150);  // the capture's threads, arenas and buffers are all made by now
  const uint64_t before = ResidentBytes(capture->pid());
  run(600);
  const uint64_t after = ResidentBytes(capture->pid());
  MESSAGE("grew by ", (int64_t(after) - int64_t(before)) / 600, " bytes a program");
  if (gnomon::test::kResidentMemoryIsMeasurable) CHECK(after < before + 600 * 2048);
  capture->Signal(SIGINT);
  CHECK(capture->Wait() == 0);
  gnomon::server::TraceSet set;
  REQUIRE(gnomon::server::LoadTraceSet(dir.File("many.gnomon"), set).ok());
  CHECK(set.processes.size() == 750);
  CHECK(set.processes.back().model.zone_count == 20);
}

TEST_CASE("a lane's hello without the connection's token is refused, the capture's lanes carry on") {
  gnomon::test::ScratchDir dir;
  gnomon::test::ChildProcess program(
      {GNOMON_TEST_PROGRAM, "hold", dir.File("release")},
      {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}, {"GNOMON_WAIT_FOR_SERVER_MS", "20000"}},
      dir.File("log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  const int busy = int(gnomon::protocol::HandshakeStatus::kBusy);
  CHECK(LaneHelloStatus(port, 1) == busy);  // no connection yet: no lanes to join
  Worker::Options options;
  options.port = port;
  options.build_model = false;
  options.lanes = 2;
  Worker worker(options);
  REQUIRE(worker.Connect().ok());
  worker.Start();
  for (int waited = 0; worker.lanes() < 2 && waited < 300; ++waited)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(worker.lanes() == 2);
  // Guessing the token: every guess is refused (the lanes are all taken, and the token
  // is the connection's own).
  for (uint32_t guess : {0u, 1u, 0xFFFFFFFFu}) CHECK(LaneHelloStatus(port, guess) == busy);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::ofstream(dir.File("release")) << "done";
  worker.Join();
  CHECK(worker.state() == Worker::State::kEnded);
  CHECK(worker.zones_received() > 0);
  CHECK(program.Wait() == 0);
}

TEST_CASE(
    "a server that gives up on its lanes is let go of at once: the program records on over one connection") {
  // The program waits for its server (and the lanes it asks for) before it records: the
  // first "Held" zone shows when that wait ended.
  gnomon::test::ScratchDir dir;
  gnomon::test::ChildProcess program({GNOMON_TEST_PROGRAM, "hold", dir.File("release")},
                                     {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}},
                                     dir.File("log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  const auto [main, answer] = Hello(port, gnomon::protocol::kServerWantsLanes, 2);
  REQUIRE(answer);
  REQUIRE(answer->status == gnomon::protocol::HandshakeStatus::kOk);
  REQUIRE((answer->capabilities & gnomon::protocol::kCapLanes) != 0);
  // One lane of the two, then the server gives up on them (as a worker whose second
  // lane could not connect does) and goes on with the main connection alone.
  const auto [lane, lane_answer] = Hello(port, gnomon::protocol::kServerLaneHello, answer->reserved);
  REQUIRE(lane_answer);
  CHECK(lane_answer->status == gnomon::protocol::HandshakeStatus::kOk);
  close(lane);
  const auto gave_up = std::chrono::steady_clock::now();
  std::string received;
  char chunk[4096];
  pollfd pfd{main, POLLIN, 0};
  while (received.find("Held") == std::string::npos &&
         std::chrono::steady_clock::now() - gave_up < std::chrono::seconds(20) && poll(&pfd, 1, 100) >= 0) {
    const ssize_t n = recv(main, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n == 0) break;
    if (n > 0) received.append(chunk, size_t(n));
  }
  // Not the lanes' own deadline (10 s): the lane's close says it.
  CHECK(received.find("Held") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - gave_up < std::chrono::seconds(5));
  std::ofstream(dir.File("release")) << "done";
  close(main);
  CHECK(program.Wait() == 0);
}
