// Memory, locks, call stacks, samples and context switches from a real program over
// real TCP: exact counts where the program's events are all known (see
// resource_program.cpp), through the report and its JSON.
#include <doctest/doctest.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "../support/json_check.h"
#include "capture_helper.h"
#include "gnomon/server/json_report.h"
#include "gnomon/server/lock_statistics.h"
#include "gnomon/server/memory_statistics.h"
#include "gnomon/server/report.h"
#include "gnomon/server/samples.h"

using gnomon::server::Format;
using gnomon::server::TraceModel;
using gnomon::test::CaptureProgram;

namespace {

const gnomon::server::MemoryPoolStatistics* FindPool(
    const std::vector<gnomon::server::MemoryPoolStatistics>& stats, const std::string& name) {
  for (const auto& s : stats) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// Allocations in the default pool of exactly `size` bytes: (made, never freed).
std::pair<uint64_t, uint64_t> AllocationsOfSize(const TraceModel& m, uint64_t size) {
  uint64_t made = 0, leaked = 0;
  const auto& pool = m.memory_pools.at(0);
  for (size_t i = 0; i < pool.allocations.size(); ++i) {
    if (pool.allocations[i].size_bytes != size) continue;
    ++made;
    if (!pool.allocations[i].is_freed()) ++leaked;
  }
  return {made, leaked};
}

// The OS thread id of the library's sender, 0 when the trace does not name it.
uint32_t SenderTid(const TraceModel& m) {
  for (const auto& t : m.threads) {
    if (t.library && t.name == "gnomon sender") return t.os_thread_id;
  }
  return 0;
}

}  // namespace

TEST_CASE("memory: allocations of known sizes with known leaks, named pools, operator new, an unknown free") {
  auto capture = CaptureProgram({GNOMON_TEST_RESOURCES, "memory"}, {}, 0);
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  // The thread named before its first event, with every operator new tracked: one
  // thread, named, holding every event; besides it only the library's sender, which
  // records nothing.
  REQUIRE(m.threads.size() == 2);
  const auto main_thread =
      std::find_if(m.threads.begin(), m.threads.end(), [](const auto& t) { return !t.library; });
  REQUIRE(main_thread != m.threads.end());
  CHECK(main_thread->name == "main");
  CHECK(SenderTid(m) != 0);
  for (const auto& t : m.threads) {
    if (t.library) CHECK(t.zones.size() == 0);
  }
  CHECK(m.diagnostics.events_without_thread == 0);
  const auto stats = gnomon::server::ComputeMemoryStatistics(m);
  const auto* meshes = FindPool(stats, "meshes");
  const auto* scratch = FindPool(stats, "scratch");
  const auto* defaults = FindPool(stats, "default");
  REQUIRE(meshes != nullptr);
  REQUIRE(scratch != nullptr);
  REQUIRE(defaults != nullptr);
  CHECK(meshes->allocations == 100);
  CHECK(meshes->frees == 50);
  CHECK(meshes->leaked_allocations == 50);
  CHECK(meshes->leaked_bytes == 50 * 4096);
  CHECK(meshes->peak_bytes == 100 * 4096);
  CHECK(scratch->allocations == 1);
  CHECK(scratch->frees == 1);
  // At the times given, not when recorded: alive 1 ms.
  for (const auto& [id, pool] : m.memory_pools) {
    if (pool.name != "after the fact") continue;
    REQUIRE(pool.allocations.size() == 1);
    const auto& block = pool.allocations[0];
    CHECK(block.size_bytes == 2222);
    REQUIRE(block.is_freed());
    const int64_t alive_ns = m.clock.TickToNs(block.free_tick) - m.clock.TickToNs(block.alloc_tick);
    CHECK(std::abs(alive_ns - 1'000'000) < 1'000);
  }
  CHECK(FindPool(stats, "after the fact") != nullptr);
  // GNOMON_ALLOC of 16 * (i + 1) bytes: every size from 16 to 16,000 once; the last 37
  // never freed. operator new: 5 of 12,345 bytes, 2 never deleted. The default pool also
  // holds the program's other operator news (the standard library's).
  uint64_t sized = 0, sized_leaked = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    const auto [made, leaked] = AllocationsOfSize(m, 16 * (i + 1));
    sized += made >= 1;
    sized_leaked += leaked >= 1 && i >= 1000 - 37;
  }
  CHECK(sized == 1000);
  CHECK(sized_leaked == 37);
  CHECK(AllocationsOfSize(m, 12345) == std::pair<uint64_t, uint64_t>{5, 2});
  CHECK(defaults->unmatched_frees >= 1);  // the pointer never allocated
  CHECK(defaults->leaked_bytes >= 37 * 16 * (1000 - 18) + 2 * 12345);

  std::ostringstream json;
  gnomon::server::WriteJsonReport(m, json);
  gnomon::test::JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(json.str(), root, error), error);
  bool found = false;
  for (const auto& pool : root.Find("memory")->array) {
    if (pool.Find("pool")->string != "meshes") continue;
    found = true;
    CHECK(pool.Find("allocations")->number == 100);
    CHECK(pool.Find("leaked_allocations")->number == 50);
    CHECK(pool.Find("peak_bytes")->number == 409600);
  }
  CHECK(found);
}

