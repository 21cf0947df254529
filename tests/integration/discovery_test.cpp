// Running programs announce themselves, and the tools find them: on this machine through
// a private directory, on the LAN through datagrams; hostile files and datagrams change
// nothing.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "../support/process.h"
#include "gnomon/server/running_programs.h"

using gnomon::server::AnnouncementListener;
using gnomon::server::ListLocalPrograms;
using gnomon::server::RunningProgram;
using gnomon::test::ChildProcess;
using gnomon::test::ReadFile;
using gnomon::test::RunCommand;
using gnomon::test::RuntimeDir;
using gnomon::test::ScratchDir;
using namespace std::chrono_literals;

namespace {

// The program with `pid` among those listed, waiting up to `timeout` for it to appear and
// satisfy `ready`.
std::optional<RunningProgram> WaitListed(pid_t pid, auto ready, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    for (const RunningProgram& p : ListLocalPrograms()) {
      if (p.announcement.pid == uint32_t(pid) && ready(p)) return p;
    }
    std::this_thread::sleep_for(10ms);
  } while (std::chrono::steady_clock::now() < deadline);
  return std::nullopt;
}

std::optional<RunningProgram> WaitListed(pid_t pid) {
  return WaitListed(pid, [](const RunningProgram&) { return true; });
}

void SendDatagram(uint16_t port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
  close(fd);
}

// A program's settings to announce itself on the "LAN" to a listener on loopback `port`,
// listening on a free port it writes in `dir`.
std::map<std::string, std::string> AnnouncingOnLan(const ScratchDir& dir, uint16_t port) {
  return {{"GNOMON_PORT", "0"},
          {"GNOMON_PORT_FILE", dir.File("port")},
          {"GNOMON_ANNOUNCE", "lan"},
          {"GNOMON_ADDRESS", "127.0.0.1"},
          {"GNOMON_ANNOUNCE_TO", "127.0.0.1:" + std::to_string(port)}};
}

}  // namespace

TEST_CASE("a running program is listed with its pid and port, and withdrawn when it exits") {
  RuntimeDir runtime;
  ScratchDir dir;
  ChildProcess program({GNOMON_TEST_PROGRAM, "before-connect"},
                       {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}}, dir.File("log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  const auto listed = WaitListed(program.pid());
  REQUIRE(listed);
  CHECK(listed->is_local);
  CHECK(listed->announcement.name == "gnomon-test-program");
  CHECK(listed->announcement.port == port);
  CHECK(listed->connect_address == "127.0.0.1:" + std::to_string(port));
  CHECK_FALSE(listed->announcement.connected);
  struct stat st {};
  REQUIRE(stat(runtime.announce_dir().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);

  // gnomon-capture finds it by pid, and lists it.
  std::string output;
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " --list", &output) == 0);
  CHECK_MESSAGE(output.find("(pid " + std::to_string(program.pid()) +
                            ") at 127.0.0.1:" + std::to_string(port)) != std::string::npos,
                output);
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " -q --pid " + std::to_string(program.pid()) + " -o " +
                       dir.File("t.gnomon"),
                   &output) == 0);
  CHECK(program.Wait() == 0);
  CHECK(std::filesystem::file_size(dir.File("t.gnomon")) > 0);
  CHECK_FALSE(
      std::filesystem::exists(runtime.announce_dir() + "/" + std::to_string(program.pid()) + ".program"));
  CHECK(ListLocalPrograms().empty());
}

TEST_CASE("gnomon-capture --pid, run right after the program starts, waits for it to announce itself") {
  RuntimeDir runtime;
  ScratchDir dir;
  ChildProcess program({GNOMON_TEST_PROGRAM, "before-connect"}, {{"GNOMON_PORT", "0"}}, dir.File("log"));
  std::string output;
  CHECK_MESSAGE(RunCommand(std::string(GNOMON_CAPTURE) + " -q --pid " + std::to_string(program.pid()) +
                               " -o " + dir.File("t.gnomon"),
                           &output) == 0,
                output);
  CHECK(program.Wait() == 0);
  // A pid that is no program's fails at once, saying what to do.
  const auto start = std::chrono::steady_clock::now();
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " --pid " + std::to_string(program.pid()) + " -o " +
                       dir.File("u.gnomon"),
                   &output) == 2);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(output.find("gnomon-capture --list") != std::string::npos);
}

