// The trace model's own logic, over models built from streams: its unknown location, the
// names zones are shown by, short labels, counters found by index, GPU zones placed on the
// timeline, the bytes its zones hold and their slack given back, and the first difference
// between two models.
#include "gnomon/server/trace_model.h"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "../../support/build_model.h"

using gnomon::protocol::CounterDataType;
using gnomon::protocol::CounterType;
using gnomon::protocol::MessageType;
using gnomon::server::DescribeFirstDifference;
using gnomon::server::SourceLocation;
using gnomon::server::ThreadTimeline;
using gnomon::server::TraceModel;
using gnomon::test::BuildWholeModel;
using gnomon::test::StreamWriter;

namespace {

// A program ("app", timer in ns) whose thread 1 ("main") has two zones of location 1
// ("Z"): 100 to 200 and 300 to `last_end`.
StreamWriter TwoZones(std::string_view program = "app", std::string_view location = "Z",
                      std::string_view thread = "main", uint64_t last_end = 400) {
  StreamWriter w;
  w.AppInfo(program).SourceLocation(1, location, "f", "a.cpp", 1).ThreadInfo(1, 11, thread).ThreadContext(1);
  w.ZoneBegin(1, 100).ZoneEnd(200).ZoneBegin(1, 300).ZoneEnd(last_end);
  return w;
}

}  // namespace

TEST_CASE("a model starts with the unknown location, which an index past the locations reads as") {
  const TraceModel empty;
  REQUIRE(empty.source_locations.size() == 1);
  CHECK(empty.Location(0).name == "<unknown>");
  CHECK(&empty.Location(7) == &empty.source_locations[0]);

  const TraceModel m = BuildWholeModel(TwoZones());
  REQUIRE(m.source_locations.size() == 2);
  CHECK(m.Location(1).name == "Z");
  CHECK(m.Location(2).name == "<unknown>");
  CHECK(m.first_tick == 100);
  CHECK(m.RelativeNs(300) == 200);
  CHECK(m.DurationNs(100, 400) == 300);
}

TEST_CASE("a zone is shown by the name it was given at run time, else by its location's") {
  StreamWriter w;
  w.SourceLocation(1, "Load", "load", "io.cpp", 3).ThreadContext(1);
  w.ZoneBegin(1, 100).ZoneEnd(110);
  w.ZoneBegin(1, 120).ZoneName("renamed").ZoneEnd(130);
  w.ZoneBegin(1, 140).ZoneText("text only").ZoneEnd(150);
  const TraceModel m = BuildWholeModel(w);
  REQUIRE(m.threads.size() == 1);
  const ThreadTimeline& t = m.threads[0];
  REQUIRE(t.zones.size() == 3);
  CHECK(m.ZoneName(t, 0) == "Load");
  CHECK(m.ZoneName(t, 1) == "renamed");
  CHECK((t.zones[2].flags & gnomon::server::kZoneHasAttributes) != 0);
  CHECK(m.ZoneName(t, 2) == "Load");  // attributes, none of them a name
}

TEST_CASE("a source location's short label is its file without folders and its line, or its function") {
  SourceLocation location;
  location.name = "Draw the pass";
  location.function = "Draw";
  location.file = "/src/render/pass.cpp";
  location.line = 42;
  CHECK(location.ShortLabel() == "pass.cpp:42");
  location.file = "main.cpp";
  CHECK(location.ShortLabel() == "main.cpp:42");
  location.file = "";
  CHECK(location.ShortLabel() == "Draw");
}

TEST_CASE("a counter set finds the counters defined, by index, and names the others by their number") {
  StreamWriter w;
  w.AppInfo("app").ThreadContext(1).GpuContext(5, "GPU");
  w.CounterSet(5, 9, 6, "Render basic");
  // Defined out of order, and not all of them.
  w.Counter(9, 4, CounterType::kRaw, CounterDataType::kUint64, "busy");
  w.Counter(9, 0, CounterType::kEvent, CounterDataType::kUint64, "clocks");
  w.Counter(9, 2, CounterType::kEvent, CounterDataType::kUint64, "reads");
  const TraceModel m = BuildWholeModel(w);
  REQUIRE(m.counter_sets.count(9) == 1);
  const gnomon::server::CounterSet& set = m.counter_sets.at(9);
  REQUIRE(set.counters.size() == 3);
  for (const size_t index : {size_t{0}, size_t{2}, size_t{4}}) {
    CAPTURE(index);
    REQUIRE(set.Find(index) != nullptr);
    CHECK(set.Find(index)->index == index);
  }
  CHECK(set.Find(0)->name == "clocks");
  CHECK(set.Find(2)->name == "reads");
  CHECK(set.Find(4)->name == "busy");
  for (const size_t index : {size_t{1}, size_t{3}, size_t{5}, size_t{6}}) {
    CAPTURE(index);
    CHECK(set.Find(index) == nullptr);
  }
  CHECK(set.CounterName(4) == "busy");
  CHECK(set.CounterName(3) == "counter 3");
  CHECK(set.CounterName(99) == "counter 99");
}

