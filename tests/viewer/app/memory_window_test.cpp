// The Memory window (src/app/memory_window.cpp) and the memory and lock lanes it goes
// with, drawn in the real viewer under Xvfb.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <tuple>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

TEST_CASE("memory and locks: the pool's lane and the memory window, and a lock's holds and wait drawn") {
  ScratchDir dir;
  // "textures": 1 to 5 MiB at 10, 20, 30, 40 and 50 ms; the 1 and 2 MiB freed at 60 ms.
  // "queue": main holds it 0..20 ms; worker waits from 5 ms, holds it 20..30 ms.
  gnomon::test::StreamWriter w;
  w.AppInfo("resources")
      .Calibration(kOrigin, int64_t(kOrigin), int64_t(kOrigin), 0)
      .ThreadInfo(1, 101, "main")
      .ThreadInfo(2, 102, "worker")
      .String(3, gnomon::protocol::StringKind::kMemoryPool, "textures")
      .String(4, gnomon::protocol::StringKind::kLockName, "queue")
      .ThreadContext(1);
  for (uint64_t i = 1; i <= 5; ++i) w.Alloc(3, i << 12, i << 20, kOrigin + i * 10 * kMs);
  w.Free(3, 1 << 12, kOrigin + 60 * kMs).Free(3, 2 << 12, kOrigin + 60 * kMs);
  w.LockObtain(4, kOrigin).LockRelease(4, kOrigin + 20 * kMs);
  w.ThreadContext(2).LockWait(4, kOrigin + 5 * kMs).LockObtain(4, kOrigin + 20 * kMs);
  w.LockRelease(4, kOrigin + 30 * kMs);
  w.ThreadContext(1).Calibration(kOrigin + 80 * kMs, int64_t(kOrigin + 80 * kMs), int64_t(kOrigin + 80 * kMs),
                                 0);
  w.End(kOrigin + 80 * kMs);
  const std::string trace = gnomon::test::WriteTraceFile(dir.File("resources.gnomon"), w);
  for (const auto& [range, rows, mib] : {std::tuple{"0:55", 5, 15}, std::tuple{"0:65", 3, 12}}) {
    const char* select = range;  // CAPTURE's lambda takes it
    CAPTURE(select);
    ViewerRun run = RunViewer(
        dir, {trace, "--frames", "3", "--size", "1200x800", "--show", "memory", "--select", select});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue& report = WindowReport(run, "memory");
    CHECK(report.Find("pool")->string == "textures");
    CHECK(Number(report, "rows") == rows);
    CHECK(Number(report, "bytes") == double(uint64_t(mib) << 20));
  }
  // Which blocks held an address: 0x2800 lay in the 1 MiB at 0x1000 and the 2 MiB at
  // 0x2000; 0x10 in none.
  for (const auto& [address, rows] : {std::pair{"0x2800", 2}, std::pair{"16", 0}}) {
    const std::string shown = std::string("memory-address=") + address;
    CAPTURE(shown);
    ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--show", shown});
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    const JsonValue& report = WindowReport(run, "memory");
    CHECK(Number(report, "holding") == 1);
    CHECK(Number(report, "rows") == rows);
    CHECK(Number(report, "bytes") == double(uint64_t(rows == 2 ? 3 : 0) << 20));
  }
  // The memory map: the five blocks, their addresses one range (they overlap).
  ViewerRun map = RunViewer(dir, {trace, "--frames", "3", "--show", "memory-map=textures"});
  REQUIRE_MESSAGE(map.exit_code == 0, map.log);
  const JsonValue& drawn = WindowReport(map, "memory-map");
  CHECK(drawn.Find("pool")->string == "textures");
  CHECK(Number(drawn, "segments") == 1);
  CHECK(Number(drawn, "blocks") == 5);
  CHECK(Number(drawn, "in_view") == 5);
  // The lanes, without a selected range over their colours.
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--size", "1200x800"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  bool memory_lane = false, lock_lane = false;
  for (const JsonValue& lane : Array(run.layout, "lanes")) {
    memory_lane |= lane.Find("title")->string == "Memory: textures";
    lock_lane |= lane.Find("title")->string == "Lock: queue";
  }
  CHECK(memory_lane);
  CHECK(lock_lane);
  int holds = 0, waits = 0;
  for (const JsonValue& item : Array(run.layout, "items")) {
    const int kind = int(Number(item, "kind"));
    if (kind != 7 && kind != 8) continue;  // DrawItem::Kind::kLockHold, kLockWait
    (kind == 7 ? holds : waits) += 1;
    const int x = int(Number(item, "x1")) - 3;  // clear of its label, drawn from the left
    const int y = int(Number(item, "y1")) - 2;
    CHECK_MESSAGE(Close(run.shot.At(x, y), uint32_t(Number(item, "color"))), "lock item at ", x, ",", y);
    if (kind == 8) CHECK(Number(item, "x1") - Number(item, "x0") > 50);  // 15 of about 80 ms, 1200 px wide
  }
  CHECK(holds == 2);
  CHECK(waits == 1);
}

