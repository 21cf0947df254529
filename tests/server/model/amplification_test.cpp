// Memory is proportional to what a stream really carries: for hostile streams made to
// cost as much as possible per byte (ids spread over their whole range, declarations
// that promise much and deliver nothing, thousands of one-event series), the heap the
// model holds, and the most it takes while statistics, the report and the Chrome export
// read it, stay within 64 bytes per input byte (plus a fixed 64 KiB).
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "../../support/build_model.h"
#include "../../support/heap_counter.h"
#include "../../support/process.h"
#include "gnomon/server/chrome_export.h"
#include "gnomon/server/counter_values.h"
#include "gnomon/server/json_report.h"
#include "gnomon/server/perfetto_export.h"
#include "gnomon/server/report.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/tracefile/trace_writer.h"

using gnomon::protocol::CounterDataType;
using gnomon::protocol::CounterTarget;
using gnomon::protocol::CounterType;
using gnomon::protocol::MessageType;
using gnomon::test::StreamWriter;

namespace {

constexpr double kMaxBytesPerInputByte = 64;
constexpr int64_t kFixedBytes = 64 << 10;

struct Cost {
  double held_per_byte = 0;  // by the model once built
  double peak_per_byte = 0;  // at most, while building and reading it
};

// Builds `w` into a model, reads it as the report and exports do, and measures.
Cost Measure(const StreamWriter& w) {
  const int64_t before = gnomon::test::HeapBytes();
  gnomon::test::ResetHeapPeak();
  Cost cost;
  {
    const gnomon::server::TraceModel model = gnomon::test::BuildWholeModel(w);
    int64_t mapped = 0;  // zone pages past a thread's first 8,192 zones live in blocks of their own
    for (const auto& thread : model.threads)
      thread.zones.ForEachBlock([&](const void*, size_t bytes) { mapped += int64_t(bytes); });
    cost.held_per_byte = double(gnomon::test::HeapBytes() + mapped - before - kFixedBytes) / double(w.size());
    std::ostringstream out;
    const auto stats = gnomon::server::ComputeZoneStatistics(model, 2);
    gnomon::server::PrintSummary(model, out);
    gnomon::server::PrintStatisticsTable(model, stats, out);
    gnomon::server::PrintStatisticsTable(model, gnomon::server::ComputeGpuZoneStatistics(model, 2), out);
    gnomon::server::PrintCounterStatistics(model, out);
    out.str("");
    std::ostringstream json;  // its size is the export's, not the model's: not counted
    const int64_t peak_before_export = gnomon::test::HeapPeakBytes();
    gnomon::server::WriteChromeTrace(model, json);
    cost.peak_per_byte = double(peak_before_export + mapped - before - kFixedBytes) / double(w.size());
  }
  MESSAGE(w.size(), " input bytes: held ", cost.held_per_byte, " B/B, peak ", cost.peak_per_byte, " B/B");
  return cost;
}

void CheckBounded(const StreamWriter& w) {
  const Cost cost = Measure(w);
  CHECK(cost.held_per_byte <= kMaxBytesPerInputByte);
  CHECK(cost.peak_per_byte <= kMaxBytesPerInputByte);
}

}  // namespace

TEST_CASE("65,536 threads of one zone each cost what their bytes carry") {
  StreamWriter w;
  for (uint32_t t = 1; t <= 65536; ++t) w.ThreadContext(t).ZoneBegin(1, t).ZoneEnd(t + 1);
  CheckBounded(w);
}

TEST_CASE("thread names and contexts without events cost little") {
  StreamWriter w;
  for (uint32_t t = 1; t <= 100000; ++t) w.ThreadContext(t);
  for (uint32_t t = 1; t <= 65536; ++t) w.ThreadInfo(t, t, "");
  CheckBounded(w);
}

TEST_CASE("4,096 counter sets declaring 4,096 counters each cost what they define") {
  StreamWriter w;
  w.GpuContext(1, "gpu");
  for (uint32_t set = 1; set <= 4096; ++set) w.CounterSet(1, set, 4096, "");
  w.Counter(7, 4095, CounterType::kEvent, CounterDataType::kUint64, "the last one");
  w.CounterResult(1, 7, CounterTarget::kFrame, 0, std::vector<uint64_t>(4096, 1));
  CheckBounded(w);
}

TEST_CASE("source-location ids spread over their whole range cost what they carry") {
  StreamWriter w;
  w.SourceLocation((1u << 18) - 1, "last", "f", "f.cpp", 1);
  w.ThreadContext(1);
  for (uint32_t i = 0; i < 20000; ++i) w.ZoneBegin((i * 2654435761u) % (1u << 18), i).ZoneEnd(i + 1);
  CheckBounded(w);
  StreamWriter one;  // a single definition at the top of the range
  one.SourceLocation((1u << 18) - 1, "last", "f", "f.cpp", 1)
      .ThreadContext(1)
      .ZoneBegin((1u << 18) - 1, 5)
      .ZoneEnd(6);
  CheckBounded(one);
}

TEST_CASE("65,536 GPU contexts, frame series and plots of one event each cost what they carry") {
  StreamWriter w;
  w.ThreadContext(1);
  for (uint32_t c = 1; c <= 65536; ++c) w.GpuContext(c, "").GpuZoneBegin(c, 1, 1, c).GpuZoneEnd(c, 2, c + 1);
  CheckBounded(w);
  StreamWriter series;
  series.ThreadContext(1);
  for (uint32_t id = 1; id <= 65536; ++id) {
    series.Frame(MessageType::kFrameMark, id * 7919, id).Plot(id * 104729, id, 1.0);
  }
  CheckBounded(series);
}

