// The C API (core/c_api.cpp), and through it most of the C++ API: the client library
// inside this very process, captured by a real worker over loopback.
#include <doctest/doctest.h>

#include <gnomon/gnomon.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../../support/self_capture.h"
#include "gnomon/server/worker.h"

using gnomon::server::TraceModel;
using gnomon::server::Worker;

void RecordWithProfilingCompiledOut(int zones);  // disabled_code.cpp

using gnomon::test::FindThread;
using gnomon::test::WaitForModel;

namespace {
Worker& ConnectedWorker() { return gnomon::test::SelfCapture(); }
}  // namespace

TEST_CASE("runtime attributes, messages, plots and frames reach the worker") {
  Worker& worker = ConnectedWorker();
  std::thread([] {
    gnomon::SetThreadName("attributes");
    {
      GNOMON_ZONE_C("Attributed", 0x00FF00);
      gnomon::ZoneName("renamed at run time");
      gnomon::ZoneText("some text");
      gnomon::ZoneValue(42);
      gnomon::ZoneColor(0xABCDEF);
    }
    gnomon::Message("hello from the test", gnomon::Severity::kError);
    GNOMON_PLOT("test plot", 2.5);
    GNOMON_FRAME_MARK_NAMED("test frames");
    const uint32_t series = gnomon::FrameName("test spans");
    gnomon::FrameBegin(series);
    gnomon::FrameEnd(series);
  }).join();
  // Wait for the last events too (the span's end): the stream may arrive in pieces.
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    const auto* t = FindThread(m, "attributes");
    bool span_ended = false;
    for (const auto& [id, series] : m.frames)
      span_ended |= series.name == "test spans" && !series.spans.empty();
    return t != nullptr && !t->zones.empty() && !m.messages.empty() && !m.plots.empty() && span_ended;
  }));
  worker.WithModel([](const TraceModel& m) {
    const auto* t = FindThread(m, "attributes");
    REQUIRE(t->zones.size() == 1);
    const auto& a = t->attributes.at(0);
    CHECK(m.ZoneName(*t, 0) == "renamed at run time");
    CHECK(a.text == "some text");
    CHECK(a.value == 42);
    CHECK(a.color == 0xABCDEF);
    CHECK(m.Location(t->zones[0].source_location).color == 0x00FF00);
    bool found = false;
    for (const auto& message : m.messages)
      found |= message.text == "hello from the test" && message.severity == 4;
    CHECK(found);
    bool plot = false;
    for (const auto& [id, series] : m.plots) plot |= series.name == "test plot" && series.points.size() == 1;
    CHECK(plot);
    bool marks = false, spans = false;
    for (const auto& [id, series] : m.frames) {
      marks |= series.name == "test frames" && series.marks.size() == 1;
      spans |= series.name == "test spans" && series.spans.size() == 1;
    }
    CHECK(marks);
    CHECK(spans);
  });
}

TEST_CASE("code compiled with GNOMON_DISABLE records nothing") {
  Worker& worker = ConnectedWorker();
  std::thread([] {
    gnomon::SetThreadName("disabled");
    RecordWithProfilingCompiledOut(1000);
    GNOMON_ZONE("Marker");  // proves the thread's events did flow
  }).join();
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    const auto* t = FindThread(m, "disabled");
    return t != nullptr && !t->zones.empty();
  }));
  worker.WithModel([](const TraceModel& m) {
    const auto* t = FindThread(m, "disabled");
    REQUIRE(t->zones.size() == 1);
    CHECK(m.Location(t->zones[0].source_location).name == "Marker");
    for (const auto& [id, pool] : m.memory_pools) CHECK(pool.name != "disabled pool");
    for (const auto& [id, lock] : m.locks) CHECK(lock.name.find("disabled") == std::string::npos);
  });
}