TEST_CASE("the announcement says when a server connects and leaves, and a killed program's file is pruned") {
  RuntimeDir runtime;
  ScratchDir dir;
  ChildProcess program({GNOMON_TEST_PROGRAM, "hold", dir.File("release")}, {{"GNOMON_PORT", "0"}},
                       dir.File("log"));
  const auto listed = WaitListed(program.pid());
  REQUIRE(listed);
  ChildProcess capture(
      {GNOMON_CAPTURE, "-q", "-p", std::to_string(listed->announcement.port), "-o", dir.File("t.gnomon")}, {},
      dir.File("capture.log"));
  CHECK(WaitListed(program.pid(), [](const RunningProgram& p) { return p.announcement.connected; }));
  std::string output;
  RunCommand(std::string(GNOMON_CAPTURE) + " --list", &output);
  CHECK(output.find("connected to a server") != std::string::npos);
  // The capture gone, the program says it is free again.
  capture.Signal(SIGKILL);
  capture.Wait();
  CHECK(WaitListed(program.pid(), [](const RunningProgram& p) { return !p.announcement.connected; }));

  program.Signal(SIGKILL);  // no chance to withdraw: the file stays, and the lister prunes it
  program.Wait();
  const std::string file = runtime.announce_dir() + "/" + std::to_string(program.pid()) + ".program";
  CHECK(std::filesystem::exists(file));
  CHECK(ListLocalPrograms().empty());
  CHECK_FALSE(std::filesystem::exists(file));
}

TEST_CASE("GNOMON_ANNOUNCE=off announces nothing") {
  RuntimeDir runtime;
  ScratchDir dir;
  ChildProcess program(
      {GNOMON_TEST_PROGRAM, "before-connect"},
      {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}, {"GNOMON_ANNOUNCE", "off"}},
      dir.File("log"));
  REQUIRE(gnomon::test::WaitForPortFile(dir.File("port")) != 0);
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(
      std::filesystem::exists(runtime.announce_dir() + "/" + std::to_string(program.pid()) + ".program"));
  program.Signal(SIGTERM);
  program.Wait();
}

TEST_CASE("a directory others could write to, or a link, is never used") {
  for (const char* kind : {"shared", "link", "file"}) {
    CAPTURE(kind);
    RuntimeDir runtime;
    ScratchDir dir;
    const std::string announce = runtime.announce_dir();
    const std::string elsewhere = dir.File("elsewhere");
    std::filesystem::create_directory(elsewhere);
    if (std::string(kind) == "shared") {
      std::filesystem::create_directory(announce);
      chmod(announce.c_str(), 0777);
    } else if (std::string(kind) == "link") {
      chmod(elsewhere.c_str(), 0700);
      std::filesystem::create_directory_symlink(elsewhere, announce);
    } else {
      std::ofstream(announce) << "not a directory";
    }
    ChildProcess program({GNOMON_TEST_PROGRAM, "before-connect"},
                         {{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}}, dir.File("log"));
    REQUIRE(gnomon::test::WaitForPortFile(dir.File("port")) != 0);
    std::this_thread::sleep_for(100ms);
    program.Signal(SIGTERM);
    program.Wait();
    const std::string log = ReadFile(dir.File("log"));
    CHECK_MESSAGE(log.find("not announcing this program locally") != std::string::npos, log);
    CHECK(std::filesystem::is_empty(elsewhere));
    std::string problem;
    CHECK(ListLocalPrograms(&problem).empty());
    CHECK(problem.find(announce) != std::string::npos);
  }
}

