// Finding the programs that can be connected to, without running one: announcement files
// written into a runtime directory of the test's own (live, gone, reused, malformed), a
// directory that must not be read, datagrams sent to a LAN listener on loopback, and the
// lists merged and described.
#include "gnomon/server/running_programs.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "../../support/process.h"
#include "gnomon/protocol/discovery.h"

using gnomon::protocol::ProgramAnnouncement;
using gnomon::server::AnnouncementListener;
using gnomon::server::DescribeProgram;
using gnomon::server::ListLocalPrograms;
using gnomon::server::MergePrograms;
using gnomon::server::RunningProgram;
using gnomon::server::StartedAt;
using gnomon::test::RuntimeDir;
using gnomon::test::ScratchDir;
using namespace std::chrono_literals;

namespace {

std::string Announcement(uint32_t pid, const std::string& address, uint16_t port, uint64_t start_unix_ns,
                         uint64_t start_ticks = 0, const std::string& name = "demo") {
  return gnomon::protocol::FormatAnnouncement({.name = name,
                                               .pid = pid,
                                               .host = "",
                                               .address = address,
                                               .port = port,
                                               .start_unix_ns = start_unix_ns,
                                               .start_ticks = start_ticks});
}

// A UDP socket of its own: one sender, as one program is.
class Sender {
 public:
  Sender() : fd_(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}
  ~Sender() {
    if (fd_ >= 0) close(fd_);
  }
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;
  bool ok() const { return fd_ >= 0; }
  void Send(uint16_t port, const std::string& bytes) const {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sendto(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof(to));
  }

 private:
  int fd_;
};

std::vector<uint32_t> Pids(const std::vector<RunningProgram>& programs) {
  std::vector<uint32_t> pids;
  for (const RunningProgram& p : programs) pids.push_back(p.announcement.pid);
  return pids;
}

// Local time is UTC while it lives.
class Utc {
 public:
  Utc() {
    if (const char* tz = std::getenv("TZ")) old_ = tz;
    setenv("TZ", "UTC0", 1);
    tzset();
  }
  ~Utc() {
    if (old_) {
      setenv("TZ", old_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }
  Utc(const Utc&) = delete;
  Utc& operator=(const Utc&) = delete;

 private:
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("no announcement directory yet: no program, and no problem") {
  RuntimeDir runtime;
  std::string problem;
  CHECK(ListLocalPrograms(&problem).empty());
  CHECK(problem.empty());
}

TEST_CASE(
    "announcements of live processes are listed newest first, gone, reused and malformed ones are not") {
  RuntimeDir runtime;
  const std::string dir = runtime.announce_dir();
  REQUIRE(std::filesystem::create_directory(dir));
  REQUIRE(chmod(dir.c_str(), 0700) == 0);
  auto file = [&](const std::string& name) { return dir + "/" + name; };
  // Live processes to name files after: this one and its parent.
  const uint32_t self = uint32_t(getpid()), parent = uint32_t(getppid());
  const uint64_t self_started = gnomon::protocol::ProcessStartTicks(self);
  REQUIRE(self_started != 0);
  const std::string self_file = file(std::to_string(self) + ".program");
  const std::string parent_file = file(std::to_string(parent) + ".program");

  std::ofstream(self_file) << Announcement(self, "0.0.0.0", 4242, 1000, self_started, "self");
  std::ofstream(parent_file) << Announcement(self, "127.0.0.1", 4243,
                                             2000);  // says another pid than its name
  std::ofstream(file("2147483000.program")) << Announcement(2147483000, "127.0.0.1", 4244, 3000);  // gone
  std::ofstream(file(std::to_string(self) + "x.program")) << "junk";
  std::ofstream(file("notes.txt")) << "not an announcement";
  // Temporary files a program died writing: gone once a minute old.
  std::ofstream(file(std::to_string(self) + ".program.old")) << "half";
  std::filesystem::last_write_time(file(std::to_string(self) + ".program.old"),
                                   std::filesystem::file_time_type::clock::now() - 2min);
  std::ofstream(file(std::to_string(self) + ".program.new")) << "half";

  auto listed = ListLocalPrograms();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].is_local);
  CHECK(listed[0].announcement.pid == self);
  CHECK(listed[0].announcement.name == "self");
  CHECK(listed[0].connect_address == "127.0.0.1:4242");              // all interfaces: reached on loopback
  CHECK_FALSE(std::filesystem::exists(file("2147483000.program")));  // its process is gone
  CHECK_FALSE(std::filesystem::exists(file(std::to_string(self) + ".program.old")));
  CHECK(std::filesystem::exists(parent_file));  // skipped, not removed
  CHECK(std::filesystem::exists(file(std::to_string(self) + "x.program")));
  CHECK(std::filesystem::exists(file("notes.txt")));
  CHECK(std::filesystem::exists(file(std::to_string(self) + ".program.new")));

  // The parent's file made true, and newer: listed first.
  std::ofstream(parent_file, std::ios::trunc)
      << Announcement(parent, "::", 4243, 2000, gnomon::protocol::ProcessStartTicks(parent), "parent");
  listed = ListLocalPrograms();
  CHECK(Pids(listed) == std::vector<uint32_t>{parent, self});
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].connect_address == "[::1]:4243");

