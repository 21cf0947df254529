// gnomon-cut's library: a range and threads of a trace as a trace of its own, checked
// against what the whole trace holds, zone by zone.
#include "gnomon/server/trace_cut.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "../../support/build_model.h"
#include "../../support/process.h"
#include "../../support/trace_files.h"
#include "gnomon/server/trace_loader.h"

namespace {

using gnomon::server::CutTrace;
using gnomon::server::ExportFilter;
using gnomon::server::TraceModel;
using gnomon::test::ScratchDir;
using gnomon::test::StreamWriter;

constexpr uint64_t kSecond = 1'000'000'000;  // the programs' timers count ns
constexpr uint64_t kStart = 5 * kSecond;     // the trace's first event

// A zone as both files hold it: thread, begin, end, location.
using ZoneKey = std::tuple<uint32_t, uint64_t, uint64_t, uint32_t>;

// Ten minutes of two threads of nested zones (one zone spans the whole run on the first
// thread), every zone of depth below 2 with a text naming it, the deepest with no
// attribute at all (the blocks' leaf records); frame marks and messages every second.
struct TenMinutes {
  StreamWriter stream;
  std::vector<ZoneKey> zones;
  std::vector<std::pair<ZoneKey, std::string>> texts;
  std::vector<uint64_t> frames, messages;

  TenMinutes() {
    std::mt19937_64 rng(11);
    stream.AppInfo("ten-minutes");
    for (uint32_t id = 1; id <= 4; ++id)
      stream.SourceLocation(id, "level" + std::to_string(id), "f", "a.cpp", id);
    stream.ThreadInfo(1, 101, "main").ThreadInfo(2, 202, "worker");
    const uint64_t end = kStart + 600 * kSecond;
    for (uint32_t thread = 1; thread <= 2; ++thread) {
      stream.ThreadContext(thread);
      uint32_t depth = 0;
      if (thread == 1) {  // the whole run
        Zone(thread, 0, kStart, end, rng, /*children=*/false);
        depth = 1;
      }
      for (uint64_t at = kStart + kSecond; at + 2 * kSecond < end;) {
        const uint64_t length = kSecond + rng() % (40 * kSecond);
        const uint64_t stop = std::min(at + length, end - kSecond);
        Zone(thread, depth, at, stop, rng, true);
        at = stop + rng() % (3 * kSecond);
      }
      if (thread == 1) stream.ZoneEnd(end);
    }
    stream.ThreadContext(1);
    for (uint64_t at = kStart; at <= end; at += kSecond) {
      stream.Frame(gnomon::protocol::MessageType::kFrameMark, 0, at);
      frames.push_back(at);
      if ((at / kSecond) % 2 == 0) {
        stream.Message(at, 2, "tick");
        messages.push_back(at);
      }
    }
    stream.End(end);
  }

  // A zone of [begin, stop) with children, written as it is recorded (the outer zone of
  // the first thread is ended by the caller, after everything else on that thread).
  void Zone(uint32_t thread, uint32_t depth, uint64_t begin, uint64_t stop, std::mt19937_64& rng,
            bool children) {
    stream.ZoneBegin(depth + 1, begin);
    const ZoneKey key{thread, begin, stop, depth + 1};
    zones.push_back(key);
    if (depth < 2) {
      const std::string text = "zone " + std::to_string(zones.size());
      stream.ZoneText(text);
      texts.emplace_back(key, text);
    }
    if (!children) return;
    if (depth < 3 && stop - begin > 4) {
      const uint64_t count = rng() % 4;
      uint64_t at = begin + 1;
      for (uint64_t i = 0; i < count && at + 2 < stop; ++i) {
        const uint64_t child_stop = at + 1 + rng() % ((stop - at) / 2 + 1);
        Zone(thread, depth + 1, at, std::min(child_stop, stop - 1), rng, true);
        at = std::min(child_stop, stop - 1) + 1;
      }
    }
    stream.ZoneEnd(stop);
  }
};

std::multiset<ZoneKey> ZonesOf(const TraceModel& model) {
  std::multiset<ZoneKey> zones;
  for (const auto& thread : model.threads) {
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const auto zone = thread.zones[i];
      zones.emplace(thread.id, zone.begin_tick, zone.end_tick,
                    uint32_t(model.source_locations[zone.source_location].line));
    }
  }
  return zones;
}

