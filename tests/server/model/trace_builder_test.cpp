#include "model/trace_builder.h"

#include <doctest/doctest.h>

#include "../../support/build_model.h"

using gnomon::protocol::MessageType;
using gnomon::server::DecodeMessages;
using gnomon::server::KnownCallstacks;
using gnomon::server::TraceBuilder;
using gnomon::server::TraceModel;
using gnomon::server::ZoneOps;
using gnomon::test::StreamWriter;

namespace {
TraceModel Build(const StreamWriter& w) { return gnomon::test::BuildWholeModel(w); }
}  // namespace

TEST_CASE("zones nest by depth in begin order, with runtime attributes") {
  StreamWriter w;
  w.AppInfo("app").SourceLocation(1, "Outer", "f", "a.cpp", 10).SourceLocation(2, "Inner", "g", "a.cpp", 20);
  w.ThreadInfo(7, 700, "render").ThreadContext(7);
  w.ZoneBegin(1, 100).ZoneBegin(2, 110).ZoneText("hello").ZoneValue(5).ZoneEnd(120);
  w.ZoneBegin(2, 130).ZoneName("renamed").ZoneColor(0x123456).ZoneEnd(150).ZoneEnd(200);
  const TraceModel m = Build(w);
  REQUIRE(m.threads.size() == 1);
  const auto& t = m.threads[0];
  CHECK(t.name == "render");
  CHECK(t.os_thread_id == 700);
  REQUIRE(t.zones.size() == 3);
  CHECK(t.zones[0].depth == 0);
  CHECK(t.zones[1].depth == 1);
  CHECK(t.zones[2].depth == 1);
  CHECK(t.zones[0].end_tick == 200);
  CHECK(t.attributes.at(1).text == "hello");
  CHECK(t.attributes.at(1).value == 5);
  CHECK(m.ZoneName(t, 2) == "renamed");
  CHECK(m.ZoneName(t, 1) == "Inner");
  CHECK(t.attributes.at(2).color == 0x123456);
  CHECK(m.first_tick == 100);
  CHECK(m.last_tick == 200);
  CHECK(m.open_zone_count == 0);
}

TEST_CASE("stream faults are counted and skipped, never fatal") {
  StreamWriter w;
  w.ZoneBegin(1, 5);                       // before any thread
  w.ThreadContext(1).ZoneEnd(10);          // end without begin
  w.ZoneText("orphan");                    // attribute without a zone
  w.ZoneBegin(3, 100).ZoneEnd(90);         // end before begin: clamped
  w.ZoneBegin(0xFFFFFFFF, 200);            // invalid location id: kept as unknown, counted
  w.Frame(MessageType::kFrameEnd, 4, 50);  // frame end without begin
  const TraceModel m = Build(w);
  CHECK(m.diagnostics.events_without_thread == 1);
  CHECK(m.diagnostics.zone_ends_without_begin == 1);
  CHECK(m.diagnostics.attributes_without_zone == 1);
  CHECK(m.diagnostics.clamped_zone_ends == 1);
  CHECK(m.diagnostics.invalid_ids == 1);
  CHECK(m.diagnostics.frame_ends_without_begin == 1);
  REQUIRE(m.threads[0].zones.size() == 2);
  CHECK(m.threads[0].zones[0].end_tick == 100);
  CHECK(m.threads[0].zones[1].source_location == 0);
  CHECK(m.open_zone_count == 1);
}

