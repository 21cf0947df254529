// Call stacks of the recording thread (core/callstack.cpp): the frames a capture finds
// are the callers', innermost first, as deep as asked and no deeper; the modules the
// program has loaded are announced once each; and a zone begun with its call stack
// reaches a worker connected to this process with those frames.
#include "core/callstack.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <gnomon/gnomon.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../support/self_capture.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/worker.h"

using gnomon::client::CaptureCallstack;
using gnomon::server::TraceModel;

namespace {

// Four functions that call each other, never inlined, never tail calls (each does
// something after its call), called through pointers so that none is cloned away
// from the address the test knows.
std::atomic<int> g_calls{0};

[[gnu::noinline]] size_t Inner(uint64_t* frames, size_t depth, size_t skip, bool zone) {
  size_t n = 0;
  if (zone) {
    static gnomon_source_location location{"zone with its stack", "Inner", __FILE__, __LINE__,
                                           GNOMON_NO_COLOR,       0};
    gnomon_zone_begin_callstack(&location, uint32_t(depth));
    gnomon_zone_end();
  } else {
    n = CaptureCallstack(frames, depth, skip);
  }
  g_calls.fetch_add(1);
  return n;
}
[[gnu::noinline]] size_t Middle(uint64_t* frames, size_t depth, size_t skip, bool zone) {
  static auto* volatile inner = &Inner;
  const size_t n = inner(frames, depth, skip, zone);
  g_calls.fetch_add(1);
  return n;
}
[[gnu::noinline]] size_t Outer(uint64_t* frames, size_t depth, size_t skip, bool zone) {
  static auto* volatile middle = &Middle;
  const size_t n = middle(frames, depth, skip, zone);
  g_calls.fetch_add(1);
  return n;
}
[[gnu::noinline]] size_t Top(uint64_t* frames, size_t depth, size_t skip, bool zone) {
  static auto* volatile outer = &Outer;
  const size_t n = outer(frames, depth, skip, zone);
  g_calls.fetch_add(1);
  return n;
}

// Always from the same call site, so that two captures share their frames.
[[gnu::noinline]] size_t CaptureFromTop(uint64_t* frames, size_t depth, size_t skip = 0) {
  static auto* volatile top = &Top;
  const size_t n = top(frames, depth, skip, false);
  g_calls.fetch_add(1);
  return n;
}

// Which of the four functions `address` lies in: the nearest start at or below it,
// within a few KiB (they are small), or "?".
std::string FunctionOf(uint64_t address) {
  const std::pair<const char*, uint64_t> starts[] = {
      {"Inner", reinterpret_cast<uintptr_t>(&Inner)},
      {"Middle", reinterpret_cast<uintptr_t>(&Middle)},
      {"Outer", reinterpret_cast<uintptr_t>(&Outer)},
      {"Top", reinterpret_cast<uintptr_t>(&Top)},
  };
  const char* best = "?";
  uint64_t best_start = 0;
  for (const auto& [name, start] : starts) {
    if (start <= address && start >= best_start) {
      best = name;
      best_start = start;
    }
  }
  return best_start != 0 && address - best_start < 4096 ? best : "?";
}

}  // namespace

TEST_CASE("a capture's frames are its callers', innermost first, from the caller of the capturing function") {
  uint64_t frames[16] = {};
  const size_t n = CaptureFromTop(frames, 16);
  REQUIRE(n >= 3);
  // Inner captures: its own frame is left out; the first frame is its caller's.
  CHECK(FunctionOf(frames[0]) == "Middle");
  CHECK(FunctionOf(frames[1]) == "Outer");
  CHECK(FunctionOf(frames[2]) == "Top");
  for (size_t i = 0; i < n; ++i) CHECK(frames[i] != 0);
}

TEST_CASE("a capture is as deep as asked and no deeper, and skips the frames asked") {
  uint64_t deep[16] = {};
  const size_t n = CaptureFromTop(deep, 16);
  REQUIRE(n >= 4);
  uint64_t two[16] = {};
  CHECK(CaptureFromTop(two, 2) == 2);
  CHECK(two[0] == deep[0]);  // the same call sites, the same return addresses
  CHECK(two[1] == deep[1]);
  CHECK(two[2] == 0);  // nothing written past the depth
  uint64_t skipped[16] = {};
  const size_t m = CaptureFromTop(skipped, 3, 1);
  REQUIRE(m == 3);
  CHECK(skipped[0] == deep[1]);
  CHECK(skipped[1] == deep[2]);
  CHECK(skipped[2] == deep[3]);
  CHECK(CaptureFromTop(deep, 0) == 0);
  // Asked for more than the stack holds: what there is.
  uint64_t all[gnomon::detail::kMaxCallstackDepth] = {};
  const size_t whole = CaptureFromTop(all, gnomon::detail::kMaxCallstackDepth);
  CHECK(whole <= gnomon::detail::kMaxCallstackDepth);
  CHECK(whole >= n);
}

TEST_CASE("the loaded modules are announced once each: the program's own holds its code") {
  gnomon::client::ModuleMap modules;
  std::vector<uint8_t> first;
  modules.AppendNew(first);
  char self[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  REQUIRE(length > 0);
  const auto code = reinterpret_cast<uintptr_t>(&Top);
  bool found_self = false;
  size_t defined = 0;
  gnomon::protocol::WalkMessages(first.data(), first.size(), [&](const uint8_t* p, size_t) {
    REQUIRE(p[0] == uint8_t(gnomon::protocol::ModuleDef::kType));
    gnomon::protocol::ModuleDef m{};
    std::memcpy(&m, p, sizeof(m));
    const auto tail = gnomon::protocol::ReadTail(m, p + sizeof(m));
    const uint64_t start = m.start, end = m.end;
    CHECK(start < end);
    for (const char c : tail.build_id) CHECK(std::string("0123456789abcdef").find(c) != std::string::npos);
    if (tail.path == std::string_view(self, size_t(length))) {
      found_self = true;
      CHECK(start <= code);
      CHECK(code < end);
    }
    ++defined;
    return true;
  });
  CHECK(defined >= 2);  // the program and at least the C library
  CHECK(found_self);
  std::vector<uint8_t> again;
  modules.AppendNew(again);
  CHECK(again.empty());  // nothing new loaded since
}

TEST_CASE("a zone begun with its call stack reaches the worker with its callers' frames") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  std::thread([] {
    gnomon::SetThreadName("zone stacks");
    static auto* volatile top = &Top;
    top(nullptr, 6, 0, true);
  }).join();
  REQUIRE(gnomon::test::WaitForModel(worker, [](const TraceModel& m) {
    const auto* t = gnomon::test::FindThread(m, "zone stacks");
    return t != nullptr && t->zones.size() == 1 && t->callstacks.contains(0);
  }));
  worker.WithModel([](const TraceModel& m) {
    const auto* t = gnomon::test::FindThread(m, "zone stacks");
    const auto frames = m.callstacks.Frames(t->callstacks.at(0));
    REQUIRE(frames.size() == 6);
    // From the C API's entry on: Inner called it, Middle called Inner, Outer Middle.
    size_t inner = frames.size();
    for (size_t i = 0; i < frames.size(); ++i) {
      if (FunctionOf(frames[i]) == "Inner") {
        inner = i;
        break;
      }
    }
    REQUIRE(inner + 2 < frames.size());
    CHECK(inner <= 1);
    CHECK(FunctionOf(frames[inner + 1]) == "Middle");
    CHECK(FunctionOf(frames[inner + 2]) == "Outer");
  });
}
