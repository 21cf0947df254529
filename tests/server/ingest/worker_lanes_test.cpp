// The worker's lanes against a fake program on real loopback TCP: batches merged after the
// main bytes they need, malformed lanes, zones paired on the lanes building what decoding
// the file builds, and readers that hold the model meanwhile.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "../../support/worker_connection.h"
#include "gnomon/protocol/handshake.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/worker.h"
#include "gnomon/tracefile/trace_writer.h"

using namespace gnomon::server;
using namespace gnomon::tracefile;
using gnomon::test::FakeProgram;
using gnomon::test::Hello;
using gnomon::test::kOk;
using gnomon::test::OptionsFor;
using gnomon::test::StreamWriter;

namespace {

// A LaneBatch header and its messages.
std::vector<uint8_t> Batch(uint64_t after, const std::vector<uint8_t>& messages, uint32_t size = 0) {
  gnomon::protocol::LaneBatch header{};
  std::memcpy(header.magic, gnomon::protocol::kLaneBatchMagic.data(),
              gnomon::protocol::kLaneBatchMagic.size());
  header.size = size != 0 ? size : uint32_t(messages.size());
  header.after = after;
  std::vector<uint8_t> bytes(sizeof(header));
  std::memcpy(bytes.data(), &header, sizeof(header));
  bytes.insert(bytes.end(), messages.begin(), messages.end());
  return bytes;
}

std::vector<uint8_t> Concat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> all;
  for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

// A main connection that names the program and two source locations, then says goodbye
// at 900 M ticks; and where its goodbye starts (what lane batches need first).
std::pair<std::vector<uint8_t>, uint64_t> LanedMain() {
  StreamWriter start;
  start.AppInfo("laned").SourceLocation(1, "A", "f", "x.cpp", 1).SourceLocation(2, "B", "f", "x.cpp", 2);
  StreamWriter end;
  end.End(900'000'000);
  return {Concat({start.bytes(), end.bytes()}), start.bytes().size()};
}

std::vector<uint8_t> Zones(uint32_t thread, uint32_t location, uint64_t from, int count) {
  StreamWriter w;
  w.ThreadContext(thread);
  for (int i = 0; i < count; ++i)
    w.ZoneBegin(location, from + uint64_t(i) * 10).ZoneEnd(from + uint64_t(i) * 10 + 5);
  return w.bytes();
}

constexpr uint32_t kToken = 0x5eed;

struct LaneCapture {
  gnomon::test::ScratchDir dir;
  std::unique_ptr<Worker> worker;
  TraceModel model;
  bool loaded = false;
};

// Captures a fake program that gives its main stream and one stream per lane, into a
// file, and loads it; with `build_model`, as a viewer does: the worker builds a model too.
std::unique_ptr<LaneCapture> CaptureLanes(const std::vector<uint8_t>& main,
                                          std::vector<std::vector<uint8_t>> lanes, bool build_model = false) {
  auto capture = std::make_unique<LaneCapture>();
  const uint32_t lane_count = uint32_t(lanes.size());
  FakeProgram program(Hello(gnomon::protocol::kProtocolVersion, kOk, 1 | gnomon::protocol::kCapLanes, kToken),
                      main, std::move(lanes));
  auto writer = TraceWriter::Create(capture->dir.File("lanes.gnomon"));
  REQUIRE(writer.ok());
  REQUIRE(writer.value()->Publish(Overwrite::kYes).ok());
  Worker::Options options = OptionsFor(program.port());
  options.build_model = build_model;
  options.lanes = lane_count;
  options.clock_probes = false;
  options.writer = &writer.value()->first_stream();
  capture->worker = std::make_unique<Worker>(options);
  REQUIRE(capture->worker->Connect().ok());
  capture->worker->Start();
  capture->worker->Join();
  CHECK(capture->worker->lanes() == lane_count);
  REQUIRE(writer.value()->Finish().ok());
  auto loaded = LoadTrace(capture->dir.File("lanes.gnomon"), capture->model);
  capture->loaded = loaded.ok();
  if (capture->loaded) CHECK_MESSAGE(loaded->warning.empty(), loaded->warning);
  // Built from the connections as they were merged, the live model is the file's.
  if (build_model && capture->loaded)
    CHECK_MESSAGE(capture->worker->model() == capture->model,
                  DescribeFirstDifference(capture->worker->model(), capture->model));
  return capture;
}

}  // namespace

