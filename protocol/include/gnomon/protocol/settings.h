// Parsers for what users type: ports, durations and counts, from command lines and
// environment variables, one of each for the tools and the client library alike.
//
//   auto port = ParsePort(getenv("GNOMON_PORT"), PortZero::kRefused);
//   if (!port) { print("GNOMON_PORT: " + port.error); exit(1); }
//   use(*port.value);
//
// Each parser takes the whole text or nothing: no leading or trailing spaces, no sign
// where none is meaningful, no "inf" or "nan", nothing past the range, and the error
// says what the range is. Durations come back as integer nanoseconds so that no caller
// converts a huge double into an integer (undefined behaviour) on its own.
#pragma once

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gnomon::protocol {

// The port a program listens on when nothing says otherwise.
inline constexpr uint16_t kDefaultPort = 9421;

// The longest duration any setting takes: about 31 years.
inline constexpr double kMaxDurationSeconds = 1e9;

// A parsed value, or one line saying what was wrong with the text.
template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string error;
  explicit operator bool() const { return value.has_value(); }
  const T& operator*() const { return *value; }
  const T* operator->() const { return &*value; }
};

// "'TEXT' is not WANTED": the line every parser gives for text it refuses.
inline std::string IsNot(std::string_view text, std::string_view wanted) {
  std::string line;
  line.reserve(text.size() + wanted.size() + 10);
  line.append("'").append(text).append("' is not ").append(wanted);
  return line;
}

namespace settings_detail {
template <typename T>
Parsed<T> Fail(std::string_view text, std::string_view wanted) {
  return {std::nullopt, IsNot(text, wanted)};
}
}  // namespace settings_detail

// An unsigned integer in [min, max], decimal digits only.
inline Parsed<uint64_t> ParseUnsigned(std::string_view text, uint64_t min, uint64_t max) {
  const std::string wanted = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  if (text.empty() || text[0] == '+' || text[0] == '-') return settings_detail::Fail<uint64_t>(text, wanted);
  const auto result = std::from_chars(text.data(), end, value);
  if (result.ec != std::errc() || result.ptr != end || value < min || value > max) {
    return settings_detail::Fail<uint64_t>(text, wanted);
  }
  return {value, ""};
}

// Whether port 0 ("any free port") is a meaningful answer: for a program that listens,
// yes; for a tool that connects, no.
enum class PortZero { kAllowed, kRefused };

inline Parsed<uint16_t> ParsePort(std::string_view text, PortZero zero) {
  const uint64_t min = zero == PortZero::kAllowed ? 0 : 1;
  const Parsed<uint64_t> number = ParseUnsigned(text, min, 65535);
  if (!number) {
    return settings_detail::Fail<uint16_t>(text, zero == PortZero::kAllowed
                                                     ? "a port number (1-65535, or 0 for any free port)"
                                                     : "a port number (1-65535)");
  }
  return {uint16_t(*number), ""};
}

// A network address: HOST, HOST:PORT, [V6] or [V6]:PORT; a bare IPv6 address (more than
// one colon, no brackets) is all host. Without a port, `default_port`; port 0 as `zero` says.
struct HostPort {
  std::string host;
  uint16_t port = 0;
};
inline Parsed<HostPort> ParseHostPort(std::string_view text, uint16_t default_port,
                                      PortZero zero = PortZero::kRefused) {
  HostPort address{std::string(text), default_port};
  std::string_view port;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || (close + 1 < text.size() && text[close + 1] != ':')) {
      return settings_detail::Fail<HostPort>(text, "an address ([IPv6]:PORT)");
    }
    address.host = std::string(text.substr(1, close - 1));
    if (close + 1 < text.size()) port = text.substr(close + 2);
    if (close + 1 < text.size() && port.empty()) return settings_detail::Fail<HostPort>(text, "HOST:PORT");
  } else if (const size_t colon = text.rfind(':');
             colon != std::string_view::npos && text.find(':') == colon) {
    address.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
    if (port.empty()) return settings_detail::Fail<HostPort>(text, "HOST:PORT");
  }
  if (address.host.empty()) return settings_detail::Fail<HostPort>(text, "HOST[:PORT] (the host is missing)");
  if (!port.empty()) {
    const Parsed<uint16_t> parsed = ParsePort(port, zero);
    if (!parsed) return {std::nullopt, parsed.error};
    address.port = *parsed;
  }
  return {address, ""};
}

// A duration in seconds, decimals allowed ("0.5", "90", "1e3"), from 0 to
// kMaxDurationSeconds.
inline Parsed<std::chrono::nanoseconds> ParseSeconds(std::string_view text) {
  double seconds = -1;
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, seconds);  // no locale, no spaces, no sign but '-'
  if (text.empty() || result.ec != std::errc() || result.ptr != end || !std::isfinite(seconds) ||
      seconds < 0 || seconds > kMaxDurationSeconds) {
    return settings_detail::Fail<std::chrono::nanoseconds>(text, "a number of seconds from 0 to 1000000000");
  }
  return {std::chrono::nanoseconds(int64_t(std::llround(seconds * 1e9))), ""};
}

// A size in bytes: a number, decimals allowed, with K, M, G or T (either case) for
// powers of 1024, and B or iB (either case) after it or not ("1.5G", "512M", "512MiB", "4096"); from
// 1 byte to 4 EiB.
inline Parsed<uint64_t> ParseByteSize(std::string_view text) {
  const std::string_view original = text;
  if (text.ends_with("iB") || text.ends_with("ib")) {
    text.remove_suffix(2);
  } else if (text.ends_with('B') || text.ends_with('b')) {
    text.remove_suffix(1);
  }
  double scale = 1;
  if (!text.empty()) {
    const char unit = text.back() >= 'a' && text.back() <= 'z' ? char(text.back() - 'a' + 'A') : text.back();
    if (const size_t at = std::string_view("KMGT").find(unit); at != std::string_view::npos) {
      scale = std::ldexp(1.0, 10 * int(at + 1));
      text.remove_suffix(1);
    }
  }
  double number = -1;
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, number);
  const double bytes = std::floor(number * scale);
  if (text.empty() || result.ec != std::errc() || result.ptr != end || !std::isfinite(number) || bytes < 1 ||
      bytes > std::ldexp(1.0, 62)) {
    return settings_detail::Fail<uint64_t>(original, "a size from 1 byte to 4 EiB (e.g. 512M, 1.5G, 4096)");
  }
  return {uint64_t(bytes), ""};
}

}  // namespace gnomon::protocol
