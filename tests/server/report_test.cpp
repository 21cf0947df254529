#include "gnomon/server/report.h"

#include <doctest/doctest.h>

#include <sstream>

#include "gnomon/server/chrome_export.h"
#include "gnomon/server/trace_builder.h"
#include "../support/json_check.h"
#include "../support/build_model.h"

using namespace gnomon::server;
using gnomon::test::JsonValue;

namespace {
TraceModel Sample() {
  gnomon::test::StreamWriter w;
  w.AppInfo("reporter", 5).SourceLocation(1, "Load \"assets\"", "load", "io.cpp", 3);
  w.SourceLocation(2, "Parse", "parse", "io.cpp", 9).ThreadInfo(1, 11, "io thread").ThreadContext(1);
  w.ZoneBegin(1, 1000).ZoneBegin(2, 2000).ZoneText("tab\there").ZoneEnd(5000).ZoneEnd(9000);
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, 1000).Frame(gnomon::protocol::MessageType::kFrameMark, 0, 9000);
  w.String(4, gnomon::protocol::StringKind::kPlotName, "memory").Plot(4, 3000, 1.5);
  w.Message(4000, 4, "disk \"full\"\n").End(9500);
  return gnomon::test::BuildModel(w);
}
}  // namespace

TEST_CASE("the Chrome export is valid JSON holding zones, threads, frames, messages and plots") {
  const TraceModel model = Sample();
  std::ostringstream out;
  WriteChromeTrace(model, out);
  JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(out.str(), root, error), error);
  const JsonValue* events = root.Find("traceEvents");
  REQUIRE(events != nullptr);
  int zones = 0, frames = 0, instants = 0, counters = 0;
  bool thread_named = false;
  for (const JsonValue& e : events->array) {
    const std::string ph = e.Find("ph")->string;
    const std::string name = e.Find("name")->string;
    if (ph == "X" && e.Find("cat")->string == "zone") {
      ++zones;
      if (name == "Parse") {
        CHECK(e.Find("dur")->number == doctest::Approx(3.0));
        CHECK(e.Find("ts")->number == doctest::Approx(1.0));
        CHECK(e.Find("args")->Find("text")->string == "tab\there");
      }
    }
    if (ph == "X" && e.Find("cat")->string == "frame") ++frames;
    if (ph == "i") {
      ++instants;
      CHECK(name == "disk \"full\"\n");
    }
    if (ph == "C") ++counters;
    if (ph == "M" && name == "thread_name" && e.Find("args")->Find("name")->string == "io thread") thread_named = true;
  }
  CHECK(zones == 2);
  CHECK(frames == 1);
  CHECK(instants == 1);
  CHECK(counters == 1);
  CHECK(thread_named);
}

TEST_CASE("the summary and the CSV name every location, thread and message") {
  const TraceModel model = Sample();
  const auto stats = ComputeZoneStatistics(model);
  std::ostringstream summary;
  PrintSummary(model, summary);
  PrintStatisticsTable(model, stats, summary);
  const std::string text = summary.str();
  for (const char* needle : {"reporter (pid 5)", "io thread (tid 11)", "Load \"assets\"", "Parse", "disk \"full\"",
                             "memory: 1 values", "ended cleanly", "io.cpp:9"}) {
    CHECK_MESSAGE(text.find(needle) != std::string::npos, needle);
  }
  std::ostringstream csv;
  WriteStatisticsCsv(model, stats, csv);
  CHECK(csv.str() ==
        "name,function,file,line,count,total_ns,self_ns,mean_ns,median_ns,min_ns,max_ns,stddev_ns\n"
        "\"Load \"\"assets\"\"\",\"load\",\"io.cpp\",3,1,8000,5000,8000.0,8000,8000,8000,0.0\n"
        "\"Parse\",\"parse\",\"io.cpp\",9,1,3000,3000,3000.0,3000,3000,3000,0.0\n");
  CHECK(FormatDuration(1500) == "1.5 us");
  CHECK(FormatDuration(2.5e9) == "2.5 s");
}

TEST_CASE("GPU contexts appear in the summary and as tracks of their own in the Chrome export") {
  gnomon::test::StreamWriter w;
  w.AppInfo("gpu reporter", 6).SourceLocation(1, "Blur", "blur", "fx.cpp", 4).ThreadInfo(1, 11, "render");
  w.GpuContext(1, "Test GPU", 1, 1, 64, 5000, 5000, gnomon::protocol::CpuTimeDomain::kMonotonicRaw, 20);
  w.GpuCalibration(1, 20'005'000, 20'005'000, 20'000'000, 20);  // 20 ms on: a knot of its own
  w.ThreadContext(1).ZoneBegin(1, 1000).ZoneEnd(2000);
  w.GpuZoneBegin(1, 1, 1, 1500).GpuZoneEnd(1, 2, 1600).GpuTime(1, 1, 10'000).GpuTime(1, 2, 30'000);
  w.GpuTime(1, 99, 40'000);  // a query no zone used
  const TraceModel model = gnomon::test::BuildModel(w);
  std::ostringstream summary;
  PrintSummary(model, summary);
  CHECK(summary.str().find("Test GPU (Vulkan, context 1): 1 zones (0 without GPU times)") != std::string::npos);
  CHECK(summary.str().find("1 GPU time(s) for queries no zone used") != std::string::npos);
  std::ostringstream out;
  WriteChromeTrace(model, out);
  JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(out.str(), root, error), error);
  int gpu_events = 0;
  bool track_named = false;
  for (const JsonValue& e : root.Find("traceEvents")->array) {
    if (e.Find("cat") && e.Find("cat")->string == "gpu") {
      ++gpu_events;
      CHECK(e.Find("name")->string == "Blur");
      CHECK(e.Find("dur")->number == doctest::Approx(20.0));  // 20,000 ns
      CHECK(e.Find("args")->Find("uncertainty_ns")->number == 20);
    }
    if (e.Find("ph")->string == "M" && e.Find("args")->Find("name")->string == "GPU: Test GPU") track_named = true;
  }
  CHECK(gpu_events == 1);
  CHECK(track_named);
}