TEST_CASE("lanes: each batch goes after the main bytes it needs, its thread restated, the goodbye last") {
  // The main stream defines location 2 only after its first part; lane 2's second batch
  // names it, and says it needs the main stream past that definition.
  StreamWriter start;
  start.AppInfo("laned").SourceLocation(1, "Early", "f", "x.cpp", 1);
  StreamWriter late;
  late.SourceLocation(2, "Late", "f", "x.cpp", 2);
  StreamWriter end;
  end.End(100000);
  const std::vector<uint8_t> main = Concat({start.bytes(), late.bytes(), end.bytes()});
  const uint64_t after_late = start.bytes().size() + late.bytes().size();
  // Lane 1 carries thread 1; lane 2 threads 2 and 3, switching between them.
  const auto lane1 = Concat({Batch(0, Zones(1, 1, 1000, 50)), Batch(after_late, Zones(1, 2, 2000, 30))});
  const auto lane2 = Concat({Batch(start.bytes().size(), Zones(2, 1, 1000, 40)),
                             Batch(after_late, Concat({Zones(3, 2, 3000, 20), Zones(2, 2, 5000, 10)}))});
  for (const bool build_model : {false, true}) {
    CAPTURE(build_model);
    const auto capture = CaptureLanes(main, {lane1, lane2}, build_model);
    CHECK(capture->worker->state() == Worker::State::kEnded);
    CHECK(capture->worker->zones_received() == 150);
    REQUIRE(capture->loaded);
    const TraceModel& model = capture->model;
    CHECK(model.diagnostics.ended_cleanly);
    CHECK(model.diagnostics.invalid_ids == 0);
    std::map<uint32_t, std::map<std::string, uint64_t>> by_thread;
    for (const auto& thread : model.threads)
      for (size_t i = 0; i < thread.zones.size(); ++i) ++by_thread[thread.id][model.ZoneName(thread, i)];
    CHECK(by_thread[1] == std::map<std::string, uint64_t>{{"Early", 50}, {"Late", 30}});
    CHECK(by_thread[2] == std::map<std::string, uint64_t>{{"Early", 40}, {"Late", 10}});
    CHECK(by_thread[3] == std::map<std::string, uint64_t>{{"Late", 20}});
  }
}

TEST_CASE("lanes: a malformed lane closes the capture, names the lane, and keeps what came before") {
  StreamWriter start;
  start.AppInfo("laned").SourceLocation(1, "Z", "f", "x.cpp", 1);
  const auto good = Batch(0, Zones(1, 1, 1000, 25));
  StreamWriter end_on_lane;
  end_on_lane.ThreadContext(1).End(9000);
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> cases = {
      {"not a lane batch", Concat({good, {'J', 'U', 'N', 'K', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}})},
      {"1 to 16 MiB", Concat({good, Batch(0, {}, (16u << 20) + 1)})},
      {"goes back in the main stream",
       Concat({Batch(10, Zones(1, 1, 1000, 25)), Batch(5, Zones(1, 1, 5000, 1))})},
      {"only the main connection carries", Concat({good, Batch(0, end_on_lane.bytes())})},
      {"ends inside a message",
       Concat({good, Batch(0, {uint8_t(gnomon::protocol::MessageType::kZoneBegin), 0})})},
      {"unknown message type 254", Concat({good, Batch(0, {0xFE, 0xFE})})},
  };
  for (const auto& c : cases) {
    const std::string& why = c.first;
    const std::vector<uint8_t>& lane = c.second;
    for (const bool build_model : {false, true}) {
      CAPTURE(why);
      CAPTURE(build_model);
      // The main stream never ends: the program is cut off at the lane's fault.
      const auto capture = CaptureLanes(start.bytes(), {lane}, build_model);
      CHECK(capture->worker->state() == Worker::State::kFailed);
      CHECK(capture->worker->error().find("lane 1") != std::string::npos);
      CHECK(capture->worker->error().find(why) != std::string::npos);
      REQUIRE(capture->loaded);
      CHECK(capture->model.zone_count == 25);
    }
  }
}

