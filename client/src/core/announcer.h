// Tells the tools on this machine (and, where enabled, on the LAN) that the program is
// running and which port it listens on; see gnomon/protocol/discovery.h for the format.
//
// Owned by the sender's thread: Publish() when its loop starts, SetConnected() when a
// server comes or goes, Tick() from its loop (a LAN datagram once a second), Withdraw()
// at stop. Nothing here can stop the program from being profiled: a directory that
// cannot be used, or a datagram that cannot be sent, is reported once on stderr and the
// program goes on, reachable by its port. A child made by fork() inherits the object but
// not the announcement: it never rewrites or removes its parent's.
#pragma once

#include <netinet/in.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

#include "gnomon/protocol/discovery.h"

namespace gnomon::client {

enum class AnnounceMode : uint8_t { kOff, kLocal, kLan };

// Writes `text` to `path` in one step: to a new file beside it, created exclusively under
// a name of its own (so no link planted there is followed), then renamed over it. False,
// with errno set, when it could not.
bool WriteFileAtomically(const std::string& path, const std::string& text, unsigned mode);

// The announcement directory when it exists or could be made, is a real directory (not a
// link), belongs to this user and is writable by nobody else; "" otherwise, with the
// reason in `why`.
std::string PrivateAnnounceDirectory(std::string* why);

// GNOMON_ANNOUNCE_TO's "IPv4[:PORT]" (the port defaults to kAnnouncePort); nothing when
// it is not that. LAN listeners hear IPv4 only.
std::optional<sockaddr_in> ParseAnnounceDestination(const std::string& text);

class Announcer {
 public:
  // `lan_to` is GNOMON_ANNOUNCE_TO, already checked (default: broadcast); kLan only.
  Announcer(AnnounceMode mode, const std::string& lan_to);
  ~Announcer();
  Announcer(const Announcer&) = delete;
  Announcer& operator=(const Announcer&) = delete;

  void Publish(const protocol::ProgramAnnouncement& announcement);
  void SetConnected(bool connected);
  void Tick(std::chrono::steady_clock::time_point now);
  void Withdraw();

 private:
  bool owned() const;  // false in a forked child
  void Write();
  void SendDatagram();

  AnnounceMode mode_;
  pid_t owner_ = 0;  // the process that published
  protocol::ProgramAnnouncement announcement_;
  std::string file_;  // empty: no local announcement
  int udp_fd_ = -1;
  sockaddr_in lan_to_{};
  bool send_failed_ = false;  // said once on stderr
  std::chrono::steady_clock::time_point next_datagram_{};
};

}  // namespace gnomon::client