TEST_CASE("files in the directory that are not announcements, or no longer true, are skipped") {
  RuntimeDir runtime;
  const std::string announce = runtime.announce_dir();
  std::filesystem::create_directory(announce);
  chmod(announce.c_str(), 0700);
  // Live processes to name files after: this one, a sleeping child, and the parent.
  ChildProcess sleeper({"/bin/sleep", "30"});
  const std::string self = std::to_string(getpid()), child = std::to_string(sleeper.pid()),
                    parent = std::to_string(getppid());
  auto announcement = [&](uint32_t pid, uint64_t start_ticks) {
    return gnomon::protocol::FormatAnnouncement({.name = "real",
                                                 .pid = pid,
                                                 .host = "",
                                                 .address = "127.0.0.1",
                                                 .port = 4242,
                                                 .start_unix_ns = 0,
                                                 .start_ticks = start_ticks});
  };
  // The one good file: this process, started when it did.
  std::ofstream(announce + "/" + self + ".program")
      << announcement(uint32_t(getpid()), gnomon::protocol::ProcessStartTicks(uint32_t(getpid())));
  std::ofstream(announce + "/" + self + "x.program") << "junk";
  std::ofstream(announce + "/1.program") << announcement(2, 0);  // pid 1 is not this file's
  std::ofstream(announce + "/" + parent + ".program") << std::string(100000, 'x');      // too long
  std::filesystem::create_symlink("/etc/passwd", announce + "/" + child + ".program");  // a link
  const std::string fifo = announce + "/" + std::to_string(getpgrp()) + ".program";
  if (getpgrp() != getpid()) mkfifo(fifo.c_str(), 0600);  // a FIFO: never opened for long
  const auto listed = ListLocalPrograms();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].announcement.port == 4242);
  CHECK(std::filesystem::exists(announce + "/" + child + ".program"));  // skipped, not removed

  // The same pid, but another process's start: the pid was reused, and the file is pruned.
  std::ofstream(announce + "/" + self + ".program") << announcement(uint32_t(getpid()), 1);
  CHECK(ListLocalPrograms().empty());
  CHECK_FALSE(std::filesystem::exists(announce + "/" + self + ".program"));
}

