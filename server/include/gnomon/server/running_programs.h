// Finding the programs that can be connected to: those announced on this machine (see
// gnomon/protocol/discovery.h) and, when listened for, those announced on the LAN.
//
//   for (const RunningProgram& p : ListLocalPrograms()) connect(p.connect_address);
//
//   AnnouncementListener lan;          // UDP port kAnnouncePort, shared with other tools
//   lan.Poll(std::chrono::milliseconds(1500));
//   auto all = MergePrograms(ListLocalPrograms(), lan.programs());
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "gnomon/protocol/discovery.h"

namespace gnomon::server {

struct RunningProgram {
  protocol::ProgramAnnouncement announcement;
  std::string connect_address;  // HOST:PORT (or [V6]:PORT) to connect to
  bool is_local = false;        // found in this machine's directory
};

// The programs announced in this user's directory, newest first. A file whose process is
// gone is removed; a file that is not a well-formed announcement is skipped (and left).
// `problem`, when given, says why nothing could be listed (a directory that is a link,
// another user's, or writable by others); no directory at all is simply no program.
std::vector<RunningProgram> ListLocalPrograms(std::string* problem = nullptr);

// Receives LAN announcements on a UDP port (several listeners may share it). A program
// is listed while it announced itself within the last few seconds. Bounded against
// floods: 1,024 programs in all, 256 from one host, and 4 from one sender (a program
// announces only itself, from its own socket); past a bound the one heard longest ago,
// of that sender, host, or the host holding the most, gives way.
class AnnouncementListener {
 public:
  explicit AnnouncementListener(uint16_t port = protocol::kAnnouncePort);
  ~AnnouncementListener();
  AnnouncementListener(const AnnouncementListener&) = delete;
  AnnouncementListener& operator=(const AnnouncementListener&) = delete;

  // "" when listening; otherwise why not (e.g. the port could not be bound).
  const std::string& error() const { return error_; }
  uint16_t port() const { return port_; }  // the one bound (port 0 asks for any free one)
  // Takes every datagram that arrives within `wait` (none: only those already there).
  void Poll(std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  std::vector<RunningProgram> programs() const;

 private:
  struct Heard {
    RunningProgram program;
    std::chrono::steady_clock::time_point when;
    std::string sender;  // the datagram's source, ADDR:PORT
    std::string host;    // its ADDR
  };
  void Receive();
  // When at least `most` heard programs are `of` (a predicate on Heard), the one of them
  // heard longest ago is forgotten; true when one was.
  template <typename Of>
  bool MakeRoom(Of of, size_t most);

  int fd_ = -1;
  uint16_t port_ = 0;
  std::string error_;
  std::vector<Heard> heard_;
};

// `local` first, then those of `lan` not already among them (the same host and pid).
std::vector<RunningProgram> MergePrograms(std::vector<RunningProgram> local,
                                          const std::vector<RunningProgram>& lan);

// The program's start as local wall-clock time, "14:02:11" ("?" when unknown).
std::string StartedAt(const protocol::ProgramAnnouncement& announcement);

// "demo (pid 1234) on 127.0.0.1:9421, started 14:02:11, connected" for lists.
std::string DescribeProgram(const RunningProgram& program);

}  // namespace gnomon::server