TEST_CASE("locks: a lock made to contend a known number of times, and every kind of lock") {
  auto capture = CaptureProgram({GNOMON_TEST_RESOURCES, "locks"}, {}, 0);
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  int failed_tries = -1;
  const size_t at = capture.log.find("contended ");
  REQUIRE(at != std::string::npos);
  failed_tries = std::atoi(capture.log.c_str() + at + 10);
  CHECK(failed_tries >= 10);  // the second thread asked while the first held it, most rounds
  const TraceModel& m = capture.model();
  std::map<std::string, gnomon::server::LockStatistics> by_name;
  for (const auto& s : gnomon::server::ComputeLockStatistics(m)) by_name[s.name] = s;
  REQUIRE(by_name.size() == 7);
  const auto& contended = by_name.at("contended");
  CHECK(contended.acquisitions == 40);
  CHECK(contended.contended == uint64_t(failed_tries));
  CHECK(contended.threads == 2);
  CHECK(contended.wait_total_ns > 0);
  CHECK(by_name.at("quiet").acquisitions == 100);
  CHECK(by_name.at("quiet").contended == 0);
  CHECK(by_name.at("table").acquisitions == 11);
  CHECK(by_name.at("table").shared == 10);
  CHECK(by_name.at("nested").acquisitions == 10);
  CHECK(by_name.at("pair a").acquisitions >= 3);
  CHECK(by_name.at("pair b").acquisitions >= 3);
  CHECK(by_name.at("c lock").acquisitions == 4);
  CHECK(by_name.at("c lock").contended == 1);
  CHECK(m.diagnostics.lock_releases_without_hold == 0);
  for (const auto& [id, lock] : m.locks) {
    for (size_t i = 0; i < lock.holds.size(); ++i) CHECK(lock.holds[i].is_released());
  }
}

namespace {

// The functions of a stack, symbolized, innermost first.
std::vector<std::string> StackFunctions(const TraceModel& m, gnomon::server::Symbolizer& symbolizer,
                                        uint32_t id) {
  std::vector<std::string> functions;
  const auto frames = m.callstacks.Frames(id);
  for (uint64_t frame : frames) functions.push_back(symbolizer.Resolve(frame, true).function);
  return functions;
}

// Whether `wanted` appear in `functions` in this order (others may come between).
bool InOrder(const std::vector<std::string>& functions, const std::vector<std::string>& wanted) {
  size_t next = 0;
  for (const std::string& f : functions) {
    if (next < wanted.size() && f.find(wanted[next]) != std::string::npos) ++next;
  }
  return next == wanted.size();
}

std::string Join(const std::vector<std::string>& functions) {
  std::string text;
  for (const std::string& f : functions) text += f + " <- ";
  return text;
}

// Whether this process may open a perf event on itself, as the program will.
bool KernelAllowsPerfEvents() {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.exclude_kernel = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, 0, -1, 0);
  if (fd < 0) return false;
  close(int(fd));
  return true;
}

}  // namespace

