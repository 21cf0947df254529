// gnomon-cuda-check: asserts that a trace of gnomon-cuda-demo places its CUDA work
// right (see cuda_timeline_check.h). Prints one line per failure, then the figures as
// one JSON object on the last line. Exit codes: 0 every check passed; 1 bad command
// line; 2 the trace could not be read; 3 a check failed.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda_timeline_check.h"
#include "gnomon/server/trace_loader.h"

int main(int argc, char** argv) {
  std::string path;
  double tolerance = 0.01;
  bool check_memory = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::printf(
          "usage: gnomon-cuda-check [--tolerance FRACTION] [--memory] TRACE.gnomon\n"
          "Checks a gnomon-cuda-demo trace: one kernel per launch, each kernel's duration\n"
          "within FRACTION (default 0.01) of what it was told to spin, every GPU operation\n"
          "between its launch and the return of the next synchronize, and overlaps kept;\n"
          "with --memory, its device and pinned host buffers in their memory pools, freed.\n"
          "Exit codes: 0 passed, 1 bad command line, 2 unreadable trace, 3 a check failed.\n");
      return 0;
    }
    if (arg == "--tolerance" && i + 1 < argc) {
      tolerance = std::atof(argv[++i]);
    } else if (arg == "--memory") {
      check_memory = true;
    } else if (!arg.empty() && arg[0] != '-' && path.empty()) {
      path = arg;
    } else {
      std::fprintf(stderr, "gnomon-cuda-check: unexpected argument '%s' (try --help)\n", arg.c_str());
      return 1;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "gnomon-cuda-check: no trace file given (try --help)\n");
    return 1;
  }
  gnomon::server::TraceModel model;
  auto loaded = gnomon::server::LoadTrace(path, model);
  if (!loaded.ok()) {
    std::fprintf(stderr, "gnomon-cuda-check: %s\n", loaded.status().message().c_str());
    return 2;
  }
  const auto result = gnomon::test::CheckCudaTimeline(model, tolerance, check_memory);
  for (const std::string& failure : result.failures) std::printf("FAIL: %s\n", failure.c_str());
  std::printf("%s\n", result.ToJson().c_str());
  return result.failures.empty() ? 0 : 3;
}
