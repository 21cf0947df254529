#include "self_capture.h"

#include <doctest/doctest.h>
#include <gnomon/gnomon.h>

#include <memory>

namespace gnomon::test {

server::Worker& SelfCapture() {
  // At exit: the program says goodbye first, then the worker's thread is joined.
  struct Holder {
    std::unique_ptr<server::Worker> worker;
    ~Holder() {
      gnomon_shutdown();
      worker.reset();
    }
  };
  static Holder holder{[] {
    // A free port, unless an earlier test in this process already started the profiler.
    gnomon_set_listen_address("127.0.0.1", 0);
    REQUIRE(gnomon_startup() == 0);
    server::Worker::Options options;
    options.port = gnomon_listen_port();
    auto worker = std::make_unique<server::Worker>(options);
    REQUIRE(worker->Connect().ok());
    worker->Start();
    REQUIRE(gnomon_wait_for_server(5000) == 1);
    return worker;
  }()};
  return *holder.worker;
}

const server::ThreadTimeline* FindThread(const server::TraceModel& model, const std::string& name) {
  for (const auto& thread : model.threads) {
    if (thread.name == name) return &thread;
  }
  return nullptr;
}

}  // namespace gnomon::test