TEST_CASE("call stacks: every zone and allocation three known functions deep, and a zone's own depth") {
  auto capture = CaptureProgram({GNOMON_TEST_RESOURCES, "stacks"}, {{"GNOMON_CALLSTACK_DEPTH", "12"}}, 0);
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  gnomon::server::Symbolizer symbolizer;
  symbolizer.Update(m.modules);
  REQUIRE(!m.modules.empty());
  CHECK(m.diagnostics.callstacks_without_event == 0);
  const gnomon::server::ThreadTimeline* main_thread = nullptr;
  for (const auto& t : m.threads) {
    if (t.name == "main") main_thread = &t;
  }
  REQUIRE(main_thread != nullptr);
  int inner = 0, own = 0;
  for (size_t i = 0; i < main_thread->zones.size(); ++i) {
    const std::string& name = m.ZoneName(*main_thread, i);
    const auto stack = main_thread->callstacks.find(i);
    REQUIRE(stack);
    const auto functions = StackFunctions(m, symbolizer, *stack);
    if (name == "stack inner") {
      ++inner;
      CHECK_MESSAGE(InOrder(functions, {"StackInner", "StackMiddle", "StackOuter", "main"}), Join(functions));
    } else if (name == "own depth") {
      ++own;
      CHECK(functions.size() == 3);
      CHECK_MESSAGE(InOrder(functions, {"StackOwnDepth"}), Join(functions));
    }
  }
  CHECK(inner == 10);
  CHECK(own == 1);
  // The 777-byte blocks: made in StackInner, each with its stack; stored once.
  int blocks = 0;
  std::set<uint32_t> stacks;
  const auto& pool = m.memory_pools.at(0);
  for (size_t i = 0; i < pool.allocations.size(); ++i) {
    if (pool.allocations[i].size_bytes != 777) continue;
    ++blocks;
    stacks.insert(pool.allocations[i].callstack);
    CHECK_MESSAGE(
        InOrder(StackFunctions(m, symbolizer, pool.allocations[i].callstack), {"StackInner", "StackMiddle"}),
        Join(StackFunctions(m, symbolizer, pool.allocations[i].callstack)));
  }
  CHECK(blocks == 10);
  CHECK(stacks.size() == 1);
  // The symbols reach the source: file and line of the innermost frame.
  const auto& frame = symbolizer.Resolve(m.callstacks.Frames(*stacks.begin())[0], true);
  CHECK_MESSAGE(frame.file.ends_with("resource_program.cpp"), frame.function, " at ", frame.file, ":",
                frame.line);
  CHECK(frame.line > 0);
}

TEST_CASE("samples find the function that burns CPU, context switches find the thread that sleeps") {
  auto capture = CaptureProgram({GNOMON_TEST_RESOURCES, "samples"},
                                {{"GNOMON_SAMPLING_HZ", "1000"}, {"GNOMON_CONTEXT_SWITCHES", "1"}}, 0);
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  if (!KernelAllowsPerfEvents()) {
    // The kernel refuses here: the program said so once, in the trace, and ran on.
    MESSAGE("perf events are refused on this machine: checking the program said so");
    bool said = false;
    for (const auto& message : m.messages) said |= message.text.find("perf_event_open") != std::string::npos;
    CHECK(said);
    CHECK(m.samples.size() == 0);
    return;
  }
  // 300 ms of CPU at 1 kHz: about 300 samples in the burning function.
  gnomon::server::Symbolizer symbolizer;
  const auto summary = gnomon::server::SummarizeSamples(m, symbolizer, {});
  REQUIRE(!summary.functions.empty());
  CHECK_MESSAGE(summary.functions[0].function.find("BurnCpuInKnownFunction") != std::string::npos,
                summary.functions[0].function);
  CHECK(summary.functions[0].self_count >= 100);
  CHECK(summary.functions[0].module == "gnomon-test-resources");
  // The sampler's and the sender's threads are the library's, marked so; the program's
  // are not.
  size_t library = 0;
  for (const auto& t : m.threads) {
    CAPTURE(t.name);
    CHECK(t.library == (t.name == "gnomon sampler" || t.name == "gnomon sender"));
    library += t.library;
  }
  CHECK(library == 2);
  // The sender, which wakes every millisecond, is named in the context switches, never
  // a bare thread id.
  std::ostringstream switches;
  gnomon::server::PrintContextSwitches(m, switches, 100);
  CHECK_MESSAGE(switches.str().find("gnomon sender (tid " + std::to_string(SenderTid(m)) + "), Gnomon's") !=
                    std::string::npos,
                switches.str());
  // The sleeper: 30 sleeps, each a switch out.
  uint32_t sleeper = 0;
  for (const auto& t : m.threads) {
    if (t.name == "sleeper") sleeper = t.os_thread_id;
  }
  REQUIRE(sleeper != 0);
  const auto running = gnomon::server::ComputeThreadRunning(m);
  REQUIRE(running.contains(sleeper));
  CHECK(running.at(sleeper).switches_out >= 30);
  CHECK(running.at(sleeper).spans.size() >= 30);

  std::ostringstream json;
  gnomon::server::WriteJsonReport(m, json);
  gnomon::test::JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(json.str(), root, error), error);
  CHECK(root.Find("samples")->Find("count")->number == double(m.samples.size()));
  CHECK(root.Find("samples")
            ->Find("top")
            ->array.at(0)
            .Find("function")
            ->string.find("BurnCpuInKnownFunction") != std::string::npos);
  CHECK(root.Find("context_switches")->Find("count")->number >= 30);
}

