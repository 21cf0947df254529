// Fuzzes gnomon-merge: any bytes as two .gnomon files (the first two bytes say where the
// first ends), merged into a third. The merge either refuses with a message, or writes
// a file that loads as a trace; every block it copied decompresses (it checks each
// one), and it never holds more programs than its inputs' streams.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>

#include "gnomon/server/trace_loader.h"
#include "gnomon/server/trace_merge.h"

namespace {

bool WriteFile(const std::string& path, const uint8_t* data, size_t size) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return false;
  const bool written = std::fwrite(data, 1, size, file) == size;
  return std::fclose(file) == 0 && written;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const std::string base = "/tmp/gnomon-merge-fuzz-" + std::to_string(getpid());
  const std::string a = base + "-a.gnomon", b = base + "-b.gnomon", out = base + "-out.gnomon";
  const size_t split = (size_t(data[0]) | size_t(data[1]) << 8) % (size - 1);
  if (!WriteFile(a, data + 2, split) || !WriteFile(b, data + 2 + split, size - 2 - split)) return 0;
  std::ostringstream log;
  const auto merged = gnomon::server::MergeTraces({a, b}, out, gnomon::tracefile::Overwrite::kYes, log);
  std::remove(a.c_str());  // nothing left in /tmp once the fuzzer stops
  std::remove(b.c_str());
  if (!merged.ok()) {
    if (merged.status().message().empty()) __builtin_trap();
    std::remove(out.c_str());
    return 0;
  }
  gnomon::server::TraceSet set;
  const auto loaded = gnomon::server::LoadTraceSet(out, set);
  std::remove(out.c_str());
  if (!loaded.ok()) __builtin_trap();  // a merge writes a trace, whatever it was given
  // (A file of no program still loads as one, empty.)
  if (loaded.value().programs > std::max<size_t>(merged.value().streams, 1)) __builtin_trap();
  return 0;
}
