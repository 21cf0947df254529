// What the recording threads and the sender share (core/registry.cpp): names and
// locks defined once, the buffer's limit by policy, the ring's recycling, drops, and
// host times converted through the calibration pairs; and the flight recorder's
// concurrent paths in a program of their own (its buffer policy is set before its
// profiler starts): threads that record and recycle each other's chunks, threads that
// exit, and saves that read the chains, all at once. Under thread sanitizer (CI) the
// program is instrumented too, and a race fails it.
#include "core/registry.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../support/process.h"
#include "core/timer.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/trace_loader.h"

using gnomon::client::BufferPolicy;
using gnomon::client::CalibrationPair;
using gnomon::client::Chunk;
using gnomon::client::Config;
using gnomon::client::Registry;
using gnomon::client::ThreadState;
using gnomon::protocol::StringKind;
using gnomon::test::ChildProcess;
using gnomon::test::ReadFile;
using gnomon::test::ScratchDir;

namespace {

// Every definition the registry keeps, as a late server would get them.
std::vector<uint8_t> Kept(Registry& registry) {
  std::lock_guard lock(registry.mutex());
  std::vector<uint8_t> out;
  registry.definitions().AppendKept(out);
  return out;
}

struct LocationDefinition {
  uint32_t id, line, color;
  std::string name, function, file;
};
struct StringDefinition {
  uint32_t id;
  uint8_t kind;
  std::string text;
};

// The definitions of `bytes` of one kind, decoded.
std::vector<LocationDefinition> LocationDefs(const std::vector<uint8_t>& bytes) {
  std::vector<LocationDefinition> found;
  gnomon::protocol::WalkMessages(bytes.data(), bytes.size(), [&](const uint8_t* p, size_t) {
    if (p[0] == uint8_t(gnomon::protocol::SourceLocationDef::kType)) {
      gnomon::protocol::SourceLocationDef m{};
      std::memcpy(&m, p, sizeof(m));
      const auto tail = gnomon::protocol::ReadTail(m, p + sizeof(m));
      found.push_back({m.id, m.line, m.color, std::string(tail.name), std::string(tail.function),
                       std::string(tail.file)});
    }
    return true;
  });
  return found;
}
std::vector<StringDefinition> StringDefs(const std::vector<uint8_t>& bytes) {
  std::vector<StringDefinition> found;
  gnomon::protocol::WalkMessages(bytes.data(), bytes.size(), [&](const uint8_t* p, size_t) {
    if (p[0] == uint8_t(gnomon::protocol::StringDef::kType)) {
      gnomon::protocol::StringDef m{};
      std::memcpy(&m, p, sizeof(m));
      found.push_back({m.id, m.kind, std::string(gnomon::protocol::ReadTail(m, p + sizeof(m)).text)});
    }
    return true;
  });
  return found;
}

// A chunk `thread` starts now, as Refill() links it.
Chunk* StartChunk(Registry& registry, ThreadState* thread) {
  Chunk* chunk = registry.pool().Acquire();
  REQUIRE(chunk != nullptr);
  chunk->sequence = registry.NextChunkSequence();
  if (thread->write_chunk != nullptr) {
    thread->write_chunk->next.store(chunk, std::memory_order_release);
  } else {
    thread->head.store(chunk, std::memory_order_release);
  }
  thread->write_chunk = chunk;
  return chunk;
}

}  // namespace

TEST_CASE("a destroyed lock's id goes to the next lock of its name, once") {
  gnomon::client::Registry registry(gnomon::client::Config{});
  const uint32_t first = registry.RegisterLock("mutex");
  const uint32_t other = registry.RegisterLock("other");
  CHECK(first != other);
  registry.ReleaseLock(first);
  registry.ReleaseLock(first);                     // destroyed twice: still one id to give
  CHECK(registry.RegisterLock("other") != first);  // another name's lock never takes it
  const uint32_t again = registry.RegisterLock("mutex");
  CHECK(again == first);
  CHECK(registry.RegisterLock("mutex") != first);  // two live locks never share an id
  registry.ReleaseLock(12345);                     // never a lock: nothing happens
}