  // This process's file says another start: its pid was reused, and the file is pruned.
  std::ofstream(self_file, std::ios::trunc) << Announcement(self, "0.0.0.0", 4242, 1000, self_started + 1);
  CHECK(Pids(ListLocalPrograms()) == std::vector<uint32_t>{parent});
  CHECK_FALSE(std::filesystem::exists(self_file));

  // Too long to be an announcement: skipped, and left.
  std::ofstream(self_file) << Announcement(self, "0.0.0.0", 4242, 1000) << std::string(2000, '#');
  CHECK(Pids(ListLocalPrograms()) == std::vector<uint32_t>{parent});
  CHECK(std::filesystem::exists(self_file));
}

TEST_CASE(
    "an announcement directory that is a link, a file, or writable by others is never read, and says why") {
  const std::string self = std::to_string(getpid());
  const std::string sound = Announcement(uint32_t(getpid()), "127.0.0.1", 4242, 1000);
  for (const std::string kind : {"link", "file", "shared"}) {
    CAPTURE(kind);
    RuntimeDir runtime;
    ScratchDir elsewhere;  // private, and holding a sound announcement
    REQUIRE(chmod(elsewhere.path().c_str(), 0700) == 0);
    std::ofstream(elsewhere.File(self + ".program")) << sound;
    const std::string announce = runtime.announce_dir();
    if (kind == "link") {
      std::filesystem::create_directory_symlink(elsewhere.path(), announce);
    } else if (kind == "file") {
      std::ofstream(announce) << "not a directory";
    } else {
      REQUIRE(std::filesystem::create_directory(announce));
      REQUIRE(chmod(announce.c_str(), 0777) == 0);
      std::ofstream(announce + "/" + self + ".program") << sound;
    }
    std::string problem;
    CHECK(ListLocalPrograms(&problem).empty());
    CHECK(problem.find(announce) != std::string::npos);
    CHECK(problem.find(kind == "shared" ? "is writable by other users" : "is not a directory") !=
          std::string::npos);
    CHECK(problem.find("programs cannot announce themselves there") != std::string::npos);
  }
}