TEST_CASE("an ordinary stream costs far less than the bound") {
  StreamWriter w;
  w.AppInfo("ordinary").SourceLocation(1, "a", "f", "f.cpp", 1).SourceLocation(2, "b", "g", "f.cpp", 2);
  for (uint32_t t = 1; t <= 4; ++t) {
    w.ThreadContext(t);
    for (uint64_t i = 0; i < 20000; ++i)
      w.ZoneBegin(1, i * 100).ZoneBegin(2, i * 100 + 10).ZoneEnd(i * 100 + 20).ZoneEnd(i * 100 + 50);
  }
  w.End(3'000'000);  // the ends of the last blocks go back
  const Cost cost = Measure(w);
  CHECK(cost.held_per_byte < 1);  // 12 bytes a zone held for 22 received
  CHECK(cost.held_per_byte > 0.5);
}

namespace {

// Loads the trace at `path` as gnomon-report does (every program), reports and exports
// it as the report does (to streams that keep nothing), and returns the most heap
// taken per byte of the file.
double FilePeakPerByte(const std::string& path, gnomon::server::LoadReport* report = nullptr) {
  const uint64_t file_bytes = gnomon::test::ReadFile(path).size();
  const int64_t before = gnomon::test::HeapBytes();
  gnomon::test::ResetHeapPeak();
  {
    gnomon::server::TraceSet set;
    auto loaded = gnomon::server::LoadTraceSet(path, set);
    REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
    if (report != nullptr) *report = loaded.value();
    std::vector<const gnomon::server::TraceModel*> processes;
    for (const auto& process : set.processes) processes.push_back(&process.model);
    std::ostream nowhere(nullptr);  // what is written is not the model's to count
    std::vector<std::vector<gnomon::server::ZoneStatistics>> stats;
    for (const auto* process : processes) {
      stats.push_back(gnomon::server::ComputeZoneStatistics(*process));
      gnomon::server::PrintSummary(*process, nowhere);
    }
    gnomon::server::PrintProcessComparison(processes, stats, nowhere);
    gnomon::server::WriteJsonReport(*processes.front(), nowhere, processes);
    gnomon::server::WriteChromeTrace(processes, nowhere);
    gnomon::server::WritePerfettoTrace(processes, nowhere);
  }
  const double peak = double(gnomon::test::HeapPeakBytes() - before - kFixedBytes) / double(file_bytes);
  MESSAGE(file_bytes, " file bytes: peak ", peak, " B/B");
  return peak;
}

}  // namespace

TEST_CASE("a file of 65,536 streams of one tiny block each costs what the blocks hold") {
  gnomon::test::ScratchDir dir;
  // A real file's header, then blocks of one byte each, every one naming a stream of its
  // own (none decompresses), and the end marker: 29 bytes a stream.
  {
    auto writer = gnomon::tracefile::TraceWriter::Create(dir.File("one.gnomon"), {});
    REQUIRE(writer.ok());
    REQUIRE(writer.value()->Finish().ok());
    REQUIRE(writer.value()->Publish(gnomon::tracefile::Overwrite::kNo).ok());
  }
  std::string file =
      gnomon::test::ReadFile(dir.File("one.gnomon")).substr(0, sizeof(gnomon::tracefile::FileHeader));
  constexpr uint32_t kStreams = 65536;
  for (uint32_t i = 0; i < kStreams; ++i) {
    const auto header = gnomon::tracefile::MakeBlockHeader(gnomon::tracefile::kBlockMagic, i, 16, 1, i, 0);
    file.append(reinterpret_cast<const char*>(&header), sizeof(header));
    file.push_back('x');
  }
  const auto end = gnomon::tracefile::MakeBlockHeader(gnomon::tracefile::kEndMagic, kStreams, 0, 0);
  file.append(reinterpret_cast<const char*>(&end), sizeof(end));
  std::ofstream(dir.File("many.gnomon"), std::ios::binary) << file;
  gnomon::server::LoadReport report;
  CHECK(FilePeakPerByte(dir.File("many.gnomon"), &report) <= kMaxBytesPerInputByte);
  CHECK(report.anomalies.damaged_blocks == kStreams);
  CHECK(report.programs == 0);
  // One line of a few sentences, however many blocks were damaged.
  CHECK_MESSAGE(report.warning.size() < 2048, report.warning);
  CHECK(report.warning.find("65524 more problem(s) of these kinds") != std::string::npos);
  CHECK(report.warning.find("65536 of its streams held no program's events (left out)") != std::string::npos);
}

TEST_CASE("a file of 16,384 programs of one zone each costs what they hold") {
  gnomon::test::ScratchDir dir;
  {
    auto writer = gnomon::tracefile::TraceWriter::Create(dir.File("programs.gnomon"), {});
    REQUIRE(writer.ok());
    for (uint32_t i = 0; i < 16384; ++i) {
      StreamWriter w;
      w.AppInfo("tiny", i + 1)
          .SourceLocation(1, "z", "f", "x.cpp", 1)
          .ThreadContext(1)
          .ZoneBegin(1, 10)
          .ZoneEnd(20);
      auto& stream = i == 0 ? writer.value()->first_stream() : writer.value()->AddStream();
      stream.Append(w.bytes().data(), w.bytes().size());
      stream.Close();
    }
    REQUIRE(writer.value()->Publish(gnomon::tracefile::Overwrite::kNo).ok());
    REQUIRE(writer.value()->Finish().ok());
  }
  gnomon::server::LoadReport report;
  CHECK(FilePeakPerByte(dir.File("programs.gnomon"), &report) <= kMaxBytesPerInputByte);
  CHECK(report.programs == 16384);
  CHECK(report.warning == "");
}
