// What users type: every port, duration and count goes through one parser that takes the
// whole text or says what is wrong with it.
#include "gnomon/protocol/settings.h"

#include <doctest/doctest.h>

using namespace gnomon::protocol;

TEST_CASE("ports: 1-65535 for a tool, 0 too for a program that listens, nothing else") {
  CHECK(*ParsePort("9421", PortZero::kRefused) == 9421);
  CHECK(*ParsePort("65535", PortZero::kRefused) == 65535);
  CHECK(*ParsePort("0", PortZero::kAllowed) == 0);
  for (const char* bad :
       {"0", "70000", "65536", "4294967296", "abc", "-1", "+80", " 80", "80 ", "", "8o", "1e3"}) {
    const auto parsed = ParsePort(bad, PortZero::kRefused);
    CHECK_FALSE_MESSAGE(parsed, bad);
    CHECK(parsed.error == "'" + std::string(bad) + "' is not a port number (1-65535)");
  }
  CHECK(ParsePort("70000", PortZero::kAllowed).error ==
        "'70000' is not a port number (1-65535, or 0 for any free port)");
}

TEST_CASE("addresses: HOST, HOST:PORT, [V6]:PORT and a bare IPv6 address, a bad port is said") {
  auto check = [](const char* text, const char* host, uint16_t port) {
    const auto parsed = ParseHostPort(text, 8086);
    REQUIRE_MESSAGE(parsed, text, ": ", parsed.error);
    CHECK(parsed->host == host);
    CHECK(parsed->port == port);
  };
  check("127.0.0.1", "127.0.0.1", 8086);
  check("render-3:9500", "render-3", 9500);
  check("[::1]:9500", "::1", 9500);
  check("[fe80::1]", "fe80::1", 8086);
  check("fe80::1", "fe80::1", 8086);
  for (const char* bad :
       {"", ":9500", "host:", "host:0", "host:70000", "[::1", "[::1]x", "[::1]:", "[]:80"}) {
    CHECK_FALSE_MESSAGE(ParseHostPort(bad, 8086), bad);
  }
  CHECK(ParseHostPort("host:70000", 1).error == "'70000' is not a port number (1-65535)");
}

TEST_CASE("durations: finite seconds from 0 to 10^9, as integer nanoseconds") {
  CHECK(ParseSeconds("0")->count() == 0);
  CHECK(ParseSeconds("0.5")->count() == 500'000'000);
  CHECK(ParseSeconds("90")->count() == 90'000'000'000);
  CHECK(ParseSeconds("1e3")->count() == 1'000'000'000'000);
  CHECK(ParseSeconds("1e9")->count() == 1'000'000'000'000'000'000);
  for (const char* bad : {"inf", "-inf", "nan", "infinity", "1e17", "1e30", "1.000001e9", "-1", "-0.5", "",
                          " 1", "1 ", "1s", "0x10", "+1", ".", "e5"}) {
    const auto parsed = ParseSeconds(bad);
    CHECK_FALSE_MESSAGE(parsed, bad);
    CHECK(parsed.error == "'" + std::string(bad) + "' is not a number of seconds from 0 to 1000000000");
  }
}

TEST_CASE("counts: whole numbers within their range") {
  CHECK(*ParseUnsigned("64", 1, 1024) == 64);
  CHECK(*ParseUnsigned("18446744073709551615", 0, UINT64_MAX) == UINT64_MAX);
  for (const char* bad : {"0", "1025", "18446744073709551616", "-3", "3.5", "", "x"}) {
    CHECK_FALSE_MESSAGE(ParseUnsigned(bad, 1, 1024), bad);
  }
  CHECK(ParseUnsigned("0", 1, 1024).error == "'0' is not a whole number from 1 to 1024");
}

TEST_CASE("sizes: bytes, or K, M, G and T as powers of 1024, decimals allowed") {
  using gnomon::protocol::ParseByteSize;
  CHECK(*ParseByteSize("4096") == 4096);
  CHECK(*ParseByteSize("512M") == 512ull << 20);
  CHECK(*ParseByteSize("512MiB") == 512ull << 20);
  CHECK(*ParseByteSize("512mb") == 512ull << 20);
  CHECK(*ParseByteSize("1.5G") == 3ull << 29);
  CHECK(*ParseByteSize("2k") == 2048);
  CHECK(*ParseByteSize("4T") == 4ull << 40);
  for (const char* bad : {"", "0", "0.4", "-1G", "G", "1X", "1 G", "nan", "infG", "5000000T", "1GG", "B"}) {
    const auto parsed = ParseByteSize(bad);
    CHECK_FALSE_MESSAGE(parsed, bad);
    CHECK(parsed.error ==
          "'" + std::string(bad) + "' is not a size from 1 byte to 4 EiB (e.g. 512M, 1.5G, 4096)");
  }
}
