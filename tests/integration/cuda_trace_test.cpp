// The CUDA checks (cuda_timeline_check.h) on traces of gnomon-cuda-demo recorded on an
// NVIDIA H200 (tests/data/cuda-h200.gnomon, and cuda-h200-memory.gnomon with the
// collector's memory pools; see docs/benchmarks.md): they pass as
// recorded, and fail when a kernel is moved or stretched.
#include <doctest/doctest.h>

#include "cuda_timeline_check.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/trace_loader.h"

namespace {

gnomon::server::TraceModel LoadRecorded() {
  gnomon::server::TraceModel model;
  auto loaded = gnomon::server::LoadTrace(GNOMON_DATA_DIR "/cuda-h200.gnomon", model);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  return model;
}

}  // namespace

TEST_CASE(
    "H200 CUDA trace: one kernel per launch, durations within 1 %, inside launch-to-synchronize, overlaps "
    "kept") {
  const auto model = LoadRecorded();
  const auto result = gnomon::test::CheckCudaTimeline(model);
  for (const auto& failure : result.failures) MESSAGE(failure);
  CHECK(result.failures.empty());
  CHECK(result.kernels == 100);
  CHECK(result.launches == 100);
  CHECK(result.lanes == 2);
  CHECK(result.untimed == 0);
  CHECK(result.overlapping_kernel_pairs >= 40);
  CHECK(result.worst_duration_error < 0.01);
  CHECK(result.min_launch_margin_ns > 0);
  CHECK(result.min_sync_margin_ns > 0);
}

TEST_CASE("the CUDA checks fail on a kernel moved before its launch or stretched by 2 %") {
  auto model = LoadRecorded();
  for (auto& [id, context] : model.gpu_contexts) {
    if (context.api != uint8_t(gnomon::protocol::GpuApi::kCuda)) continue;
    for (size_t i = 0; i < context.zones.size(); ++i) {
      auto& zone = context.zones[i];
      if (model.Location(zone.source_location).name.find("SpinFor") == std::string::npos) continue;
      const uint64_t length = zone.gpu_end - zone.gpu_begin;
      zone.gpu_end = zone.gpu_begin + length + length / 50;  // 2 % longer
      break;
    }
    break;
  }
  auto result = gnomon::test::CheckCudaTimeline(model);
  REQUIRE_FALSE(result.failures.empty());
  CHECK(result.worst_duration_error > 0.015);

  model = LoadRecorded();
  auto& context = model.gpu_contexts.begin()->second;
  auto& zone = context.zones[0];
  const uint64_t length = zone.gpu_end - zone.gpu_begin;
  zone.gpu_begin -= 50'000'000;  // 50 ms earlier: before its launch
  zone.gpu_end = zone.gpu_begin + length;
  result = gnomon::test::CheckCudaTimeline(model);
  REQUIRE_FALSE(result.failures.empty());
  CHECK(result.min_launch_margin_ns < 0);
}

TEST_CASE("H200 CUDA memory: the demo's device and pinned buffers in their pools, made before, freed after") {
  gnomon::server::TraceModel model;
  auto loaded = gnomon::server::LoadTrace(GNOMON_DATA_DIR "/cuda-h200-memory.gnomon", model);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  auto result = gnomon::test::CheckCudaTimeline(model, 0.01, true);
  for (const auto& failure : result.failures) MESSAGE(failure);
  CHECK(result.failures.empty());
  CHECK(result.device_buffers == 2);
  CHECK(result.pinned_buffers == 1);

  // A buffer freed while the GPU still used it, and one never freed: both caught.
  for (auto& [id, pool] : model.memory_pools) {
    if (pool.name != "CUDA device memory, device 0") continue;
    REQUIRE(pool.allocations.size() == 2);
    pool.allocations[0].free_tick = pool.allocations[0].alloc_tick + 1;
    pool.allocations[1].free_tick = gnomon::server::kOpenZone;
  }
  result = gnomon::test::CheckCudaTimeline(model, 0.01, true);
  CHECK(result.failures.size() == 2);
}