TEST_CASE(
    "a LAN listener hears well-formed announcements, reaches each at its sender, and keeps four a sender") {
  AnnouncementListener listener(0);
  REQUIRE(listener.error().empty());
  REQUIRE(listener.port() != 0);
  Sender one, two;
  REQUIRE(one.ok());
  REQUIRE(two.ok());
  one.Send(listener.port(), "not an announcement");
  one.Send(listener.port(), std::string(5000, 'x'));
  one.Send(listener.port(), Announcement(101, "0.0.0.0", 9001, 1));
  one.Send(listener.port(), Announcement(102, "10.1.2.3", 22, 2));  // names another machine
  listener.Poll(100ms);
  std::vector<RunningProgram> programs = listener.programs();
  CHECK(Pids(programs) == std::vector<uint32_t>{102, 101});  // newest first
  REQUIRE(programs.size() == 2);
  CHECK_FALSE(programs[0].is_local);
  CHECK(programs[0].connect_address == "127.0.0.1:22");  // where the datagram came from
  CHECK(programs[1].connect_address == "127.0.0.1:9001");

  // Six more programs from the same sender: it keeps the four heard last. One of them
  // announced again is the same program, told anew; another sender has room of its own.
  for (uint32_t pid = 201; pid <= 206; ++pid)
    one.Send(listener.port(), Announcement(pid, "127.0.0.1", uint16_t(9000 + pid), pid));
  one.Send(listener.port(), Announcement(206, "127.0.0.1", 9206, 206, 0, "demo again"));
  two.Send(listener.port(), Announcement(301, "127.0.0.1", 9301, 301));
  listener.Poll(100ms);
  programs = listener.programs();
  CHECK(Pids(programs) == std::vector<uint32_t>{301, 206, 205, 204, 203});
  REQUIRE(programs.size() == 5);
  CHECK(programs[1].announcement.name == "demo again");
}

TEST_CASE("local programs come first, then those heard on the LAN that are not the same host and pid") {
  const RunningProgram local{
      {.name = "demo", .pid = 10, .host = "build-7", .address = "127.0.0.1", .port = 9421},
      "127.0.0.1:9421",
      true};
  const RunningProgram same{
      {.name = "demo", .pid = 10, .host = "build-7", .address = "0.0.0.0", .port = 9421},
      "192.168.1.5:9421",
      false};
  const RunningProgram other_host{
      {.name = "demo", .pid = 10, .host = "build-8", .address = "0.0.0.0", .port = 9421},
      "192.168.1.6:9421",
      false};
  const RunningProgram other_pid{
      {.name = "demo", .pid = 11, .host = "build-7", .address = "0.0.0.0", .port = 9422},
      "192.168.1.5:9422",
      false};
  const std::vector<RunningProgram> merged = MergePrograms({local}, {same, other_host, other_pid});
  REQUIRE(merged.size() == 3);
  CHECK(merged[0].is_local);
  CHECK(merged[0].connect_address == "127.0.0.1:9421");
  CHECK(merged[1].connect_address == "192.168.1.6:9421");
  CHECK(merged[2].connect_address == "192.168.1.5:9422");
  CHECK(MergePrograms({}, {same}).size() == 1);
}

TEST_CASE(
    "a program is described by name, pid, its host when heard on the LAN, address, start, and a server") {
  RunningProgram program{
      {.name = "demo", .pid = 1234, .host = "build-7", .address = "127.0.0.1", .port = 9421},
      "127.0.0.1:9421",
      true};
  CHECK(StartedAt(program.announcement) == "?");  // not known
  CHECK(DescribeProgram(program) == "demo (pid 1234) at 127.0.0.1:9421, started ?");
  program.is_local = false;
  program.connect_address = "192.168.1.5:9421";
  program.announcement.name = "";
  program.announcement.connected = true;
  CHECK(DescribeProgram(program) ==
        "(unnamed) (pid 1234) on build-7 at 192.168.1.5:9421, started ?, connected to a server");
  // 2025-12-01 15:42:03.999999999 UTC, in the local time of the machine, here UTC.
  const Utc utc;
  ProgramAnnouncement started = program.announcement;
  started.start_unix_ns = 1'764'603'723'999'999'999u;
  CHECK(StartedAt(started) == "15:42:03");
}
