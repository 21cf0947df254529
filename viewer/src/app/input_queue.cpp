#include "input_queue.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>

#include <algorithm>

namespace gnomon::viewer {
namespace {

InputQueue* g_queue = nullptr;  // the one window's queue

void OnKey(GLFWwindow*, int key, int scancode, int action, int mods) {
  if (g_queue != nullptr) g_queue->Push(key, scancode, action, mods);
}

}  // namespace

void InputQueue::Install(GLFWwindow* window) {
  g_queue = this;
  glfwSetKeyCallback(window, OnKey);  // replaces ImGui's; Feed() calls it
}

void InputQueue::Push(int key, int scancode, int action, int mods) {
  events_.push_back({key, scancode, action, mods});
  ++queued_;
}

void InputQueue::Feed(GLFWwindow* window) {
  std::vector<int> changed;  // keys whose state this frame already took
  while (!events_.empty()) {
    const KeyEvent e = events_.front();
    const bool repeat = e.action == GLFW_REPEAT;
    if (!repeat && std::find(changed.begin(), changed.end(), e.key) != changed.end()) break;
    if (!repeat) changed.push_back(e.key);
    ImGui_ImplGlfw_KeyCallback(window, e.key, e.scancode, e.action, e.mods);
    events_.pop_front();
  }
}

}  // namespace gnomon::viewer
