// An Xvfb X server of the test's own, on a free display, for window and OpenGL tests.
#pragma once

#include <memory>
#include <string>

#include "process.h"

namespace gnomon::test {

class Xvfb {
 public:
  // Starts Xvfb and waits for its socket; display() is empty when it could not start.
  Xvfb();
  ~Xvfb();
  Xvfb(const Xvfb&) = delete;
  Xvfb& operator=(const Xvfb&) = delete;
  const std::string& display() const { return display_; }  // e.g. ":117"

 private:
  std::unique_ptr<ChildProcess> server_;
  std::string display_;
};

}  // namespace gnomon::test
