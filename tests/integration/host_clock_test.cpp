// A program's clock against the capture's, over real TCP: programs started in Linux
// time namespaces (their CLOCK_MONOTONIC and CLOCK_MONOTONIC_RAW shifted by a known
// number of seconds, as another host's would be) are placed by the capture's clock
// exchanges within the stated bound. Needs root (unshare --time); skipped with a
// message elsewhere.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "../support/json_check.h"
#include "../support/process.h"
#include "capture_helper.h"
#include "gnomon/server/host_clock_model.h"
#include "gnomon/server/json_report.h"
#include "gnomon/server/process_timeline.h"
#include "gnomon/server/trace_loader.h"

using gnomon::server::HostClockModel;
using gnomon::test::CaptureProgram;

namespace {

// util-linux's unshare, or "" when there is none.
std::string UnsharePath() {
  for (const char* path : {"/usr/bin/unshare", "/bin/unshare"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

bool TimeNamespacesAllowed() {
  return geteuid() == 0 && !UnsharePath().empty() &&
         gnomon::test::RunCommand(UnsharePath() + " --time --monotonic 1 true") == 0;
}

// Captures the demo for a second and a half in a time namespace `seconds` ahead (none
// for 0), and checks the capture finds the program's clock that far ahead.
void CheckProgramAhead(int64_t seconds) {
  CAPTURE(seconds);
  std::vector<std::string> argv;
  if (seconds != 0) argv = {UnsharePath(), "--time", "--monotonic", std::to_string(seconds)};
  for (const char* arg : {GNOMON_DEMO, "--seconds", "1.5"}) argv.push_back(arg);
  auto capture = CaptureProgram(argv, {{"GNOMON_RANK", "3"}});
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const auto& m = capture.model();
  CHECK(m.program.rank == 3);
  CHECK_FALSE(m.program.host.empty());
  // Ten probes in the first 100 ms, then ten a second.
  REQUIRE(m.host_clock_exchanges.size() >= 12);
  // Every exchange brackets the truth: capture = program - seconds.
  const int64_t truth = -seconds * 1'000'000'000;
  for (const auto& e : m.host_clock_exchanges) {
    CHECK(int64_t(e.probe_sent_ns) - int64_t(e.receive_ns) <= truth);
    CHECK(truth <= int64_t(e.reply_received_ns) - int64_t(e.send_ns));
  }
  const HostClockModel clock(m.host_clock_exchanges);
  CHECK(clock.rejected() == 0);
  CHECK(clock.epochs().size() == 1);
  const auto* epoch = clock.main_epoch();
  REQUIRE(epoch != nullptr);
  MESSAGE("offset error ", epoch->offset_ns() - truth, " ns, stated +/- ", epoch->uncertainty_ns(), " ns");
  CHECK(std::llabs(epoch->offset_ns() - truth) <= epoch->uncertainty_ns());
  CHECK(epoch->uncertainty_ns() < 5'000'000);  // loopback: far under a millisecond, even on a busy machine

  // The report's JSON says the same, per process.
  std::ostringstream json;
  gnomon::server::WriteJsonReport(m, json);
  gnomon::test::JsonValue report;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(json.str(), report, error), error);
  const auto* processes = report.Find("processes");
  REQUIRE(processes != nullptr);
  REQUIRE(processes->array.size() == 1);
  const auto& process = processes->array[0];
  REQUIRE(process.Find("rank") != nullptr);
  CHECK(process.Find("rank")->number == 3);
  REQUIRE(process.Find("clock_offset_ns") != nullptr);
  CHECK(process.Find("clock_offset_ns")->number == double(epoch->offset_ns()));
  CHECK(process.Find("clock_uncertainty_ns")->number == double(epoch->uncertainty_ns()));
  CHECK(process.Find("host")->string == m.program.host);
}

// Where a `gnomon-capture --listen` logging to `log` listens, as its GNOMON_COLLECTOR
// line says ("" when it has not said so within 10 s).
std::string ListeningAt(const std::string& log) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    const std::string text = gnomon::test::ReadFile(log);
    const size_t at = text.find("GNOMON_COLLECTOR=");
    const size_t end = at == std::string::npos ? at : text.find(' ', at);
    if (end != std::string::npos) return text.substr(at + 17, end - at - 17);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

// Starts the demo in a time namespace `ahead[i]` seconds ahead (none for 0), one per
// entry, captures them all with one gnomon-capture (-a for each), and checks that the
// file holds each as a process of its own, its clock found within the stated bound.
void CheckOneCaptureOfPrograms(const std::vector<int64_t>& ahead) {
  gnomon::test::ScratchDir dir;
  std::vector<std::unique_ptr<gnomon::test::ChildProcess>> programs;
  std::string command = std::string(GNOMON_CAPTURE) + " -q -o " + dir.File("all.gnomon");
  for (size_t i = 0; i < ahead.size(); ++i) {
    std::vector<std::string> argv;
    if (ahead[i] != 0) argv = {UnsharePath(), "--time", "--monotonic", std::to_string(ahead[i])};
    for (const char* arg : {GNOMON_DEMO, "--seconds", "1.5", "--workers", "2"}) argv.push_back(arg);
    const std::string port_file = dir.File("port" + std::to_string(i));
    programs.push_back(std::make_unique<gnomon::test::ChildProcess>(
        argv,
        std::map<std::string, std::string>{{"GNOMON_PORT", "0"},
                                           {"GNOMON_PORT_FILE", port_file},
                                           {"GNOMON_WAIT_FOR_SERVER_MS", "20000"},
                                           {"GNOMON_RANK", std::to_string(i)}},
        dir.File("log" + std::to_string(i))));
    const uint16_t port = gnomon::test::WaitForPortFile(port_file);
    REQUIRE_MESSAGE(port != 0, gnomon::test::ReadFile(dir.File("log" + std::to_string(i))));
    command += " -a 127.0.0.1:" + std::to_string(port);
  }
  std::string output;
  REQUIRE_MESSAGE(gnomon::test::RunCommand(command, &output) == 0, output);
  for (auto& program : programs) CHECK(program->Wait() == 0);

  gnomon::server::TraceSet set;
  auto loaded = gnomon::server::LoadTraceSet(dir.File("all.gnomon"), set);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  CHECK(loaded->warning.empty());
  REQUIRE(set.processes.size() == ahead.size());
  std::vector<uint32_t> pids;
  for (size_t i = 0; i < ahead.size(); ++i) {
    CAPTURE(i);
    const auto& process = set.processes[i];
    CHECK(process.stream == i);
    const auto& m = process.model;
    CHECK(m.program.rank == int(i));  // -a order is stream order
    CHECK(m.zone_count > 100);
    pids.push_back(m.program.pid);
    const HostClockModel clock(m.host_clock_exchanges);
    CHECK(clock.rejected() == 0);
    const auto* epoch = clock.main_epoch();
    REQUIRE(epoch != nullptr);
    const int64_t truth = -ahead[i] * 1'000'000'000;
    MESSAGE("program ", i, ": offset error ", epoch->offset_ns() - truth, " ns, stated +/- ",
            epoch->uncertainty_ns(), " ns");
    CHECK(std::llabs(epoch->offset_ns() - truth) <= epoch->uncertainty_ns());
  }
  CHECK(pids[0] != pids[1]);

  // gnomon-report lists every program, with its clock.
  REQUIRE(gnomon::test::RunCommand(std::string(GNOMON_REPORT) + " " + dir.File("all.gnomon") + " --json -",
                                   &output) == 0);
  gnomon::test::JsonValue report;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(output.substr(output.find('{')), report, error), error);
  const auto* processes = report.Find("processes");
  REQUIRE(processes != nullptr);
  REQUIRE(processes->array.size() == ahead.size());
  for (size_t i = 0; i < ahead.size(); ++i) {
    CHECK(processes->array[i].Find("rank")->number == double(i));
    CHECK(processes->array[i].Find("pid")->number == double(pids[i]));
    CHECK(processes->array[i].Find("zones")->number == double(set.processes[i].model.zone_count));
  }
  // The programs compared: every demo zone runs in all of them.
  const auto* across = report.Find("across_processes");
  REQUIRE(across != nullptr);
  REQUIRE(!across->Find("zones")->array.empty());
  for (const auto& zone : across->Find("zones")->array)
    CHECK(zone.Find("processes")->number == double(ahead.size()));
  REQUIRE(gnomon::test::RunCommand(std::string(GNOMON_REPORT) + " " + dir.File("all.gnomon"), &output) == 0);
  CHECK(output.find("=== The " + std::to_string(ahead.size()) + " programs compared ===") !=
        std::string::npos);
  CHECK(output.find("Frames step by step") != std::string::npos);

  // The Chrome export puts each program under its own pid, on the capture's clock: the
  // programs ran side by side, so their first zones lie within a second of each other,
  // whatever their own clocks say.
  REQUIRE(gnomon::test::RunCommand(std::string(GNOMON_REPORT) + " " + dir.File("all.gnomon") + " --chrome -",
                                   &output) == 0);
  gnomon::test::JsonValue chrome;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(output.substr(output.find('{')), chrome, error), error);
  std::map<double, double> earliest_us;  // by pid
  for (const auto& e : chrome.Find("traceEvents")->array) {
    if (e.Find("ph")->string != "X" || e.Find("cat")->string != "zone") continue;
    const double pid = e.Find("pid")->number, ts = e.Find("ts")->number;
    earliest_us[pid] = earliest_us.contains(pid) ? std::min(earliest_us[pid], ts) : ts;
  }
  REQUIRE(earliest_us.size() == ahead.size());
  for (const auto& [program, ts] : earliest_us) {
    const auto pid = program;  // CAPTURE's lambda takes it
    CAPTURE(pid);
    CHECK(ts >= 0);
    CHECK(ts < 1e6);
  }
}

// Each zone of one name of a program, as (begin, end) on its own clock and on the
// trace's timeline, with the widest bound of the mapping.
struct Placed {
  std::vector<int64_t> mapped, own;
  uint64_t bound_ns = 0;
};
Placed Place(const gnomon::server::ProcessTimeline& timeline, const std::string& name) {
  Placed placed;
  const gnomon::server::TraceModel& m = timeline.model();
  for (const auto& thread : m.threads) {
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      if (m.ZoneName(thread, i) != name) continue;
      const int64_t own = m.clock.TickToNs(thread.zones[i].begin_tick);
      const auto at = timeline.At(own);
      REQUIRE(at.valid);
      placed.own.push_back(own);
      placed.mapped.push_back(timeline.Ns(own));
      placed.bound_ns = std::max(placed.bound_ns, at.uncertainty_ns);
    }
  }
  return placed;
}

