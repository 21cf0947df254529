// Call stacks in the model: each distinct one stored once, attached to the zone or the
// allocation just before it, and what does not fit (too deep, no event) counted.
#include "gnomon/server/callstacks.h"

#include <doctest/doctest.h>

#include "../../support/build_model.h"

using gnomon::protocol::StringKind;
using gnomon::server::CallstackTable;
using gnomon::server::kMaxCallstackDepth;
using gnomon::server::TraceModel;
using gnomon::server::ZoneCallstacks;
using gnomon::test::StreamWriter;

TEST_CASE("the table stores each distinct stack once, empty stacks have no id") {
  CallstackTable table;
  const std::vector<uint64_t> a{0x10, 0x20, 0x30}, b{0x10, 0x20}, c{0x10, 0x20, 0x31};
  const uint32_t ia = table.Intern(a);
  CHECK(ia != 0);
  CHECK(table.Intern(b) != ia);
  CHECK(table.Intern(c) != ia);
  CHECK(table.Intern(a) == ia);
  CHECK(table.size() == 3);
  CHECK(table.Intern({}) == 0);
  const auto frames = table.Frames(ia);
  CHECK(std::vector<uint64_t>(frames.begin(), frames.end()) == a);
  CHECK(table.Frames(0).empty());
  CHECK(table.Frames(99).empty());
}

TEST_CASE("a stack follows its zone begin or its allocation, on the thread that made it") {
  StreamWriter w;
  w.SourceLocation(1, "outer", "f", "a.cpp", 1).SourceLocation(2, "inner", "g", "a.cpp", 2);
  w.ThreadContext(1)
      .ZoneBegin(1, 10)
      .Callstack({0x100, 0x200})
      .ZoneBegin(2, 11)
      .Callstack({0x101, 0x100, 0x200});
  w.Alloc(0, 0xA000, 64, 12).Callstack({0x102, 0x100, 0x200});
  w.ThreadContext(2).ZoneBegin(1, 13).Callstack({0x100, 0x200});  // the same stack, another thread
  w.ThreadContext(1).ZoneEnd(14).ZoneEnd(15);
  w.ThreadContext(2).ZoneEnd(16);
  const TraceModel m = gnomon::test::BuildWholeModel(w);
  REQUIRE(m.threads.size() == 2);
  const auto& t1 = m.threads[0].callstacks;
  REQUIRE(t1.size() == 2);
  CHECK(m.callstacks.Frames(t1.at(0)).size() == 2);
  CHECK(m.callstacks.Frames(t1.at(1))[0] == 0x101);
  CHECK(m.threads[1].callstacks.at(0) == t1.at(0));  // stored once
  const auto& allocation = m.memory_pools.at(0).allocations[0];
  CHECK(m.callstacks.Frames(allocation.callstack)[0] == 0x102);
  CHECK(m.callstacks.size() == 3);
  CHECK(m.diagnostics.callstacks_without_event == 0);
}

TEST_CASE("a thread's zone stacks are found by zone, among hundreds of thousands, and after shrinking") {
  ZoneCallstacks stacks;
  CHECK(stacks.empty());
  CHECK_FALSE(stacks.find(0));
  CHECK_THROWS_AS(stacks.at(0), std::out_of_range);
  // Every third zone of 300,000 has a stack; its id says which zone.
  for (uint64_t zone = 1; zone < 300'000; zone += 3) {
    REQUIRE(stacks.Accepts(zone));
    stacks.Add(zone, uint32_t(zone * 7));
  }
  CHECK(stacks.size() == 100'000);
  CHECK_FALSE(stacks.Accepts(299'998));  // a stack goes to the latest zone only
  stacks.Add(4, 1);                      // one that does not come after the others is not kept
  CHECK(stacks.size() == 100'000);
  CHECK(stacks.capacity_bytes() >= 100'000 * 16);
  CHECK(stacks.capacity_bytes() < 100'000 * 16 * 2);
  auto check_all = [&](uint64_t zones) {
    for (uint64_t zone = 0; zone < zones; ++zone) {
      const auto id = stacks.find(zone);
      if (zone % 3 == 1 && zone < 300'000) {
        REQUIRE(id);
        CHECK(*id == uint32_t(zone * 7));
      } else {
        REQUIRE_FALSE(id);
      }
    }
  };
  check_all(300'010);
  stacks.ShrinkToFit();  // a stream ended; a later one may still add
  check_all(300'010);
  stacks.Add(300'001, 5);
  CHECK(stacks.at(300'001) == 5);
  CHECK(stacks.at(299'998) == 299'998 * 7);
  ZoneCallstacks other;
  for (uint64_t zone = 1; zone < 300'000; zone += 3) other.Add(zone, uint32_t(zone * 7));
  CHECK_FALSE(other == stacks);
  other.Add(300'001, 5);
  CHECK(other == stacks);
}

TEST_CASE("stacks deeper than the limit are cut and counted, stacks after nothing are counted") {
  StreamWriter w;
  std::vector<uint64_t> deep(kMaxCallstackDepth + 1000);
  for (size_t i = 0; i < deep.size(); ++i) deep[i] = 0x1000 + i;
  w.SourceLocation(1, "z", "f", "a.cpp", 1).ThreadContext(1);
  w.Callstack({0x1});  // before any event
  w.ZoneBegin(1, 10).Callstack(deep);
  w.Callstack({0x2});                                           // a second stack for the same zone
  w.ZoneEnd(11).Callstack({0x3});                               // after an end
  w.Alloc(0, 0xB000, 8, 12).ZoneBegin(1, 13).Callstack({0x4});  // a zone came between: it is the zone's
  w.ZoneEnd(14);
  const TraceModel m = gnomon::test::BuildWholeModel(w);
  CHECK(m.diagnostics.callstacks_cut == 1);
  CHECK(m.diagnostics.callstacks_without_event == 3);
  const auto& stacks = m.threads[0].callstacks;
  REQUIRE(stacks.size() == 2);
  CHECK(m.callstacks.Frames(stacks.at(0)).size() == kMaxCallstackDepth);
  CHECK(m.callstacks.Frames(stacks.at(1))[0] == 0x4);
  CHECK(m.memory_pools.at(0).allocations[0].callstack == 0);
}

TEST_CASE("modules are kept once per start, samples and switches whatever their thread") {
  StreamWriter w;
  w.Module(0x400000, 0x401000, 0x402000, "/bin/program", "abcd");
  w.Module(0x400000, 0x401000, 0x402000, "/bin/program", "abcd");  // announced again
  w.Module(0x7f0000, 0x7f1000, 0x7f2000, "/lib/libc.so.6");
  w.Sample(77, 100, {0x401010, 0x401020}).Sample(78, 101, {});
  w.Switch(77, gnomon::protocol::ContextSwitchKind::kOut, 1, 102);
  const TraceModel m = gnomon::test::BuildWholeModel(w);
  REQUIRE(m.modules.size() == 2);
  CHECK(m.modules[0].path == "/bin/program");
  CHECK(m.modules[0].build_id == "abcd");
  CHECK(m.modules[1].load_bias == 0x7f0000);
  REQUIRE(m.samples.size() == 2);
  CHECK(m.samples[0].os_thread_id == 77);
  CHECK(m.callstacks.Frames(m.samples[0].callstack).size() == 2);
  CHECK(m.samples[1].callstack == 0);
  REQUIRE(m.context_switches.size() == 1);
  CHECK(m.context_switches[0].cpu == 1);
  CHECK(m.last_tick == 102);
}