TEST_CASE("lanes: a batch that needs main bytes that never come is left out, the rest kept") {
  StreamWriter start;
  start.AppInfo("laned").SourceLocation(1, "Z", "f", "x.cpp", 1);
  StreamWriter end;
  end.End(100000);
  const std::vector<uint8_t> main = Concat({start.bytes(), end.bytes()});
  // (A model-building lane pairs the batches after it while the first waits: none is kept.)
  const auto lane = Concat({Batch(0, Zones(1, 1, 1000, 25)), Batch(1 << 30, Zones(1, 1, 5000, 7)),
                            Batch(1 << 30, Zones(1, 1, 6000, 3)), Batch(1u << 31, Zones(1, 1, 7000, 2))});
  for (const bool build_model : {false, true}) {
    CAPTURE(build_model);
    const auto capture = CaptureLanes(main, {lane}, build_model);
    CHECK(capture->worker->state() == Worker::State::kEnded);
    CHECK(capture->worker->zones_received() == 25);  // what was left out is not counted in
    REQUIRE(capture->loaded);
    CHECK(capture->model.zone_count == 25);
    CHECK(capture->model.diagnostics.ended_cleanly);
  }
}

TEST_CASE("lanes building a model: zones paired on the lanes build what decoding the file does") {
  // Nesting across messages and batches, ends of zones begun elsewhere (on the main
  // connection, in an earlier batch, before another message), ends with no begin, ends
  // before their begin, depths past the limit, attributes and callstacks on open zones,
  // memory freed on another lane.
  StreamWriter start;
  start.AppInfo("laned").SourceLocation(1, "A", "f", "x.cpp", 1).SourceLocation(2, "B", "f", "x.cpp", 2);
  start.SourceLocation(3, "C", "f", "x.cpp", 3).ThreadContext(1).ZoneBegin(1, 100);
  StreamWriter end;
  end.End(1'000'000);
  const std::vector<uint8_t> main = Concat({start.bytes(), end.bytes()});
  const uint64_t after = start.bytes().size();
  StreamWriter a;
  a.ThreadContext(1).ZoneBegin(2, 200).ZoneText("x").ZoneBegin(3, 210).ZoneEnd(220);
  a.ZoneBegin(3, 230).ZoneEnd(240).Plot(1, 245, 1.5).ZoneEnd(250).ZoneEnd(260).ZoneEnd(270);
  a.ZoneBegin(1, 300).Callstack({0x1000, 0x2000}).ZoneBegin(2, 301).ZoneEnd(302).ZoneValue(7);
  a.Alloc(0, 0xabc, 64, 303).ZoneBegin(3, 304);
  StreamWriter b;
  b.ThreadContext(1).ZoneBegin(2, 310).ZoneEnd(305).ZoneEnd(400).ZoneEnd(410).ZoneEnd(420).ThreadContext(4);
  for (int i = 0; i < 4100; ++i) b.ZoneBegin(1, 1000 + uint64_t(i));
  for (int i = 0; i < 4100; ++i) b.ZoneEnd(10'000 + uint64_t(i));
  StreamWriter c;
  c.ThreadContext(2).ZoneBegin(2, 500).Free(0, 0xabc, 505).ZoneEnd(510);
  const auto lane1 = Concat({Batch(after, a.bytes()), Batch(after, b.bytes())});
  const auto lane2 = Batch(after, c.bytes());
  const auto capture = CaptureLanes(main, {lane1, lane2}, true);  // checks the model is the file's
  CHECK(capture->worker->state() == Worker::State::kEnded);
  REQUIRE(capture->loaded);
  const TraceModel& model = capture->worker->model();
  CHECK(model.zone_count == 4100 + 8 + 1);
  CHECK(model.open_zone_count == 0);
  CHECK(model.diagnostics.zone_ends_without_begin == 2);  // 270, and 420
  CHECK(model.diagnostics.clamped_zone_ends == 1);
  std::map<uint32_t, const ThreadTimeline*> threads;
  for (const auto& thread : model.threads) threads[thread.id] = &thread;
  REQUIRE(threads.contains(1));
  const ThreadTimeline& one = *threads[1];
  REQUIRE(one.zones.size() == 8);
  CHECK(one.zones[0].end_tick == 260);  // begun on the main connection
  CHECK(one.zones[1].end_tick == 250);  // closed after a plot
  CHECK(one.zones[1].depth == 1);
  CHECK(one.attributes.at(1).text == "x");
  CHECK(one.zones[2].depth == 2);
  CHECK(one.zones[4].end_tick == 410);  // begun in the batch before
  CHECK(one.callstacks.contains(4));
  CHECK(one.attributes.at(4).has_value);
  CHECK(one.zones[6].end_tick == 400);  // begun in the batch before
  CHECK(one.zones[7].flags == kZoneEndClamped);
  REQUIRE(threads.contains(4));
  CHECK(threads[4]->zones.size() == 4100);
  CHECK(threads[4]->zones[4099].depth == ZoneArray::kMaxDepth);
}

TEST_CASE(
    "lanes building a model: a batch of several threads, one of them twice, keeps each thread's order") {
  // A thread's run is stored after the merge's turn only when nothing after it in the
  // batch names its thread: thread 1 comes back (its first run is stored in turn), thread
  // 2's open zone gets an attribute after thread 3's run, thread 4 ends the batch. The
  // attributes of zones of a run go with it: some of thread 1's, thread 4's and 5's; so
  // do the stacks of zones just begun (thread 1's and 3's), but a second one for the same
  // zone, counted, and one after an allocation, the allocation's.
  const auto [main, after] = LanedMain();
  std::vector<uint8_t> lane1, lane2;
  for (int batch = 0; batch < 8; ++batch) {
    const uint64_t from = 1000 + uint64_t(batch) * 1'000'000;
    auto tick = [from](int i, int salt) { return from + uint64_t(i) * 10 + uint64_t(i * 7919 + salt) % 7; };
    StreamWriter w;
    w.ThreadContext(1).ZoneBegin(1, from).ZoneColor(0x010203);  // open until thread 1 comes back
    for (int i = 1; i < 600; ++i) {
      w.ZoneBegin(2, tick(i, 1));
      if (i % 5 == 0) w.Callstack({0x100, uint64_t(i % 10)});
      if (i % 3 == 0) w.ZoneValue(uint64_t(i));
      if (i == 15) w.Callstack({0x200});  // a second for the same zone
      w.ZoneEnd(tick(i, 1) + 5);
    }
    w.ThreadContext(2).ZoneBegin(1, from + 1);
    for (int i = 1; i < 500; ++i) w.ZoneBegin(2, tick(i, 2)).ZoneEnd(tick(i, 2) + 3);
    w.ThreadContext(3);
    for (int i = 1; i < 700; ++i)
      w.ZoneBegin(2, tick(i, 3)).Callstack({0x300, uint64_t(i % 4)}).ZoneEnd(tick(i, 3) + 4);
    w.Alloc(0, 0xA000 + uint64_t(batch), 16, tick(700, 3)).Callstack({0x400});
    w.ThreadContext(2).ZoneText("late").ZoneEnd(from + 9000);
    w.ThreadContext(1);
    for (int i = 600; i < 900; ++i) w.ZoneBegin(2, tick(i, 1)).ZoneEnd(tick(i, 1) + 5);
    w.ZoneEnd(from + 9500).Plot(1, from + 9600, 2.0);
    w.ThreadContext(4);
    for (int i = 1; i < 400; ++i) w.ZoneBegin(1, tick(i, 4)).ZoneValue(uint64_t(i)).ZoneEnd(tick(i, 4) + 2);
    lane1 = Concat({lane1, Batch(after, w.bytes())});
    StreamWriter other;  // thread 5 on a lane of its own, merged between
    other.ThreadContext(5);
    for (int i = 1; i < 300; ++i) {
      other.ZoneBegin(1, tick(i, 5));
      if (i % 100 == 0) other.ZoneText("batch " + std::to_string(batch)).ZoneName("renamed");
      other.ZoneEnd(tick(i, 5) + 6);
    }
    lane2 = Concat({lane2, Batch(after, other.bytes())});
  }
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    const auto capture = CaptureLanes(main, {lane1, lane2}, true);  // checks the model is the file's
    CHECK(capture->worker->state() == Worker::State::kEnded);
    REQUIRE(capture->loaded);
    const TraceModel& model = capture->worker->model();
    CHECK(model.zone_count == uint64_t(8 * (900 + 500 + 699 + 399 + 299)));
    CHECK(model.open_zone_count == 0);
    CHECK(model.diagnostics.zone_ends_without_begin == 0);
    std::map<uint32_t, const ThreadTimeline*> threads;
    for (const auto& thread : model.threads) threads[thread.id] = &thread;
    REQUIRE(threads.contains(1));
    REQUIRE(threads.contains(2));
    for (const ThreadTimeline& thread : model.threads) {
      CAPTURE(thread.id);
      uint64_t previous = 0;
      for (size_t i = 0; i < thread.zones.size(); ++i) {
        CHECK(thread.zones[i].begin_tick >= previous);  // in the order recorded
        previous = thread.zones[i].begin_tick;
      }
    }
    CHECK(threads[1]->zones[0].end_tick == 1000 + 9500);  // closed after thread 1 came back
    CHECK(threads[1]->zones[1].depth == 1);
    CHECK(threads[2]->zones[0].end_tick == 1000 + 9000);
    CHECK(threads[2]->attributes.at(0).text == "late");
    CHECK(threads[1]->attributes.at(0).color == 0x010203);
    CHECK(threads[1]->attributes.at(3).value == 3);
    CHECK(!threads[1]->attributes.find(4));
    CHECK(threads[1]->attributes.size() == 8 * (1 + 199));  // the colour, and i % 3 == 0 below 600
    REQUIRE(threads.contains(4));
    CHECK(threads[4]->attributes.size() == 8 * 399);
    CHECK(threads[4]->attributes.at(398 + 399).value == 399);  // the second batch's last
    REQUIRE(threads.contains(5));
    CHECK(threads[5]->attributes.size() == 8 * 2);
    CHECK(threads[5]->attributes.at(99).text.starts_with("batch "));
    CHECK(model.ZoneName(*threads[5], 199) == "renamed");
    CHECK(threads[1]->callstacks.size() == 8 * 119);  // i % 5 == 0 below 600
    CHECK(model.callstacks.Frames(threads[1]->callstacks.at(15))[1] == 5);
    CHECK(!threads[1]->callstacks.contains(16));
    REQUIRE(threads.contains(3));
    CHECK(threads[3]->callstacks.size() == 8 * 699);
    CHECK(model.callstacks.Frames(threads[3]->callstacks.at(699 + 6))[1] == 3);  // the second batch's i = 7
    CHECK(model.callstacks.size() == 2 + 4 + 1);  // the second stack of a zone is not kept
    CHECK(model.diagnostics.callstacks_without_event == 8);
    CHECK(model.memory_pools.at(0).allocations.size() == 8);
    CHECK(model.callstacks.Frames(model.memory_pools.at(0).allocations[0].callstack)[0] == 0x400);
  }
}

