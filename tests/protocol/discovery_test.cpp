// The announcement text: what a program writes, what a tool accepts of untrusted bytes.
#include "gnomon/protocol/discovery.h"

#include <doctest/doctest.h>
#include <unistd.h>

using gnomon::protocol::ConnectAddress;
using gnomon::protocol::FormatAnnouncement;
using gnomon::protocol::ParseAnnouncement;
using gnomon::protocol::ProgramAnnouncement;

namespace {

ProgramAnnouncement Example() {
  return {.name = "demo",
          .pid = 4242,
          .host = "build-7",
          .address = "127.0.0.1",
          .port = 9421,
          .start_unix_ns = 1764600000123456789u,
          .connected = true};
}

}  // namespace

TEST_CASE("an announcement reads back as written") {
  const auto parsed = ParseAnnouncement(FormatAnnouncement(Example()));
  REQUIRE(parsed);
  CHECK(*parsed == Example());
  CHECK(FormatAnnouncement(Example()) ==
        "gnomon-program 1\nname=demo\npid=4242\nhost=build-7\naddress=127.0.0.1\nport=9421\n"
        "start_unix_ns=1764600000123456789\nstart_ticks=0\nconnected=1\n");
}

TEST_CASE("lines a reader does not know are skipped, so later versions can add some") {
  const auto parsed =
      ParseAnnouncement("gnomon-program 1\npid=7\nfuture=yes\naddress=::1\nport=80\nnot a pair\n");
  REQUIRE(parsed);
  CHECK(parsed->pid == 7);
  CHECK(parsed->port == 80);
  CHECK(parsed->name.empty());
}

TEST_CASE("malformed announcements are refused") {
  const std::string good = FormatAnnouncement(Example());
  for (const std::string& bad : {
           std::string(""),
           std::string("gnomon-program 2\npid=1\naddress=a\nport=1\n"),  // another format
           std::string("gnomon-program 1\naddress=a\nport=1\n"),         // no pid
           std::string("gnomon-program 1\npid=1\naddress=a\n"),          // no port
           std::string("gnomon-program 1\npid=1\nport=1\n"),             // no address
           std::string("gnomon-program 1\npid=0\naddress=a\nport=1\n"),  // pid 0
           std::string("gnomon-program 1\npid=1\naddress=a\nport=0\n"),  // port 0
           std::string("gnomon-program 1\npid=1\naddress=a\nport=70000\n"),
           std::string("gnomon-program 1\npid=-1\naddress=a\nport=1\n"),
           std::string("gnomon-program 1\npid=1\naddress=a\nport=1\nconnected=yes\n"),
           std::string("gnomon-program 1\npid=1\naddress=a\nport=1\nname=\x1b[2Jgone\n"),  // terminal codes
           std::string("gnomon-program 1\npid=1\naddress=a\nport=1\nname=") + std::string(200, 'x'),
           good + std::string(2000, '#'),  // longer than any announcement
       }) {
    CAPTURE(bad);
    CHECK_FALSE(ParseAnnouncement(bad));
  }
}

TEST_CASE("the address to connect to: loopback for all-interfaces locally, the sender on the LAN") {
  ProgramAnnouncement a = Example();
  CHECK(ConnectAddress(a) == "127.0.0.1:9421");
  a.address = "0.0.0.0";
  CHECK(ConnectAddress(a) == "127.0.0.1:9421");
  CHECK(ConnectAddress(a, "10.1.2.3") == "10.1.2.3:9421");
  a.address = "::";
  CHECK(ConnectAddress(a) == "[::1]:9421");
  // Heard on the LAN: the sender, whatever the datagram names.
  a.address = "10.9.9.9";
  CHECK(ConnectAddress(a, "10.1.2.3") == "10.1.2.3:9421");
  a.address = "fe80::1";
  CHECK(ConnectAddress(a) == "[fe80::1]:9421");
}

TEST_CASE("a name outside printable ASCII is written plainer, and still read") {
  ProgramAnnouncement a = Example();
  a.name = "d\xc3\xa9mo\x1b[2J";  // UTF-8 and a terminal code
  const auto parsed = ParseAnnouncement(FormatAnnouncement(a));
  REQUIRE(parsed);
  CHECK(parsed->name == "d??mo?[2J");
}

TEST_CASE("an address must be a numeric IP: nothing to resolve, nothing to open") {
  for (const char* address : {"example.com", "/tmp/x.gnomon", "[::1]", "127.0.0.1:80", "", "1.2.3"}) {
    CAPTURE(address);
    CHECK_FALSE(ParseAnnouncement(std::string("gnomon-program 1\npid=1\nport=1\naddress=") + address + "\n"));
  }
  CHECK(ParseAnnouncement("gnomon-program 1\npid=1\nport=1\naddress=::\n"));
  CHECK_FALSE(ParseAnnouncement("gnomon-program 1\npid=2147483648\nport=1\naddress=::\n"));  // not a pid_t
}

TEST_CASE("this process's start, in ticks since boot, as the lister compares it") {
  const uint64_t mine = gnomon::protocol::ProcessStartTicks(uint32_t(getpid()));
  CHECK(mine > 0);
  CHECK(gnomon::protocol::ProcessStartTicks(uint32_t(getpid())) == mine);
  CHECK(gnomon::protocol::ProcessStartTicks(1) <= mine);  // init started first
}
