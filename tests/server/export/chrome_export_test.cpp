// The Chrome trace-event export: zones, threads, frames, messages, plots and GPU contexts as
// Perfetto's UI and chrome://tracing read them, and only what an export filter keeps.
#include "gnomon/server/chrome_export.h"

#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>

#include "../../support/build_model.h"
#include "../../support/json_check.h"
#include "../../support/report_model.h"
#include "gnomon/server/export_filter.h"
#include "gnomon/server/report.h"

using namespace gnomon::server;
using gnomon::test::JsonValue;
using gnomon::test::SampleModel;

TEST_CASE("the Chrome export is valid JSON holding zones, threads, frames, messages and plots") {
  const TraceModel model = SampleModel();
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
    if (ph == "M" && name == "thread_name" && e.Find("args")->Find("name")->string == "io thread")
      thread_named = true;
  }
  CHECK(zones == 2);
  CHECK(frames == 1);
  CHECK(instants == 1);
  CHECK(counters == 1);
  CHECK(thread_named);
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
  CHECK(summary.str().find("Test GPU (Vulkan, context 1): 1 zones (0 without GPU times)") !=
        std::string::npos);
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
      // Two knots only: no scatter to go by, so the relative bound is the stated one.
      REQUIRE(e.Find("args")->Find("relative_bound_ns"));
      REQUIRE(e.Find("args")->Find("absolute_bound_ns"));
      CHECK(e.Find("args")->Find("relative_bound_ns")->number == 20);
      CHECK(e.Find("args")->Find("absolute_bound_ns")->number == 20);
    }
    if (e.Find("ph")->string == "M" && e.Find("args")->Find("name")->string == "GPU: Test GPU")
      track_named = true;
  }
  CHECK(gpu_events == 1);
  CHECK(track_named);
}

TEST_CASE("the Chrome export keeps what the range, the threads and the zone filter say") {
  gnomon::test::StreamWriter w;
  w.AppInfo("filtered", 3).SourceLocation(1, "Load", "load", "io.cpp", 1);
  w.SourceLocation(2, "Parse", "parse", "io.cpp", 2).SourceLocation(3, "Draw", "draw", "gfx.cpp", 3);
  w.ThreadInfo(1, 11, "io").ThreadInfo(2, 12, "render");
  // From the first event (1,000): Load 0-2,000, Parse 4,000-5,000 and a message at
  // 4,500 on "io"; Draw 1,000-7,000 on "render"; a plot value at 3,000.
  w.ThreadContext(1).ZoneBegin(1, 1000).ZoneEnd(3000).ZoneBegin(2, 5000).ZoneEnd(6000).Message(5500, 2,
                                                                                               "parsed");
  w.ThreadContext(2).ZoneBegin(3, 2000).ZoneEnd(8000);
  w.String(9, gnomon::protocol::StringKind::kPlotName, "load").Plot(9, 4000, 1.0).End(9000);
  const TraceModel model = gnomon::test::BuildModel(w);
  struct Kept {
    std::multiset<std::string> zones;
    int messages = 0, plot_values = 0;
  };
  auto kept = [&](const std::string& range, const std::string& threads, const std::string& zones) {
    ExportFilter filter;
    if (!range.empty()) REQUIRE(filter.ParseRange(range).empty());
    filter.ParseThreads(threads);
    filter.zones = zones;
    std::ostringstream out;
    WriteChromeTrace(model, out, filter);
    JsonValue root;
    std::string error;
    REQUIRE_MESSAGE(gnomon::test::ParseJson(out.str(), root, error), error);
    Kept k;
    for (const JsonValue& e : root.Find("traceEvents")->array) {
      const std::string ph = e.Find("ph")->string;
      if (ph == "X" && e.Find("cat")->string == "zone") k.zones.insert(e.Find("name")->string);
      k.messages += ph == "i";
      k.plot_values += ph == "C";
    }
    return k;
  };
  Kept all = kept("", "", "");
  CHECK(all.zones == std::multiset<std::string>{"Load", "Parse", "Draw"});
  CHECK(all.messages == 1);
  CHECK(all.plot_values == 1);
  // 2,500 to 4,500 ns: Load is before it; the message at its very end is in.
  Kept range = kept("0.0025:0.0045", "", "");
  CHECK(range.zones == std::multiset<std::string>{"Parse", "Draw"});
  CHECK(range.messages == 1);
  CHECK(range.plot_values == 1);
  CHECK(kept(":0.0005", "", "").zones == std::multiset<std::string>{"Load"});
  // A plot set before the range still holds in it: its value at the range's beginning.
  CHECK(kept("0.0065:", "", "").plot_values == 1);
  CHECK(kept(":0.0025", "", "").plot_values == 0);
  // By name and by OS thread id.
  Kept render = kept("", "render", "");
  CHECK(render.zones == std::multiset<std::string>{"Draw"});
  CHECK(render.messages == 0);
  CHECK(render.plot_values == 1);
  CHECK(kept("", "11,nobody", "").zones == std::multiset<std::string>{"Load", "Parse"});
  CHECK(kept("", "", "PAR").zones == std::multiset<std::string>{"Parse"});

  ExportFilter bad;
  CHECK(bad.ParseRange("5").find("is not A:B") != std::string::npos);
  CHECK(bad.ParseRange("x:5").find("'x' is not a time") != std::string::npos);
  CHECK(bad.ParseRange("5:1").find("ends before it begins") != std::string::npos);
  CHECK(bad.ParseRange("nan:1").find("is not a time") != std::string::npos);
}
