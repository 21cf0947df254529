#include "gnomon/server/running_programs.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <map>

namespace gnomon::server {
namespace {

constexpr auto kForgetAfter = std::chrono::seconds(4);  // announcements come each second
constexpr size_t kMaxHeard = 1024;                      // a flood of made-up programs stays bounded
constexpr int kMaxDatagramsPerPoll = 256;               // and never holds the caller
// A program announces itself, and only itself, from a socket of its own: one sender
// (address and port) that names more programs is forging them, and keeps the few it
// named last. One host keeps at most kMaxPerHost, so a flood from one machine, over
// many sockets, leaves room for the others'.
constexpr size_t kMaxPerSender = 4;
constexpr size_t kMaxPerHost = 256;
constexpr int kReceiveBufferBytes = 1 << 20;  // datagrams that arrive between two looks

bool IsRunning(uint32_t pid) { return kill(pid_t(pid), 0) == 0 || errno == EPERM; }

bool IsLoopback(const std::string& address) { return address.starts_with("127.") || address == "::1"; }

// The file's text when it is a regular file (links are not followed) of a sane size.
std::optional<std::string> ReadSmallFile(int dir_fd, const char* name) {
  const int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> text;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && size_t(st.st_size) <= protocol::kMaxAnnouncementBytes) {
    std::string bytes(protocol::kMaxAnnouncementBytes + 1, '\0');
    const ssize_t n = read(fd, bytes.data(), bytes.size());
    if (n >= 0 && size_t(n) <= protocol::kMaxAnnouncementBytes) {
      bytes.resize(size_t(n));
      text = std::move(bytes);
    }
  }
  close(fd);
  return text;
}

}  // namespace

std::vector<RunningProgram> ListLocalPrograms(std::string* problem) {
  std::vector<RunningProgram> programs;
  const std::string dir = protocol::AnnounceDirectory();
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 && errno == ENOENT) return programs;  // no program has run yet
  if (std::string why = protocol::PrivateDirectoryProblem(dir); !why.empty()) {
    if (problem != nullptr) {
      *problem = why +
                 ": programs cannot announce themselves there (remove it, or set XDG_RUNTIME_DIR to a "
                 "directory of your own)";
    }
    return programs;
  }
  DIR* listing = opendir(dir.c_str());
  if (listing == nullptr) {
    if (problem != nullptr) *problem = dir + ": " + std::strerror(errno);
    return programs;
  }
  const int dir_fd = dirfd(listing);
  while (const dirent* entry = readdir(listing)) {
    const std::string_view name = entry->d_name;
    if (name.find(std::string(protocol::kAnnounceFileSuffix) + ".") != std::string_view::npos) {
      // A temporary file a program died writing: gone after a minute.
      struct stat st {};
      if (fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && time(nullptr) - st.st_mtime > 60) {
        unlinkat(dir_fd, entry->d_name, 0);
      }
      continue;
    }
    if (!name.ends_with(protocol::kAnnounceFileSuffix)) continue;
    const auto pid = protocol::ParseUnsigned(
        name.substr(0, name.size() - protocol::kAnnounceFileSuffix.size()), 1, INT32_MAX);
    if (!pid) continue;
    if (!IsRunning(uint32_t(*pid))) {
      unlinkat(dir_fd, entry->d_name, 0);  // the program ended without withdrawing it
      continue;
    }
    const std::optional<std::string> text = ReadSmallFile(dir_fd, entry->d_name);
    if (!text) continue;
    const auto announcement = protocol::ParseAnnouncement(*text);
    if (!announcement || announcement->pid != *pid) continue;
    const uint64_t started = protocol::ProcessStartTicks(announcement->pid);
    if (announcement->start_ticks != 0 && started != 0 && started != announcement->start_ticks) {
      unlinkat(dir_fd, entry->d_name, 0);  // its pid belongs to another process now
      continue;
    }
    programs.push_back({*announcement, protocol::ConnectAddress(*announcement), true});
  }
  closedir(listing);
  std::sort(programs.begin(), programs.end(), [](const RunningProgram& a, const RunningProgram& b) {
    return a.announcement.start_unix_ns > b.announcement.start_unix_ns;
  });
  return programs;
}

AnnouncementListener::AnnouncementListener(uint16_t port) {
  fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) {
    error_ = std::string("cannot create a UDP socket: ") + std::strerror(errno);
    return;
  }
  int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &kReceiveBufferBytes, sizeof(kReceiveBufferBytes));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    error_ =
        "cannot listen for announcements on UDP port " + std::to_string(port) + ": " + std::strerror(errno);
    close(fd_);
    fd_ = -1;
    return;
  }
  socklen_t length = sizeof(address);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
}

AnnouncementListener::~AnnouncementListener() {
  if (fd_ >= 0) close(fd_);
}

