// The report as one JSON object (gnomon-report --json): what the text report says, memory
// and locks included.
#include "gnomon/server/json_report.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "../../support/build_model.h"
#include "../../support/json_check.h"
#include "gnomon/server/report.h"

using namespace gnomon::server;
using gnomon::test::JsonValue;

TEST_CASE("the JSON report holds what the text report says, memory and locks included") {
  gnomon::test::StreamWriter w;
  w.AppInfo("json reporter", 42).Calibration(0, 0, 0, 1).Calibration(1'000'000, 1'000'000, 1'000'000, 1);
  w.SourceLocation(1, "Load", "load", "io.cpp", 3).ThreadInfo(1, 11, "io").ThreadContext(1);
  w.ZoneBegin(1, 1000).ZoneEnd(3000).ZoneBegin(1, 4000).ZoneEnd(5000);
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, 1000)
      .Frame(gnomon::protocol::MessageType::kFrameMark, 0, 3000)
      .Frame(gnomon::protocol::MessageType::kFrameMark, 0, 7000);
  w.String(2, gnomon::protocol::StringKind::kMemoryPool, "meshes");
  w.Alloc(0, 0x10, 100, 1100).Alloc(0, 0x20, 50, 1200).Free(0, 0x10, 1300).Alloc(2, 0x30, 4096, 1400);
  w.String(3, gnomon::protocol::StringKind::kLockName, "queue");
  w.LockObtain(3, 2000).LockRelease(3, 2500);
  w.ThreadContext(2).LockWait(3, 2100).LockObtain(3, 2500).LockRelease(3, 2600);
  w.Message(2200, 4, "disk \"full\"").End(8000);
  const TraceModel model = gnomon::test::BuildModel(w);
  std::ostringstream out;
  WriteJsonReport(model, out);
  JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(out.str(), root, error), error, "\n", out.str());
  for (const char* key : {"program", "duration_ns", "threads", "zones", "frames", "gpu_contexts", "memory",
                          "locks", "samples", "context_switches"}) {
    CAPTURE(key);
    CHECK(root.Find(key) != nullptr);
  }
  CHECK(root.Find("program")->Find("name")->string == "json reporter");
  CHECK(root.Find("duration_ns")->number == 7000);
  const JsonValue& zone = root.Find("zones")->array.at(0);
  CHECK(zone.Find("name")->string == "Load");
  CHECK(zone.Find("file")->string == "io.cpp");
  CHECK(zone.Find("line")->number == 3);
  CHECK(zone.Find("count")->number == 2);
  CHECK(zone.Find("total_ns")->number == 3000);
  CHECK(zone.Find("self_ns")->number == 3000);
  CHECK(zone.Find("median_ns")->number == 1500);
  CHECK(zone.Find("min_ns")->number == 1000);
  CHECK(zone.Find("max_ns")->number == 2000);
  const JsonValue& frames = root.Find("frames")->array.at(0);
  CHECK(frames.Find("count")->number == 2);
  CHECK(frames.Find("max_ns")->number == 4000);
  const auto& memory = root.Find("memory")->array;
  REQUIRE(memory.size() == 2);
  CHECK(memory[0].Find("pool")->string == "default");
  CHECK(memory[0].Find("allocations")->number == 2);
  CHECK(memory[0].Find("frees")->number == 1);
  CHECK(memory[0].Find("peak_bytes")->number == 150);
  CHECK(memory[0].Find("leaked_allocations")->number == 1);
  CHECK(memory[0].Find("leaked_bytes")->number == 50);
  CHECK(memory[1].Find("pool")->string == "meshes");
  CHECK(memory[1].Find("leaked_bytes")->number == 4096);
  const JsonValue& lock = root.Find("locks")->array.at(0);
  CHECK(lock.Find("name")->string == "queue");
  CHECK(lock.Find("acquisitions")->number == 2);
  CHECK(lock.Find("contended")->number == 1);
  CHECK(lock.Find("wait_total_ns")->number == 400);
  CHECK(lock.Find("wait_max_ns")->number == 400);
  CHECK(root.Find("samples")->Find("count")->number == 0);
  CHECK(root.Find("messages")->array.at(0).Find("text")->string == "disk \"full\"");

  // The text report has the same sections.
  std::ostringstream text;
  PrintMemoryStatistics(model, text);
  PrintLockStatistics(model, text);
  CHECK(text.str().find("meshes") != std::string::npos);
  CHECK(text.str().find("queue") != std::string::npos);
}
