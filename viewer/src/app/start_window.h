// The start window: connect to a running program (listed as they announce themselves,
// on this machine and, when asked, on the LAN), to an address (recent ones remembered),
// or open a file; shown when nothing is open, or when opening failed (with the reason).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gnomon/server/running_programs.h"
#include "session.h"

namespace gnomon::viewer {

class StartWindow {
 public:
  StartWindow();
  // `open` is called with an address or a path to open.
  void Draw(float width, float height, const Session* failed,
            const std::function<void(const std::string&)>& open);
  // Shows `address` in the address field.
  void SetAddress(const std::string& address);
  // Remembers an address that worked (first in the list, kept between runs).
  void Remember(const std::string& address);
  // Whether "keep trying" is ticked: an address where nothing listens yet is waited for.
  bool wait() const { return wait_; }
  // {"programs": [{"name", "pid", "address"}...]} of the running programs listed.
  std::string Report() const;

 private:
  void DrawPrograms(std::string& chosen);

  std::vector<server::RunningProgram> programs_;
  std::string problem_;  // why this machine's programs cannot be listed, if they cannot
  std::chrono::steady_clock::time_point next_scan_{};
  bool lan_ = false;
  bool wait_ = false;
  std::unique_ptr<server::AnnouncementListener> listener_;
  char address_[256] = {};  // "127.0.0.1:<default port>" at first
  char path_[1024] = "";
  std::vector<std::string> recent_;
};

}  // namespace gnomon::viewer
