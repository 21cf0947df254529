// Tells the tools on this machine (and, where enabled, on the LAN) that the program is
// running and which port it listens on; see gnomon/protocol/discovery.h for the format.
//
// Owned by the sender's thread: Publish() once listening, SetConnected() when a server
// comes or goes, Tick() from its loop (a LAN datagram once a second), Withdraw() at stop.
// Nothing here can stop the program from being profiled: a directory that cannot be
// used is reported once on stderr and the program goes on, reachable by its port.
#pragma once

#include <sys/socket.h>

#include <chrono>
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

class Announcer {
 public:
  // `lan_to` is "IP[:PORT]" (default: broadcast to kAnnouncePort); used in kLan only.
  Announcer(AnnounceMode mode, const std::string& lan_to);
  ~Announcer();
  Announcer(const Announcer&) = delete;
  Announcer& operator=(const Announcer&) = delete;

  void Publish(const protocol::ProgramAnnouncement& announcement);
  void SetConnected(bool connected);
  void Tick(std::chrono::steady_clock::time_point now);
  void Withdraw();

 private:
  void Write();
  void SendDatagram();

  AnnounceMode mode_;
  protocol::ProgramAnnouncement announcement_;
  std::string file_;  // empty: no local announcement
  int udp_fd_ = -1;
  sockaddr_storage lan_to_{};
  socklen_t lan_to_length_ = 0;
  std::chrono::steady_clock::time_point next_datagram_{};
};

}  // namespace gnomon::client