std::string TextOf(const TraceModel& model, const ZoneKey& key) {
  for (const auto& thread : model.threads) {
    if (thread.id != std::get<0>(key)) continue;
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const auto zone = thread.zones[i];
      if (zone.begin_tick == std::get<1>(key) && zone.end_tick == std::get<2>(key)) {
        const auto attributes = thread.attributes.find(i);
        return attributes ? attributes->text : "";
      }
    }
  }
  return "(no such zone)";
}

TraceModel Load(const std::string& path) {
  TraceModel model;
  auto loaded = gnomon::server::LoadTrace(path, model);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  CHECK_MESSAGE(loaded.value().warning.empty(), loaded.value().warning);
  return model;
}

}  // namespace

TEST_CASE("a cut of the middle minute of a ten-minute trace holds exactly the zones that overlap it") {
  ScratchDir dir;
  const TenMinutes trace;
  const std::string path = gnomon::test::WriteTrace(dir, trace.stream, 64 << 10);
  ExportFilter keep;
  REQUIRE(keep.ParseRange("270s:330s") == "");
  const std::string out = dir.File("minute.gnomon");
  std::ostringstream log;
  auto cut = CutTrace(path, out, keep, gnomon::tracefile::Overwrite::kNo, log);
  REQUIRE_MESSAGE(cut.ok(), cut.status().message());

  const uint64_t from = kStart + 270 * kSecond, to = kStart + 330 * kSecond;
  std::multiset<ZoneKey> expected;
  for (const ZoneKey& zone : trace.zones) {
    if (std::get<1>(zone) <= to && std::get<2>(zone) >= from) expected.insert(zone);
  }
  REQUIRE(expected.size() > 50);
  REQUIRE(expected.size() < trace.zones.size() / 4);
  const TraceModel model = Load(out);
  CHECK(ZonesOf(model) == expected);
  CHECK(cut.value().zones_kept == expected.size());
  CHECK(cut.value().zones_read == trace.zones.size());
  CHECK(model.open_zone_count == 0);
  CHECK(model.diagnostics.zone_ends_without_begin == 0);
  // Zones begun before the range keep their texts, as those inside it do.
  size_t before = 0;
  for (const auto& named : trace.texts) {
    const ZoneKey& key = named.first;
    if (!expected.contains(key)) continue;
    CHECK(TextOf(model, key) == named.second);
    before += std::get<1>(key) < from;
  }
  CHECK(before >= 2);  // the whole run's zone and the one open at 270 s
  // Frames and messages in the range, the end of stream at the last event kept.
  const auto in_range = [&](uint64_t tick) { return tick >= from && tick <= to; };
  REQUIRE(model.frames.contains(0));
  // (and the mark before the range: the frame it begins in)
  CHECK(model.frames.at(0).marks.size() ==
        1 + size_t(std::count_if(trace.frames.begin(), trace.frames.end(), in_range)));
  CHECK(model.frames.at(0).marks.front() == from - kSecond);
  CHECK(model.messages.size() ==
        size_t(std::count_if(trace.messages.begin(), trace.messages.end(), in_range)));
  CHECK(model.diagnostics.ended_cleanly);
  CHECK(model.last_tick == kStart + 600 * kSecond);  // the whole run's zone ends there
  // Both threads, with their names.
  REQUIRE(model.threads.size() == 2);
  CHECK(model.threads[0].name == "main");
  CHECK(model.threads[1].name == "worker");
}

