// What the program runs on and with, as a ProgramEnvironment message says it: read once,
// on the sender's thread, the first time a stream begins.
#pragma once

#include <cstdint>
#include <string>

namespace gnomon::client {

struct ProgramEnvironmentInfo {
  uint32_t logical_cpus = 0;  // online; 0 when unknown
  uint64_t memory_bytes = 0;  // 0 when unknown
  std::string system;         // uname: "Linux 6.1.0-18-amd64 x86_64"
  std::string cpu;            // /proc/cpuinfo's model name; "" when it has none
  std::string settings;       // each GNOMON_ variable of the environment, NAME=VALUE, one a line
};

// Reads it now (`cpuinfo` is the file the CPU's model is read from).
ProgramEnvironmentInfo ReadProgramEnvironment(const char* cpuinfo = "/proc/cpuinfo");

}  // namespace gnomon::client
