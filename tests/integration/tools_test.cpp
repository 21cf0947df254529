// The command-line tools as a user runs them: demo -> gnomon-capture -> gnomon-report.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "../support/json_check.h"
#include "../support/process.h"
#include "../support/stream_writer.h"
#include "../support/trace_files.h"
#include "../support/zone_sets.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/worker.h"
#include "gnomon/tracefile/trace_writer.h"

using gnomon::test::ChildProcess;
using gnomon::test::ReadFile;
using gnomon::test::RunCommand;
using gnomon::test::ScratchDir;

namespace {

// Starts the demo on a free port; returns its port.
uint16_t StartDemo(ScratchDir& dir, std::unique_ptr<ChildProcess>& demo, const std::string& seconds) {
  demo = std::make_unique<ChildProcess>(
      std::vector<std::string>{GNOMON_DEMO, "--seconds", seconds},
      std::map<std::string, std::string>{{"GNOMON_PORT", "0"}, {"GNOMON_PORT_FILE", dir.File("port")}},
      dir.File("demo.log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  return port;
}

}  // namespace

TEST_CASE(
    "capture the demo to a file and the report, its JSON and the Chrome export list everything it did") {
  ScratchDir dir;
  std::unique_ptr<ChildProcess> demo;
  const uint16_t port = StartDemo(dir, demo, "1");
  const std::string trace = dir.File("demo.gnomon");
  std::string output;
  const int capture_rc = RunCommand(
      std::string(GNOMON_CAPTURE) + " -q -j 3 -p " + std::to_string(port) + " -o " + trace, &output);
  CHECK_MESSAGE(capture_rc == 0, output);
  CHECK(demo->Wait() == 0);
  CHECK(output.find("zones") != std::string::npos);
  CHECK(output.find("MB in memory") != std::string::npos);

  const std::string json = dir.File("demo.json");
  std::string report;
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " --chrome " + json + " " + trace, &report) == 0);
  for (const char* needle : {"Program    gnomon-demo",
                             "Frame",
                             "Update",
                             "Physics",
                             "Render",
                             "Job",
                             "Decompress",
                             "Simulate step",
                             "main (tid",
                             "worker 0",
                             "worker 1",
                             "worker 2",
                             "worker 3",
                             "demo started",
                             "demo finished",
                             "Physics step",
                             "queue depth",
                             "frame time ms",
                             "ended cleanly",
                             "0 unfinished",
                             "Dropped    0",
                             "Memory (2 pool(s)",
                             "textures",
                             "Locks (1",
                             "job queue"}) {
    CHECK_MESSAGE(report.find(needle) != std::string::npos, needle, "\n", report);
  }
  gnomon::test::JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(ReadFile(json), root, error), error);
  std::set<std::string> names;
  for (const auto& event : root.Find("traceEvents")->array) {
    names.insert(event.Find("name")->string);
    if (const auto* args = event.Find("args"); args && args->Find("name"))
      names.insert(args->Find("name")->string);
  }
  for (const char* name :
       {"Frame", "Update", "Physics", "Render", "Job", "Decompress", "Simulate", "Simulate step", "main",
        "worker 0", "worker 3", "demo started", "queue depth", "Physics step"}) {
    CHECK_MESSAGE(names.count(name) == 1, name);
  }

  std::string csv;
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " --csv " + trace, &csv) == 0);
  CHECK(csv.rfind("name,function,file,line,count,total_ns", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 10);  // header + 9 source locations

  // Every "Physics" zone, one row each, whatever the case of the filter, with ';'.
  gnomon::server::TraceModel model;
  REQUIRE(gnomon::server::LoadTrace(trace, model).ok());
  size_t physics = 0;
  for (const auto& thread : model.threads) {
    for (size_t i = 0; i < thread.zones.size(); ++i)
      physics += !thread.zones[i].is_open() && model.ZoneName(thread, i) == "Physics";
  }
  REQUIRE(physics > 0);
  std::string unwrapped;
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " --csv --unwrap --filter pHySiCs --sep ';' " + trace,
                     &unwrapped) == 0);
  CHECK(unwrapped.rfind("thread;thread_id;name;file;line;depth;start_ns;duration_ns;self_ns\n", 0) == 0);
  CHECK(size_t(std::count(unwrapped.begin(), unwrapped.end(), '\n')) == 1 + physics);
  CHECK(size_t(std::count_if(unwrapped.begin(), unwrapped.end(), [](char c) { return c == ';'; })) ==
        8 * (1 + physics));
  std::string messages;
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " --csv --messages " + trace, &messages) == 0);
  CHECK(messages.find("\"demo started\"") != std::string::npos);
  std::string plot;
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " --csv --plots --filter 'queue depth' " + trace, &plot) ==
          0);
  CHECK(plot.find("\n\"queue depth\",") != std::string::npos);
  CHECK(plot.find("frame time ms") == std::string::npos);
  // The Chrome export of one worker's "Simulate" zones in the first minute (the range
  // itself is tested in report_test).
  std::string filtered;
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) +
                         " --chrome - --range 0:60000 --threads 'worker 0' --zones simulate " + trace +
                         " 2>/dev/null",
                     &filtered) == 0);
  gnomon::test::JsonValue filtered_root;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(filtered, filtered_root, error), error);
  std::set<double> zone_threads;
  size_t filtered_zones = 0;
  for (const auto& event : filtered_root.Find("traceEvents")->array) {
    if (event.Find("ph")->string != "X" || event.Find("cat")->string != "zone") continue;
    ++filtered_zones;
    CHECK(event.Find("name")->string.find("Simulate") != std::string::npos);
    CHECK(event.Find("ts")->number <= 60e6);
    zone_threads.insert(event.Find("tid")->number);
  }
  CHECK(filtered_zones > 0);
  CHECK(zone_threads.size() == 1);
  // The Perfetto export, filtered the same, to standard output: a Trace whose packets
  // (field 1, length-delimited) are deflated batches (compressed_packets, field 50)
  // that name the zones kept and no other (its content is tested in
  // perfetto_export_test). Unpacked here by Python's zlib, as a reader would.
  const std::string pftrace = dir.File("filtered.pftrace");
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " --perfetto - --zones simulate " + trace + " > " +
                         pftrace + " 2>/dev/null",
                     &output) == 0);
  const char* unpack =
      "import sys, zlib\n"
      "def varint(b, i):\n"
      "    v, s = 0, 0\n"
      "    while True:\n"
      "        v |= (b[i] & 127) << s; s += 7; i += 1\n"
      "        if b[i - 1] < 128: return v, i\n"
      "b = open(sys.argv[1], 'rb').read(); i = 0; out = b''; batches = 0\n"
      "while i < len(b):\n"
      "    assert b[i] == 0x0a; n, i = varint(b, i + 1); end = i + n\n"
      "    assert b[i:i + 2] == bytes([0x92, 0x03]); m, j = varint(b, i + 2)\n"
      "    out += zlib.decompress(b[j:j + m]); batches += 1; i = end\n"
      "print('batches', batches, 'Simulate', b'Simulate' in out, 'Decompress', b'Decompress' in out)\n";
  REQUIRE(RunCommand("python3 -c \"" + std::string(unpack) + "\" " + pftrace, &output) == 0);
  CHECK(output.find("Simulate True Decompress False") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_REPORT) + " --perfetto - --chrome - " + trace, &output) == 1);
  CHECK(output.find("cannot both write to standard output") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_REPORT) + " --zones physics " + trace, &output) == 1);
  CHECK(output.find("go with --chrome or --perfetto") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_REPORT) + " --chrome - --range 5 " + trace, &output) == 1);
  CHECK(output.find("--range: '5' is not A:B") != std::string::npos);
  // CSV options without --csv, or two tables at once: said, exit 1.
  CHECK(RunCommand(std::string(GNOMON_REPORT) + " --unwrap " + trace, &output) == 1);
  CHECK(output.find("go with --csv") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_REPORT) + " --csv --messages --plots " + trace, &output) == 1);
  CHECK(output.find("one CSV table at a time") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_REPORT) + " --csv --json - " + trace, &output) == 1);
  CHECK(output.find("so does --json -") != std::string::npos);
  // A forgotten value never swallows the next option.
  CHECK(RunCommand(std::string(GNOMON_REPORT) + " --json --csv " + trace, &output) == 1);
  CHECK(output.find("--json needs an output file") != std::string::npos);

  // The JSON report, to standard output: every job's scratch buffer freed, the textures
  // still loaded at the end, the job queue's lock taken by the main thread and the four
  // workers.
  std::string report_json;
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " --json - " + trace + " 2>/dev/null", &report_json) == 0);
  gnomon::test::JsonValue summary;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(report_json, summary, error), error, "\n", report_json);
  CHECK(summary.Find("program")->Find("name")->string == "gnomon-demo");
  // gnomon-capture probed the demo's clock and wrote the exchanges into the file: the
  // same clock, so the offset is within its bound of 0.
  const auto& processes = summary.Find("processes")->array;
  REQUIRE(processes.size() == 1);
  CHECK_FALSE(processes[0].Find("host")->string.empty());
  CHECK(processes[0].Find("clock_exchanges")->number >= 10);
  CHECK(processes[0].Find("clock_rejected")->number == 0);
  REQUIRE(processes[0].Find("clock_offset_ns")->kind == gnomon::test::JsonValue::Kind::kNumber);
  CHECK(std::fabs(processes[0].Find("clock_offset_ns")->number) <=
        processes[0].Find("clock_uncertainty_ns")->number);
  std::map<std::string, const gnomon::test::JsonValue*> pools;
  for (const auto& pool : summary.Find("memory")->array) pools[pool.Find("pool")->string] = &pool;
  REQUIRE(pools.count("default") == 1);
  REQUIRE(pools.count("textures") == 1);
  CHECK(pools["default"]->Find("allocations")->number > 0);
  CHECK(pools["default"]->Find("leaked_allocations")->number == 0);
  CHECK(pools["textures"]->Find("leaked_allocations")->number >= 1);
  CHECK(pools["textures"]->Find("peak_bytes")->number >= 1 << 20);
  const auto& locks = summary.Find("locks")->array;
  REQUIRE(locks.size() == 1);
  CHECK(locks[0].Find("name")->string == "job queue");
  CHECK(locks[0].Find("threads")->number == 5);
  CHECK(locks[0].Find("acquisitions")->number > 0);
}