// The `messages` messages of gnomon-test-program's send and receive sides, placed on
// one timeline: each received after it was sent, though their own clocks say otherwise.
void CheckCausal(const gnomon::server::TraceSet& set, long messages) {
  std::vector<const gnomon::server::TraceModel*> models;
  for (const auto& process : set.processes) models.push_back(&process.model);
  const auto timelines = gnomon::server::ProcessTimeline::Of(models);
  REQUIRE(timelines.size() == 2);
  const Placed sent = Place(timelines[0], "Send");
  const Placed received = Place(timelines[1], "Receive");
  REQUIRE(sent.mapped.size() == size_t(messages));
  REQUIRE(received.mapped.size() == size_t(messages));
  // Each message was written at least 200 us after its send zone began, so where the
  // two mappings' bounds add to less than that (they do unless the machine is so loaded
  // that every exchange of a second waited), every message must come out causal; and
  // none may be placed further from the truth than the bounds allow.
  const int64_t bounds = int64_t(sent.bound_ns + received.bound_ns);
  int64_t closest = INT64_MAX;
  for (long k = 0; k < messages; ++k) {
    CAPTURE(k);
    CHECK(received.own[k] < sent.own[k]);  // on their own clocks: effect before cause
    if (bounds < 200'000) CHECK(received.mapped[k] > sent.mapped[k]);  // on the timeline: cause, then effect
    closest = std::min(closest, received.mapped[k] - sent.mapped[k]);
  }
  // Even where the bounds are load-dominated (every exchange of a second waited, tens of
  // ms), they hold: past the last knot the mapping follows no slope its knots cannot tell.
  CHECK(closest >= 200'000 - int64_t(bounds));
  CHECK(bounds < 50'000'000);
  MESSAGE("closest message: received ", closest, " ns after the send began; bounds +/- ", sent.bound_ns,
          " and ", received.bound_ns, " ns");
}

// gnomon-test-program's `side` of `messages` messages through `fifo`, in a time
// namespace `ahead` seconds ahead, waiting for a capture; its port once it listens.
std::unique_ptr<gnomon::test::ChildProcess> StartMessenger(const gnomon::test::ScratchDir& dir,
                                                           const std::string& side, int64_t ahead,
                                                           const std::string& fifo, long messages,
                                                           uint16_t& port) {
  const std::string port_file = dir.File(side + ".port");
  auto program = std::make_unique<gnomon::test::ChildProcess>(
      std::vector<std::string>{UnsharePath(), "--time", "--monotonic", std::to_string(ahead),
                               GNOMON_TEST_PROGRAM, side, fifo, std::to_string(messages)},
      std::map<std::string, std::string>{
          {"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", port_file}, {"GNOMON_WAIT_FOR_SERVER_MS", "20000"}},
      dir.File(side + ".log"));
  port = gnomon::test::WaitForPortFile(port_file);
  return program;
}

}  // namespace

TEST_CASE(
    "host clocks: programs whose clocks run 1,000 s and 5,000 s ahead are placed within the stated bound") {
  if (!TimeNamespacesAllowed()) {
    MESSAGE("skipped: time namespaces need root and a kernel that allows them (unshare --time)");
    return;
  }
  CheckProgramAhead(1000);
  CheckProgramAhead(5000);
}

TEST_CASE("host clocks: a program on the capture's own clock is found there, within the stated bound") {
  CheckProgramAhead(0);
}

TEST_CASE("host clocks: one capture of two programs 1,000 s and 5,000 s ahead: two processes, each placed") {
  if (!TimeNamespacesAllowed()) {
    MESSAGE("skipped: time namespaces need root and a kernel that allows them (unshare --time)");
    return;
  }
  CheckOneCaptureOfPrograms({1000, 5000});
}

TEST_CASE("host clocks: one capture of three programs on this machine: three processes, one file") {
  CheckOneCaptureOfPrograms({0, 0, 0});
}

TEST_CASE("--listen: programs that connect out come and go during the capture, and every one is a process") {
  gnomon::test::ScratchDir dir;
  gnomon::test::ChildProcess capture(
      {GNOMON_CAPTURE, "-o", dir.File("cluster.gnomon"), "--listen", "127.0.0.1:0"}, {},
      dir.File("capture.log"));
  const std::string collector = ListeningAt(dir.File("capture.log"));  // it says where
  REQUIRE_MESSAGE(collector.starts_with("127.0.0.1:"), gnomon::test::ReadFile(dir.File("capture.log")));
  auto run = [&](const std::string& name, const char* seconds) {
    return std::make_unique<gnomon::test::ChildProcess>(
        std::vector<std::string>{GNOMON_DEMO, "--seconds", seconds, "--workers", "1"},
        std::map<std::string, std::string>{
            {"GNOMON_COLLECTOR", collector}, {"GNOMON_PORT", "0"}, {"GNOMON_WAIT_FOR_SERVER_MS", "20000"}},
        dir.File(name + ".log"));
  };
  // One program, gone before the next two start together.
  std::set<uint32_t> pids;
  auto first = run("first", "0.3");
  pids.insert(uint32_t(first->pid()));
  CHECK(first->Wait() == 0);
  // A peer that connects and leaves without a word is named once, and forgotten.
  const int peer = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(uint16_t(std::stoi(collector.substr(10))));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(peer, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
  sockaddr_in local{};
  socklen_t local_size = sizeof(local);
  REQUIRE(getsockname(peer, reinterpret_cast<sockaddr*>(&local), &local_size) == 0);
  close(peer);
  auto second = run("second", "0.5");
  auto third = run("third", "0.2");
  pids.insert(uint32_t(second->pid()));
  pids.insert(uint32_t(third->pid()));
  CHECK(second->Wait() == 0);
  CHECK(third->Wait() == 0);
  capture.Signal(SIGINT);
  CHECK_MESSAGE(capture.Wait() == 0, gnomon::test::ReadFile(dir.File("capture.log")));
  const std::string log = gnomon::test::ReadFile(dir.File("capture.log"));
  const std::string silent = "127.0.0.1:" + std::to_string(ntohs(local.sin_port));
  const size_t said = log.find(silent);
  CHECK_MESSAGE(said != std::string::npos, log);
  CHECK_MESSAGE(log.find(silent, said + 1) == std::string::npos, log);  // named once
  CHECK(log.find("gnomon-capture: " + silent + " closed the connection during the handshake") !=
        std::string::npos);

  gnomon::server::TraceSet set;
  auto loaded = gnomon::server::LoadTraceSet(dir.File("cluster.gnomon"), set);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  CHECK(loaded->warning.empty());
  REQUIRE(set.processes.size() == 3);
  std::set<uint32_t> found;
  for (const auto& process : set.processes) {
    const auto& m = process.model;
    found.insert(m.program.pid);
    CHECK(m.diagnostics.ended_cleanly);
    CHECK(m.zone_count > 10);
    const HostClockModel clock(m.host_clock_exchanges);
    const auto* epoch = clock.main_epoch();
    REQUIRE(epoch != nullptr);
    CHECK(std::llabs(epoch->offset_ns()) <= int64_t(epoch->uncertainty_ns()));  // one clock: offset 0
  }
  CHECK(found == pids);
}

TEST_CASE("host clocks: every message between two programs on clocks 4,000 s apart comes out causal") {
  if (!TimeNamespacesAllowed()) {
    MESSAGE("skipped: time namespaces need root and a kernel that allows them (unshare --time)");
    return;
  }
  // The sender's clock runs 5,000 s ahead, the receiver's 1,000 s: on their own clocks
  // every message would arrive 4,000 s before it was sent.
  constexpr long kMessages = 200;
  gnomon::test::ScratchDir dir;
  const std::string fifo = dir.File("messages");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::vector<std::unique_ptr<gnomon::test::ChildProcess>> programs;
  std::string command = std::string(GNOMON_CAPTURE) + " -q -o " + dir.File("both.gnomon");
  for (const auto& [side, ahead] : {std::pair{"send", 5000}, {"receive", 1000}}) {
    uint16_t port = 0;
    programs.push_back(StartMessenger(dir, side, ahead, fifo, kMessages, port));
    REQUIRE(port != 0);
    command += " -a 127.0.0.1:" + std::to_string(port);
  }
  std::string output;
  REQUIRE_MESSAGE(gnomon::test::RunCommand(command, &output) == 0, output);
  for (auto& program : programs) CHECK(program->Wait() == 0);

  gnomon::server::TraceSet set;
  auto loaded = gnomon::server::LoadTraceSet(dir.File("both.gnomon"), set);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  REQUIRE(set.processes.size() == 2);
  CheckCausal(set, kMessages);
}

TEST_CASE("gnomon-merge: two captures on clocks 3,000 s apart, one program each: the merge is causal") {
  if (!TimeNamespacesAllowed()) {
    MESSAGE("skipped: time namespaces need root and a kernel that allows them (unshare --time)");
    return;
  }
  // Capture A on this machine's clock records the sender (5,000 s ahead); capture B,
  // 3,000 s ahead as if on another host, records the receiver (1,000 s ahead). Only
  // their readings of the common reference (CLOCK_REALTIME, which no namespace moves)
  // place B's program against A's.
  constexpr long kMessages = 100;
  gnomon::test::ScratchDir dir;
  const std::string fifo = dir.File("messages");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  uint16_t send_port = 0, receive_port = 0;
  auto sender = StartMessenger(dir, "send", 5000, fifo, kMessages, send_port);
  auto receiver = StartMessenger(dir, "receive", 1000, fifo, kMessages, receive_port);
  REQUIRE(send_port != 0);
  REQUIRE(receive_port != 0);
  gnomon::test::ChildProcess capture_b(
      {UnsharePath(), "--time", "--monotonic", "3000", GNOMON_CAPTURE, "-q", "-o", dir.File("b.gnomon"), "-a",
       "127.0.0.1:" + std::to_string(receive_port)},
      {}, dir.File("b.log"));
  std::string output;
  REQUIRE_MESSAGE(gnomon::test::RunCommand(std::string(GNOMON_CAPTURE) + " -q -o " + dir.File("a.gnomon") +
                                               " -a 127.0.0.1:" + std::to_string(send_port),
                                           &output) == 0,
                  output);
  REQUIRE_MESSAGE(capture_b.Wait() == 0, gnomon::test::ReadFile(dir.File("b.log")));
  CHECK(sender->Wait() == 0);
  CHECK(receiver->Wait() == 0);

  const std::string merged = dir.File("all.gnomon");
  REQUIRE_MESSAGE(gnomon::test::RunCommand(std::string(GNOMON_MERGE) + " " + dir.File("a.gnomon") + " " +
                                               dir.File("b.gnomon") + " -o " + merged,
                                           &output) == 0,
                  output);
  CHECK(output.find("2 program(s) from 2 file(s)") != std::string::npos);
  gnomon::server::TraceSet set;
  auto loaded = gnomon::server::LoadTraceSet(merged, set);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  REQUIRE(set.processes.size() == 2);
  const auto& a = set.processes[0].model.capture;
  const auto& b = set.processes[1].model.capture;
  CHECK(a.capture_id != b.capture_id);
  CHECK(a.domain == b.domain);  // one kernel: the reference's stated error cancels
  CHECK(a.readings.size() >= 1);
  CHECK(b.readings.size() >= 1);
  CheckCausal(set, kMessages);

  // The report places each program against the trace's timeline (capture A's clock):
  // the sender 5,000 s ahead of it, the receiver 1,000 s, each within its stated bound.
  std::string json;
  REQUIRE(gnomon::test::RunCommand(std::string(GNOMON_REPORT) + " " + merged + " --json -", &json) == 0);
  gnomon::test::JsonValue report;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(json, report, error), error);
  const auto* processes = report.Find("processes");
  REQUIRE(processes != nullptr);
  REQUIRE(processes->array.size() == 2);
  const double truth[] = {-5000e9, -1000e9};
  for (size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    const auto& process = processes->array[i];
    REQUIRE(process.Find("clock_offset_ns") != nullptr);
    REQUIRE(process.Find("clock_uncertainty_ns") != nullptr);
    const double offset = process.Find("clock_offset_ns")->number;
    const double bound = process.Find("clock_uncertainty_ns")->number;
    MESSAGE("program ", i, ": offset error ", offset - truth[i], " ns, stated +/- ", bound, " ns");
    CHECK(std::fabs(offset - truth[i]) <= bound);
    CHECK(bound <
          50'000'000);  // tens of us; tens of ms where every exchange of a second waited on a loaded machine
  }
}

TEST_CASE("--listen: 64 programs at once into one capture, each whole") {
  constexpr int kPrograms = 64;
  gnomon::test::ScratchDir dir;
  gnomon::test::ChildProcess capture(
      {GNOMON_CAPTURE, "-q", "-o", dir.File("64.gnomon"), "--listen", "127.0.0.1:0"}, {},
      dir.File("capture.log"));
  const std::string collector = ListeningAt(dir.File("capture.log"));
  REQUIRE(!collector.empty());
  // Each records its zones, then waits at exit until the capture has taken them all.
  std::vector<std::unique_ptr<gnomon::test::ChildProcess>> programs;
  for (int i = 0; i < kPrograms; ++i) {
    programs.push_back(std::make_unique<gnomon::test::ChildProcess>(
        std::vector<std::string>{GNOMON_TEST_PROGRAM, "zones"},
        std::map<std::string, std::string>{{"GNOMON_COLLECTOR", collector},
                                           {"GNOMON_PORT", "0"},
                                           {"GNOMON_ANNOUNCE", "off"},
                                           {"GNOMON_RANK", std::to_string(i)},
                                           {"GNOMON_WAIT_FOR_SERVER_MS", "30000"}},
        dir.File("program" + std::to_string(i) + ".log")));
  }
  for (auto& program : programs) CHECK(program->Wait(std::chrono::seconds(60)) == 0);
  capture.Signal(SIGINT);
  CHECK_MESSAGE(capture.Wait() == 0, gnomon::test::ReadFile(dir.File("capture.log")));

  gnomon::server::TraceSet set;
  auto loaded = gnomon::server::LoadTraceSet(dir.File("64.gnomon"), set);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  CHECK(loaded->warning.empty());
  REQUIRE(set.processes.size() == size_t(kPrograms));
  std::set<int> ranks;
  for (const auto& process : set.processes) {
    ranks.insert(process.model.program.rank);
    CHECK(process.model.diagnostics.ended_cleanly);
    CHECK(process.model.zone_count == 463);  // every zone of the test program's run
  }
  CHECK(ranks.size() == size_t(kPrograms));
}

TEST_CASE("gnomon_wait_for_server: a program that cannot listen waits for the collector it connects to") {
  gnomon::test::ScratchDir dir;
  gnomon::test::ChildProcess capture(
      {GNOMON_CAPTURE, "-o", dir.File("late.gnomon"), "--listen", "127.0.0.1:0"}, {},
      dir.File("capture.log"));
  const std::string collector = ListeningAt(dir.File("capture.log"));
  REQUIRE_MESSAGE(collector.starts_with("127.0.0.1:"), gnomon::test::ReadFile(dir.File("capture.log")));
  // The collector answers half a second late (stopped: the kernel accepts the connection
  // and it waits), and the program has no port of its own.
  capture.Signal(SIGSTOP);
  gnomon::test::ChildProcess program({GNOMON_TEST_PROGRAM, "before-connect"},
                                     {{"GNOMON_ADDRESS", "nonsense"},
                                      {"GNOMON_PORT", "0"},
                                      {"GNOMON_COLLECTOR", collector},
                                      {"GNOMON_ANNOUNCE", "off"},
                                      {"GNOMON_WAIT_FOR_SERVER_MS", "20000"}},
                                     dir.File("program.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  capture.Signal(SIGCONT);
  // It waited (gnomon_wait_for_server said yes), rather than giving up at once.
  CHECK_MESSAGE(program.Wait(std::chrono::seconds(30)) == 0, gnomon::test::ReadFile(dir.File("program.log")));
  CHECK(gnomon::test::ReadFile(dir.File("program.log")).find("'nonsense' is not a numeric IP address") !=
        std::string::npos);
  capture.Signal(SIGINT);
  REQUIRE_MESSAGE(capture.Wait() == 0, gnomon::test::ReadFile(dir.File("capture.log")));

  gnomon::server::TraceSet set;
  auto loaded = gnomon::server::LoadTraceSet(dir.File("late.gnomon"), set);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  REQUIRE(set.processes.size() == 1);
  const auto counts = gnomon::test::CountsByName(set.processes[0].model);
  CHECK(counts.at("Before") == 1000);  // kept until it connected
  CHECK(counts.at("After") == 1000);
}
