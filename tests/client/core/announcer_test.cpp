// How a program tells the tools that it runs (core/announcer.cpp): its announcement
// file, written in one step in a private runtime directory of the test's own (never
// in a directory others could write to), updated while a server is connected and
// removed when it stops; and, on the LAN, the same text in datagrams, here to a socket
// of the test's on loopback.
#include "core/announcer.h"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "../../support/process.h"
#include "gnomon/protocol/discovery.h"

using gnomon::client::AnnounceMode;
using gnomon::client::Announcer;
using gnomon::protocol::ParseAnnouncement;
using gnomon::protocol::ProgramAnnouncement;
using gnomon::test::ReadFile;
using gnomon::test::RuntimeDir;
using gnomon::test::ScratchDir;

namespace {

ProgramAnnouncement Sample(uint16_t port) {
  const auto pid = static_cast<uint32_t>(getpid());
  return {.name = "announced",
          .pid = pid,
          .host = "unit-host",
          .address = "127.0.0.1",
          .port = port,
          .start_unix_ns = 1234,
          .start_ticks = gnomon::protocol::ProcessStartTicks(pid),
          .connected = false};
}

std::string AnnouncementFile(const std::string& dir) {
  return dir + "/" + std::to_string(getpid()) + std::string(gnomon::protocol::kAnnounceFileSuffix);
}

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

unsigned Mode(const std::string& path) {
  struct stat st {};
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// A UDP socket on loopback, as a LAN listener.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
    socklen_t length = sizeof(address);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~Listener() { close(fd_); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  uint16_t port() const { return port_; }
  // The next datagram, or nothing within `timeout_ms`.
  std::optional<std::string> Receive(int timeout_ms) {
    pollfd pfd{fd_, POLLIN, 0};
    if (poll(&pfd, 1, timeout_ms) != 1) return std::nullopt;
    char text[2048];
    const ssize_t n = recv(fd_, text, sizeof(text), 0);
    if (n < 0) return std::nullopt;
    return std::string(text, size_t(n));
  }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace

TEST_CASE("the announcement is written privately when published, follows the connection, and goes at stop") {
  RuntimeDir runtime;
  const std::string file = AnnouncementFile(runtime.announce_dir());
  Announcer announcer(AnnounceMode::kLocal, "");
  CHECK_FALSE(Exists(file));
  const ProgramAnnouncement announced = Sample(4242);
  announcer.Publish(announced);
  REQUIRE(Exists(file));
  CHECK(Mode(runtime.announce_dir()) == 0700);  // made private
  CHECK(Mode(file) == 0600);
  CHECK(ParseAnnouncement(ReadFile(file)) == announced);
  announcer.SetConnected(true);
  const auto connected = ParseAnnouncement(ReadFile(file));
  REQUIRE(connected.has_value());
  CHECK(connected->connected);
  CHECK(connected->port == 4242);
  announcer.SetConnected(false);
  CHECK(ParseAnnouncement(ReadFile(file)) == announced);
  announcer.Withdraw();
  CHECK_FALSE(Exists(file));
  announcer.Withdraw();                                      // again: nothing to do
  CHECK(std::filesystem::is_empty(runtime.announce_dir()));  // no temporary file left either
}

TEST_CASE("an announcer that goes away takes its announcement with it") {
  RuntimeDir runtime;
  const std::string file = AnnouncementFile(runtime.announce_dir());
  {
    Announcer announcer(AnnounceMode::kLocal, "");
    announcer.Publish(Sample(4243));
    CHECK(Exists(file));
  }
  CHECK_FALSE(Exists(file));
}

TEST_CASE("GNOMON_ANNOUNCE=off: nothing is written, not even the directory") {
  RuntimeDir runtime;
  Announcer announcer(AnnounceMode::kOff, "");
  announcer.Publish(Sample(4244));
  announcer.SetConnected(true);
  CHECK_FALSE(Exists(runtime.announce_dir()));
}

TEST_CASE("a directory others may write to, or a link in its place, is never used, the program goes on") {
  RuntimeDir runtime;
  const std::string dir = runtime.announce_dir();
  SUBCASE("writable by others") {
    REQUIRE(mkdir(dir.c_str(), 0700) == 0);
    REQUIRE(chmod(dir.c_str(), 0777) == 0);
    std::string why;
    CHECK(gnomon::client::PrivateAnnounceDirectory(&why) == "");
    CHECK(why.find("writable by other users") != std::string::npos);
    CHECK(why.find("XDG_RUNTIME_DIR") != std::string::npos);  // and what to do
    Announcer announcer(AnnounceMode::kLocal, "");
    announcer.Publish(Sample(4245));
    CHECK(std::filesystem::is_empty(dir));
  }
  SUBCASE("a link to a private directory") {
    const std::string elsewhere = runtime.scratch().File("elsewhere");
    REQUIRE(mkdir(elsewhere.c_str(), 0700) == 0);
    REQUIRE(symlink(elsewhere.c_str(), dir.c_str()) == 0);
    std::string why;
    CHECK(gnomon::client::PrivateAnnounceDirectory(&why) == "");
    CHECK(why.find("not a directory") != std::string::npos);
    Announcer announcer(AnnounceMode::kLocal, "");
    announcer.Publish(Sample(4246));
    CHECK(std::filesystem::is_empty(elsewhere));
  }
  SUBCASE("a private one is used, and made when missing") {
    std::string why;
    CHECK(gnomon::client::PrivateAnnounceDirectory(&why) == dir);
    CHECK(why == "");
    CHECK(Mode(dir) == 0700);
  }
}

TEST_CASE("a file is written in one step: a link planted at its path is replaced, never followed") {
  ScratchDir dir;
  const std::string path = dir.File("port");
  REQUIRE(gnomon::client::WriteFileAtomically(path, "first\n", 0640));
  CHECK(ReadFile(path) == "first\n");
  CHECK(Mode(path) == 0640);
  const std::string victim = dir.File("victim");
  std::ofstream(victim) << "keep";
  REQUIRE(unlink(path.c_str()) == 0);
  REQUIRE(symlink(victim.c_str(), path.c_str()) == 0);
  REQUIRE(gnomon::client::WriteFileAtomically(path, "second\n", 0600));
  CHECK(ReadFile(victim) == "keep");
  CHECK(std::filesystem::is_regular_file(std::filesystem::symlink_status(path)));
  CHECK(ReadFile(path) == "second\n");
  size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++entries;
  CHECK(entries == 2);  // the temporary file became the file
  errno = 0;
  const bool written = gnomon::client::WriteFileAtomically(dir.File("missing/port"), "x", 0600);
  const int error = errno;
  CHECK_FALSE(written);
  CHECK(error == ENOENT);  // and says why
}

TEST_CASE("GNOMON_ANNOUNCE_TO takes an IPv4 address, with or without a port, and nothing else") {
  const auto broadcast = gnomon::client::ParseAnnounceDestination("192.168.1.255");
  REQUIRE(broadcast.has_value());
  CHECK(broadcast->sin_family == AF_INET);
  CHECK(ntohs(broadcast->sin_port) == gnomon::protocol::kAnnouncePort);
  CHECK(ntohl(broadcast->sin_addr.s_addr) == ((192u << 24) | (168u << 16) | (1u << 8) | 255u));
  const auto with_port = gnomon::client::ParseAnnounceDestination("10.0.0.5:9999");
  REQUIRE(with_port.has_value());
  CHECK(ntohs(with_port->sin_port) == 9999);
  CHECK(ntohl(with_port->sin_addr.s_addr) == ((10u << 24) | 5u));
  for (const char* refused :
       {"10.0.0.5:0", "10.0.0.5:70000", "10.0.0.5:", "::1", "[::1]:9420", "lan.example", "10.0.0.256", ""}) {
    CAPTURE(refused);
    CHECK_FALSE(gnomon::client::ParseAnnounceDestination(refused).has_value());
  }
}

TEST_CASE(
    "on the LAN: the text in a datagram once a second and when the connection changes, none once withdrawn") {
  RuntimeDir runtime;  // the local file is written too
  Listener listener;
  Announcer announcer(AnnounceMode::kLan, "127.0.0.1:" + std::to_string(listener.port()));
  const ProgramAnnouncement announced = Sample(4247);
  announcer.Publish(announced);
  const auto first = listener.Receive(2000);
  REQUIRE(first.has_value());
  CHECK(ParseAnnouncement(*first) == announced);
  CHECK(Exists(AnnouncementFile(runtime.announce_dir())));
  announcer.Tick(std::chrono::steady_clock::now());  // within the second: nothing
  CHECK_FALSE(listener.Receive(100).has_value());
  announcer.Tick(std::chrono::steady_clock::now() + std::chrono::seconds(2));
  const auto again = listener.Receive(2000);
  REQUIRE(again.has_value());
  CHECK(*again == *first);
  announcer.SetConnected(true);  // said at once
  const auto connected = listener.Receive(2000);
  REQUIRE(connected.has_value());
  const auto parsed = ParseAnnouncement(*connected);
  REQUIRE(parsed.has_value());
  CHECK(parsed->connected);
  announcer.Withdraw();
  announcer.Tick(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  CHECK_FALSE(listener.Receive(200).has_value());
  CHECK_FALSE(Exists(AnnouncementFile(runtime.announce_dir())));
}
