#include "xvfb.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace gnomon::test {

Xvfb::Xvfb() {
  // Displays 100..899, starting from one derived from the pid, to keep parallel tests apart.
  for (int attempt = 0; attempt < 20 && display_.empty(); ++attempt) {
    const int number = 100 + (getpid() * 7 + attempt * 31) % 800;
    const std::string socket = "/tmp/.X11-unix/X" + std::to_string(number);
    if (std::filesystem::exists(socket) || std::filesystem::exists("/tmp/.X" + std::to_string(number) + "-lock")) {
      continue;
    }
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

}  // namespace gnomon::test
