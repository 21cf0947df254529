#include "gnomon/server/report.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "../../support/build_model.h"
#include "../../support/json_check.h"
#include "gnomon/server/chrome_export.h"
#include "gnomon/server/csv_export.h"
#include "gnomon/server/json_report.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/text.h"
#include "model/trace_builder.h"

using namespace gnomon::server;
using gnomon::test::JsonValue;

namespace {
TraceModel SampleModel() {
  gnomon::test::StreamWriter w;
  w.AppInfo("reporter", 5).SourceLocation(1, "Load \"assets\"", "load", "io.cpp", 3);
  w.SourceLocation(2, "Parse", "parse", "io.cpp", 9).ThreadInfo(1, 11, "io thread").ThreadContext(1);
  w.ZoneBegin(1, 1000).ZoneBegin(2, 2000).ZoneText("tab\there").ZoneEnd(5000).ZoneEnd(9000);
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, 1000)
      .Frame(gnomon::protocol::MessageType::kFrameMark, 0, 9000);
  w.String(4, gnomon::protocol::StringKind::kPlotName, "memory").Plot(4, 3000, 1.5);
  w.Message(4000, 4, "disk \"full\"\n").End(9500);
  return gnomon::test::BuildModel(w);
}
}  // namespace

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
  CHECK(text.find(std::string(39, 'q') + "~") != std::string::npos);  // the table cuts it to its column
}

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

TEST_CASE("the CSV tables: every zone with its self time, messages, plots, a filter and a separator") {
  const TraceModel model = SampleModel();
  using Table = CsvOptions::Table;
  auto csv = [&](Table table, std::string filter = "", bool case_sensitive = false,
                 std::string separator = ",") {
    CsvOptions options;
    options.table = table;
    options.filter = std::move(filter);
    options.case_sensitive = case_sensitive;
    options.separator = std::move(separator);
    std::ostringstream out;
    WriteCsv(model, options, out);
    return out.str();
  };
  // Times from the first event (1,000); "Load" holds "Parse", so its self time is 5,000.
  CHECK(csv(Table::kZones) ==
        "thread,thread_id,name,file,line,depth,start_ns,duration_ns,self_ns\n"
        "\"io thread\",11,\"Load \"\"assets\"\"\",\"io.cpp\",3,0,0,8000,5000\n"
        "\"io thread\",11,\"Parse\",\"io.cpp\",9,1,1000,3000,3000\n");
  CHECK(csv(Table::kMessages) ==
        "time_ns,thread,severity,text\n"
        "3000,\"io thread\",\"" +
            std::string(gnomon::protocol::SeverityName(4)) + "\",\"disk \"\"full\"\"\\n\"\n");
  CHECK(csv(Table::kPlots) == "plot,time_ns,value\n\"memory\",2000,1.5\n");
  // A filter, without and with case; a separator.
  CHECK(csv(Table::kZones, "PARSE").find("\"Parse\"") != std::string::npos);
  CHECK(csv(Table::kZones, "PARSE").find("Load") == std::string::npos);
  CHECK(csv(Table::kZones, "PARSE", true) ==
        "thread,thread_id,name,file,line,depth,start_ns,duration_ns,self_ns\n");
  CHECK(
      csv(Table::kZoneStatistics, "assets", false, ";") ==
      "name;function;file;line;count;total_ns;self_ns;mean_ns;median_ns;min_ns;max_ns;stddev_ns;total_perc;"
      "self_perc\n"
      "\"Load \"\"assets\"\"\";\"load\";\"io.cpp\";3;1;8000;5000;8000.0;8000;8000;8000;0.0;94.118;58.824\n");
  CHECK(csv(Table::kMessages, "nothing like it") == "time_ns,thread,severity,text\n");
}

TEST_CASE("a CSV separator a reader could not split the fields by is refused") {
  for (const char* good : {",", ";", "\t", "|", " | ", "\xC2\xA6"}) {
    CAPTURE(good);
    CHECK(CheckCsvSeparator(good) == "");
  }
  const std::pair<std::string, const char*> bad[] = {
      {"", "is empty"},
      {"\"", "holds a quote"},
      {";\"", "holds a quote"},
      {"\n", "holds a line break"},
      {"\r\n", "holds a line break"},
      {"1", "holds what numbers are written with"},
      {".", "holds what numbers are written with"},
      {"-", "holds what numbers are written with"},
      {"e", "holds what numbers are written with"},
      {std::string(1, '\x1b'), "holds a control character"},
  };
  for (const auto& [separator, why] : bad) {
    CAPTURE(separator);
    const std::string error = CheckCsvSeparator(separator);
    CHECK(error.find(why) != std::string::npos);
    CHECK(error.find("choose another") != std::string::npos);
  }
}

