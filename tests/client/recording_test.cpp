// The client library inside this very process, captured by a real worker over loopback.
#include <doctest/doctest.h>

#include <gnomon/gnomon.hpp>

#include <thread>
#include <vector>

#include "gnomon/server/worker.h"
#include "../support/self_capture.h"

using gnomon::server::TraceModel;
using gnomon::server::Worker;

void RecordWithProfilingCompiledOut(int zones);  // disabled_code.cpp

using gnomon::test::FindThread;
using gnomon::test::WaitForModel;

namespace {
Worker& ConnectedWorker() { return gnomon::test::SelfCapture(); }
}  // namespace

TEST_CASE("zones from several threads arrive complete, nested and named") {
  Worker& worker = ConnectedWorker();
  constexpr int kThreads = 3;
  constexpr int kIterations = 20000;  // several chunks per thread
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      const std::string name = "recorder " + std::to_string(t);
      gnomon::SetThreadName(name.c_str());
      for (int i = 0; i < kIterations; ++i) {
        GNOMON_ZONE("Outer");
        GNOMON_ZONE("Inner");
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    for (int t = 0; t < kThreads; ++t) {
      const auto* thread = FindThread(m, "recorder " + std::to_string(t));
      if (thread == nullptr || thread->zones.size() < 2 * kIterations) return false;
    }
    return true;
  }));
  worker.WithModel([](const TraceModel& m) {
    for (int t = 0; t < kThreads; ++t) {
      const auto* thread = FindThread(m, "recorder " + std::to_string(t));
      REQUIRE(thread != nullptr);
      CHECK(thread->zones.size() == 2 * kIterations);
      CHECK(thread->open_zones.empty());
      uint64_t previous = 0;
      for (size_t i = 0; i < thread->zones.size(); ++i) {
        const auto& zone = thread->zones[i];
        CHECK(zone.depth == i % 2);
        CHECK(zone.begin_tick >= previous);
        CHECK(zone.end_tick >= zone.begin_tick);
        previous = zone.begin_tick;
      }
      CHECK(m.Location(thread->zones[0].source_location).name == "Outer");
      CHECK(m.Location(thread->zones[1].source_location).name == "Inner");
    }
    CHECK(m.diagnostics.client_dropped_events == 0);
  });
}

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
  REQUIRE(WaitForModel(worker, [](const TraceModel& m) {
    const auto* t = FindThread(m, "attributes");
    return t != nullptr && !t->zones.empty() && !m.messages.empty() && !m.plots.empty();
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
    for (const auto& message : m.messages) found |= message.text == "hello from the test" && message.severity == 4;
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
  });
}
