#include "environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string_view>

extern char** environ;

namespace gnomon::client {
namespace {

// The value of the first "model name" (x86) or "Model" (Arm boards) line, spaces trimmed.
std::string CpuModel(const char* cpuinfo) {
  FILE* f = std::fopen(cpuinfo, "re");
  if (f == nullptr) return {};
  char line[512];
  std::string model;
  while (model.empty() && std::fgets(line, sizeof(line), f) != nullptr) {
    const std::string_view text(line);
    if (!text.starts_with("model name") && !text.starts_with("Model")) continue;
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = text.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
    model = value;
  }
  std::fclose(f);
  return model;
}

}  // namespace

ProgramEnvironmentInfo ReadProgramEnvironment(const char* cpuinfo) {
  ProgramEnvironmentInfo info;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  info.logical_cpus = cpus > 0 ? uint32_t(cpus) : 0;
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  info.memory_bytes = pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : 0;
  utsname names{};
  if (uname(&names) == 0)
    info.system = std::string(names.sysname) + " " + names.release + " " + names.machine;
  info.cpu = CpuModel(cpuinfo);
  for (char** variable = environ; variable != nullptr && *variable != nullptr; ++variable) {
    if (std::strncmp(*variable, "GNOMON_", 7) != 0) continue;
    if (!info.settings.empty()) info.settings += '\n';
    info.settings += *variable;
  }
  return info;
}

}  // namespace gnomon::client