TEST_CASE("lanes building a model: threads on the wrong lane, batches with no thread, split allocations") {
  // What a program should not send, or sends split where a turn may end: the model is
  // still what decoding the file gives (CaptureLanes compares them), in whatever order
  // the lanes' batches were merged, and nothing breaks.
  const auto [main, after] = LanedMain();
  std::vector<uint8_t> lane1, lane2, lane3;
  for (int batch = 0; batch < 12; ++batch) {
    const uint64_t from = 1000 + uint64_t(batch) * 1'000'000;
    // Lane 1: thread 1, an allocation at the end of one batch and its callstack at the
    // start of the next, zones between.
    StreamWriter one;
    one.ThreadContext(1);
    if (batch > 0) one.Callstack({0x10, 0x20, uint64_t(batch)});
    // Ticks as a clock gives them, not a perfect pattern (which compresses past what a
    // loader takes from a block).
    auto tick = [from](int i, int salt) { return from + uint64_t(i) * 10 + uint64_t(i * 7919 + salt) % 7; };
    for (int i = 0; i < 5000; ++i) one.ZoneBegin(1, tick(i, 1)).ZoneEnd(tick(i, 1) + 5);
    one.Alloc(0, 0x1000 + uint64_t(batch), 64, from + 60'000);
    lane1 = Concat({lane1, Batch(after, one.bytes())});
    // Lane 2: zones with no ThreadContext (they land on whichever thread the stream is
    // on, with their attributes and stacks), then thread 1's zones though it belongs to lane 1,
    // nested, one end at the last tick.
    StreamWriter two;
    for (int i = 0; i < 3000; ++i) {
      two.ZoneBegin(2, tick(i, 2));
      if (i % 700 == 0) two.Callstack({0x500, uint64_t(i)});
      if (i % 500 == 0) two.ZoneValue(uint64_t(i)).ZoneText("no thread");
      two.ZoneEnd(tick(i, 2) + 3);
    }
    two.ThreadContext(1)
        .ZoneBegin(1, from + 100)
        .ZoneBegin(2, from + 110)
        .ZoneEnd(~uint64_t{0})
        .ZoneEnd(from + 90);
    lane2 = Concat({lane2, Batch(after, two.bytes())});
    // Lane 3: thread 3's zones alone, a run stored after each turn.
    StreamWriter three;
    three.ThreadContext(3);
    for (int i = 0; i < 8000; ++i) three.ZoneBegin(2, tick(i, 3)).ZoneEnd(tick(i, 3) + 4);
    lane3 = Concat({lane3, Batch(after, three.bytes())});
  }
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    const auto capture = CaptureLanes(main, {lane1, lane2, lane3}, true);  // checks the model is the file's
    CHECK(capture->worker->state() == Worker::State::kEnded);
    REQUIRE(capture->loaded);
    // Lane 2's first zones, and their stacks (one at every 700th), have no thread when its
    // first batch is merged before any other lane's: all of them, or the first k when the
    // batch came in two pieces and another lane's turn went between (the rest land on
    // that lane's thread, in the file too).
    const TraceModel& model = capture->worker->model();
    const uint64_t without_thread = model.diagnostics.events_without_thread;
    auto events = [](uint64_t k) { return 2 * k + (k == 0 ? 0 : (k - 1) / 700 + 1); };
    uint64_t k = 0;
    while (k < 3000 && events(k) < without_thread) ++k;
    CAPTURE(without_thread);
    CHECK(events(k) == without_thread);
    CHECK(model.zone_count + k == uint64_t(12 * (5000 + 3000 + 2 + 8000)));
  }
}

