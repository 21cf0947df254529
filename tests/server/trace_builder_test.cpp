#include "gnomon/server/trace_builder.h"

#include <doctest/doctest.h>

#include "../support/stream_writer.h"

using gnomon::protocol::MessageType;
using gnomon::server::DecodeMessages;
using gnomon::server::TraceBuilder;
using gnomon::server::TraceModel;
using gnomon::test::StreamWriter;

namespace {
TraceModel Build(const StreamWriter& w) {
  TraceModel model;
  TraceBuilder builder(model);
  const auto result = DecodeMessages(w.data(), w.size(), builder);
  REQUIRE(result.consumed == w.size());
  return model;
}
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
  CHECK(m.open_zone_count() == 0);
}

TEST_CASE("stream faults are counted and skipped, never fatal") {
  StreamWriter w;
  w.ZoneBegin(1, 5);                          // before any thread
  w.ThreadContext(1).ZoneEnd(10);             // end without begin
  w.ZoneText("orphan");                       // attribute without a zone
  w.ZoneBegin(3, 100).ZoneEnd(90);            // end before begin: clamped
  w.ZoneBegin(0xFFFFFFFF, 200);               // invalid location id: kept as unknown, counted
  w.Frame(MessageType::kFrameEnd, 4, 50);     // frame end without begin
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
  CHECK(m.open_zone_count() == 1);
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
