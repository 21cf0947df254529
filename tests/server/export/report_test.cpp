#include "gnomon/server/report.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "../../support/build_model.h"
#include "../../support/json_check.h"
#include "../../support/report_model.h"
#include "gnomon/server/chrome_export.h"
#include "gnomon/server/csv_export.h"
#include "gnomon/server/json_report.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/text.h"
#include "model/trace_builder.h"

using namespace gnomon::server;
using gnomon::test::JsonValue;
using gnomon::test::SampleModel;

TEST_CASE("the summary and the CSV name every location, thread and message") {
  const TraceModel model = SampleModel();
  const auto stats = ComputeZoneStatistics(model);
  std::ostringstream summary;
  PrintSummary(model, summary);
  PrintStatisticsTable(model, stats, summary);
  const std::string text = summary.str();
  for (const char* needle : {"reporter (pid 5)", "io thread (tid 11)", "Load \"assets\"", "Parse",
                             "disk \"full\"", "memory: 1 values", "ended cleanly", "io.cpp:9"}) {
    CHECK_MESSAGE(text.find(needle) != std::string::npos, needle);
  }
  // The trace runs from the first event (1,000) to the end (9,500): 8,500 ns.
  std::ostringstream csv;
  WriteStatisticsCsv(model, stats, csv);
  CHECK(csv.str() ==
        "name,function,file,line,count,total_ns,self_ns,mean_ns,median_ns,min_ns,max_ns,stddev_ns,total_perc,"
        "self_perc\n"
        "\"Load \"\"assets\"\"\",\"load\",\"io.cpp\",3,1,8000,5000,8000.0,8000,8000,8000,0.0,94.118,58.824\n"
        "\"Parse\",\"parse\",\"io.cpp\",9,1,3000,3000,3000.0,3000,3000,3000,0.0,35.294,35.294\n");
  CHECK(FormatDuration(1500) == "1.5 us");
  CHECK(FormatDuration(2.5e9) == "2.5 s");
}

