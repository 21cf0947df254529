#include "announcer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace gnomon::client {
namespace {

constexpr auto kDatagramPeriod = std::chrono::seconds(1);

// "IP[:PORT]" or "[V6]:PORT" into a socket address; false when it is not one.
bool ParseDestination(const std::string& text, sockaddr_storage& out, socklen_t& length) {
  std::string host = text;
  uint16_t port = protocol::kAnnouncePort;
  const size_t colon = text.rfind(':');
  const bool bracketed = text.starts_with('[');
  const bool has_port = bracketed ? colon != std::string::npos && colon > 0 && text[colon - 1] == ']'
                                  : colon != std::string::npos && text.find(':') == colon;
  if (has_port) {
    const auto parsed =
        protocol::ParsePort(std::string_view(text).substr(colon + 1), protocol::PortZero::kRefused);
    if (!parsed) return false;
    port = *parsed;
    host = text.substr(0, colon);
  }
  if (bracketed) {
    if (!host.ends_with(']')) return false;
    host = host.substr(1, host.size() - 2);
  }
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    length = sizeof(*v4);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    length = sizeof(*v6);
    return true;
  }
  return false;
}

}  // namespace

bool WriteFileAtomically(const std::string& path, const std::string& text, unsigned mode) {
  std::string temp = path + ".XXXXXX";
  const int fd = mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) return false;
  fchmod(fd, mode);
  const bool written = write(fd, text.data(), text.size()) == ssize_t(text.size());
  const int write_errno = errno;
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
  return why->empty() ? dir : "";
}

Announcer::Announcer(AnnounceMode mode, const std::string& lan_to) : mode_(mode) {
  if (mode_ != AnnounceMode::kLan) return;
  const std::string destination = lan_to.empty() ? "255.255.255.255" : lan_to;
  if (!ParseDestination(destination, lan_to_, lan_to_length_)) {
    std::fprintf(stderr,
                 "gnomon: GNOMON_ANNOUNCE_TO '%s' is not IP[:PORT] (e.g. 192.168.1.255 or "
                 "10.0.0.5:%u); not announcing on the LAN\n",
                 destination.c_str(), unsigned{protocol::kAnnouncePort});
    return;
  }
  udp_fd_ = socket(lan_to_.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int one = 1;
  if (udp_fd_ >= 0) setsockopt(udp_fd_, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
}

Announcer::~Announcer() {
  Withdraw();
  if (udp_fd_ >= 0) close(udp_fd_);
}

void Announcer::Publish(const protocol::ProgramAnnouncement& announcement) {
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
  if (announcement_.connected == connected) return;
  announcement_.connected = connected;
  Write();
  SendDatagram();
}

void Announcer::Tick(std::chrono::steady_clock::time_point now) {
  if (udp_fd_ < 0 || now < next_datagram_) return;
  SendDatagram();
}

void Announcer::Write() {
  if (file_.empty()) return;
  if (!WriteFileAtomically(file_, protocol::FormatAnnouncement(announcement_), 0600)) {
    std::fprintf(stderr, "gnomon: cannot write %s: %s; connect to port %u\n", file_.c_str(),
                 std::strerror(errno), unsigned{announcement_.port});
    file_.clear();
  }
}

void Announcer::SendDatagram() {
  if (udp_fd_ < 0 || announcement_.port == 0) return;
  const std::string text = protocol::FormatAnnouncement(announcement_);
  sendto(udp_fd_, text.data(), text.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&lan_to_),
         lan_to_length_);
  next_datagram_ = std::chrono::steady_clock::now() + kDatagramPeriod;
}

void Announcer::Withdraw() {
  if (!file_.empty()) unlink(file_.c_str());
  file_.clear();
  announcement_.port = 0;  // no more datagrams
}

}  // namespace gnomon::client