TEST_CASE("frames, plots, messages, drops and names arrive in the model") {
  StreamWriter w;
  w.ThreadContext(2);
  w.Frame(MessageType::kFrameMark, 0, 100).Frame(MessageType::kFrameMark, 0, 200);
  w.Frame(MessageType::kFrameBegin, 9, 120).Frame(MessageType::kFrameEnd, 9, 150);
  w.String(9, gnomon::protocol::StringKind::kFrameName, "Physics");  // a name may come late
  w.String(3, gnomon::protocol::StringKind::kPlotName, "fps");
  w.Plot(3, 110, 59.5).Message(130, 3, "careful").Dropped(17).End(300);
  const TraceModel m = Build(w);
  CHECK(m.frames.at(0).marks == std::vector<uint64_t>{100, 200});
  CHECK(m.frames.at(9).spans.size() == 1);
  CHECK(m.frames.at(9).name == "Physics");
  CHECK(m.plots.at(3).name == "fps");
  CHECK(m.plots.at(3).points[0].second == 59.5);
  REQUIRE(m.messages.size() == 1);
  CHECK(m.messages[0].text == "careful");
  CHECK(m.messages[0].thread_id == 2);
  CHECK(m.diagnostics.client_dropped_events == 17);
  CHECK(m.diagnostics.ended_cleanly);
}