TEST_CASE("once the profiler runs it takes no configuration, a policy that is not one never") {
  ConnectedWorker();
  CHECK(gnomon_set_buffer_policy(static_cast<gnomon_buffer_policy>(5)) == -1);
  CHECK(gnomon_set_listen_address(nullptr, 1) == -1);
  CHECK(gnomon_set_output_file(nullptr) == -1);
  CHECK(gnomon_set_output_file("") == -1);
  CHECK(gnomon_set_listen_address("127.0.0.1", 1) == -1);
  CHECK(gnomon_set_buffer_budget(1 << 20) == -1);
  CHECK(gnomon_set_buffer_policy(GNOMON_BUFFER_RING) == -1);
  CHECK(gnomon_set_on_demand(1) == -1);
  CHECK(gnomon_set_output_file("late.gnomon") == -1);
  CHECK(gnomon_listen_port() != 0);
  CHECK(gnomon_is_connected() == 1);
  CHECK(gnomon_wait_for_server(0) == 1);
  CHECK(gnomon_startup() == 0);  // started already: the same profiler, listening
}

TEST_CASE("C zones, attributes and messages take the lengths given and cut what a message cannot carry") {
  Worker& worker = ConnectedWorker();
  const std::string long_text(GNOMON_MAX_INLINE_STRING + 100, 't');
  uint32_t plot = 0, frames = 0;
  std::thread([&] {
    static gnomon_source_location location{"C zone", "CZones", __FILE__, __LINE__, GNOMON_NO_COLOR, 0};
    gnomon_set_thread_name("c api");
    gnomon_zone_begin(&location);
    gnomon_zone_name("renamed and more", 7);
    gnomon_zone_text(long_text.data(), long_text.size());
    gnomon_zone_color(0x123456);
    gnomon_zone_value(99);
    gnomon_zone_end();
    gnomon_message("warning: and the rest", 7, GNOMON_WARNING);
    plot = gnomon_plot_id("c plot");
    CHECK(gnomon_plot_id("c plot") == plot);  // one id a name
    gnomon_plot(plot, 1.0);
    gnomon_plot(plot, 2.0);
    frames = gnomon_frame_name("c frames");
    CHECK(gnomon_frame_name("c frames") == frames);
    CHECK(gnomon_frame_name("c other frames") != frames);
    gnomon_frame_mark(frames);
    gnomon_frame_mark(frames);
  }).join();
  CHECK(plot != 0);
  CHECK(frames != 0);
  REQUIRE(WaitForModel(worker, [&](const TraceModel& m) {
    const auto* t = FindThread(m, "c api");
    const auto series = m.frames.find(frames);
    return t != nullptr && !t->zones.empty() && m.plots.contains(plot) &&
           m.plots.at(plot).points.size() == 2 && series != m.frames.end() &&
           series->second.marks.size() == 2;
  }));
  worker.WithModel([&](const TraceModel& m) {
    const auto* t = FindThread(m, "c api");
    REQUIRE(t->zones.size() == 1);
    CHECK(m.Location(t->zones[0].source_location).name == "C zone");
    CHECK(m.ZoneName(*t, 0) == "renamed");
    const auto& attributes = t->attributes.at(0);
    CHECK(attributes.text == long_text.substr(0, GNOMON_MAX_INLINE_STRING));
    CHECK(attributes.color == 0x123456);
    CHECK(attributes.value == 99);
    int warnings = 0;
    for (const auto& message : m.messages) {
      if (message.thread_id != t->id) continue;
      CHECK(message.text == "warning");
      CHECK(message.severity == GNOMON_WARNING);
      ++warnings;
    }
    CHECK(warnings == 1);
    const auto& points = m.plots.at(plot).points;
    CHECK(m.plots.at(plot).name == "c plot");
    CHECK(points[0].second == 1.0);
    CHECK(points[1].second == 2.0);
    CHECK(points[0].first <= points[1].first);
    CHECK(m.frames.at(frames).name == "c frames");
  });
}