TEST_CASE("a bracket narrows one side of the absolute bound, in the summary and in the Chrome export") {
  gnomon::test::StreamWriter w;
  w.AppInfo("bracketed", 6).SourceLocation(1, "Blur", "blur", "fx.cpp", 4).ThreadInfo(1, 11, "render");
  // Three knots on one line (no scatter: the relative bound is its 20 ns floor), each
  // stating 3 us; the GPU's 30,000 was seen by the CPU at 30,500 at the latest.
  w.GpuContext(1, "Test GPU", 1, 1, 64, 5000, 5000, gnomon::protocol::CpuTimeDomain::kMonotonicRaw, 3000);
  w.GpuCalibration(1, 20'005'000, 20'005'000, 20'000'000, 3000);
  w.GpuCalibration(1, 40'005'000, 40'005'000, 20'000'000, 3000);
  w.GpuTimeBracket(1, 30'000, 0, 30'500);
  w.GpuTimeBracket(1, 30'000, 30'500, 30'000);  // ends before it begins: rejected
  w.ThreadContext(1)
      .GpuZoneBegin(1, 1, 1, 1500)
      .GpuZoneEnd(1, 2, 1600)
      .GpuTime(1, 1, 10'000)
      .GpuTime(1, 2, 30'000);
  const TraceModel model = gnomon::test::BuildModel(w);
  std::ostringstream summary;
  PrintSummary(model, summary);
  INFO(summary.str());
  CHECK(summary.str().find("placement: +/- 20 ns relative (from the calibrations' scatter), -3 us/+540 ns "
                           "absolute (narrowed by brackets)") != std::string::npos);
  CHECK(summary.str().find("brackets: 1 GPU time(s) seen from the CPU, the offset within "
                           "[-3.02 us, +520 ns]") != std::string::npos);
  CHECK(summary.str().find("1 bracket(s) rejected") != std::string::npos);
  std::ostringstream out;
  WriteChromeTrace(model, out);
  JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(out.str(), root, error), error);
  int gpu_events = 0;
  for (const JsonValue& e : root.Find("traceEvents")->array) {
    if (!e.Find("cat") || e.Find("cat")->string != "gpu") continue;
    ++gpu_events;
    const JsonValue* args = e.Find("args");
    REQUIRE(args->Find("absolute_early_ns"));
    REQUIRE(args->Find("absolute_late_ns"));
    CHECK(args->Find("absolute_early_ns")->number == 3000);
    CHECK(args->Find("absolute_late_ns")->number == 540);
    CHECK(args->Find("absolute_bound_ns")->number == 3000);
    CHECK(args->Find("relative_bound_ns")->number == 20);
  }
  CHECK(gpu_events == 1);
}

namespace {

// Whether `text` is valid UTF-8 with no control character but newlines (a terminal would
// act on the others).
bool IsSafeText(const std::string& text) {
  if (gnomon::server::ValidUtf8(text) != text) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = uint8_t(text[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7F) return false;
    if (c == 0xC2 && i + 1 < text.size() && uint8_t(text[i + 1]) < 0xA0) return false;  // C1
  }
  return true;
}

}  // namespace

TEST_CASE("names a program sent are escaped in the report, the CSV and the Chrome export") {
  static constexpr char kHostile[] =
      "evil\x1B[2J\x1B]0;pwned\x07 \xFF\xC0\xAF nul:\0: csi:\xC2\x9B"
      "31m end";
  const std::string hostile(kHostile, sizeof(kHostile) - 1);
  gnomon::test::StreamWriter w;
  w.AppInfo(hostile)
      .SourceLocation(1, hostile, hostile, hostile + ".cpp", 1)
      .ThreadInfo(1, 1, hostile + "\nline");
  w.ThreadContext(1).ZoneBegin(1, 100).ZoneName(hostile).ZoneText(hostile).ZoneEnd(200);
  w.Message(150, 2, hostile).String(3, gnomon::protocol::StringKind::kPlotName, hostile).Plot(3, 120, 1.0);
  w.String(4, gnomon::protocol::StringKind::kFrameName, hostile)
      .Frame(gnomon::protocol::MessageType::kFrameBegin, 4, 100);
  w.Frame(gnomon::protocol::MessageType::kFrameEnd, 4, 190);
  w.GpuContext(1, hostile).GpuContextName(1, hostile).GpuZoneBegin(1, 1, 1, 110).GpuZoneEnd(1, 2, 150);
  w.GpuTime(1, 1, 130).GpuTime(1, 2, 140).End(300);
  const TraceModel model = gnomon::test::BuildModel(w);
  for (const std::string* name : {&model.program.name, &model.threads.at(0).name, &model.messages.at(0).text,
                                  &model.Location(1).name, &model.gpu_contexts.at(1).name}) {
    CHECK(gnomon::server::ValidUtf8(*name) == *name);  // kept as valid UTF-8...
    CHECK(name->find('\0') == std::string::npos);
    CHECK(name->find("\x1B[2J") != std::string::npos);  // ...but not otherwise changed
  }

  std::ostringstream report;
  PrintSummary(model, report);
  PrintStatisticsTable(model, ComputeZoneStatistics(model), report);
  PrintStatisticsTable(model, ComputeGpuZoneStatistics(model), report);
  CHECK(IsSafeText(report.str()));
  CHECK(report.str().find("evil\\x1b[2J\\x1b]0;pwned\\x07") != std::string::npos);
  CHECK(report.str().find("csi:\\u009b31m") != std::string::npos);

  std::ostringstream csv;
  WriteStatisticsCsv(model, ComputeZoneStatistics(model), csv);
  CHECK(IsSafeText(csv.str()));

  std::ostringstream json;
  WriteChromeTrace(model, json);
  CHECK(gnomon::server::ValidUtf8(json.str()) == json.str());  // strict parsers take it
  JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(json.str(), root, error), error);
}

TEST_CASE("a name of any length keeps its report line whole") {
  const std::string long_name(60000, 'q');
  gnomon::test::StreamWriter w;
  w.AppInfo("long").GpuContext(1, long_name).ThreadContext(1);
  w.SourceLocation(1, long_name, "f", long_name + ".cpp", 7).ZoneBegin(1, 10).ZoneEnd(20).End(30);
  const TraceModel model = gnomon::test::BuildModel(w);
  std::ostringstream out;
  PrintSummary(model, out);
  PrintStatisticsTable(model, ComputeZoneStatistics(model), out);
  const std::string text = out.str();
  const size_t gpu = text.find("  " + long_name + " (Vulkan, context 1): ");
  REQUIRE(gpu != std::string::npos);
  const size_t clock = text.find("\n    clock: ", gpu);
  REQUIRE(clock != std::string::npos);
  CHECK(text.find('\n', gpu) == clock);  // the whole context line, then its clock line
  CHECK(text.find("calibrated timestamps\n", clock) != std::string::npos);
  CHECK(text.find(std::string(37, 'q') + "...") != std::string::npos);  // the table cuts it to its column
}

TEST_CASE("a frame series is summarized in percentiles and a histogram, never a line per frame") {
  gnomon::test::StreamWriter w;
  w.AppInfo("frames", 7).Calibration(0, 0, 0, 1).Calibration(10'000'000, 10'000'000, 10'000'000, 1);
  // 1,000 frames of 1,000 to 1,999 ns, in a shuffled order.
  uint64_t tick = 1000;
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, tick);
  for (uint64_t i = 0; i < 1000; ++i) {
    tick += 1000 + (i * 7919) % 1000;
    w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, tick);
  }
  w.End(tick + 1);
  const TraceModel model = gnomon::test::BuildModel(w);
  const FrameTimeSummary s = SummarizeFrameTimes(model, model.frames.at(0));
  CHECK(s.count == 1000);
  CHECK(s.min_ns == 1000);
  CHECK(s.max_ns == 1999);
  CHECK(s.p50_ns == 1499);  // nearest rank: the 500th of 1,000
  CHECK(s.p90_ns == 1899);
  CHECK(s.p99_ns == 1989);
  for (uint64_t bin : s.bins) CHECK(bin == 100);

  std::ostringstream text;
  PrintSummary(model, text);
  const std::string summary = text.str();
  CHECK(std::count(summary.begin(), summary.end(), '\n') < 20);
  const std::string percentiles = "p50 " + FormatDuration(1499) + ", p90 " + FormatDuration(1899) + ", p99 " +
                                  FormatDuration(1989) + "; frames from min to max in 10 equal bins: 100 100";
  CHECK_MESSAGE(summary.find(percentiles) != std::string::npos, summary);

  std::ostringstream out;
  WriteJsonReport(model, out);
  JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(out.str(), root, error), error);
  const JsonValue& frames = root.Find("frames")->array.at(0);
  CHECK(frames.Find("p99_ns")->number == 1989);
  const auto& histogram = frames.Find("histogram")->array;
  REQUIRE(histogram.size() == 10);
  for (const JsonValue& bin : histogram) CHECK(bin.number == 100);
}