TEST_CASE("a cut keeps GPU zones, lock holds and allocations that overlap it, with their times and frees") {
  ScratchDir dir;
  const auto s = [](uint64_t seconds) { return kStart + seconds * kSecond; };
  StreamWriter w;
  w.AppInfo("gpu").SourceLocation(1, "draw", "f", "a.cpp", 1).ThreadInfo(1, 101, "main");
  w.GpuContext(1, "gpu");  // GPU ticks are the CPU's ns
  using gnomon::protocol::CounterTarget;
  w.CounterSet(1, 1, 1, "draws")
      .Counter(1, 0, gnomon::protocol::CounterType::kEvent, gnomon::protocol::CounterDataType::kUint64, "n");
  w.ThreadContext(1).Message(s(0), 2, "start");  // the trace's first event: times count from it
  // Begun before the range, its begin's time back while it is open, ended inside: kept.
  // (its counters too, which come before its times)
  w.GpuZoneBegin(1, 1, 1, s(50)).CounterResult(1, 1, CounterTarget::kGpuZone, 1, {42}).GpuTime(1, 1, s(50));
  w.GpuZoneEnd(1, 2, s(150)).GpuTime(1, 2, s(150));
  // Before the range, its times after: left out with them. Then its queries reused inside.
  w.GpuZoneBegin(1, 3, 1, s(60)).GpuZoneEnd(1, 4, s(70)).CounterResult(1, 1, CounterTarget::kGpuZone, 3, {7});
  w.GpuTime(1, 3, s(60)).GpuTime(1, 4, s(70));
  w.GpuZoneBegin(1, 3, 1, s(120)).GpuZoneEnd(1, 4, s(130)).GpuTime(1, 3, s(120)).GpuTime(1, 4, s(130));
  // After the range: left out with its times.
  w.GpuZoneBegin(1, 5, 1, s(250)).GpuZoneEnd(1, 6, s(260)).GpuTime(1, 5, s(250)).GpuTime(1, 6, s(260));
  w.Alloc(0, 0x1000, 64, s(90)).Free(0, 0x1000, s(150));        // made before: left out, and its free
  w.Alloc(0, 0x2000, 32, s(150));                               // made inside: kept...
  w.ThreadContext(2).Free(0, 0x2000, s(250)).ThreadContext(1);  // ...freed after, on another thread
  w.String(7, gnomon::protocol::StringKind::kLockName, "queue");
  w.LockObtain(7, s(90)).LockRelease(7, s(110));                      // obtained before: left out
  w.LockObtain(7, s(120)).LockRelease(7, s(250));                     // obtained inside: kept whole
  w.LockWait(8, s(95)).LockObtain(8, s(105)).LockRelease(8, s(115));  // waited for before: kept, wait and all
  // Main frames 0 to 3 (marks 60, 90, 120, 150, 250 s); the cut holds 90 to 150 s, its
  // frames 0 and 1 the trace's 1 and 2. Counters of frames 0, 2 and 4: only 2's is kept.
  for (const uint64_t at : {60, 90, 120, 150, 250})
    w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, s(at));
  for (const uint32_t frame : {0u, 2u, 4u}) w.CounterResult(1, 1, CounterTarget::kFrame, frame, {frame});
  w.ZoneBegin(1, s(150)).ZoneEnd(s(160));
  w.Frame(gnomon::protocol::MessageType::kFrameBegin, 3, s(190));  // a frame that ends after the range
  w.Frame(gnomon::protocol::MessageType::kFrameEnd, 3, s(210));
  w.ZoneBegin(1, s(80));  // never ended: open through the range to the program's end
  w.End(s(300));
  const std::string path = gnomon::test::WriteTrace(dir, w, 1 << 10);

  ExportFilter keep;
  REQUIRE(keep.ParseRange("100s:200s") == "");
  std::ostringstream log;
  auto cut = CutTrace(path, dir.File("cut.gnomon"), keep, gnomon::tracefile::Overwrite::kNo, log);
  REQUIRE_MESSAGE(cut.ok(), cut.status().message());
  const TraceModel model = Load(dir.File("cut.gnomon"));
  REQUIRE(model.gpu_contexts.contains(1));
  const auto& gpu = model.gpu_contexts.at(1);
  REQUIRE(gpu.zones.size() == 2);
  CHECK(gpu.zones[0].cpu_begin_tick == s(50));
  CHECK(gpu.zones[0].gpu_begin == s(50));
  CHECK(gpu.zones[0].gpu_end == s(150));
  CHECK(gpu.zones[1].gpu_begin == s(120));
  CHECK(gpu.zones[1].gpu_end == s(130));
  CHECK(gpu.unmatched_gpu_times == 0);
  const auto& pool = model.memory_pools.at(0);
  REQUIRE(pool.allocations.size() == 1);
  CHECK(pool.allocations[0].address == 0x2000);
  CHECK(pool.allocations[0].free_tick == s(250));
  CHECK(pool.unmatched_frees == 0);
  const auto& lock = model.locks.at(7);
  REQUIRE(lock.holds.size() == 1);
  CHECK(lock.holds[0].obtain_tick == s(120));
  CHECK(lock.holds[0].release_tick == s(250));
  REQUIRE(gpu.counter_samples.size() == 2);
  CHECK(gpu.counter_samples[0].target == uint8_t(CounterTarget::kGpuZone));
  CHECK(gpu.counter_samples[0].target_index == 0);
  CHECK(gpu.counter_values[gpu.counter_samples[0].first_value] == 42);
  CHECK(gpu.counter_samples[1].target == uint8_t(CounterTarget::kFrame));
  CHECK(gpu.counter_samples[1].target_index == 1);
  CHECK(gpu.counter_values[gpu.counter_samples[1].first_value] == 2);
  CHECK(model.diagnostics.counter_results_dropped == 0);
  REQUIRE(model.frames.at(0).marks.size() == 3);
  CHECK(model.frames.at(0).marks[0] == s(90));
  const auto& waited = model.locks.at(8);
  REQUIRE(waited.holds.size() == 1);
  CHECK(waited.holds[0].wait_tick == s(95));
  CHECK(waited.holds[0].obtain_tick == s(105));
  CHECK(model.zone_count == 2);
  CHECK(model.open_zone_count == 1);
  CHECK(model.last_tick == s(300));  // the open zone lasts to the program's end
  CHECK(model.diagnostics.ended_cleanly);
  REQUIRE(model.frames.contains(3));
  REQUIRE(model.frames.at(3).spans.size() == 1);
  CHECK(model.frames.at(3).spans[0] == std::pair{s(190), s(210)});
}

