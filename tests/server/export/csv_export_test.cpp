// The CSV tables: zone statistics, every zone (CPU and GPU), messages and plots, filtered,
// with any separator a reader can split by, of one program or several on one clock.
#include "gnomon/server/csv_export.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <utility>

#include "../../support/build_model.h"
#include "../../support/report_model.h"
#include "gnomon/server/report.h"

using namespace gnomon::server;
using gnomon::test::SampleModel;

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
  for (const auto& [separator_text, why] : bad) {
    const std::string& separator = separator_text;  // CAPTURE's lambda takes it
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
