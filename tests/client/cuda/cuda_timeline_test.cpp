// The CUDA collector's logic without a GPU: a fake CUPTI clock and hand-made activity
// records go through the real client to a real worker over loopback.
#include "cuda/cuda_timeline.h"

#include <doctest/doctest.h>
#include <time.h>

#include <atomic>
#include <thread>

#include "../../support/self_capture.h"
#include "gnomon/gnomon.hpp"
#include "gnomon/protocol/messages.h"

using gnomon::cuda::ActivityKind;
using gnomon::cuda::ActivityRecord;
using gnomon::cuda::BracketRead;
using gnomon::cuda::Calibration;

namespace {

int64_t RawNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// CUPTI's clock, faked: CLOCK_MONOTONIC_RAW plus a fixed offset, read between two
// readings of the CPU clock like the real one.
constexpr uint64_t kGpuOffsetNs = 5'000'000'000'000ull;
BracketRead FakeCuptiRead() {
  BracketRead read;
  read.cpu_before_ns = RawNs();
  read.gpu_ns = uint64_t(RawNs()) + kGpuOffsetNs;
  read.cpu_after_ns = RawNs();
  return read;
}

std::string FakeDeviceName(uint32_t device) { return "Fake GPU " + std::to_string(device); }

}  // namespace

TEST_CASE("the narrowest bracket wins, its middle is the CPU time and half its width the uncertainty") {
  const BracketRead reads[] = {{1000, 5, 1400}, {2000, 7, 2101}, {3000, 9, 3050}, {4000, 11, 3990}};
  Calibration best;
  REQUIRE(gnomon::cuda::PickBestBracket(reads, best));
  CHECK(best.gpu_ns == 9);
  CHECK(best.cpu_ns == 3025);
  CHECK(best.uncertainty_ns == 25);  // the backwards bracket {4000, 3990} is not a candidate

  const BracketRead odd[] = {{100, 1, 103}};
  REQUIRE(gnomon::cuda::PickBestBracket(odd, best));
  CHECK(best.uncertainty_ns == 2);  // rounded up
  CHECK_FALSE(gnomon::cuda::PickBestBracket(std::span<const BracketRead>{}, best));
  const BracketRead backwards[] = {{10, 1, 5}};
  CHECK_FALSE(gnomon::cuda::PickBestBracket(backwards, best));
}

TEST_CASE("the buffer pool hands out at most its budget and reuses what comes back") {
  gnomon::cuda::BufferPool pool(1000, 2);
  CHECK(pool.buffer_bytes() % 8 == 0);
  CHECK(pool.buffer_bytes() >= 1024);
  uint8_t* a = pool.Acquire();
  uint8_t* b = pool.Acquire();
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(a) % 8 == 0);
  CHECK(pool.Acquire() == nullptr);  // past the budget
  CHECK(pool.outstanding() == 2);
  pool.Release(a);
  CHECK(pool.Acquire() == a);
  pool.Release(a);
  pool.Release(b);
  CHECK(pool.outstanding() == 0);
}

