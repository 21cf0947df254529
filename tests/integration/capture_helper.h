// Runs a program with the Gnomon client and captures it with a real worker over TCP.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../support/process.h"
#include "gnomon/server/worker.h"

namespace gnomon::test {

struct Capture {
  std::unique_ptr<server::Worker> worker;
  int exit_code = -1;
  std::string log;
  server::TraceModel& model() { return worker->model(); }
};

// Starts argv on a free port, waits `delay_ms` (and, when `connect_after` is not
// empty, until the program's output holds it), connects, and receives until the
// program ends. The program waits at exit for the server (GNOMON_WAIT_FOR_SERVER_MS).
Capture CaptureProgram(const std::vector<std::string>& argv, std::map<std::string, std::string> env = {},
                       int delay_ms = 0, const std::string& connect_after = "");

// Zones by source-location name, over every thread.
std::map<std::string, uint64_t> CountsByName(const server::TraceModel& model);

}  // namespace gnomon::test