TEST_CASE("a child made by fork() that exits leaves its parent announced") {
  RuntimeDir runtime;
  ScratchDir dir;
  ChildProcess program({GNOMON_TEST_PROGRAM, "fork-exit", dir.File("release")}, {{"GNOMON_PORT", "0"}},
                       dir.File("log"));
  REQUIRE(WaitListed(program.pid()));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (ReadFile(dir.File("log")).find("child exited") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(ReadFile(dir.File("log")).find("child exited") != std::string::npos);
  std::this_thread::sleep_for(100ms);
  CHECK(WaitListed(
      program.pid(), [](const RunningProgram&) { return true; }, 100ms));
  std::ofstream(dir.File("release")) << "go";
  CHECK(program.Wait() == 0);
  CHECK(ListLocalPrograms().empty());  // the parent withdrew it at its own exit
}

TEST_CASE("a GNOMON_ANNOUNCE_TO that is not IPv4[:PORT] is refused, and the program stays on loopback") {
  RuntimeDir runtime;
  ScratchDir dir;
  for (const char* bad : {"[::1]:9420", "ff02::1", "lan.example", "10.0.0.1:0"}) {
    CAPTURE(bad);
    ChildProcess program({GNOMON_TEST_PROGRAM, "before-connect"},
                         {{"GNOMON_PORT", "0"}, {"GNOMON_ANNOUNCE", "lan"}, {"GNOMON_ANNOUNCE_TO", bad}},
                         dir.File("log"));
    const auto listed = WaitListed(program.pid());
    REQUIRE(listed);
    CHECK(listed->announcement.address == "127.0.0.1");  // not exposed on every interface
    program.Signal(SIGTERM);
    program.Wait();
    const std::string log = ReadFile(dir.File("log"));
    CHECK_MESSAGE(log.find("is not IPv4[:PORT]") != std::string::npos, log);
  }
}

TEST_CASE("LAN announcements are heard, and forged or flooding datagrams stay bounded") {
  RuntimeDir runtime;
  AnnouncementListener listener(0);
  REQUIRE(listener.error().empty());
  ScratchDir dir;
  ChildProcess program({GNOMON_TEST_PROGRAM, "before-connect"}, AnnouncingOnLan(dir, listener.port()),
                       dir.File("log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  SendDatagram(listener.port(), "not an announcement");
  SendDatagram(listener.port(), std::string(5000, 'x'));
  std::optional<RunningProgram> heard;
  for (int i = 0; i < 50 && !heard; ++i) {
    listener.Poll(100ms);
    for (const RunningProgram& p : listener.programs()) {
      if (p.announcement.pid == uint32_t(program.pid())) heard = p;
    }
  }
  REQUIRE(heard);
  CHECK_FALSE(heard->is_local);
  CHECK(heard->connect_address == "127.0.0.1:" + std::to_string(port));
  CHECK(listener.programs().size() == 1);

  // Thousands of made-up programs, each from a socket of its own, in bursts the socket
  // can hold: the list keeps at most 256 of one host, and the real program, announcing
  // each second, is still heard.
  for (uint32_t pid = 1; pid <= 3000; ++pid) {
    SendDatagram(listener.port(),
                 gnomon::protocol::FormatAnnouncement(
                     {.name = "fake", .pid = pid + 100000, .host = "", .address = "127.0.0.1", .port = 9}));
    if (pid % 100 == 0) listener.Poll(1ms);
  }
  listener.Poll(1500ms);
  CHECK(listener.programs().size() == 256);
  bool still_heard = false;
  for (const RunningProgram& p : listener.programs())
    still_heard |= p.announcement.pid == uint32_t(program.pid());
  CHECK(still_heard);
  // A datagram naming another address: the sender is connected to, not that address.
  SendDatagram(listener.port(),
               gnomon::protocol::FormatAnnouncement(
                   {.name = "elsewhere", .pid = 77, .host = "", .address = "10.1.2.3", .port = 22}));
  listener.Poll(50ms);
  for (const RunningProgram& p : listener.programs()) {
    if (p.announcement.pid == 77) CHECK(p.connect_address == "127.0.0.1:22");
  }
  // Merged with the local list, the program is listed once.
  const auto merged = gnomon::server::MergePrograms(ListLocalPrograms(), {*heard});
  CHECK(std::count_if(merged.begin(), merged.end(), [&](const RunningProgram& p) {
          return p.announcement.pid == uint32_t(program.pid());
        }) == 1);
  program.Signal(SIGTERM);
  program.Wait();
}

TEST_CASE("a LAN announcement flood from one sender cannot hide a real program") {
  RuntimeDir runtime;
  ScratchDir dir;
  AnnouncementListener listener(0);
  REQUIRE(listener.error().empty());
  ChildProcess program({GNOMON_TEST_PROGRAM, "before-connect"}, AnnouncingOnLan(dir, listener.port()),
                       dir.File("log"));
  REQUIRE(gnomon::test::WaitForPortFile(dir.File("port")) != 0);
  // 3,000 made-up programs a second from one socket, for as long as a --list --lan looks.
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> sent{0};
  std::thread flood([&] {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(listener.port());
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (uint32_t pid = 200000; !stop.load(); ++pid) {
      const std::string bytes = gnomon::protocol::FormatAnnouncement(
          {.name = "forged", .pid = pid, .host = "", .address = "127.0.0.1", .port = 9});
      sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
      ++sent;
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
    close(fd);
  });
  listener.Poll(2500ms);
  stop.store(true);
  flood.join();
  REQUIRE(sent.load() > 3000);
  size_t forged = 0;
  bool heard = false;
  for (const RunningProgram& p : listener.programs()) {
    forged += p.announcement.name == "forged";
    heard |= p.announcement.pid == uint32_t(program.pid());
  }
  CHECK(heard);
  CHECK(forged <= 4);  // one sender, one program: a few at most
  program.Signal(SIGTERM);
  program.Wait();
}