TEST_CASE("each frame series is printed apart, its frames counted as frames, never added to another's") {
  gnomon::test::StreamWriter w;
  w.AppInfo("series").ThreadContext(1);
  w.String(7, gnomon::protocol::StringKind::kFrameName, "physics");
  using gnomon::protocol::MessageType;
  for (uint64_t t = 1000; t <= 187'000; t += 1000) w.Frame(MessageType::kFrameMark, 0, t);  // 186 frames
  for (uint64_t t = 1000; t < 94'000; t += 1000) {                                          // 93 frames
    w.Frame(MessageType::kFrameBegin, 7, t).Frame(MessageType::kFrameEnd, 7, t + 500);
  }
  const TraceModel model = gnomon::test::BuildModel(w);
  std::ostringstream text;
  PrintSummary(model, text);
  const std::string summary = text.str();
  CHECK_MESSAGE(summary.find("Frames     2 series\n") != std::string::npos, summary);
  CHECK_MESSAGE(summary.find("  main: 186 frames (187 marks)") != std::string::npos, summary);
  CHECK_MESSAGE(summary.find("  physics: 93 frames,") != std::string::npos, summary);
  CHECK(summary.find("279") == std::string::npos);
}

TEST_CASE("messages name their thread as the viewer does, and the summary shows the first few and a count") {
  gnomon::test::StreamWriter w;
  w.AppInfo("chatty").ThreadInfo(1, 100, "main").ThreadContext(1);
  for (int i = 0; i < 100; ++i) w.Message(1000 + uint64_t(i), 1, "step " + std::to_string(i));
  w.ThreadContext(2).Message(5000, 3, "from a thread without a name");
  const TraceModel model = gnomon::test::BuildModel(w);
  std::ostringstream text;
  PrintSummary(model, text);
  const std::string summary = text.str();
  CHECK_MESSAGE(summary.find("[main] step 0\n") != std::string::npos, summary);
  CHECK(summary.find("[thread 1]") == std::string::npos);
  CHECK(summary.find("step 9\n") != std::string::npos);
  CHECK(summary.find("step 10\n") == std::string::npos);
  CHECK(summary.find("... and 91 more (--all-messages prints every one") != std::string::npos);
  CHECK(std::count(summary.begin(), summary.end(), '\n') < 40);

  std::ostringstream all;
  PrintSummary(model, all, SIZE_MAX);
  CHECK(all.str().find("step 99\n") != std::string::npos);
  CHECK(all.str().find("[thread 2] from a thread without a name") != std::string::npos);
  CHECK(all.str().find("more (--all-messages") == std::string::npos);
}

TEST_CASE("the library's own threads are named apart from the program's, and not counted as its") {
  gnomon::test::StreamWriter w;
  w.AppInfo("sampled").ThreadInfo(1, 100, "main").ThreadInfo(2, 101, "gnomon sampler");
  w.Add(gnomon::protocol::LibraryThread{.thread_id = 2});
  w.ThreadContext(1).SourceLocation(1, "Work", "f", "a.cpp", 1).ZoneBegin(1, 1000).ZoneEnd(2000);
  const TraceModel model = gnomon::test::BuildModel(w);
  std::ostringstream text;
  PrintSummary(model, text);
  const std::string summary = text.str();
  CHECK_MESSAGE(
      summary.find("Threads    1\n  main (tid 100): 1 zones\n  and Gnomon's own: gnomon sampler\n") !=
          std::string::npos,
      summary);
  std::ostringstream out;
  WriteJsonReport(model, out);
  JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(out.str(), root, error), error);
  int library = 0;
  for (const JsonValue& thread : root.Find("threads")->array) library += thread.Find("library")->boolean;
  CHECK(library == 1);
}

