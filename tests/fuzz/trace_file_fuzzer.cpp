// Fuzzes the trace-file reader: any bytes as a .gnomon file. Loading either rejects the
// file with a message or loads what it can; the model is then read back in full.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>

#include "gnomon/server/report.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/trace_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/gnomon-fuzz-" + std::to_string(getpid()) + ".gnomon";
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return 0;
  std::fwrite(data, 1, size, file);
  std::fclose(file);
  gnomon::server::TraceModel model;
  const auto report = gnomon::server::LoadTrace(path, model);
  std::remove(path.c_str());  // nothing left in /tmp once the fuzzer stops
  if (!report.ok() && report.status().message().empty()) __builtin_trap();
  std::ostringstream out;
  gnomon::server::PrintSummary(model, out);
  gnomon::server::PrintStatisticsTable(model, gnomon::server::ComputeZoneStatistics(model), out);
  return 0;
}