TEST_CASE(
    "hot lines: the line with three quarters of the CPU comes first, with its share, in the report and the "
    "source") {
  if (!KernelAllowsPerfEvents()) {
    MESSAGE("perf events are refused on this machine: no samples to find lines in");
    return;
  }
  auto capture = CaptureProgram({GNOMON_TEST_RESOURCES, "hot-lines"}, {{"GNOMON_SAMPLING_HZ", "1000"}}, 0);
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  // The program said which lines it burns on.
  int hot = 0, warm = 0;
  for (const auto& message : m.messages) {
    if (message.text.starts_with("hot line "))
      std::sscanf(message.text.c_str(), "hot line %d, warm line %d", &hot, &warm);
  }
  REQUIRE(hot > 0);
  gnomon::server::Symbolizer symbolizer;
  const auto summary = gnomon::server::SummarizeLines(m, symbolizer, {});
  REQUIRE(summary.lines.size() >= 2);
  const auto& first = summary.lines[0];
  CHECK_MESSAGE(first.file.ends_with("resource_program.cpp"), first.file, ":", first.line);
  CHECK(first.line == uint32_t(hot));
  CHECK(first.function.find("BurnOnKnownLines") != std::string::npos);
  uint64_t warm_count = 0;
  for (const auto& l : summary.lines) {
    if (l.file == first.file && l.line == uint32_t(warm)) warm_count = l.self_count;
  }
  // A second of CPU at 1 kHz: about 1,000 samples, 3 in 4 on the hot line (binomial
  // spread under 1.5 %; 5 % allowed).
  const double share = double(first.self_count) / double(first.self_count + warm_count);
  CHECK(first.self_count + warm_count >= 300);
  CHECK_MESSAGE(std::fabs(share - 0.75) <= 0.05, "hot ", first.self_count, ", warm ", warm_count);

  // The report's table and the source view say the same.
  std::ostringstream table;
  gnomon::server::PrintHotLines(m, table, 5);
  const std::string where = "resource_program.cpp:" + std::to_string(hot);
  CHECK_MESSAGE(table.str().find("\n" + where) != std::string::npos, table.str());
  std::ostringstream source;
  REQUIRE(gnomon::server::PrintSourceLines(
      m, source, {.file = "resource_program.cpp", .line = uint32_t(hot), .context = 2}));
  const std::string text = source.str();
  const std::string marked = Format(">%6d %8llu", hot, static_cast<unsigned long long>(first.self_count));
  CHECK_MESSAGE(text.find(marked) != std::string::npos, text);
  CHECK(text.find("for (int i = 0; i < 3'000'000; ++i)") != std::string::npos);  // read from the file
  // Mapped elsewhere, a file that is not there says so, and still lists its counted lines.
  std::ostringstream moved;
  REQUIRE(gnomon::server::PrintSourceLines(m, moved,
                                           {.file = "resource_program.cpp",
                                            .line = uint32_t(hot),
                                            .context = 2,
                                            .source_map = {{"/", "/nowhere/"}}}));
  CHECK(moved.str().find("cannot read it") != std::string::npos);
  CHECK(moved.str().find(marked) != std::string::npos);
  // A file no sample is in: false, and said.
  std::ostringstream none;
  CHECK_FALSE(gnomon::server::PrintSourceLines(m, none, {.file = "nothing.cpp", .line = 1}));
  CHECK(none.str().find("no sample is in a file named nothing.cpp") != std::string::npos);
}