TEST_CASE(
    "a cut keeps only the threads asked for, and refuses names it does not know and ranges past the trace") {
  ScratchDir dir;
  const auto s = [](uint64_t seconds) { return kStart + seconds * kSecond; };
  StreamWriter w;
  w.AppInfo("threads").SourceLocation(1, "work", "f", "a.cpp", 1);
  w.ThreadInfo(1, 101, "main").ThreadInfo(2, 202, "worker");
  w.ThreadContext(1).ZoneBegin(1, s(0)).ZoneEnd(s(10)).Message(s(5), 2, "main says");
  w.ThreadContext(2).ZoneBegin(1, s(2)).ZoneEnd(s(8)).Message(s(6), 2, "worker says");
  w.Sample(101, s(5), {0x10}).Sample(202, s(5), {0x20}).Sample(202, s(50), {0x30});
  w.Switch(202, gnomon::protocol::ContextSwitchKind::kIn, 0, s(4));
  w.End(s(60));
  const std::string path = gnomon::test::WriteTrace(dir, w, 1 << 10);

  ExportFilter keep;
  REQUIRE(keep.ParseRange("1s:20s") == "");
  keep.ParseThreads("worker");
  std::ostringstream log;
  auto cut = CutTrace(path, dir.File("worker.gnomon"), keep, gnomon::tracefile::Overwrite::kNo, log);
  REQUIRE_MESSAGE(cut.ok(), cut.status().message());
  const TraceModel model = Load(dir.File("worker.gnomon"));
  REQUIRE(model.threads.size() == 1);
  CHECK(model.threads[0].name == "worker");
  CHECK(model.threads[0].zones.size() == 1);
  REQUIRE(model.messages.size() == 1);
  REQUIRE(model.samples.size() == 1);
  CHECK(model.samples[0].os_thread_id == 202);
  CHECK(model.context_switches.size() == 1);

  // Refused, each saying why, and nothing written.
  ExportFilter unknown;
  unknown.ParseThreads("render");
  auto refused = CutTrace(path, dir.File("none.gnomon"), unknown, gnomon::tracefile::Overwrite::kNo, log);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("its threads: main (101), worker (202)") != std::string::npos);
  ExportFilter late;
  REQUIRE(late.ParseRange("2min:3min") == "");
  refused = CutTrace(path, dir.File("none.gnomon"), late, gnomon::tracefile::Overwrite::kNo, log);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("the range holds no event") != std::string::npos);
  CHECK(refused.status().message().find("it spans 0 ns to 60") != std::string::npos);
  refused = CutTrace(path, path, ExportFilter{}, gnomon::tracefile::Overwrite::kYes, log);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("is the input") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.File("none.gnomon")));
}