void AnnouncementListener::Poll(std::chrono::milliseconds wait) {
  if (fd_ < 0) return;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    Receive();
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{fd_, POLLIN, 0};
    poll(&pfd, 1, int(left.count()));
  }
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(heard_, [&](const Heard& h) { return now - h.when > kForgetAfter; });
}

void AnnouncementListener::Receive() {
  char bytes[protocol::kMaxAnnouncementBytes + 1];
  for (int received = 0; received < kMaxDatagramsPerPoll; ++received) {
    sockaddr_in from{};
    socklen_t from_length = sizeof(from);
    const ssize_t n =
        recvfrom(fd_, bytes, sizeof(bytes), 0, reinterpret_cast<sockaddr*>(&from), &from_length);
    if (n < 0) return;
    const auto announcement = protocol::ParseAnnouncement(std::string_view(bytes, size_t(n)));
    if (!announcement) continue;  // anyone can send a datagram: only well-formed ones count
    char host[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &from.sin_addr, host, sizeof(host));
    // The program is reached where its datagram came from, whatever the datagram says;
    // one that listens on loopback only cannot be reached from another machine.
    if (IsLoopback(announcement->address) && !IsLoopback(host)) continue;
    RunningProgram program{*announcement, protocol::ConnectAddress(*announcement, host), false};
    const auto now = std::chrono::steady_clock::now();
    const std::string sender = std::string(host) + ":" + std::to_string(ntohs(from.sin_port));
    auto same = std::find_if(heard_.begin(), heard_.end(), [&](const Heard& h) {
      return h.program.connect_address == program.connect_address &&
             h.program.announcement.pid == announcement->pid;
    });
    if (same != heard_.end()) {
      *same = {std::move(program), now, sender, host};
      continue;
    }
    // Room for a program not heard before: the oldest of its sender gives way when that
    // sender names too many, else of its host, else (the list full) of the host that
    // holds the most.
    if (!MakeRoom([&](const Heard& h) { return h.sender == sender; }, kMaxPerSender) &&
        !MakeRoom([&](const Heard& h) { return h.host == host; }, kMaxPerHost) &&
        heard_.size() >= kMaxHeard) {
      std::map<std::string, size_t> per_host;
      for (const Heard& h : heard_) ++per_host[h.host];
      const std::string busiest =
          std::max_element(per_host.begin(), per_host.end(), [](const auto& a, const auto& b) {
            return a.second < b.second;
          })->first;
      MakeRoom([&](const Heard& h) { return h.host == busiest; }, 1);
    }
    heard_.push_back({std::move(program), now, sender, host});
  }
}

template <typename Of>
bool AnnouncementListener::MakeRoom(Of of, size_t most) {
  size_t count = 0;
  auto oldest = heard_.end();
  for (auto it = heard_.begin(); it != heard_.end(); ++it) {
    if (!of(*it)) continue;
    ++count;
    if (oldest == heard_.end() || it->when < oldest->when) oldest = it;
  }
  if (count < most) return false;
  heard_.erase(oldest);
  return true;
}

std::vector<RunningProgram> AnnouncementListener::programs() const {
  std::vector<RunningProgram> programs;
  for (const Heard& h : heard_) programs.push_back(h.program);
  std::sort(programs.begin(), programs.end(), [](const RunningProgram& a, const RunningProgram& b) {
    return a.announcement.start_unix_ns > b.announcement.start_unix_ns;
  });
  return programs;
}

std::vector<RunningProgram> MergePrograms(std::vector<RunningProgram> local,
                                          const std::vector<RunningProgram>& lan) {
  for (const RunningProgram& p : lan) {
    const bool known = std::any_of(local.begin(), local.end(), [&](const RunningProgram& l) {
      return l.announcement.pid == p.announcement.pid && l.announcement.host == p.announcement.host;
    });
    if (!known) local.push_back(p);
  }
  return local;
}

std::string StartedAt(const protocol::ProgramAnnouncement& a) {
  char started[32] = "?";
  const time_t seconds = time_t(a.start_unix_ns / 1000000000u);
  tm local{};
  if (a.start_unix_ns != 0 && localtime_r(&seconds, &local) != nullptr) {
    std::strftime(started, sizeof(started), "%H:%M:%S", &local);
  }
  return started;
}

std::string DescribeProgram(const RunningProgram& program) {
  const protocol::ProgramAnnouncement& a = program.announcement;
  std::string text =
      (a.name.empty() ? std::string("(unnamed)") : a.name) + " (pid " + std::to_string(a.pid) + ")";
  if (!program.is_local && !a.host.empty()) text += " on " + a.host;
  text += " at " + program.connect_address + ", started " + StartedAt(a);
  if (a.connected) text += ", connected to a server";
  return text;
}

}  // namespace gnomon::server
