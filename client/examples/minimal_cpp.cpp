// The smallest C++ integration: scoped zones, a frame mark, a message.
#include <chrono>
#include <gnomon/gnomon.hpp>
#include <thread>

static void Work() {
  GNOMON_ZONE("Work");
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

int main() {
  for (int frame = 0; frame < 100; ++frame) {
    GNOMON_ZONE("Frame");
    Work();
    GNOMON_FRAME_MARK();
  }
  gnomon::Message("done");
}
