// Discovery: how a running program says that it can be connected to, and how the tools
// find it without the user typing an address.
//
// On one machine, with no configuration: each profiled program keeps a small text file,
//   <AnnounceDirectory()>/<pid>.program
// while it listens, written in one step (a temporary file renamed over it) and removed
// when it stops. The directory is $XDG_RUNTIME_DIR/gnomon, or /tmp/gnomon-<uid> where
// that is not set; it is the user's own (mode 0700), and a directory that is not (a
// link, another owner, writable by others) is never used.
//
// On a LAN, where the user enables it (GNOMON_ANNOUNCE=lan in the program): the same
// text, once a second, in a UDP datagram to port kAnnouncePort (broadcast, or the
// address in GNOMON_ANNOUNCE_TO). Listeners take the sender's address from the
// datagram when the program listens on all interfaces.
//
// The text, one "key=value" per line after a first line naming the format:
//   gnomon-program 1
//   name=demo            the program's name (printable, at most kMaxProgramName bytes)
//   pid=1234
//   host=build-7         the machine's host name
//   address=127.0.0.1    what the program listens on (0.0.0.0 or :: for all interfaces)
//   port=9421
//   start_unix_ns=1764600000000000000
//   start_ticks=123456   the process's start in clock ticks since boot (/proc/PID/stat),
//                        so that a file whose pid now belongs to another process is known
//   connected=0          1 while a server is connected (a second one is answered busy)
// Readers ignore keys they do not know, so later versions can add lines; the text and
// every value in it are untrusted (any user on the LAN can send a datagram): the address
// must be a numeric IP, and a listener on the LAN connects to the datagram's sender,
// never to an address the datagram names.
#pragma once

#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "gnomon/protocol/settings.h"

namespace gnomon::protocol {

inline constexpr uint16_t kAnnouncePort = 9420;
inline constexpr std::string_view kAnnounceHeader = "gnomon-program 1";
inline constexpr size_t kMaxAnnouncementBytes = 1024;
inline constexpr size_t kMaxProgramName = 128;
inline constexpr size_t kMaxHostName = 255;
inline constexpr std::string_view kAnnounceFileSuffix = ".program";

struct ProgramAnnouncement {
  std::string name;
  uint32_t pid = 0;
  std::string host;
  std::string address;
  uint16_t port = 0;
  uint64_t start_unix_ns = 0;
  uint64_t start_ticks = 0;  // 0: unknown
  bool connected = false;

  bool operator==(const ProgramAnnouncement&) const = default;
};

// The private directory local announcements live in (not created here).
inline std::string AnnounceDirectory() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] == '/') return std::string(runtime) + "/gnomon";
  return "/tmp/gnomon-" + std::to_string(getuid());
}

// Why `dir` is not fit to hold announcements, or "" when it is: it must be a directory
// (not a link to one), belong to this user, and be writable by nobody else.
inline std::string PrivateDirectoryProblem(const std::string& dir) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return dir + " does not exist";
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory (a link or a file is never followed)";
  if (st.st_uid != getuid()) return dir + " belongs to another user";
  if ((st.st_mode & 022) != 0) return dir + " is writable by other users";
  return "";
}

// When process `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat);
// 0 when that cannot be read.
inline uint64_t ProcessStartTicks(uint32_t pid) {
  char path[40];
  std::snprintf(path, sizeof(path), "/proc/%u/stat", pid);
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return 0;
  char text[1024];
  const size_t n = std::fread(text, 1, sizeof(text) - 1, f);
  std::fclose(f);
  text[n] = '\0';
  // The command name (field 2) is in parentheses and may hold spaces or ')': count the
  // fields after the last ')'. Field 3 follows it; the start time is field 22.
  std::string_view rest(text, n);
  const size_t paren = rest.rfind(')');
  if (paren == std::string_view::npos) return 0;
  rest.remove_prefix(paren + 1);
  for (int field = 3; field < 22; ++field) {
    const size_t space = rest.find(' ', 1);
    if (space == std::string_view::npos) return 0;
    rest.remove_prefix(space);
  }
  rest.remove_prefix(rest.empty() ? 0 : 1);
  const auto ticks = ParseUnsigned(rest.substr(0, rest.find(' ')), 0, UINT64_MAX);
  return ticks ? *ticks : 0;
}