TEST_CASE("a name of a kind has one id and one definition, the same name of another kind is another") {
  Registry registry(Config{});
  const uint32_t plot = registry.RegisterString(StringKind::kPlotName, "load");
  CHECK(plot != 0);
  const size_t kept = Kept(registry).size();
  CHECK(registry.RegisterString(StringKind::kPlotName, "load") == plot);
  CHECK(Kept(registry).size() == kept);  // defined again: nothing more kept
  const uint32_t frame = registry.RegisterString(StringKind::kFrameName, "load");
  CHECK(frame != plot);
  CHECK(registry.RegisterString(StringKind::kPlotName, "other") != plot);
  // A name longer than a message carries is cut to what it carries: the same name.
  const std::string longest(gnomon::protocol::kMaxStringBytes, 'x');
  const std::string longer = longest + "yz";
  CHECK(registry.RegisterString(StringKind::kPlotName, longer.c_str()) ==
        registry.RegisterString(StringKind::kPlotName, longest.c_str()));

  int load_plots = 0;
  for (const StringDefinition& def : StringDefs(Kept(registry))) {
    if (def.id == plot) {
      CHECK(def.kind == uint8_t(StringKind::kPlotName));
      CHECK(def.text == "load");
      ++load_plots;
    }
    if (def.id == frame) CHECK(def.kind == uint8_t(StringKind::kFrameName));
    CHECK(def.text.size() <= gnomon::protocol::kMaxStringBytes);
  }
  CHECK(load_plots == 1);
}

TEST_CASE("a source location is defined once, its id written back, without a name its function names it") {
  Registry registry(Config{});
  gnomon_source_location named{"named zone", "Function", "file.cpp", 12, 0x123456, 0};
  gnomon_source_location unnamed{nullptr, "OnlyFunction", "other.cpp", 34, GNOMON_NO_COLOR, 0};
  const uint32_t a = registry.RegisterSourceLocation(&named);
  CHECK(a != 0);
  CHECK(named.id == a);
  CHECK(registry.RegisterSourceLocation(&named) == a);
  const uint32_t b = registry.RegisterSourceLocation(&unnamed);
  CHECK(b != a);
  CHECK(unnamed.id == b);
  const std::vector<LocationDefinition> defs = LocationDefs(Kept(registry));
  REQUIRE(defs.size() == 2);
  CHECK(defs[0].id == a);
  CHECK(defs[0].name == "named zone");
  CHECK(defs[0].function == "Function");
  CHECK(defs[0].file == "file.cpp");
  CHECK(defs[0].line == 12);
  CHECK(defs[0].color == 0x123456);
  CHECK(defs[1].id == b);
  CHECK(defs[1].name == "OnlyFunction");
  CHECK(defs[1].function == "OnlyFunction");
  CHECK(defs[1].color == GNOMON_NO_COLOR);
}

