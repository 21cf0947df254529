#include "xvfb.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace gnomon::test {
namespace {

// True when display `number` is taken by a running X server. A lock whose process is gone
// (a server killed before it could clean up) is removed with its socket, so that stale
// displays left by earlier runs never fill the range.
bool DisplayInUse(int number) {
  const std::string lock = "/tmp/.X" + std::to_string(number) + "-lock";
  const std::string socket = "/tmp/.X11-unix/X" + std::to_string(number);
  std::error_code ignored;
  if (!std::filesystem::exists(lock)) return std::filesystem::exists(socket);
  long pid = 0;
  std::ifstream(lock) >> pid;
  if (pid <= 0) return true;  // being written by a server starting right now
  if (kill(pid_t(pid), 0) == 0 || errno == EPERM) return true;
  std::filesystem::remove(socket, ignored);
  std::filesystem::remove(lock, ignored);
  return false;
}

}  // namespace

Xvfb::Xvfb() {
  // Displays 100..899, starting from one derived from the pid, to keep parallel tests apart.
  for (int attempt = 0; attempt < 40 && display_.empty(); ++attempt) {
    const int number = 100 + (getpid() * 7 + attempt * 31) % 800;
    if (DisplayInUse(number)) continue;
    const std::string socket = "/tmp/.X11-unix/X" + std::to_string(number);
    auto server = std::make_unique<ChildProcess>(
        std::vector<std::string>{"/usr/bin/Xvfb", ":" + std::to_string(number), "-screen", "0", "1280x800x24",
                                 "-nolisten", "tcp"},
        std::map<std::string, std::string>{}, "/dev/null");
    for (int i = 0; i < 500; ++i) {
      if (std::filesystem::exists(socket)) {
        display_ = ":" + std::to_string(number);
        server_ = std::move(server);
        return;
      }
      if (server->Wait(std::chrono::milliseconds(0)) >= 0) break;  // exited: try another display
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

Xvfb::~Xvfb() {
  if (!server_) return;
  // SIGTERM lets the server remove its lock and socket; a kill (the fallback) would leave them.
  server_->Signal(SIGTERM);
  server_->Wait(std::chrono::seconds(5));
}

}  // namespace gnomon::test