TEST_CASE(
    "lanes building a model: the lanes store their threads' zones side by side while readers come and go") {
  StreamWriter start;
  start.AppInfo("laned").SourceLocation(1, "Z", "f", "x.cpp", 1);
  StreamWriter end;
  end.End(100'000'000);
  const std::vector<uint8_t> main = Concat({start.bytes(), end.bytes()});
  constexpr int kZones = 200'000;
  const uint64_t after = start.bytes().size();
  std::vector<std::vector<uint8_t>> lanes;
  for (uint32_t lane = 1; lane <= 3; ++lane) {
    std::vector<uint8_t> stream;
    for (int part = 0; part < 4; ++part) {  // each thread's zones in four batches, one open across them
      StreamWriter w;
      w.ThreadContext(lane);
      if (part == 0) w.ZoneBegin(1, 100);
      const uint64_t from = 1000 + uint64_t(part) * 10 * kZones;
      for (int i = 0; i < kZones / 4; ++i)
        w.ZoneBegin(1, from + uint64_t(i) * 10).ZoneEnd(from + uint64_t(i) * 10 + 5);
      if (part == 3) w.ZoneEnd(50'000'000);
      stream = Concat({stream, Batch(after, w.bytes())});
    }
    lanes.push_back(stream);
  }
  FakeProgram program(Hello(gnomon::protocol::kProtocolVersion, kOk, 1 | gnomon::protocol::kCapLanes, kToken),
                      main, lanes);
  Worker::Options options = OptionsFor(program.port());
  options.lanes = 3;
  options.clock_probes = false;
  Worker worker(options);
  REQUIRE(worker.Connect().ok());
  worker.Start();
  // Readers all along: each sees every thread's zones whole, in order.
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::thread reader([&] {
    while (!done.load()) {
      worker.WithModel([&](const TraceModel& m) {
        for (const auto& thread : m.threads) {
          uint64_t previous = 0;
          for (size_t i = 0; i < thread.zones.size(); i += 101) {
            if (thread.zones[i].begin_tick < previous) ++bad;
            previous = thread.zones[i].begin_tick;
          }
        }
      });
    }
  });
  worker.Join();
  done.store(true);
  reader.join();
  CHECK(bad.load() == 0);
  CHECK(worker.state() == Worker::State::kEnded);
  const TraceModel& model = worker.model();
  CHECK(model.zone_count == uint64_t(3 * (kZones + 1)));
  CHECK(model.open_zone_count == 0);
  CHECK(model.first_tick == 100);
  CHECK(model.last_tick == 100'000'000);
  for (const auto& thread : model.threads) {
    CAPTURE(thread.id);
    REQUIRE(thread.zones.size() == size_t(kZones + 1));
    CHECK(thread.zones[0].end_tick == 50'000'000);
    CHECK(thread.zones[kZones].depth == 1);
  }
}

