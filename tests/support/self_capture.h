// A worker connected over loopback to the Gnomon client inside this very test process.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "gnomon/server/worker.h"

namespace gnomon::test {

// Starts this process's profiler on a free port and connects a worker to it, once.
server::Worker& SelfCapture();

// Waits until predicate(model) holds, or five seconds pass.
template <typename F>
bool WaitForModel(server::Worker& worker, F predicate) {
  for (int i = 0; i < 500; ++i) {
    if (worker.WithModel(predicate)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

const server::ThreadTimeline* FindThread(const server::TraceModel& model, const std::string& name);

}  // namespace gnomon::test