TEST_CASE("a time limit stops the capture and a killed program still leaves a loadable file") {
  ScratchDir dir;
  std::unique_ptr<ChildProcess> demo;
  const uint16_t port = StartDemo(dir, demo, "30");
  std::string output;
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " -q -s 0.5 -p " + std::to_string(port) + " -o " +
                       dir.File("a.gnomon"),
                   &output) == 0);
  gnomon::server::TraceModel model;
  auto loaded = gnomon::server::LoadTrace(dir.File("a.gnomon"), model);
  REQUIRE(loaded.ok());
  CHECK(loaded->warning.empty());
  CHECK(model.zone_count > 100);

  // The demo keeps running; a second capture, then the demo dies under it.
  ChildProcess capture({GNOMON_CAPTURE, "-q", "-p", std::to_string(port), "-o", dir.File("b.gnomon")}, {},
                       dir.File("capture.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  demo->Signal(SIGKILL);
  CHECK(capture.Wait() == 4);
  CHECK(ReadFile(dir.File("capture.log")).find("without saying goodbye") != std::string::npos);
  gnomon::server::TraceModel killed;
  auto reloaded = gnomon::server::LoadTrace(dir.File("b.gnomon"), killed);
  REQUIRE(reloaded.ok());
  CHECK(killed.zone_count > 100);
  CHECK_FALSE(killed.diagnostics.ended_cleanly);
}

TEST_CASE("the tools explain bad use and bad input") {
  ScratchDir dir;
  std::string output;
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " --help", &output) == 0);
  CHECK(output.find("Exit codes") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_REPORT) + " --help", &output) == 0);
  CHECK(output.find("--chrome") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " -p 1", &output) == 1);
  CHECK(output.find("-o FILE") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " -j 0 -p 1 -o " + dir.File("x.gnomon"), &output) == 1);
  CHECK(output.find("-j: '0' is not a whole number from 1 to 64") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " --lanes 9 -p 1 -o " + dir.File("x.gnomon"), &output) == 1);
  CHECK(output.find("--lanes: '9' is not a whole number from 0 to 8") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " --lanes 2 --listen 0 -o " + dir.File("x.gnomon"),
                   &output) == 1);
  CHECK(output.find("--lanes needs the capture to connect to the program, not --listen") !=
        std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " -w 0.2 -p 1 -o " + dir.File("x.gnomon"), &output) == 2);
  CHECK(output.find("cannot connect to 127.0.0.1:1") != std::string::npos);
  CHECK(output.find("waiting for a program") == std::string::npos);  // too short a wait to say so
  // Past a second of retries, the capture says what it waits for.
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " -w 2 -p 1 -o " + dir.File("x.gnomon"), &output) == 2);
  CHECK_MESSAGE(output.find("waiting for a program to answer on 127.0.0.1:1 (retrying for up to 2 s") !=
                    std::string::npos,
                output);
  // Several programs: a bad address is said; none answering leaves the file untouched.
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " -a host:70000 -o " + dir.File("x.gnomon"), &output) == 1);
  CHECK(output.find("-a: '70000' is not a port number (1-65535)") != std::string::npos);
  CHECK(RunCommand(
            std::string(GNOMON_CAPTURE) + " -w 0.2 -a 127.0.0.1:1 -a 127.0.0.1:2 -o " + dir.File("x.gnomon"),
            &output) == 2);
  CHECK_MESSAGE(output.find("127.0.0.1:2: cannot connect to 127.0.0.1:2") != std::string::npos, output);
  CHECK(output.find("no program answered; " + dir.File("x.gnomon") + " was not touched") !=
        std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " --pid 1 -a 127.0.0.1 -o " + dir.File("x.gnomon"),
                   &output) == 1);
  CHECK(output.find("leave out -a") != std::string::npos);
  // --listen: a port is needed, a numeric address of this machine, and no -a with it.
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " --listen 127.0.0.1 -o " + dir.File("x.gnomon"), &output) ==
        1);
  CHECK(output.find("'127.0.0.1' has no port: --listen [ADDR:]PORT") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " --listen render-3:9000 -o " + dir.File("x.gnomon"),
                   &output) == 1);
  CHECK(output.find("'render-3' is not a numeric IP address") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " --listen 0 -a 127.0.0.1 -o " + dir.File("x.gnomon"),
                   &output) == 1);
  CHECK(output.find("leave out -a and --pid") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " --listen '' -o " + dir.File("x.gnomon"), &output) == 1);
  CHECK(output.find("--listen needs [ADDR:]PORT") != std::string::npos);
  // Nobody connecting before the time limit: the file is not touched.
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " --listen 0 -s 0.3 -o " + dir.File("x.gnomon"), &output) ==
        2);
  CHECK(output.find("no program connected; " + dir.File("x.gnomon") + " was not touched") !=
        std::string::npos);
  std::ofstream(dir.File("junk.gnomon")) << "definitely not a trace";
  CHECK(RunCommand(std::string(GNOMON_REPORT) + " " + dir.File("junk.gnomon"), &output) == 2);
  CHECK(output.find("not a Gnomon trace") != std::string::npos);
  // An existing file is refused with a code of its own (7), not "could not be created" (3).
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " -o " + dir.File("junk.gnomon") + " -p 1", &output) == 7);
  CHECK(output.find("already exists") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " -o " + dir.File("no/such/folder/x.gnomon") + " -p 1",
                   &output) == 3);
  // A FIFO would block a reader forever: refused at once (timeout would say 124).
  REQUIRE(mkfifo(dir.File("pipe.gnomon").c_str(), 0600) == 0);
  CHECK(RunCommand("timeout 10 " + std::string(GNOMON_REPORT) + " " + dir.File("pipe.gnomon"), &output) == 2);
  CHECK(output.find("is a FIFO, not a trace file") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_REPORT) + " --max-expansion 0 " + dir.File("junk.gnomon"), &output) ==
        1);
  CHECK(output.find("--max-expansion: '0' is not a whole number from 1 to") != std::string::npos);
  // A CSV separator no reader could split the fields by is refused, not written.
  for (const char* separator : {"'\"'", "'\n'", "''"}) {  // as a shell passes them on
    CAPTURE(separator);
    CHECK(RunCommand(std::string(GNOMON_REPORT) + " --csv --sep " + separator + " " + dir.File("junk.gnomon"),
                     &output) == 1);
    CHECK((output.find("--sep: the separator") != std::string::npos ||
           output.find("--sep needs a value") != std::string::npos));
  }
  // The source view's options say what they want, before any file is read.
  const std::string junk = " " + dir.File("junk.gnomon");
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"--source demo.cpp", "--source: 'demo.cpp' is not FILE:LINE"},
           {"--source demo.cpp:0", "--source: 'demo.cpp:0' is not FILE:LINE"},
           {"--source-map /a=/b", "--source-map goes with --source FILE:LINE"},
           {"--source a.cpp:1 --source-map nothing", "--source-map: 'nothing' is not OLD=NEW"},
           {"--source a.cpp:1 --json out.json", "--source prints a file's lines alone"},
           {"--hot-lines 0", "--hot-lines: '0' is not a whole number from 1 to"},
           {"--bottom-up", "--bottom-up goes with --memory-tree POOL"},
           {"--memory-tree default --csv", "--memory-tree prints a pool's tree alone"}}) {
    CAPTURE(args);
    CHECK(RunCommand(std::string(GNOMON_REPORT) + " " + args + junk, &output) == 1);
    CHECK(output.find(says) != std::string::npos);
  }
}