// Whether `text` is a numeric IPv4 or IPv6 address (no host names: nothing to resolve).
inline bool IsNumericAddress(const std::string& text) {
  unsigned char bytes[16];
  return inet_pton(AF_INET, text.c_str(), bytes) == 1 || inet_pton(AF_INET6, text.c_str(), bytes) == 1;
}

namespace discovery_detail {
// Printable ASCII only, so that no announcement can move a terminal's cursor.
inline bool IsPrintable(std::string_view text) {
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}
// `text` cut to `limit` bytes with every byte outside printable ASCII replaced by '?'
// (a program named in UTF-8 is still listed, its name a little plainer).
inline std::string Printable(std::string_view text, size_t limit) {
  std::string out(text.substr(0, limit));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}
}  // namespace discovery_detail

inline std::string FormatAnnouncement(const ProgramAnnouncement& a) {
  std::string text(kAnnounceHeader);
  text += "\nname=" + discovery_detail::Printable(a.name, kMaxProgramName);
  text += "\npid=" + std::to_string(a.pid);
  text += "\nhost=" + discovery_detail::Printable(a.host, kMaxHostName);
  text += "\naddress=" + a.address;
  text += "\nport=" + std::to_string(a.port);
  text += "\nstart_unix_ns=" + std::to_string(a.start_unix_ns);
  text += "\nstart_ticks=" + std::to_string(a.start_ticks);
  text += a.connected ? "\nconnected=1\n" : "\nconnected=0\n";
  return text;
}

// The announcement in `text`, or nothing when it is not a complete, well-formed one.
inline std::optional<ProgramAnnouncement> ParseAnnouncement(std::string_view text) {
  if (text.size() > kMaxAnnouncementBytes) return std::nullopt;
  auto next_line = [&text]() {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    return line;
  };
  if (next_line() != kAnnounceHeader) return std::nullopt;
  ProgramAnnouncement a;
  bool has_pid = false, has_port = false, has_address = false;
  while (!text.empty()) {
    const std::string_view line = next_line();
    const size_t equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, equals);
    const std::string_view value = line.substr(equals + 1);
    if (!discovery_detail::IsPrintable(value)) return std::nullopt;
    if (key == "name") {
      if (value.size() > kMaxProgramName) return std::nullopt;
      a.name = value;
    } else if (key == "host") {
      if (value.size() > kMaxHostName) return std::nullopt;
      a.host = value;
    } else if (key == "address") {
      if (value.size() > 64) return std::nullopt;
      a.address = value;
      if (!IsNumericAddress(a.address)) return std::nullopt;
      has_address = true;
    } else if (key == "pid") {
      const auto pid = ParseUnsigned(value, 1, INT32_MAX);  // a pid_t
      if (!pid) return std::nullopt;
      a.pid = uint32_t(*pid);
      has_pid = true;
    } else if (key == "port") {
      const auto port = ParseUnsigned(value, 1, UINT16_MAX);
      if (!port) return std::nullopt;
      a.port = uint16_t(*port);
      has_port = true;
    } else if (key == "start_unix_ns" || key == "start_ticks") {
      const auto start = ParseUnsigned(value, 0, UINT64_MAX);
      if (!start) return std::nullopt;
      (key == "start_ticks" ? a.start_ticks : a.start_unix_ns) = *start;
    } else if (key == "connected") {
      if (value != "0" && value != "1") return std::nullopt;
      a.connected = value == "1";
    }
  }
  if (!has_pid || !has_port || !has_address) return std::nullopt;
  return a;
}

// "HOST:PORT" to connect to the program, "[V6]:PORT" for an IPv6 address: the address it
// listens on, or loopback when that is all interfaces. A program heard on the LAN is
// reached at `seen_from`, the datagram's sender, whatever the datagram says.
inline std::string ConnectAddress(const ProgramAnnouncement& a, std::string_view seen_from = {}) {
  std::string host = a.address;
  if (!seen_from.empty()) {
    host = seen_from;
  } else if (host == "0.0.0.0" || host == "::") {
    host = host == "::" ? "::1" : "127.0.0.1";
  }
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return host + ":" + std::to_string(a.port);
}

}  // namespace gnomon::protocol
