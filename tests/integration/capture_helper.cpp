#include "capture_helper.h"

#include <doctest/doctest.h>

#include <thread>

namespace gnomon::test {

Capture CaptureProgram(const std::vector<std::string>& argv, std::map<std::string, std::string> env,
                       int delay_ms, const std::string& connect_after) {
  ScratchDir dir;
  env.insert_or_assign("GNOMON_PORT", std::to_string(0));  // (GCC 12 -Wrestrict misfires on = "0")
  env.insert_or_assign("GNOMON_PORT_FILE", dir.File("port"));
  env.try_emplace("GNOMON_WAIT_FOR_SERVER_MS", "20000");
  ChildProcess program(argv, env, dir.File("log"));
  const uint16_t port = WaitForPortFile(dir.File("port"));
  REQUIRE_MESSAGE(port != 0, "the program never listened: ", ReadFile(dir.File("log")));
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  if (!connect_after.empty()) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (ReadFile(dir.File("log")).find(connect_after) == std::string::npos) {
      REQUIRE_MESSAGE(std::chrono::steady_clock::now() < give_up, "the program never printed '",
                      connect_after, "'");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  Capture capture;
  server::Worker::Options options;
  options.port = port;
  capture.worker = std::make_unique<server::Worker>(options);
  const server::Status connected = capture.worker->Connect();
  REQUIRE_MESSAGE(connected.ok(), connected.message());
  capture.worker->Start();
  capture.worker->Join();
  capture.exit_code = program.Wait(std::chrono::seconds(30));
  capture.log = ReadFile(dir.File("log"));
  return capture;
}

std::map<std::string, uint64_t> CountsByName(const server::TraceModel& model) {
  std::map<std::string, uint64_t> counts;
  for (const auto& thread : model.threads) {
    for (size_t i = 0; i < thread.zones.size(); ++i) ++counts[model.ZoneName(thread, i)];
  }
  return counts;
}

}  // namespace gnomon::test