TEST_CASE(
    "CUDA launches become GPU zones on per-stream lanes, linked to their thread and timed by their records") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  gnomon::cuda::Timeline timeline(FakeCuptiRead, FakeDeviceName, 8);

  // Two streams on device 0, launched from a thread of their own; copies on stream 2.
  int64_t launch_ns = 0, returned_ns = 0;
  std::thread launcher([&] {
    gnomon::SetThreadName("cuda launcher");
    launch_ns = RawNs();
    timeline.OnLaunchBegin(100, 0, 1, "SpinFor(unsigned long long)", "cudaLaunchKernel_v7000");
    timeline.OnLaunchEnd(100);
    timeline.OnLaunchBegin(101, 0, 2, "SpinFor(unsigned long long)", "cudaLaunchKernel_v7000");
    timeline.OnLaunchEnd(101);
    timeline.OnLaunchBegin(102, 0, 2, "memcpy DtoD", "cudaMemcpyAsync_v3020");
    timeline.OnLaunchEnd(102);
    returned_ns = RawNs();
  });
  launcher.join();
  const uint64_t gpu_launch = uint64_t(launch_ns) + kGpuOffsetNs;
  // The records come later, on another thread, out of order; one of them before the
  // call that launched it has returned would be handled too (see the next case).
  std::thread cupti([&] {
    timeline.OnActivity({ActivityKind::kMemcpy, 102, 0, 2, gpu_launch + 300'000, gpu_launch + 350'000});
    timeline.OnActivity({ActivityKind::kKernel, 100, 0, 1, gpu_launch + 10'000, gpu_launch + 1'010'000});
    timeline.OnActivity({ActivityKind::kKernel, 101, 0, 2, gpu_launch + 20'000, gpu_launch + 520'000});
    timeline.OnActivity(
        {ActivityKind::kKernel, 999, 0, 2, gpu_launch + 20'000, gpu_launch + 520'000});  // never launched
  });
  cupti.join();
  timeline.Calibrate();

  const auto stats = timeline.stats();
  CHECK(stats.launches == 3);
  CHECK(stats.records == 4);
  CHECK(stats.records_linked == 3);
  CHECK(stats.records_unlinked == 1);
  CHECK(stats.lanes == 2);
  CHECK(stats.calibrations == 1);
  CHECK(stats.last_uncertainty_ns < 100'000);
  const uint32_t lane1 = timeline.Lane(0, 1);
  const uint32_t lane2 = timeline.Lane(0, 2);
  CHECK(lane1 != lane2);

  REQUIRE(gnomon::test::WaitForModel(worker, [&](const gnomon::server::TraceModel& m) {
    auto a = m.gpu_contexts.find(lane1);
    auto b = m.gpu_contexts.find(lane2);
    return a != m.gpu_contexts.end() && b != m.gpu_contexts.end() && a->second.zones.size() == 1 &&
           b->second.zones.size() == 2 && a->second.zones[0].is_timed() && b->second.zones[1].is_timed() &&
           b->second.zones[0].is_timed() && a->second.clock.sample_count() >= 2 &&
           // The launch inside the CPU clock's calibrated span (a pair a second), so that
           // its ticks read back without a young fit's extrapolation.
           !m.clock.pairs().empty() && m.clock.pairs().back().monotonic_raw_ns > returned_ns;
  }));
  worker.WithModel([&](const gnomon::server::TraceModel& m) {
    const auto& a = m.gpu_contexts.at(lane1);
    const auto& b = m.gpu_contexts.at(lane2);
    CHECK(a.api == uint8_t(gnomon::protocol::GpuApi::kCuda));
    CHECK(a.label() == "CUDA 0 Fake GPU 0 · stream 1");
    CHECK(b.label() == "CUDA 0 Fake GPU 0 · stream 2");
    CHECK(a.device_name == "Fake GPU 0");
    CHECK(m.Location(a.zones[0].source_location).name == "SpinFor(unsigned long long)");
    CHECK(m.Location(a.zones[0].source_location).function == "cudaLaunchKernel_v7000");
    CHECK(m.Location(b.zones[1].source_location).name == "memcpy DtoD");
    // Linked to the launching thread, at the time of the call.
    const auto* thread = gnomon::test::FindThread(m, "cuda launcher");
    REQUIRE(thread != nullptr);
    CHECK(a.zones[0].thread_id == thread->id);
    // (CPU ticks read back through the worker's CPU clock fit: microseconds of slack.)
    CHECK(m.clock.TickToNs(a.zones[0].cpu_begin_tick) >= launch_ns - 100'000);
    CHECK(m.clock.TickToNs(a.zones[0].cpu_end_tick) <= returned_ns + 100'000);
    CHECK(a.zones[0].cpu_end_tick >= a.zones[0].cpu_begin_tick);
    // Placed through the clock model: the fake clock is the CPU's plus an offset, so the
    // kernel lands 10 us after the launch and lasts 1 ms, within the calibration's error.
    const auto kernel = m.MapGpuZone(a, a.zones[0]);
    const int64_t slack = int64_t(a.clock.current_uncertainty_ns()) + 2000;
    CHECK(std::abs(kernel.begin_ns - (launch_ns + 10'000)) <= slack);
    CHECK(std::abs((kernel.end_ns - kernel.begin_ns) - 1'000'000) <= 2000);
    const auto copy = m.MapGpuZone(b, b.zones[1]);
    CHECK(std::abs(copy.begin_ns - (launch_ns + 300'000)) <= slack);
  });
}

TEST_CASE("a record that arrives before its call returns, a record without times, lost records") {
  gnomon::server::Worker& worker = gnomon::test::SelfCapture();
  gnomon::cuda::Timeline timeline(FakeCuptiRead, FakeDeviceName, 4);
  const uint64_t now = uint64_t(RawNs()) + kGpuOffsetNs;
  timeline.OnLaunchBegin(7, 3, 9, "memcpy HtoD", "cudaMemcpy_v3020");
  timeline.OnActivity({ActivityKind::kMemcpy, 7, 3, 9, now + 1000, now + 5000});  // before the exit
  timeline.OnLaunchEnd(7);
  timeline.OnLaunchEnd(7);  // a second exit for the same id is ignored
  timeline.OnLaunchBegin(8, 3, 9, "memset", "cudaMemset_v3020");
  timeline.OnLaunchEnd(8);
  timeline.OnActivity({ActivityKind::kMemset, 8, 3, 9, now + 9000, now + 8000});  // ends before it starts
  timeline.OnActivity({ActivityKind::kMemset, 8, 3, 9, now + 9000, now + 9500});  // a duplicate
  timeline.CountDropped(5);
  timeline.CountRefusedBuffer();

  const auto stats = timeline.stats();
  CHECK(stats.records_linked == 1);
  CHECK(stats.records_invalid == 1);
  CHECK(stats.records_unlinked == 1);
  CHECK(stats.records_dropped == 5);
  CHECK(stats.buffers_refused == 1);
  const uint32_t lane = timeline.Lane(3, 9);
  REQUIRE(gnomon::test::WaitForModel(worker, [&](const gnomon::server::TraceModel& m) {
    auto it = m.gpu_contexts.find(lane);
    return it != m.gpu_contexts.end() && it->second.zones.size() == 2 && it->second.zones[0].is_timed();
  }));
  worker.WithModel([&](const gnomon::server::TraceModel& m) {
    const auto& context = m.gpu_contexts.at(lane);
    CHECK(context.zones[0].gpu_end - context.zones[0].gpu_begin == 4000);
    CHECK_FALSE(context.zones[1].is_timed());  // never invented
    CHECK(context.zones[1].cpu_end_tick != gnomon::server::kOpenZone);
  });
}