TEST_CASE("the buffer's limit by policy: the budget, the ceiling while a capture drains, the start kept") {
  Config config;
  config.buffer_budget_bytes = 4 << 20;
  config.buffer_ceiling_bytes = 32 << 20;
  config.keep_start_ms = 0;
  const uint64_t budget = config.buffer_budget_bytes;
  const uint64_t ceiling = config.buffer_ceiling_bytes;
  SUBCASE("after the start") {
    for (const BufferPolicy policy : {BufferPolicy::kAuto, BufferPolicy::kDrop, BufferPolicy::kGrow,
                                      BufferPolicy::kWait, BufferPolicy::kRing}) {
      CAPTURE(gnomon::client::BufferPolicyName(policy));
      config.buffer_policy = policy;
      Registry registry(config);
      const bool grows_while_drained = policy == BufferPolicy::kAuto || policy == BufferPolicy::kRing;
      const uint64_t alone = policy == BufferPolicy::kGrow ? UINT64_MAX : budget;
      const uint64_t drained = policy == BufferPolicy::kGrow ? UINT64_MAX
                               : grows_while_drained         ? ceiling
                                                             : budget;
      CHECK(registry.BufferLimit(false) == alone);
      CHECK(registry.BufferLimit(true) == drained);
      CHECK(registry.pool().limit_bytes() == alone);
      registry.SetConnected(true);  // the pool follows the capture
      CHECK(registry.pool().limit_bytes() == drained);
      registry.SetConnected(false);
      CHECK(registry.pool().limit_bytes() == alone);
    }
  }
  SUBCASE("the start of the run, until a capture comes or the time is up") {
    config.keep_start_ms = 60'000;
    for (const BufferPolicy policy : {BufferPolicy::kAuto, BufferPolicy::kWait}) {
      CAPTURE(gnomon::client::BufferPolicyName(policy));
      config.buffer_policy = policy;
      Registry registry(config);
      CHECK(registry.BufferLimit(false) == ceiling);  // the start, within the ceiling
      registry.EndStartIfDue(std::chrono::steady_clock::now());
      CHECK(registry.BufferLimit(false) == ceiling);  // not yet
      registry.EndStartIfDue(std::chrono::steady_clock::now() + std::chrono::minutes(2));
      CHECK(registry.BufferLimit(false) == budget);
      CHECK(registry.pool().limit_bytes() == budget);
    }
    config.buffer_policy = BufferPolicy::kAuto;
    Registry connected(config);
    connected.SetConnected(true);  // the start was kept for it
    connected.SetConnected(false);
    CHECK(connected.BufferLimit(false) == budget);
    config.buffer_policy = BufferPolicy::kDrop;
    const Registry dropping(config);
    CHECK(dropping.BufferLimit(false) == budget);  // drop keeps no start
  }
  SUBCASE("the ceiling is never below the budget, and by default a share of the machine's memory") {
    config.buffer_ceiling_bytes = 1 << 20;
    const Registry low(config);
    CHECK(low.config().buffer_ceiling_bytes == budget);
    config.buffer_ceiling_bytes = 0;
    const Registry machine(config);
    CHECK(machine.config().buffer_ceiling_bytes >= budget);
  }
}

TEST_CASE(
    "the ring recycles the oldest chunk a thread has moved past, or an exited thread's, not while read") {
  Config config;
  config.buffer_policy = BufferPolicy::kRing;
  Registry registry(config);
  ThreadState* a = registry.RegisterThread();
  ThreadState* b = registry.RegisterThread();
  Chunk* a1 = StartChunk(registry, a);
  Chunk* b1 = StartChunk(registry, b);
  Chunk* a2 = StartChunk(registry, a);
  // a1 is the oldest, and a has moved on from it.
  CHECK(registry.RecycleOldestChunk() == a1);
  CHECK(a->head.load() == a2);
  // b1 is older than a2, but both are still written.
  CHECK(registry.RecycleOldestChunk() == nullptr);
  // The sender reads a2 (its position kept in the thread), and a moved on to a3.
  a->read_chunk = a2;
  a->read_pos = 100;
  Chunk* a3 = StartChunk(registry, a);
  CHECK(registry.RecycleOldestChunk() == a2);
  CHECK(a->read_chunk == a3);
  CHECK(a->read_pos == 0);
  // b exits: its last chunk may go, but not while a save reads the chains or a capture
  // is connected.
  b->finished.store(true);
  registry.FreezeRing(true);
  CHECK(registry.RecycleOldestChunk() == nullptr);
  registry.FreezeRing(false);
  registry.SetConnected(true);
  CHECK(registry.RecycleOldestChunk() == nullptr);
  registry.SetConnected(false);
  CHECK(registry.RecycleOldestChunk() == b1);
  CHECK(b->head.load() == nullptr);
  CHECK(registry.RecycleOldestChunk() == nullptr);  // a3 is written
  for (Chunk* chunk : {a1, a2, a3, b1}) registry.pool().Release(chunk);
  for (ThreadState* thread : {a, b}) {
    registry.RetireThread(thread);
    delete thread;
  }
}

