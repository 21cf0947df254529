// Every trace format ever written keeps loading into the same model. Each file in
// tests/data (formats 1 and 2, kept from real captures) and tests/data/golden (formats
// 3 to 8, written by the builds of their day from the test programs: every message
// kind, several threads, a stream of several blocks, two programs in one file) has
// beside it the dump of the models it loads into (tests/support/model_dump.h). A change to the reader that
// alters what an old file means fails here, even when the writer changed to match.
//
// A new golden file: write it with the build of its format, then run this test with
// GNOMON_WRITE_GOLDEN=1 once to write its dump, and check the dump by eye.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "../../support/model_dump.h"
#include "gnomon/server/trace_loader.h"

namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first line where the two differ, for the failure message.
std::string FirstDifference(const std::string& expected, const std::string& actual) {
  std::istringstream a(expected), b(actual);
  std::string x, y;
  for (int line = 1;; ++line) {
    const bool more_a = bool(std::getline(a, x));
    const bool more_b = bool(std::getline(b, y));
    if (!more_a && !more_b) return "";
    if (x != y || more_a != more_b) {
      return "line " + std::to_string(line) + ":\n  expected: " + (more_a ? x : "(end)") +
             "\n  loaded:   " + (more_b ? y : "(end)");
    }
  }
}

}  // namespace

TEST_CASE("every trace format keeps loading into the model it always did") {
  const std::string data = GNOMON_DATA_DIR;
  const char* files[] = {
      "h200_vulkan_demo.gnomon",          // format 1: a Vulkan capture on an H200
      "cuda-h200.gnomon",                 // format 2: CUDA through CUPTI on an H200
      "lavapipe_vulkan_counters.gnomon",  // format 2: Vulkan pipeline statistics
      "golden/format3-c-program.gnomon",  // format 3: every message kind, GPU included
      "golden/format3-zones.gnomon",      // format 3: threads, frames, plots, messages
      "golden/format3-flood.gnomon",      // format 3: 300,000 zones over several blocks
      "golden/format4-c-program.gnomon",  // format 4: the same three, numbered blocks
      "golden/format4-zones.gnomon",
      "golden/format4-flood.gnomon",
      "h200_vulkan_demo_probes.gnomon",      // format 4: a Vulkan capture on an H200 with brackets
      "golden/format5-two-programs.gnomon",  // format 5: the C program and the zones program, one capture
      "golden/format6-two-programs.gnomon",  // format 6: the same, the zones' ticks in a column
      "golden/format6-flood.gnomon",         // format 6: 300,000 zones over two blocks
      "golden/format7-two-programs.gnomon",  // format 7: the same two programs, zone values in the column
      "golden/format8-two-programs.gnomon",  // format 8: the same, each block with its summary
  };
  const bool write = std::getenv("GNOMON_WRITE_GOLDEN") != nullptr;
  for (const char* file : files) {
    CAPTURE(file);
    const std::string path = data + "/" + file;
    gnomon::server::TraceSet set;
    auto loaded = gnomon::server::LoadTraceSet(path, set);
    REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
    CHECK(loaded->warning.empty());
    // One program: its model's dump; several: each after a line naming its stream.
    std::string dump;
    for (const auto& process : set.processes) {
      if (set.processes.size() > 1) dump += "=== stream " + std::to_string(process.stream) + "\n";
      dump += gnomon::test::DumpModel(process.model);
    }
    const std::string dump_path = path.substr(0, path.size() - 7) + ".dump.txt";
    if (write) std::ofstream(dump_path) << dump;
    const std::string expected = Read(dump_path);
    REQUIRE_MESSAGE(!expected.empty(), "no dump beside the file: ", dump_path);
    CHECK_MESSAGE(dump == expected, FirstDifference(expected, dump));
  }
}
