// The start window: connect to a program (recent addresses remembered) or open a file;
// shown when nothing is open, or when opening failed (with the reason).
#pragma once

#include <functional>
#include <string>
#include <vector>

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

 private:
  char address_[256] = {};  // "127.0.0.1:<default port>" at first
  char path_[1024] = "";
  std::vector<std::string> recent_;
};

}  // namespace gnomon::viewer