TEST_CASE("drops are counted per thread, and stay counted once the thread is gone") {
  Registry registry(Config{});
  registry.CountDrop(nullptr);
  registry.CountDrop(nullptr);
  ThreadState* thread = registry.RegisterThread();
  for (int i = 0; i < 3; ++i) registry.CountDrop(thread);
  CHECK(thread->dropped.load() == 3);
  CHECK(registry.dropped_events() == 5);
  registry.RetireThread(thread);
  delete thread;
  CHECK(registry.dropped_events() == 5);
  {
    std::lock_guard lock(registry.mutex());
    CHECK(registry.threads().empty());
  }
}

TEST_CASE("host times become ticks through the calibration pairs, on either host clock") {
  Registry registry(Config{});
  CHECK(registry.HostNsToTicks(true, 12345) == 12345);  // no pair yet: taken as it is
  const CalibrationPair first = gnomon::client::ReadCalibrationPair();
  registry.NoteCalibration(first);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // past the short span
  const CalibrationPair latest = gnomon::client::ReadCalibrationPair();
  registry.NoteCalibration(latest);
  REQUIRE(latest.tick > first.tick);
  const uint64_t at_latest = registry.HostNsToTicks(true, latest.monotonic_raw_ns);
  CHECK(std::llabs(int64_t(at_latest - latest.tick)) <= int64_t(latest.uncertainty_ns));
  // The same instant read on CLOCK_MONOTONIC.
  CHECK(registry.HostNsToTicks(false, latest.monotonic_ns) == at_latest);
  // Ten milliseconds later is ten milliseconds of ticks at the rate the pairs measured.
  const double ticks_per_ns =
      double(latest.tick - first.tick) / double(latest.monotonic_raw_ns - first.monotonic_raw_ns);
  const uint64_t later = registry.HostNsToTicks(true, latest.monotonic_raw_ns + 10'000'000);
  CHECK(double(later - at_latest) == doctest::Approx(1e7 * ticks_per_ns).epsilon(0.001));
  const uint64_t earlier = registry.HostNsToTicks(true, latest.monotonic_raw_ns - 10'000'000);
  CHECK(earlier < at_latest);
  CHECK(double(at_latest - earlier) == doctest::Approx(1e7 * ticks_per_ns).epsilon(0.001));
}

TEST_CASE("ring: recording, recycling, exiting threads and saves at once, and every save loads") {
  ScratchDir dir;
  ChildProcess program({GNOMON_TEST_PROGRAM, "ring-stress", dir.path()},
                       {{"GNOMON_BUFFER_POLICY", "ring"}, {"GNOMON_BUFFER_MB", "1"}, {"GNOMON_PORT", "0"}},
                       dir.File("log"));
  const int exit_code = program.Wait(std::chrono::seconds(60));
  const std::string log = ReadFile(dir.File("log"));
  REQUIRE_MESSAGE(exit_code == 0, log);
  CHECK(log.find("saved 3") != std::string::npos);
  double newest[3][6] = {};  // per save, each thread's newest plot value
  for (int i = 0; i < 3; ++i) {
    gnomon::server::TraceModel model;
    auto loaded = gnomon::server::LoadTrace(dir.File("save-" + std::to_string(i) + ".gnomon"), model);
    REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
    CHECK(loaded.value().warning == "");
    CHECK(model.zone_count > 1000);
    CHECK(model.diagnostics.ended_cleanly);
    // The ring holds 15 chunks of 64 KiB: about 22,000 zones with their plot values.
    CHECK(model.zone_count < 40000);
    for (const auto& [id, plot] : model.plots) {
      const int thread = plot.name.back() - '0';
      if (!plot.points.empty() && thread >= 0 && thread < 6) newest[i][thread] = plot.points.back().second;
    }
  }
  // The threads that record all along are in every save with newer events than in the
  // one before: none stopped for good because a save froze the ring while it needed a
  // chunk.
  for (int thread = 2; thread < 6; ++thread) {
    CAPTURE(thread);
    CHECK(newest[1][thread] > newest[0][thread]);
    CHECK(newest[2][thread] > newest[1][thread]);
  }
}
