// The flight recorder's concurrent paths, in a program of their own (its buffer policy
// is set before its profiler starts): threads that record and recycle each other's
// chunks, threads that exit, and saves that read the chains, all at once. Under thread
// sanitizer (CI) the program is instrumented too, and a race fails it.
#include <doctest/doctest.h>

#include <string>

#include "../support/process.h"
#include "gnomon/server/trace_loader.h"

using gnomon::test::ChildProcess;
using gnomon::test::ReadFile;
using gnomon::test::ScratchDir;

TEST_CASE("ring: recording, recycling, exiting threads and saves at once, and every save loads") {
  ScratchDir dir;
  ChildProcess program({GNOMON_TEST_PROGRAM, "ring-stress", dir.path()},
                       {{"GNOMON_BUFFER_POLICY", "ring"}, {"GNOMON_BUFFER_MB", "1"}, {"GNOMON_PORT", "0"}},
                       dir.File("log"));
  const int exit_code = program.Wait(std::chrono::seconds(60));
  const std::string log = ReadFile(dir.File("log"));
  REQUIRE_MESSAGE(exit_code == 0, log);
  CHECK(log.find("saved 3") != std::string::npos);
  double newest[3][6] = {};  // per save, each thread's newest plot value
  for (int i = 0; i < 3; ++i) {
    gnomon::server::TraceModel model;
    auto loaded = gnomon::server::LoadTrace(dir.File("save-" + std::to_string(i) + ".gnomon"), model);
    REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
    CHECK(loaded.value().warning == "");
    CHECK(model.zone_count > 1000);
    CHECK(model.diagnostics.ended_cleanly);
    // The ring holds 15 chunks of 64 KiB: about 22,000 zones with their plot values.
    CHECK(model.zone_count < 40000);
    for (const auto& [id, plot] : model.plots) {
      const int thread = plot.name.back() - '0';
      if (!plot.points.empty() && thread >= 0 && thread < 6) newest[i][thread] = plot.points.back().second;
    }
  }
  // The threads that record all along are in every save with newer events than in the
  // one before: none stopped for good because a save froze the ring while it needed a
  // chunk.
  for (int thread = 2; thread < 6; ++thread) {
    CAPTURE(thread);
    CHECK(newest[1][thread] > newest[0][thread]);
    CHECK(newest[2][thread] > newest[1][thread]);
  }
}