TEST_CASE("lanes building a model: a reader that holds it stalls no connection, the model catches up after") {
  // Threads 1 and 2 over two lanes, 300,000 zones each (6.6 MB a lane, more than the
  // sockets hold), and a zone of thread 3 on the main connection before them.
  StreamWriter start;
  start.AppInfo("laned").SourceLocation(1, "Z", "f", "x.cpp", 1);
  start.ThreadContext(3).ZoneBegin(1, 10).ZoneEnd(20);
  StreamWriter end;
  end.End(100'000'000);
  const std::vector<uint8_t> main = Concat({start.bytes(), end.bytes()});
  constexpr int kZones = 300'000;
  const uint64_t after = start.bytes().size();
  const auto lane1 = Concat(
      {Batch(after, Zones(1, 1, 1000, kZones / 2)), Batch(after, Zones(1, 1, 10'000'000, kZones / 2))});
  const auto lane2 = Batch(after, Zones(2, 1, 1000, kZones));
  FakeProgram program(Hello(gnomon::protocol::kProtocolVersion, kOk, 1 | gnomon::protocol::kCapLanes, kToken),
                      main, {lane1, lane2});
  Worker::Options options = OptionsFor(program.port());
  options.lanes = 2;
  options.clock_probes = false;
  Worker worker(options);
  REQUIRE(worker.Connect().ok());
  const uint64_t total = main.size() + lane1.size() + lane2.size();
  uint64_t received_while_held = 0;
  uint64_t zones_while_held = 0;
  worker.WithModel([&](const TraceModel& m) {
    worker.Start();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (worker.bytes_received() < total && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    received_while_held = worker.bytes_received();
    zones_while_held = m.zone_count;
  });
  CHECK(received_while_held == total);  // every connection was drained while the model was held
  CHECK(zones_while_held == 0);         // and nothing was decoded under the reader
  worker.Join();
  CHECK(worker.state() == Worker::State::kEnded);
  CHECK(worker.lanes() == 2);
  const TraceModel& model = worker.model();
  CHECK(model.zone_count == uint64_t(2 * kZones + 1));
  CHECK(model.diagnostics.ended_cleanly);
  std::map<uint32_t, size_t> by_thread;
  for (const auto& thread : model.threads) by_thread[thread.id] = thread.zones.size();
  CHECK(by_thread == std::map<uint32_t, size_t>{{1, kZones}, {2, kZones}, {3, 1}});
}
