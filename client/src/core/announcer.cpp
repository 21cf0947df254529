#include "announcer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace gnomon::client {
namespace {

constexpr auto kDatagramPeriod = std::chrono::seconds(1);

}  // namespace

bool WriteFileAtomically(const std::string& path, const std::string& text, unsigned mode) {
  std::string temp = path + ".XXXXXX";
  const int fd = mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) return false;
  fchmod(fd, mode);
  const ssize_t n = write(fd, text.data(), text.size());
  const int write_errno = n < 0 ? errno : EIO;  // a short write sets no errno
  const bool written = n == ssize_t(text.size());
  close(fd);
  if (!written || std::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = written ? errno : write_errno;
    unlink(temp.c_str());
    errno = saved;
    return false;
  }
  return true;
}

std::string PrivateAnnounceDirectory(std::string* why) {
  const std::string dir = protocol::AnnounceDirectory();
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *why = dir + ": " + std::strerror(errno);
    return "";
  }
  *why = protocol::PrivateDirectoryProblem(dir);
  if (!why->empty()) *why += "; remove it, or set XDG_RUNTIME_DIR to a directory of your own";
  return why->empty() ? dir : "";
}

std::optional<sockaddr_in> ParseAnnounceDestination(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon != text.rfind(':')) return std::nullopt;  // IPv6: listeners hear IPv4 only
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(protocol::kAnnouncePort);
  if (colon != std::string::npos) {
    const auto port =
        protocol::ParsePort(std::string_view(text).substr(colon + 1), protocol::PortZero::kRefused);
    if (!port) return std::nullopt;
    to.sin_port = htons(*port);
  }
  if (inet_pton(AF_INET, text.substr(0, colon).c_str(), &to.sin_addr) != 1) return std::nullopt;
  return to;
}

Announcer::Announcer(AnnounceMode mode, const std::string& lan_to) : mode_(mode) {
  if (mode_ != AnnounceMode::kLan) return;
  const auto to = ParseAnnounceDestination(lan_to.empty() ? "255.255.255.255" : lan_to);
  if (!to) return;  // checked when the setting was read
  lan_to_ = *to;
  udp_fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int one = 1;
  if (udp_fd_ < 0 || setsockopt(udp_fd_, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one)) != 0) {
    std::fprintf(stderr, "gnomon: cannot announce on the LAN: %s\n", std::strerror(errno));
    if (udp_fd_ >= 0) close(udp_fd_);
    udp_fd_ = -1;
  }
}

Announcer::~Announcer() {
  Withdraw();
  if (udp_fd_ >= 0) close(udp_fd_);
}

bool Announcer::owned() const { return owner_ != 0 && owner_ == getpid(); }

void Announcer::Publish(const protocol::ProgramAnnouncement& announcement) {
  owner_ = getpid();
  announcement_ = announcement;
  if (mode_ == AnnounceMode::kOff) return;
  std::string why;
  const std::string dir = PrivateAnnounceDirectory(&why);
  if (dir.empty()) {
    std::fprintf(stderr, "gnomon: not announcing this program locally (%s); connect to port %u\n",
                 why.c_str(), unsigned{announcement.port});
  } else {
    file_ = dir + "/" + std::to_string(announcement.pid) + std::string(protocol::kAnnounceFileSuffix);
  }
  Write();
  SendDatagram();
}

void Announcer::SetConnected(bool connected) {
  if (!owned() || announcement_.connected == connected) return;
  announcement_.connected = connected;
  Write();
  SendDatagram();
}

void Announcer::Tick(std::chrono::steady_clock::time_point now) {
  if (udp_fd_ < 0 || now < next_datagram_) return;
  SendDatagram();
}

void Announcer::Write() {
  if (file_.empty() || !owned()) return;
  if (!WriteFileAtomically(file_, protocol::FormatAnnouncement(announcement_), 0600)) {
    std::fprintf(stderr, "gnomon: cannot write %s: %s; connect to port %u\n", file_.c_str(),
                 std::strerror(errno), unsigned{announcement_.port});
    unlink(file_.c_str());  // an older text would say something no longer true
    file_.clear();
  }
}

void Announcer::SendDatagram() {
  next_datagram_ = std::chrono::steady_clock::now() + kDatagramPeriod;
  if (udp_fd_ < 0 || announcement_.port == 0 || !owned()) return;
  const std::string text = protocol::FormatAnnouncement(announcement_);
  if (sendto(udp_fd_, text.data(), text.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&lan_to_),
             sizeof(lan_to_)) < 0 &&
      !send_failed_ && errno != EAGAIN && errno != EWOULDBLOCK) {
    char to[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &lan_to_.sin_addr, to, sizeof(to));
    std::fprintf(stderr,
                 "gnomon: cannot announce on the LAN to %s:%u: %s (GNOMON_ANNOUNCE_TO chooses where)\n", to,
                 unsigned{ntohs(lan_to_.sin_port)}, std::strerror(errno));
    send_failed_ = true;
  }
}

void Announcer::Withdraw() {
  if (!owned()) return;  // never a forked child: the announcement is its parent's
  if (!file_.empty()) unlink(file_.c_str());
  file_.clear();
  announcement_.port = 0;  // no more datagrams
}

}  // namespace gnomon::client