TEST_CASE("a GPU zone is placed on the trace's timeline, and never ends before it begins") {
  StreamWriter w;
  w.AppInfo("gpu").SourceLocation(1, "Blur", "blur", "fx.cpp", 4).ThreadContext(1);
  // GPU ticks of 1 ns on the CPU's clock: two knots on that line, 20 ms apart.
  w.GpuContext(1, "GPU", 1, 1, 64, 5000, 5000, gnomon::protocol::CpuTimeDomain::kMonotonicRaw, 20);
  w.GpuCalibration(1, 20'005'000, 20'005'000, 20'000'000, 20);
  w.GpuZoneBegin(1, 1, 1, 1500).GpuZoneEnd(1, 2, 1600).GpuTime(1, 1, 10'000).GpuTime(1, 2, 30'000);
  // A zone whose GPU end came before its begin: a GPU that lies.
  w.GpuZoneBegin(1, 3, 1, 1700).GpuZoneEnd(1, 4, 1800).GpuTime(1, 4, 40'000).GpuTime(1, 3, 50'000);
  const TraceModel m = BuildWholeModel(w);
  REQUIRE(m.gpu_contexts.count(1) == 1);
  const gnomon::server::GpuContextTimeline& context = m.gpu_contexts.at(1);
  REQUIRE(context.zones.size() == 2);
  const TraceModel::MappedGpuZone sound = m.MapGpuZone(context, context.zones[0]);
  CHECK(sound.begin_ns == 10'000);
  CHECK(sound.end_ns == 30'000);
  REQUIRE(context.zones[1].gpu_end < context.zones[1].gpu_begin);
  const TraceModel::MappedGpuZone backwards = m.MapGpuZone(context, context.zones[1]);
  CHECK(backwards.begin_ns == 50'000);
  CHECK(backwards.end_ns == 50'000);
}

TEST_CASE(
    "a model's zone bytes are its threads' arrays', and shrinking gives back their slack, keeping every "
    "zone") {
  StreamWriter w;
  w.AppInfo("big").SourceLocation(1, "Z", "f", "a.cpp", 1);
  // 20,000 zones a thread: past the first 8,192, pages are carved from a 2 MiB block.
  for (uint32_t thread = 1; thread <= 2; ++thread) {
    w.ThreadContext(thread);
    for (uint64_t i = 0; i < 20'000; ++i) w.ZoneBegin(1, i * 100).ZoneEnd(i * 100 + 50);
  }
  TraceModel m = BuildWholeModel(w);
  REQUIRE(m.threads.size() == 2);
  const size_t before = m.zone_bytes();
  CHECK(before == m.threads[0].zones.capacity_bytes() + m.threads[1].zones.capacity_bytes());
  m.ShrinkToFit();
  const size_t after = m.zone_bytes();
  CHECK(after == m.threads[0].zones.capacity_bytes() + m.threads[1].zones.capacity_bytes());
  CHECK(after < before);
  CHECK(before - after > (size_t{1} << 20));  // most of each thread's block went back
  CHECK(m.zone_count == 40'000);
  CHECK(DescribeFirstDifference(m, BuildWholeModel(w)) == "");  // every zone as it was
}

TEST_CASE("the first difference between two models is named, and none between models of one stream") {
  const TraceModel model = BuildWholeModel(TwoZones());
  auto difference = [&](const StreamWriter& other) {
    return DescribeFirstDifference(model, BuildWholeModel(other));
  };
  CHECK(difference(TwoZones()) == "");
  CHECK(difference(TwoZones("another app")) == "program info differs");
  CHECK(difference(TwoZones("app", "Y")) == "source locations differ");
  CHECK(difference(TwoZones("app", "Z", "main", 401)) == "thread 1 zone 1 differs");
  CHECK(difference(TwoZones("app", "Z", "render")) == "thread 1 name or attributes differ");
  StreamWriter more = TwoZones();
  more.ZoneBegin(1, 500).ZoneEnd(600);
  CHECK(difference(more) == "thread 1: 2 vs 3 zones");
  StreamWriter second_thread = TwoZones();
  second_thread.ThreadContext(2).ZoneBegin(1, 500).ZoneEnd(600);
  CHECK(difference(second_thread) == "thread counts differ");
  StreamWriter frame = TwoZones();
  frame.Frame(MessageType::kFrameMark, 0, 250);
  CHECK(difference(frame) == "frames differ");
  StreamWriter message = TwoZones();
  message.Message(250, 2, "hello");
  CHECK(difference(message) == "messages differ");
  StreamWriter dropped = TwoZones();
  dropped.Dropped(5);
  CHECK(difference(dropped) == "diagnostics differ");
}