TEST_CASE("a sample in the vDSO keeps its callers: a loop reading the clock is found under its function") {
  if (!KernelAllowsPerfEvents()) {
    MESSAGE("perf events are refused on this machine: no samples to unwind");
    return;
  }
  auto capture = CaptureProgram({GNOMON_TEST_RESOURCES, "clock-loop"}, {{"GNOMON_SAMPLING_HZ", "1000"}}, 0);
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  uint32_t main_thread = 0;
  for (const auto& t : m.threads) {
    if (t.name == "main") main_thread = t.os_thread_id;
  }
  REQUIRE(main_thread != 0);
  gnomon::server::Symbolizer symbolizer;
  symbolizer.Update(m.modules);
  // Neither the vDSO, nor the C library's wrapper, nor the loop's function keeps a frame
  // pointer: the kernel's walk alone loses the loop's function (and main) under them.
  size_t in_clock = 0, under_loop = 0, under_main = 0, loop_twice = 0;
  std::string example;
  for (size_t s = 0; s < m.samples.size(); ++s) {
    const auto& sample = m.samples[s];
    if (sample.os_thread_id != main_thread) continue;
    const auto frames = m.callstacks.Frames(sample.callstack);
    if (frames.empty()) continue;
    const auto& leaf = symbolizer.Resolve(frames[0], false);
    if (leaf.function.find("clock_gettime") == std::string::npos &&
        leaf.function.find("vdso") == std::string::npos)
      continue;
    ++in_clock;
    size_t loops = 0;
    bool main_found = false;
    std::string stack;
    for (size_t i = 1; i < frames.size(); ++i) {
      const auto& frame = symbolizer.Resolve(frames[i], true);
      loops += frame.function.find("ReadClockInLoop") != std::string::npos;
      main_found |= frame.function == "main";
      stack += " < " + frame.function;
    }
    under_loop += loops > 0;
    loop_twice += loops > 1;
    under_main += main_found;
    if (loops == 0 && example.empty()) example = leaf.function + stack;
  }
  // Half a second of CPU at 1 kHz, most of it in the clock.
  CHECK(in_clock >= 100);
  CHECK_MESSAGE(double(under_loop) >= 0.95 * double(in_clock), under_loop, " of ", in_clock, "; ", example);
  CHECK(double(under_main) >= 0.95 * double(in_clock));
  CHECK(loop_twice == 0);  // the kernel's walk and the unwinder's, spliced without repeats
}

