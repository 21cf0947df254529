#include "self_capture.h"

#include <doctest/doctest.h>

#include <gnomon/gnomon.h>

namespace gnomon::test {

server::Worker& SelfCapture() {
  static server::Worker* worker = [] {
    // A free port, unless an earlier test in this process already started the profiler.
    gnomon_set_listen_address("127.0.0.1", 0);
    REQUIRE(gnomon_startup() == 0);
    server::Worker::Options options;
    options.port = gnomon_listen_port();
    auto* w = new server::Worker(options);
    REQUIRE(w->Connect().ok());
    w->Start();
    REQUIRE(gnomon_wait_for_server(5000) == 1);
    return w;
  }();
  return *worker;
}

const server::ThreadTimeline* FindThread(const server::TraceModel& model, const std::string& name) {
  for (const auto& thread : model.threads) {
    if (thread.name == name) return &thread;
  }
  return nullptr;
}

}  // namespace gnomon::test
