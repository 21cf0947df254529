// Statistical samples and context switches from the kernel's perf events
// (core/sampler.cpp): a sampler of the process's profiler, on a thread that burns CPU
// and sleeps, captured by a worker connected to this process; or, where the kernel
// refuses (a container, kernel.perf_event_paranoid), the reason in the trace.
#include "core/sampler.h"

#include <doctest/doctest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "../../support/self_capture.h"
#include "core/profiler.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/worker.h"

using gnomon::server::TraceModel;

namespace {
std::atomic<uint64_t> g_sink{0};
}  // namespace

TEST_CASE("a thread that burns CPU is sampled and its switches seen, or the program says why it cannot be") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  gnomon::client::Sampler sampler(gnomon::client::Profiler::Get().registry());
  const bool started = sampler.Start(1000, true);
  std::atomic<uint32_t> tid{0};
  std::thread([&tid] {
    tid = static_cast<uint32_t>(syscall(SYS_gettid));
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    volatile uint64_t bound = 200000;  // read each time: the loop is never folded away
    uint64_t sum = 0;
    while (std::chrono::steady_clock::now() < until) {
      for (uint64_t i = 0; i < bound; ++i) sum += i * i;
      g_sink.store(sum, std::memory_order_relaxed);
      std::this_thread::sleep_for(std::chrono::microseconds(500));  // and it waits, switched out
    }
  }).join();
  sampler.Stop();
  if (!started) {
    MESSAGE("the kernel refuses perf events here: checking that the trace says so");
    CHECK(gnomon::test::WaitForModel(worker, [](const TraceModel& m) {
      for (const auto& message : m.messages) {
        if (message.text.find("unavailable: perf_event_open: ") != std::string::npos &&
            message.severity == GNOMON_WARNING)
          return true;
      }
      return false;
    }));
    return;
  }
  const uint32_t burner = tid.load();
  REQUIRE(gnomon::test::WaitForModel(worker, [burner](const TraceModel& m) {
    size_t samples = 0, switches_out = 0;
    for (size_t i = 0; i < m.samples.size(); ++i) samples += m.samples[i].os_thread_id == burner;
    for (size_t i = 0; i < m.context_switches.size(); ++i) {
      const auto& s = m.context_switches[i];
      switches_out += s.os_thread_id == burner && gnomon::protocol::IsSwitchOut(s.kind);
    }
    return samples >= 10 && switches_out >= 10;
  }));
  worker.WithModel([burner](const TraceModel& m) {
    for (size_t i = 0; i < m.samples.size(); ++i) {
      if (m.samples[i].os_thread_id != burner) continue;
      CHECK(m.callstacks.Frames(m.samples[i].callstack).size() >= 1);  // where it was, at least
      break;
    }
  });
}