TEST_CASE("memory tree: a pool's allocations by call path, exact, top-down, bottom-up and for a range") {
  ScratchDir dir;
  // 10 x 1,000 B through PathLeft, all alive; 5 x 3,000 B through PathRight, 3 alive.
  const std::string trace = dir.File("paths.gnomon");
  std::string output;
  REQUIRE(RunCommand("GNOMON_CALLSTACK_DEPTH=8 " + std::string(GNOMON_CAPTURE) + " -o " + trace + " -f -- " +
                         GNOMON_TEST_RESOURCES + " allocation-paths",
                     &output) == 0);
  ViewerRun run = RunViewer(dir, {trace, "--frames", "8", "--show", "memory-tree=paths"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  const JsonValue& tree = WindowReport(run, "memory-tree");
  CHECK(tree.Find("pool")->string == "paths");
  CHECK(Number(tree, "without_stack") == 0);
  const auto& nodes = Array(tree, "nodes");
  REQUIRE(!nodes.empty());
  auto numbers = [](const JsonValue& n) {
    return std::tuple{Number(n, "bytes"), Number(n, "count"), Number(n, "alive_bytes"),
                      Number(n, "alive_count")};
  };
  CHECK(numbers(nodes[0]) == std::tuple{25000.0, 15.0, 19000.0, 13.0});
  // Each path once, with its own numbers, under main.
  int left = 0, right = 0;
  for (const JsonValue& n : nodes) {
    if (n.Find("function")->string.find("PathLeft") != std::string::npos) {
      ++left;
      CHECK(numbers(n) == std::tuple{10000.0, 10.0, 10000.0, 10.0});
    }
    if (n.Find("function")->string.find("PathRight") != std::string::npos) {
      ++right;
      CHECK(numbers(n) == std::tuple{15000.0, 5.0, 9000.0, 3.0});
    }
  }
  CHECK(left == 1);
  CHECK(right == 1);

  // The whole trace selected: the same; its first microsecond: fewer (the program
  // allocates after it has connected).
  ViewerRun whole =
      RunViewer(dir, {trace, "--frames", "8", "--show", "memory-tree=paths", "--select", "0:100000"});
  REQUIRE_MESSAGE(whole.exit_code == 0, whole.log);
  CHECK(numbers(Array(WindowReport(whole, "memory-tree"), "nodes").at(0)) == numbers(nodes[0]));
  ViewerRun early =
      RunViewer(dir, {trace, "--frames", "8", "--show", "memory-tree=paths", "--select", "0:0.001"});
  REQUIRE_MESSAGE(early.exit_code == 0, early.log);
  const auto& none = Array(WindowReport(early, "memory-tree"), "nodes");
  REQUIRE(!none.empty());
  CHECK(Number(none[0], "count") < 15);
}