TEST_CASE("GPU zones nest per thread, match their query times in any order, and map through calibrations") {
  using gnomon::protocol::CpuTimeDomain;
  StreamWriter w;
  w.AppInfo("gpu app").SourceLocation(1, "Pass", "f", "r.cpp", 1).SourceLocation(2, "Draw", "g", "r.cpp", 2);
  // GPU ticks are ns with an offset of 1e9; CPU time is CLOCK_MONOTONIC_RAW.
  w.GpuContext(1, "Test GPU", 1, 1, 64, 1'000'001'000, 1'000, CpuTimeDomain::kMonotonicRaw, 10);
  w.GpuContextName(1, "graphics queue");
  w.GpuCalibration(1, 1'001'001'000, 1'001'000, 1'000'000, 10);
  w.ThreadContext(3);
  w.GpuTime(1, 11, 1'000'500'000);  // a time that comes before its zone
  w.GpuZoneBegin(1, 10, 1, 100).GpuZoneBegin(1, 11, 2, 110).GpuZoneEnd(1, 12, 120).GpuZoneEnd(1, 13, 130);
  w.GpuTime(1, 10, 1'000'401'000).GpuTime(1, 13, 1'000'901'000).GpuTime(1, 12, 1'000'601'000);
  TraceModel m = Build(w);
  REQUIRE(m.gpu_contexts.size() == 1);
  const auto& c = m.gpu_contexts.at(1);
  CHECK(c.label() == "graphics queue");
  CHECK(c.device_name == "Test GPU");
  REQUIRE(c.zones.size() == 2);
  CHECK(c.zones[0].depth == 0);
  CHECK(c.zones[1].depth == 1);
  CHECK(c.zones[0].thread_id == 3);
  CHECK(c.zones[0].is_timed());
  CHECK(c.zones[1].is_timed());
  CHECK(c.unmatched_gpu_times == 0);
  const auto pass = m.MapGpuZone(c, c.zones[0]);
  CHECK(pass.begin_ns == 401'000);
  CHECK(pass.end_ns == 901'000);
  const auto draw = m.MapGpuZone(c, c.zones[1]);
  CHECK(draw.begin_ns == 500'000);
  CHECK(draw.end_ns == 601'000);
  CHECK(c.clock.sample_count() == 2);
}

TEST_CASE("bad GPU input is counted and leaves the other zones alone") {
  StreamWriter w;
  w.SourceLocation(1, "Pass", "f", "r.cpp", 1).GpuContext(1, "gpu", 1, 1, 64, 1000, 1000);
  w.ThreadContext(1);
  w.GpuZoneBegin(9, 1, 1, 5).GpuTime(9, 1, 77).GpuCalibration(9, 1, 1, 1, 1);  // unknown context
  w.GpuZoneEnd(1, 2, 6);                                                       // end without begin
  w.GpuCalibration(1, 2000, 2000, 0, 5);                                       // zero delta
  w.GpuCalibration(1, 900, 3000, 10, 5);                                       // GPU clock backwards
  w.GpuZoneBegin(1, 3, 1, 7).GpuZoneBegin(1, 3, 1, 8);                         // query reused before its time
  w.GpuTime(1, 3, 1200);
  const TraceModel m = Build(w);
  CHECK(m.diagnostics.gpu_events_for_unknown_context == 3);
  CHECK(m.diagnostics.gpu_zone_ends_without_begin == 1);
  CHECK(m.diagnostics.gpu_rejected_calibrations == 2);
  CHECK(m.diagnostics.gpu_queries_reused_before_time == 1);
  const auto& c = m.gpu_contexts.at(1);
  CHECK(c.clock.sample_count() == 1);
  REQUIRE(c.zones.size() == 2);
  CHECK(c.zones[1].gpu_begin == 1200);
  CHECK(c.zones[0].gpu_begin == gnomon::server::kOpenZone);
}

TEST_CASE(
    "a capture's reference readings are kept as brackets, readings that cannot be are counted, not kept") {
  auto reading = [](uint64_t capture_id, uint64_t before, uint64_t reference, uint64_t after) {
    gnomon::protocol::CaptureClock m{};
    m.capture_id = capture_id;
    m.reference = 1;
    m.before_ns = before;
    m.reference_ns = reference;
    m.after_ns = after;
    m.reference_error_ns = 4000;
    return m;
  };
  StreamWriter w;
  w.Add(reading(9, 1000, 5'000'000, 1200), {.domain = "boot"});
  w.Add(reading(9, 2000, 5'001'000, 2100), {.domain = "other"});  // the domain of the first stays
  w.Add(reading(8, 3000, 5'002'000, 3100));                       // another capture's
  w.Add(reading(0, 3000, 5'002'000, 3100));                       // no capture
  w.Add(reading(9, 4000, 5'003'000, 3900));                       // after before before
  w.Add(reading(9, 4000, 5'003'000, 4000 + 2'000'000'000));       // a bracket of 2 s
  w.Add(reading(9, 4000, 10, 4100));                              // a reference that would wrap
  auto other_reference = reading(9, 5000, 5'004'000, 5100);
  other_reference.reference = 2;
  w.Add(other_reference);
  const TraceModel m = Build(w);
  CHECK(m.capture.capture_id == 9);
  CHECK(m.capture.domain == "boot");
  CHECK(m.capture.reference_error_ns == 4000);
  CHECK(m.diagnostics.capture_clocks_rejected == 6);
  REQUIRE(m.capture.readings.size() == 2);
  // reference = capture + offset, bracketed by [r - after, r - before].
  const auto& first = m.capture.readings[0];
  CHECK(int64_t(first.probe_sent_ns - first.receive_ns) == 5'000'000 - 1200);
  CHECK(int64_t(first.reply_received_ns - first.send_ns) == 5'000'000 - 1000);
}

TEST_CASE("a lane's paired zones keep a normal piece's room for the next, not a hostile piece's") {
  ZoneOps ops;
  for (uint64_t i = 0; i < 100'000; ++i) ops.OnLeafZone(1, 10 * i, 10 * i + 5);
  const size_t normal = ops.capacity_bytes();
  CHECK(normal >= 100'000 * sizeof(ZoneOps::RunZone));
  ops.Clear();
  CHECK(ops.capacity_bytes() == normal);  // the next piece allocates nothing
  // A begin and a free, over and over: every zone a run of its own, cut by the free.
  StreamWriter free;
  free.Free(0, 0xabc, 1);
  for (uint64_t i = 0; i < 400'000; ++i) {
    ops.OnZoneBegin({.srcloc_id = 1, .tick = i});
    ops.OnMessageBytes(free.bytes().data(), free.bytes().size());
  }
  CHECK(ops.capacity_bytes() > 4 * ZoneOps::kKeptBytes);
  ops.Clear();
  CHECK(ops.capacity_bytes() <= 4 * ZoneOps::kKeptBytes);
}

namespace {

// A model built as a lane builds it, one piece at a time: its zones paired ahead, its
// stacks named where the lane knows them, then the piece's turn.
struct LaneModel {
  TraceModel model;
  TraceBuilder builder{model};
  KnownCallstacks known;
  ZoneOps ops;
  LaneModel() { ops.UseKnownCallstacks(&known); }
  LaneModel(const LaneModel&) = delete;
  LaneModel& operator=(const LaneModel&) = delete;
  void Take(const StreamWriter& piece) {
    ops.Clear();
    REQUIRE(DecodeMessages(piece.data(), piece.size(), ops).consumed == piece.size());
    ops.Replay(builder, [&](const uint8_t* p, size_t n) { DecodeMessages(p, n, builder); });
  }
};

// What a lane's table of known stacks says of these frames.
KnownCallstacks::Seen Look(KnownCallstacks& known, const std::vector<uint64_t>& frames) {
  std::vector<uint8_t> bytes(8 * frames.size());
  for (size_t i = 0; i < frames.size(); ++i) gnomon::protocol::StoreLe(bytes.data() + 8 * i, frames[i]);
  return known.See({bytes.data(), frames.size()});
}

}  // namespace

TEST_CASE("a lane names the call stacks it has seen interned, and the model is the one decoding builds") {
  using Frames = std::vector<uint64_t>;
  const Frames a{0x10, 0x20, 0x30}, b{0x10, 0x40}, c{0x50};
  const Frames deep(300, 0x60);  // cut, which the turn counts: never named on the lane
  auto piece = [](uint64_t from, const std::vector<Frames>& stacks, bool thread = true) {
    StreamWriter w;
    if (thread) w.ThreadContext(1);
    for (size_t i = 0; i < stacks.size(); ++i)
      w.ZoneBegin(1, from + 10 * i).Callstack(stacks[i]).ZoneEnd(from + 10 * i + 5);
    return w;
  };
  const StreamWriter orphans = piece(10, {a, c}, false);  // no thread yet: counted, not interned
  const StreamWriter first = piece(100, {a, b, a, deep, {}});
  const StreamWriter second = piece(1000, {b, a, c, deep, a, {}});
  LaneModel lane;
  const TraceModel& model = lane.model;
  KnownCallstacks& known = lane.known;
  lane.Take(orphans);
  lane.ops.Clear();
  CHECK(model.callstacks.size() == 0);
  CHECK(model.diagnostics.events_without_thread == 2 * 2 + 2);
  CHECK(Look(known, c).slot != KnownCallstacks::kNoSlot);  // still waiting for its id
  lane.Take(first);
  CHECK(known.size() == 3);  // a, b and c, not the cut one nor the empty one
  CHECK(model.callstacks.size() == 3);
  // Until the piece comes back from its turn, a and b wait for their ids.
  CHECK(Look(known, a).id == 0);
  CHECK(Look(known, a).slot != KnownCallstacks::kNoSlot);
  lane.ops.Clear();
  const KnownCallstacks::Seen seen_a = Look(known, a), seen_b = Look(known, b);
  CHECK(seen_a.slot == KnownCallstacks::kNoSlot);
  CHECK(model.callstacks.Frames(seen_a.id).size() == a.size());
  CHECK(model.callstacks.Frames(seen_a.id)[2] == 0x30);
  CHECK(model.callstacks.Frames(seen_b.id)[1] == 0x40);
  CHECK(Look(known, deep).id == 0);
  CHECK(Look(known, {}).slot == KnownCallstacks::kNoSlot);

  CHECK(Look(known, c).id == 0);

  lane.Take(second);
  lane.ops.Clear();
  CHECK(known.size() == 3);
  CHECK(model.callstacks.Frames(Look(known, c).id)[0] == 0x50);
  CHECK(gnomon::server::DescribeFirstDifference(
            model, Build(StreamWriter(orphans).Append(first).Append(second))) == "");
  CHECK(model.diagnostics.callstacks_cut == 2);
}

TEST_CASE("a lane's known call stacks stop at their limits, and stacks past them are interned in the turn") {
  // One frame each: the stacks' limit; 16 each: the frames' limit.
  for (const size_t depth : {size_t{1}, size_t{16}}) {
    CAPTURE(depth);
    const size_t kept = std::min(KnownCallstacks::kMaxStacks, KnownCallstacks::kMaxFrames / depth);
    const uint64_t count = kept + 100;
    std::vector<uint64_t> frames(depth, 0x1000);
    auto stacks = [&](uint64_t from) {  // each zone a stack of its own
      StreamWriter w;
      w.ThreadContext(1);
      for (uint64_t i = 0; i < count; ++i) {
        frames[0] = 0x2000 + i;
        w.ZoneBegin(1, 10 * (from + i)).Callstack(frames).ZoneEnd(10 * (from + i) + 5);
      }
      return w;
    };
    const StreamWriter first = stacks(0);
    LaneModel lane;
    lane.Take(first);
    lane.ops.Clear();
    CHECK(lane.known.size() == kept);
    CHECK(lane.model.callstacks.size() == count);
    // Exactly `kept` stacks are named, each by the id its turn gave it; the others are
    // left to the turn. Which ones depends on the table's seed: a stack whose lookup
    // found no free slot within kMaxProbes is not kept, and a later one is in its place.
    size_t named = 0, wrong = 0;
    for (uint64_t i = 0; i < count; ++i) {
      frames[0] = 0x2000 + i;
      const KnownCallstacks::Seen seen = Look(lane.known, frames);  // full: keeps nothing new
      if (seen.id != 0) ++named;
      if ((seen.id != 0 && seen.id != i + 1) || seen.slot != KnownCallstacks::kNoSlot) ++wrong;
    }
    CHECK(named == kept);
    CHECK(wrong == 0);
    CHECK(lane.known.size() == kept);
    // The same stacks again, on later zones: named on the lane, or interned in the turn.
    const StreamWriter again = stacks(count);
    lane.Take(again);
    CHECK(gnomon::server::DescribeFirstDifference(lane.model, Build(StreamWriter(first).Append(again))) ==
          "");
  }
}

TEST_CASE("a thread the library marks as its own is so in the model, and only that one") {
  gnomon::test::StreamWriter w;
  w.ThreadInfo(1, 100, "main").ThreadInfo(2, 101, "gnomon sampler");
  w.Add(gnomon::protocol::LibraryThread{.thread_id = 2});
  w.Add(gnomon::protocol::LibraryThread{.thread_id = 3});  // before its ThreadInfo: a thread all the same
  const TraceModel model = gnomon::test::BuildWholeModel(w);
  REQUIRE(model.threads.size() == 3);
  CHECK_FALSE(model.threads[model.thread_index.at(1)].library);
  CHECK(model.threads[model.thread_index.at(2)].library);
  CHECK(model.threads[model.thread_index.at(3)].library);
}

TEST_CASE("what the program runs on and with (ProgramEnvironment) is the program's, its text made valid") {
  gnomon::test::StreamWriter w;
  w.AppInfo("app");
  w.Add(gnomon::protocol::ProgramEnvironment{.logical_cpus = 16, .memory_bytes = uint64_t{64} << 30},
        {.system = "Linux 6.1.0 x86_64",
         .cpu = "Test CPU \xff",
         .settings = "GNOMON_PORT=9000\nGNOMON_RANK=3"});
  const TraceModel model = gnomon::test::BuildWholeModel(w);
  CHECK(model.program.logical_cpus == 16);
  CHECK(model.program.memory_bytes == uint64_t{64} << 30);
  CHECK(model.program.system == "Linux 6.1.0 x86_64");
  CHECK(model.program.cpu == "Test CPU \xEF\xBF\xBD");  // the stray byte is U+FFFD
  CHECK(model.program.settings == "GNOMON_PORT=9000\nGNOMON_RANK=3");
}