TEST_CASE("the summary says what the program ran on and with, and the JSON keeps it") {
  gnomon::test::StreamWriter w;
  w.AppInfo("app", 7);
  w.Add(gnomon::protocol::ProgramEnvironment{.logical_cpus = 16, .memory_bytes = uint64_t{64} << 30},
        {.system = "Linux 6.1.0 x86_64", .cpu = "Test CPU", .settings = "GNOMON_PORT=9000\nGNOMON_RANK=3"});
  const TraceModel model = gnomon::test::BuildWholeModel(w);
  std::ostringstream summary;
  PrintSummary(model, summary);
  CHECK_MESSAGE(summary.str().find("System     Linux 6.1.0 x86_64, 16 logical CPUs (Test CPU), 64 GiB\n") !=
                    std::string::npos,
                summary.str());
  CHECK(summary.str().find("Settings   GNOMON_PORT=9000, GNOMON_RANK=3\n") != std::string::npos);
  std::ostringstream json;
  WriteJsonReport(model, json, {&model});
  CHECK(json.str().find("\"system\":\"Linux 6.1.0 x86_64\",\"cpu\":\"Test CPU\",\"logical_cpus\":16,"
                        "\"memory_bytes\":68719476736,\"settings\":\"GNOMON_PORT=9000\\nGNOMON_RANK=3\"") !=
        std::string::npos);
  // A program that did not say: no System line.
  gnomon::test::StreamWriter old;
  old.AppInfo("old", 8);
  std::ostringstream quiet;
  PrintSummary(gnomon::test::BuildWholeModel(old), quiet);
  CHECK(quiet.str().find("System") == std::string::npos);
}