namespace {

// Files in `dir` whose names contain `part`.
int CountFiles(const ScratchDir& dir, const std::string& part) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().filename().string().find(part) != std::string::npos) ++count;
  }
  return count;
}

}  // namespace

TEST_CASE(
    "a capture never touches its output path before a program answers, and -f replaces only a trace file") {
  ScratchDir dir;
  std::string output;
  const std::string capture = std::string(GNOMON_CAPTURE) + " -q -w 0.2 -p 1 -f -o ";
  // An existing trace, with nobody listening: left exactly as it was.
  std::ofstream(dir.File("old.gnomon")) << "GNOMONTF: yesterday's trace";
  CHECK(RunCommand(capture + dir.File("old.gnomon"), &output) == 2);
  CHECK(output.find("was not touched") != std::string::npos);
  CHECK(ReadFile(dir.File("old.gnomon")) == "GNOMONTF: yesterday's trace");
  // A file that is not a trace is never replaced, -f or not.
  std::ofstream(dir.File("notes.gnomon")) << "a week of notes";
  CHECK(RunCommand(capture + dir.File("notes.gnomon"), &output) == 7);
  CHECK(output.find("is not a Gnomon trace, and only a trace is ever replaced") != std::string::npos);
  CHECK(ReadFile(dir.File("notes.gnomon")) == "a week of notes");
  // A symbolic link is neither followed nor replaced, with or without -f.
  std::ofstream(dir.File("target")) << "precious";
  std::filesystem::create_symlink(dir.File("target"), dir.File("link.gnomon"));
  CHECK(RunCommand(capture + dir.File("link.gnomon"), &output) == 7);
  CHECK(output.find("is a symbolic link") != std::string::npos);
  CHECK(std::filesystem::is_symlink(dir.File("link.gnomon")));
  CHECK(ReadFile(dir.File("target")) == "precious");
  // Nor is a special file: a FIFO stays a FIFO (a device node would stay a device).
  REQUIRE(mkfifo(dir.File("fifo").c_str(), 0600) == 0);
  CHECK(RunCommand(capture + dir.File("fifo"), &output) == 7);
  CHECK(output.find("is a FIFO") != std::string::npos);
  CHECK(std::filesystem::is_fifo(dir.File("fifo")));
  CHECK(RunCommand(capture + dir.path(), &output) == 7);
  CHECK(output.find("is a folder") != std::string::npos);
  CHECK(CountFiles(dir, ".partial") == 0);  // nothing left behind

  // With a program answering, -f replaces the old trace, and only then.
  std::unique_ptr<ChildProcess> demo;
  const uint16_t port = StartDemo(dir, demo, "1");
  CHECK(RunCommand(std::string(GNOMON_CAPTURE) + " -q -f -p " + std::to_string(port) + " -o " +
                       dir.File("old.gnomon"),
                   &output) == 0);
  CHECK(demo->Wait() == 0);
  gnomon::server::TraceModel model;
  auto loaded = gnomon::server::LoadTrace(dir.File("old.gnomon"), model);
  REQUIRE(loaded.ok());
  CHECK(model.zone_count > 100);
  CHECK(CountFiles(dir, ".partial") == 0);
}