TEST_CASE("the CSV tables of several programs: every program's rows, named, on one clock") {
  const TraceModel first = SampleModel();
  TraceModel second = SampleModel();
  second.program.pid = 77;
  second.program.host = "node2";
  // The second program's clock reads 500 ns ahead of the capture's: each exchange
  // brackets that offset by 10 ns on either side.
  for (uint64_t t = 1000; t <= 9000; t += 2000) {
    second.host_clock_exchanges.push_back(
        {.probe_sent_ns = t - 510, .receive_ns = t, .send_ns = t + 100, .reply_received_ns = t + 100 - 490});
  }
  CsvOptions options;
  options.table = CsvOptions::Table::kZones;
  std::ostringstream zones;
  WriteCsv({&first, &second}, options, zones);
  // The earliest event is the second's first zone, 500 ns before the first's.
  const std::string a = "\"" + ProcessLabel(first) + "\",5,", b = "\"" + ProcessLabel(second) + "\",77,";
  CHECK(zones.str() == "process,pid,thread,thread_id,name,file,line,depth,start_ns,duration_ns,self_ns\n" +
                           a + "\"io thread\",11,\"Load \"\"assets\"\"\",\"io.cpp\",3,0,500,8000,5000\n" + a +
                           "\"io thread\",11,\"Parse\",\"io.cpp\",9,1,1500,3000,3000\n" + b +
                           "\"io thread\",11,\"Load \"\"assets\"\"\",\"io.cpp\",3,0,0,8000,5000\n" + b +
                           "\"io thread\",11,\"Parse\",\"io.cpp\",9,1,1000,3000,3000\n");
  options.table = CsvOptions::Table::kZoneStatistics;
  std::ostringstream stats;
  WriteCsv({&first, &second}, options, stats);
  CHECK(stats.str().starts_with("process,pid,name,function,"));
  CHECK(stats.str().find(a + "\"Load") != std::string::npos);
  CHECK(stats.str().find(b + "\"Load") != std::string::npos);
  // One program: no process columns, as before.
  std::ostringstream one;
  WriteCsv({&first}, options, one);
  CHECK(one.str().starts_with("name,function,"));
}

TEST_CASE("the GPU CSV tables: statistics on the GPU's clock, every zone placed on the CPU timeline") {
  gnomon::test::StreamWriter w;
  w.AppInfo("gpu csv", 9).Calibration(0, 0, 0, 1).Calibration(1'000'000, 1'000'000, 1'000'000, 1);
  w.SourceLocation(1, "Shadows", "draw", "render.cpp", 40).ThreadInfo(1, 21, "render").ThreadContext(1);
  // A GPU of 1 ns ticks whose clock reads the CPU's + 500,000.
  w.GpuContext(1, "queue", 1, 1, 64, 500'000 + 1000, 1000);
  w.GpuZoneBegin(1, 1, 1, 2000)
      .GpuZoneEnd(1, 2, 2100)
      .GpuTime(1, 1, 500'000 + 5000)
      .GpuTime(1, 2, 500'000 + 7500);
  w.GpuZoneBegin(1, 3, 1, 8000).GpuZoneEnd(1, 4, 8100);  // never timed: left out
  w.GpuCalibration(1, 500'000 + 15000, 15000, 14000, 0).End(20000);
  const TraceModel model = gnomon::test::BuildModel(w);
  std::ostringstream stats, zones;
  CsvOptions options;
  options.table = CsvOptions::Table::kGpuZoneStatistics;
  WriteCsv(model, options, stats);
  options.table = CsvOptions::Table::kGpuZones;
  WriteCsv(model, options, zones);
  CHECK_MESSAGE(
      stats.str().find("\"Shadows\",\"draw\",\"render.cpp\",40,1,2500,2500,2500.0,2500,2500,2500") !=
          std::string::npos,
      stats.str());
  // Placed at 5,000 on the CPU timeline (from the first event), 3,000 after its submit.
  CHECK_MESSAGE(
      zones.str() == "context,name,file,line,thread,start_ns,duration_ns,submit_to_start_ns\n\"" +
                         model.gpu_contexts.at(1).label() + "\",\"Shadows\",\"render.cpp\",40,\"render\"," +
                         std::to_string(5000 - model.clock.TickToNs(model.first_tick)) + ",2500,3000\n",
      zones.str());
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
  CHECK(bad.ParseRange("x:5").find("'x' is not a number") != std::string::npos);
  CHECK(bad.ParseRange("5:1").find("ends before it begins") != std::string::npos);
  CHECK(bad.ParseRange("nan:1").find("is not a number") != std::string::npos);
}
