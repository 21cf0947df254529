// Key events in order, so that no tap is lost. Dear ImGui 1.86 reads each key's state
// once a frame: a key pressed and released between two frames (a quick tap on a slow
// frame) would never be seen down. The queue takes GLFW's key events as they come and
// hands them to ImGui a frame at a time, holding back an event for a key that already
// changed this frame, so every press and every release lasts at least one frame.
//
//   InputQueue keys;
//   keys.Install(window);        // after ImGui_ImplGlfw_InitForOpenGL(window, true)
//   ... each frame: keys.Feed(window); ImGui_ImplGlfw_NewFrame(); ImGui::NewFrame(); ...
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

struct GLFWwindow;

namespace gnomon::viewer {

class InputQueue {
 public:
  void Install(GLFWwindow* window);
  // Hands ImGui this frame's share of the queued events.
  void Feed(GLFWwindow* window);
  bool empty() const { return events_.empty(); }
  // Events queued since the program started (for tests of the queue itself).
  size_t queued() const { return queued_; }

  // The GLFW callback: queues the event (public for the callback's sake).
  void Push(int key, int scancode, int action, int mods);

 private:
  struct KeyEvent {
    int key, scancode, action, mods;
  };
  std::deque<KeyEvent> events_;
  size_t queued_ = 0;
};

}  // namespace gnomon::viewer