TEST_CASE(
    "a program the capture starts is recorded from its first event, and its exit code is the capture's") {
  ScratchDir dir;
  std::string output;
  const std::string capture = std::string(GNOMON_CAPTURE) + " -q -o ";
  // Eight threads at full speed from the program's first instant: it waits for the
  // capture before it records, so nothing is dropped.
  REQUIRE(RunCommand(capture + dir.File("flood.gnomon") + " -- " + GNOMON_TEST_PROGRAM + " flood 1000000 8",
                     &output) == 0);
  CHECK(output.find("dropped 0") != std::string::npos);
  gnomon::server::TraceModel model;
  auto loaded = gnomon::server::LoadTrace(dir.File("flood.gnomon"), model);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  CHECK(loaded.value().warning == "");
  CHECK(model.zone_count == 8'000'000);
  CHECK(model.diagnostics.client_dropped_events == 0);
  CHECK(model.diagnostics.ended_cleanly);
  // The program's own exit code; a program that cannot start, or never connects, the
  // capture's, with the file untouched.
  // A GNOMON_OUTPUT or GNOMON_ON_DEMAND of the caller's does not keep its events away.
  CHECK(RunCommand("GNOMON_OUTPUT=" + dir.File("own.gnomon") + " GNOMON_ON_DEMAND=1 " + capture +
                       dir.File("exit.gnomon") + " -- " + GNOMON_TEST_PROGRAM + " exit 42",
                   &output) == 42);
  CHECK(std::filesystem::exists(dir.File("exit.gnomon")));
  CHECK_FALSE(std::filesystem::exists(dir.File("own.gnomon")));
  gnomon::server::TraceModel exited;
  REQUIRE(gnomon::server::LoadTrace(dir.File("exit.gnomon"), exited).ok());
  CHECK(exited.zone_count == 1);
  CHECK(RunCommand(capture + dir.File("none.gnomon") + " -- " + dir.File("no-such-program"), &output) == 127);
  CHECK(output.find("cannot start " + dir.File("no-such-program") + ": No such file or directory") !=
        std::string::npos);
  CHECK(RunCommand(capture + dir.File("none.gnomon") + " -- true", &output) == 2);
  CHECK(output.find("true never connected (is it built with Gnomon") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.File("none.gnomon")));
  CHECK(RunCommand(capture + dir.File("none.gnomon") + " --", &output) == 1);
  CHECK(RunCommand(capture + dir.File("none.gnomon") + " -a 127.0.0.1 -- true", &output) == 1);
  CHECK(output.find("-- starts the program and records it; leave out -a") != std::string::npos);
}