TEST_CASE("memory trees: bytes, counts and what is still alive, exact for each known call path") {
  auto capture =
      CaptureProgram({GNOMON_TEST_RESOURCES, "allocation-paths"}, {{"GNOMON_CALLSTACK_DEPTH", "8"}}, 0);
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  const gnomon::server::MemoryPool* pool = gnomon::server::FindPool(m, "paths");
  REQUIRE(pool != nullptr);
  gnomon::server::Symbolizer symbolizer;
  const auto tree = gnomon::server::BuildAllocationTree(m, symbolizer, pool->id);
  REQUIRE(tree.without_stack == 0);
  auto node_of = [&](const std::string& function) -> const gnomon::server::AllocationTree::Node* {
    for (const auto& node : tree.nodes) {
      if (tree.functions[node.function].find(function) != std::string::npos) return &node;
    }
    return nullptr;
  };
  const auto& root = tree.nodes[0];
  CHECK(root.count == 15);
  CHECK(root.bytes == 25'000);
  CHECK(root.alive_count == 13);
  CHECK(root.alive_bytes == 19'000);
  const auto* left = node_of("PathLeft");
  const auto* right = node_of("PathRight");
  REQUIRE(left != nullptr);
  REQUIRE(right != nullptr);
  CHECK(left->count == 10);
  CHECK(left->bytes == 10'000);
  CHECK(left->alive_bytes == 10'000);
  CHECK(right->count == 5);
  CHECK(right->bytes == 15'000);
  CHECK(right->alive_count == 3);
  CHECK(right->alive_bytes == 9'000);
  // Each path's allocating function is below its own caller, with the same numbers.
  REQUIRE(right->children.size() == 1);
  CHECK(tree.functions[tree.nodes[right->children[0]].function].find("AllocateOnPath") != std::string::npos);
  CHECK(tree.nodes[right->children[0]].bytes == 15'000);

  // Bottom-up: the allocating function first, its callers below it.
  const auto up = gnomon::server::BuildAllocationTree(m, symbolizer, pool->id, true);
  REQUIRE(up.nodes[0].children.size() == 1);
  const auto& allocating = up.nodes[up.nodes[0].children[0]];
  CHECK(up.functions[allocating.function].find("AllocateOnPath") != std::string::npos);
  CHECK(allocating.bytes == 25'000);
  REQUIRE(allocating.children.size() == 2);
  CHECK(up.functions[up.nodes[allocating.children[0]].function].find("PathRight") != std::string::npos);

  // As the report prints it, and as JSON.
  std::ostringstream text;
  REQUIRE(gnomon::server::PrintMemoryTree(m, text, "paths", false));
  CHECK(text.str().find("15 allocations, 0 without a call stack") != std::string::npos);
  std::ostringstream json;
  gnomon::server::WriteMemoryTreeJson(m, *pool, false, json);
  gnomon::test::JsonValue root_json;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(json.str(), root_json, error), error);
  CHECK(root_json.Find("nodes")->array.size() == tree.nodes.size());
  CHECK(root_json.Find("nodes")->array[0].Find("alive_bytes")->number == 19'000);
  std::ostringstream none;
  CHECK_FALSE(gnomon::server::PrintMemoryTree(m, none, "nothing", false));
  CHECK(none.str().find("no memory pool nothing") != std::string::npos);
}

TEST_CASE(
    "when threads ran: never more at once on a core than one, each one's time as the kernel counted it") {
  if (!KernelAllowsPerfEvents()) {
    MESSAGE("perf events are refused on this machine: no context switches");
    return;
  }
  auto capture =
      CaptureProgram({GNOMON_TEST_RESOURCES, "busy-threads"}, {{"GNOMON_CONTEXT_SWITCHES", "1"}}, 0);
  REQUIRE_MESSAGE(capture.exit_code == 0, capture.log);
  const TraceModel& m = capture.model();
  const auto running = gnomon::server::ComputeThreadRunning(m);
  // Per core (as the viewer's CPU lanes draw them): the program's runs never overlap.
  std::map<uint32_t, std::vector<gnomon::server::RunSpan>> by_cpu;
  for (const auto& [tid, thread] : running) {
    for (const auto& span : thread.spans) by_cpu[span.cpu].push_back(span);
  }
  CHECK(by_cpu.size() <= size_t(std::thread::hardware_concurrency()));
  for (auto& [cpu, spans] : by_cpu) {
    std::sort(spans.begin(), spans.end(),
              [](const auto& a, const auto& b) { return a.begin_tick < b.begin_tick; });
    for (size_t i = 1; i < spans.size(); ++i) CHECK(spans[i].begin_tick >= spans[i - 1].end_tick);
  }
  // Each busy thread's running time within 5 % of the CPU time the kernel counted. The
  // thread reads its CPU time just before its message: its runs count up to that message,
  // not through the thread's exit (slow under the sanitizers: tens of milliseconds).
  int threads = 0;
  for (const auto& message : m.messages) {
    long long cpu_ns = 0;
    unsigned tid = 0;
    if (std::sscanf(message.text.c_str(), "cpu ns %lld tid %u", &cpu_ns, &tid) != 2) continue;
    ++threads;
    REQUIRE(running.contains(tid));
    double ran_ns = 0;
    for (const auto& span : running.at(tid).spans) {
      const uint64_t end = std::min(span.end_tick, message.tick);
      if (end > span.begin_tick) ran_ns += double(m.DurationNs(span.begin_tick, end));
    }
    CHECK_MESSAGE(std::fabs(ran_ns - double(cpu_ns)) <= 0.05 * double(cpu_ns), "tid ", tid, ": ran ", ran_ns,
                  " ns, counted ", cpu_ns, " ns");
  }
  CHECK(threads == 3);
}