TEST_CASE("a hang-up ends a capture as Ctrl-C does: the file is complete") {
  ScratchDir dir;
  std::unique_ptr<ChildProcess> demo;
  const uint16_t port = StartDemo(dir, demo, "30");
  ChildProcess capture({GNOMON_CAPTURE, "-q", "-p", std::to_string(port), "-o", dir.File("hup.gnomon")}, {},
                       dir.File("capture.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  capture.Signal(SIGHUP);
  CHECK(capture.Wait() == 0);
  gnomon::server::TraceModel model;
  auto loaded = gnomon::server::LoadTrace(dir.File("hup.gnomon"), model);
  REQUIRE(loaded.ok());
  CHECK(loaded->warning.empty());  // the end marker is there
  CHECK(model.zone_count > 100);
}

TEST_CASE("ports and durations are checked the same way everywhere") {
  ScratchDir dir;
  std::string output;
  const std::string capture = std::string(GNOMON_CAPTURE) + " -q -o " + dir.File("x.gnomon");
  for (const char* bad : {"inf", "1e17", "1e30", "-1", "nan", "abc", " 5", ""}) {
    CHECK_MESSAGE(RunCommand(capture + " -p 1 -w '" + bad + "'", &output) == 1, bad);
    CHECK_MESSAGE(
        output.find("-w: '" + std::string(bad) + "' is not a number of seconds") != std::string::npos,
        output);
    CHECK(RunCommand(capture + " -p 1 -s '" + std::string(bad) + "'", &output) == 1);
  }
  for (const char* bad : {"70000", "abc", "0", "-5", "65536"}) {
    CHECK(RunCommand(capture + " -p " + bad, &output) == 1);
    CHECK_MESSAGE(output.find("is not a port number (1-65535)") != std::string::npos, output);
    CHECK(RunCommand("GNOMON_PORT=" + std::string(bad) + " " + capture, &output) == 1);
    CHECK_MESSAGE(
        output.find("GNOMON_PORT: '" + std::string(bad) + "' is not a port number") != std::string::npos,
        output);
  }
  CHECK_FALSE(std::filesystem::exists(dir.File("x.gnomon")));
  // A wait of 1e9 seconds is accepted (and cut short by the refused connection's end).
  CHECK(RunCommand("timeout --preserve-status -s INT 1 " + capture + " -p 1 -w 1e9", &output) == 2);
  CHECK(output.find("stopped before 127.0.0.1:1 answered") != std::string::npos);
}

TEST_CASE(
    "two busy threads outrun the capture: the default buffer grows and nothing is lost, wait loses nothing") {
  // 2 x 1.5 M zones (66 MB of events) against a 4 MB budget: the capture falls behind.
  for (const char* policy : {"auto", "wait"}) {
    CAPTURE(policy);
    ScratchDir dir;
    ChildProcess program({GNOMON_TEST_PROGRAM, "threads", "2", "1500000"},
                         {{"GNOMON_PORT", "0"},
                          {"GNOMON_PORT_FILE", dir.File("port")},
                          {"GNOMON_BUFFER_MB", "4"},
                          {"GNOMON_BUFFER_POLICY", policy},
                          {"GNOMON_WAIT_FOR_SERVER_MS", "20000"}},
                         dir.File("program.log"));
    const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
    REQUIRE(port != 0);
    std::string output;
    const int rc = RunCommand(
        std::string(GNOMON_CAPTURE) + " -q -p " + std::to_string(port) + " -o " + dir.File("busy.gnomon"),
        &output);
    CHECK_MESSAGE(rc == 0, output);
    CHECK(program.Wait() == 0);
    CHECK(ReadFile(dir.File("program.log")).find("recorded 3000000 zones on 2 threads, dropped 0") !=
          std::string::npos);
    gnomon::server::TraceModel model;
    auto loaded = gnomon::server::LoadTrace(dir.File("busy.gnomon"), model);
    REQUIRE(loaded.ok());
    CHECK(model.zone_count == 3'000'000);
    CHECK(model.diagnostics.client_dropped_events == 0);
  }
}

// The test program's two waves of `threads` threads, `zones` zones each, waiting for a
// server (its port in dir/port), nothing dropped.
ChildProcess StartWaves(const ScratchDir& dir, int threads, long zones) {
  return ChildProcess({GNOMON_TEST_PROGRAM, "waves", std::to_string(threads), std::to_string(zones)},
                      {{"GNOMON_PORT", "0"},
                       {"GNOMON_PORT_FILE", dir.File("port")},
                       {"GNOMON_BUFFER_POLICY", "wait"},
                       {"GNOMON_WAIT_FOR_SERVER_MS", "20000"}},
                      dir.File("program.log"));
}

TEST_CASE("over several connections (--lanes) the file holds every thread's zones in order, as over one") {
  // Two waves of threads, nested zones, a source location first used half-way: each
  // thread's events travel over one of three lanes, the definitions over the main
  // connection, and the capture puts them back into one stream.
  constexpr int kThreads = 6;
  constexpr long kZones = 150'000;
  for (const char* lanes : {"3", "0"}) {
    CAPTURE(lanes);
    ScratchDir dir;
    ChildProcess program = StartWaves(dir, kThreads, kZones);
    const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
    REQUIRE(port != 0);
    std::string output;
    const int rc = RunCommand(std::string(GNOMON_CAPTURE) + " -q --lanes " + lanes + " -p " +
                                  std::to_string(port) + " -o " + dir.File("waves.gnomon") + " 2>&1",
                              &output);
    CHECK_MESSAGE(rc == 0, output);
    CHECK(program.Wait() == 0);
    CHECK(ReadFile(dir.File("program.log")).find("waves done, dropped 0") != std::string::npos);
    // With lanes, they carried the threads' events from the moment all were in (a few
    // ms after the connection: by the second wave at the latest).
    const size_t said = output.find("came over 3 more connections (--lanes): ");
    CHECK((said != std::string::npos) == (std::string(lanes) == "3"));
    double lane_mb = 0, all_mb = 0;
    if (said != std::string::npos)
      std::sscanf(output.c_str() + said, "came over 3 more connections (--lanes): %lf MB of the %lf MB",
                  &lane_mb, &all_mb);
    CHECK((lane_mb > 0.25 * all_mb && all_mb > 10) == (std::string(lanes) == "3"));
    gnomon::server::TraceModel model;
    auto loaded = gnomon::server::LoadTrace(dir.File("waves.gnomon"), model);
    REQUIRE(loaded.ok());
    CHECK(loaded->warning.empty());
    CHECK(model.diagnostics.ended_cleanly);
    CHECK(model.diagnostics.zone_ends_without_begin == 0);
    CHECK(model.diagnostics.clamped_zone_ends == 0);
    CHECK(model.diagnostics.events_without_thread == 0);
    CHECK(model.diagnostics.invalid_ids == 0);
    std::map<std::string, uint64_t> by_name;
    std::set<std::string> named;
    for (const auto& thread : model.threads) {
      if (!thread.name.starts_with("wave-")) continue;
      named.insert(thread.name);
      CAPTURE(thread.name);
      // Each thread whole, in its order: an Outer, its Inner at depth 1, then (in the
      // second half) its Late at depth 1; every zone nests where it was recorded.
      CHECK(thread.zones.size() == size_t(2 * kZones + kZones / 2));
      uint64_t previous_begin = 0;
      for (size_t i = 0; i < thread.zones.size(); ++i) {
        const std::string name = model.ZoneName(thread, i);
        ++by_name[name];
        const gnomon::server::Zone zone = thread.zones[i];
        if (zone.depth != (name == "Outer" ? 0u : 1u) || zone.begin_tick < previous_begin || zone.is_open()) {
          FAIL_CHECK("zone " << i << " (" << name << ") out of place, depth " << zone.depth);
          break;
        }
        previous_begin = zone.begin_tick;
      }
    }
    CHECK(named.size() == size_t(2 * kThreads));
    CHECK(by_name["Outer"] == uint64_t(2 * kThreads * kZones));
    CHECK(by_name["Inner"] == uint64_t(2 * kThreads * kZones));
    CHECK(by_name["Late"] == uint64_t(2 * kThreads * (kZones - kZones / 2)));
  }
}

TEST_CASE("a viewer's worker over lanes builds, while a window reads it, the model its tee file holds") {
  // The program's threads over three lanes, each lane pairing and storing its threads'
  // zones beside the others, a reader in the model all along, as a viewer's window.
  constexpr int kThreads = 6;
  constexpr long kZones = 100'000;
  ScratchDir dir;
  ChildProcess program = StartWaves(dir, kThreads, kZones);
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  auto tee = gnomon::tracefile::TraceWriter::Create(dir.File("tee.gnomon"));
  REQUIRE(tee.ok());
  REQUIRE(tee.value()->Publish(gnomon::tracefile::Overwrite::kYes).ok());
  gnomon::server::Worker::Options options;
  options.port = port;
  options.lanes = 3;
  options.writer = &tee.value()->first_stream();
  gnomon::server::Worker worker(options);
  REQUIRE(worker.Connect().ok());
  worker.Start();
  std::atomic<bool> done{false};
  std::atomic<uint64_t> reads{0};
  std::thread window([&] {
    while (!done.load()) {
      worker.WithModel([&](const gnomon::server::TraceModel& m) {
        // What the window draws: each thread's zones, the last one too.
        for (const auto& thread : m.threads)
          if (!thread.zones.empty() && thread.zones[thread.zones.size() - 1].begin_tick == 0) return;
        ++reads;
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  worker.Join();
  done.store(true);
  window.join();
  CHECK(program.Wait() == 0);
  REQUIRE(tee.value()->Finish().ok());
  CHECK(worker.state() == gnomon::server::Worker::State::kEnded);
  CHECK(worker.lanes() == 3);
  CHECK(worker.lane_bytes_received() > worker.bytes_received() / 4);
  CHECK(reads.load() > 0);
  const gnomon::server::TraceModel& live = worker.model();
  CHECK(live.zone_count == uint64_t(2 * kThreads * (2 * kZones + kZones / 2)));
  CHECK(live.open_zone_count == 0);
  CHECK(live.diagnostics.zone_ends_without_begin == 0);
  gnomon::server::TraceModel loaded;
  REQUIRE(gnomon::server::LoadTrace(dir.File("tee.gnomon"), loaded).ok());
  CHECK(live == loaded);
}

TEST_CASE("a capture says how many events the program dropped, and why, with its own exit code") {
  ScratchDir dir;
  // The flood runs before anyone connects: past its 1 MB budget the program drops.
  ChildProcess program({GNOMON_TEST_PROGRAM, "flood", "400000"},
                       {{"GNOMON_PORT", "0"},
                        {"GNOMON_PORT_FILE", dir.File("port")},
                        {"GNOMON_BUFFER_MB", "1"},
                        {"GNOMON_KEEP_START_S", "0"},  // the budget, not the start kept for a capture
                        {"GNOMON_WAIT_FOR_SERVER_MS", "20000"}},
                       dir.File("program.log"));
  const uint16_t port = gnomon::test::WaitForPortFile(dir.File("port"));
  REQUIRE(port != 0);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (ReadFile(dir.File("program.log")).find("dropped ") == std::string::npos) {
    REQUIRE(std::chrono::steady_clock::now() < give_up);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string output;
  CHECK(RunCommand(
            std::string(GNOMON_CAPTURE) + " -q -p " + std::to_string(port) + " -o " + dir.File("f.gnomon"),
            &output) == 6);
  CHECK(program.Wait() == 0);
  const std::string log = ReadFile(dir.File("program.log"));
  const std::string dropped =
      log.substr(log.find("dropped ") + 8, log.find('\n', log.find("dropped ")) - log.find("dropped ") - 8);
  CHECK_MESSAGE(output.find("the program dropped " + dropped + " event(s): its event buffer was full") !=
                    std::string::npos,
                output);
}

TEST_CASE(
    "gnomon-cut cuts a real capture to exactly the zones that overlap the range, and says what is wrong") {
  ScratchDir dir;
  std::unique_ptr<ChildProcess> demo;
  const uint16_t port = StartDemo(dir, demo, "1");
  const std::string trace = dir.File("demo.gnomon");
  std::string output;
  REQUIRE_MESSAGE(RunCommand(std::string(GNOMON_CAPTURE) + " -q -p " + std::to_string(port) + " -o " + trace,
                             &output) == 0,
                  output);
  CHECK(demo->Wait() == 0);
  const std::string cut = dir.File("cut.gnomon");
  REQUIRE_MESSAGE(
      RunCommand(std::string(GNOMON_CUT) + " " + trace + " --range 300ms:0.6s -o " + cut, &output) == 0,
      output);
  CHECK(output.find("gnomon-cut: wrote " + cut) != std::string::npos);

  // Every zone of the whole trace that overlaps 300 to 600 ms from its first event, and
  // no other, by thread, begin and end.
  gnomon::server::TraceModel whole, part;
  REQUIRE(gnomon::server::LoadTrace(trace, whole).ok());
  REQUIRE(gnomon::server::LoadTrace(cut, part).ok());
  const auto expected = gnomon::test::ZonesOverlapping(whole, 300'000'000, 600'000'000);
  REQUIRE(expected.size() > 100);
  CHECK(gnomon::test::AllZones(part) == expected);
  CHECK(part.clock.ns_per_tick() == doctest::Approx(whole.clock.ns_per_tick()));

  // What the user is told, and the exit codes --help gives.
  CHECK(RunCommand(std::string(GNOMON_CUT) + " --help", &output) == 0);
  CHECK(output.find("Usage: gnomon-cut FILE --range A:B") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CUT) + " " + trace + " -o " + dir.File("x.gnomon"), &output) == 1);
  CHECK(output.find("give the range to keep with --range A:B") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CUT) + " " + trace + " --range 1h:2h -o " + dir.File("x.gnomon"),
                   &output) == 1);
  CHECK(output.find("'1h' is not a time") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CUT) + " " + trace + " --range 0:1s --threads nosuch -o " +
                       dir.File("x.gnomon"),
                   &output) == 2);
  CHECK(output.find("its threads: ") != std::string::npos);
  CHECK(output.find("main (") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_CUT) + " " + trace + " --range 0:1s -o " + cut, &output) == 2);
  CHECK(output.find("exists") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.File("x.gnomon")));
  // A capture cut short (killed, its end marker never written): its sound blocks are
  // cut, and the tool says so.
  const std::string bytes = ReadFile(trace);
  std::ofstream(dir.File("short.gnomon"), std::ios::binary)
      << bytes.substr(0, bytes.size() - sizeof(gnomon::tracefile::BlockHeader));
  CHECK_MESSAGE(RunCommand(std::string(GNOMON_CUT) + " " + dir.File("short.gnomon") + " --range 0:1s -o " +
                               dir.File("short-cut.gnomon"),
                           &output) == 3,
                output);
  CHECK(output.find("the capture did not finish") != std::string::npos);
  CHECK(std::filesystem::exists(dir.File("short-cut.gnomon")));
}

TEST_CASE(
    "gnomon-report past its memory limit reads the zones from the file: the same report, medians within the "
    "error it states") {
  ScratchDir dir;
  // 20,000 zones of 1 to 6 us on one thread, nested in one, in many blocks.
  const std::string trace = dir.File("many.gnomon");
  {
    gnomon::tracefile::TraceWriterOptions options;
    options.block_raw_bytes = 16 << 10;
    auto writer = gnomon::tracefile::TraceWriter::Create(trace, options);
    REQUIRE(writer.ok());
    gnomon::test::StreamWriter w;
    w.AppInfo("many").ThreadContext(1).SourceLocation(1, "outer", "f", "a.cpp", 1);
    w.SourceLocation(2, "inner", "g", "a.cpp", 2).ZoneBegin(1, 0);
    writer.value()->first_stream().Append(w.data(), w.size());
    for (uint64_t i = 0, tick = 10; i < 20'000; ++i, tick += 7'000) {
      gnomon::test::StreamWriter zone;
      zone.ZoneBegin(2, tick).ZoneEnd(tick + 1'000 + (i * 7919) % 5'000);
      writer.value()->first_stream().Append(zone.data(), zone.size());
    }
    gnomon::test::StreamWriter end;
    end.ZoneEnd(200'000'000).End(200'000'001);
    writer.value()->first_stream().Append(end.data(), end.size());
    REQUIRE(writer.value()->Finish().ok());
    REQUIRE(writer.value()->Publish(gnomon::tracefile::Overwrite::kYes).ok());
  }
  std::string held_text, streamed_text;
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " " + trace + " --json " + dir.File("held.json"),
                     &held_text) == 0);
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " " + trace + " --memory-limit 1K --json " +
                         dir.File("streamed.json"),
                     &streamed_text) == 0);
  CHECK(held_text.find("read from the file") == std::string::npos);
  CHECK_MESSAGE(
      streamed_text.find("its zones need more than the memory limit (1 KiB; --memory-limit): counted, "
                         "not held") != std::string::npos,
      streamed_text);
  CHECK(streamed_text.find(
            "The zones were read from the file, not held (--memory-limit): every figure is exact "
            "but the median") != std::string::npos);
  gnomon::test::JsonValue held, streamed;
  std::string error;
  REQUIRE(gnomon::test::ParseJson(ReadFile(dir.File("held.json")), held, error));
  REQUIRE(gnomon::test::ParseJson(ReadFile(dir.File("streamed.json")), streamed, error));
  CHECK(held.Find("zones_held")->boolean);
  CHECK_FALSE(streamed.Find("zones_held")->boolean);
  const auto& a = held.Find("zones")->array;
  const auto& b = streamed.Find("zones")->array;
  REQUIRE(a.size() == b.size());
  REQUIRE(!a.empty());
  size_t approximate = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    for (const char* key : {"name", "file"}) CHECK(a[i].Find(key)->string == b[i].Find(key)->string);
    for (const char* key : {"count", "total_ns", "self_ns", "min_ns", "max_ns", "mean_ns"})
      CHECK(a[i].Find(key)->number == b[i].Find(key)->number);
    const double error_ns = b[i].Find("median_error_ns")->number;
    CHECK(std::abs(a[i].Find("median_ns")->number - b[i].Find("median_ns")->number) <= error_ns);
    approximate += error_ns > 0 ? 1 : 0;
  }
  CHECK(approximate == 1);  // the inner zones are too many for an exact median
  // Asked for, the medians are exact: one more pass.
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " " + trace + " --memory-limit 1K --exact-medians --json " +
                         dir.File("exact.json"),
                     &streamed_text) == 0);
  gnomon::test::JsonValue exact;
  REQUIRE(gnomon::test::ParseJson(ReadFile(dir.File("exact.json")), exact, error));
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(exact.Find("zones")->array[i].Find("median_ns")->number == a[i].Find("median_ns")->number);
    CHECK(exact.Find("zones")->array[i].Find("median_error_ns")->number == 0);
  }
  // Everything else the JSON says is the same.
  for (const auto& [key, value] : held.object) {
    if (key == "zones" || key == "zones_held") continue;
    CAPTURE(key);
    CHECK(streamed.object.contains(key));
  }
  CHECK(held.Find("threads")->array.front().Find("zones")->number ==
        streamed.Find("threads")->array.front().Find("zones")->number);

  // What holds every zone is refused past the limit, said, never tried; within it, done.
  std::string output;
  for (const auto& [option, value] :
       std::vector<std::pair<std::string, std::string>>{{"--csv --unwrap", ""},
                                                        {"--chrome", dir.File("t.json")},
                                                        {"--perfetto", dir.File("t.pftrace")},
                                                        {"--compare", trace}}) {
    CAPTURE(option);
    CHECK(RunCommand(std::string(GNOMON_REPORT) + " " + trace + " --memory-limit 1K " + option + " " + value,
                     &output) == 2);
    CHECK(output.find("its zones need more than the memory limit (1 KiB), and " + option +
                      " holds every zone") != std::string::npos);
    CHECK(output.find("gnomon-cut " + trace + " --range A:B -o PART") != std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(dir.File("t.json")));
  // --compare holds both traces: a limit one fits, but not beside the other.
  {
    uint64_t raw = 0;  // what the load's promise is made from
    for (const std::string& block : gnomon::test::Split(ReadFile(trace)).blocks) {
      gnomon::tracefile::BlockHeader header{};
      std::memcpy(&header, block.data(), sizeof(header));
      raw += header.raw_bytes;
    }
    gnomon::server::TraceModel held_model;
    REQUIRE(gnomon::server::LoadTrace(trace, held_model).ok());
    const uint64_t fits = gnomon::server::kZoneBytesPerStreamByte * raw, held_bytes = held_model.zone_bytes();
    REQUIRE(held_bytes > 0);
    const std::string limit = std::to_string(fits + held_bytes / 2);
    REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " " + trace + " --memory-limit " + limit, &output) == 0);
    CHECK(output.find("counted, not held") == std::string::npos);  // alone, it fits
    CHECK(RunCommand(
              std::string(GNOMON_REPORT) + " " + trace + " --memory-limit " + limit + " --compare " + trace,
              &output) == 2);
    CHECK_MESSAGE(output.find("its zones need more than the memory limit leaves beside the new trace's") !=
                      std::string::npos,
                  output);
  }
  CHECK(RunCommand(
            std::string(GNOMON_REPORT) + " " + trace + " --memory-limit 2G --chrome " + dir.File("t.json"),
            &output) == 0);
  CHECK(std::filesystem::exists(dir.File("t.json")));
  // The CSV table of statistics is the held one's, but for the median.
  std::string held_csv, streamed_csv;
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " " + trace + " --csv", &held_csv) == 0);
  REQUIRE(RunCommand(std::string(GNOMON_REPORT) + " " + trace + " --csv --memory-limit 1K", &streamed_csv) ==
          0);
  CHECK(streamed_csv.find("counted, not held") != std::string::npos);  // said on the error stream
  streamed_csv = streamed_csv.substr(streamed_csv.find("name,function"));
  CHECK(held_csv.find("inner") != std::string::npos);
  CHECK(held_csv.substr(0, held_csv.find("inner")) == streamed_csv.substr(0, streamed_csv.find("inner")));
  CHECK(held_csv.find(",20000,") != std::string::npos);
  CHECK(streamed_csv.find(",20000,") != std::string::npos);
  CHECK(RunCommand(std::string(GNOMON_REPORT) + " " + trace + " --memory-limit lots", &output) == 1);
  CHECK(output.find("--memory-limit: 'lots' is not a size from 1 byte to 4 EiB") != std::string::npos);
}
