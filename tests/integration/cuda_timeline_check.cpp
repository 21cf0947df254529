#include "cuda_timeline_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "gnomon/protocol/messages.h"

namespace gnomon::test {

namespace {

struct CpuSpan {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  uint64_t value = 0;
};

struct ThreadSpans {
  std::vector<CpuSpan> launches;  // "Launch spin", by begin
  std::vector<CpuSpan> syncs;     // "Synchronize", by begin
};

struct GpuOp {
  size_t lane = 0;
  uint64_t gpu_begin = 0, gpu_end = 0;  // CUPTI ns, shared by every lane
  int64_t begin_ns = 0, end_ns = 0;     // mapped
  bool is_kernel = false;
};

std::string Format(const char* format, auto... args) {
  char text[256];
  std::snprintf(text, sizeof(text), format, args...);
  return text;
}

}  // namespace

CudaCheckResult CheckCudaTimeline(const server::TraceModel& m, double duration_tolerance, bool check_memory) {
  CudaCheckResult r;
  auto fail = [&](std::string why) {
    if (r.failures.size() < 20) r.failures.push_back(std::move(why));
  };

  std::map<uint32_t, ThreadSpans> spans;  // by program thread id
  for (const auto& thread : m.threads) {
    ThreadSpans& s = spans[thread.id];
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const auto& zone = thread.zones[i];
      if (zone.is_open()) continue;
      const std::string& name = m.ZoneName(thread, i);
      CpuSpan span{m.clock.TickToNs(zone.begin_tick), m.clock.TickToNs(zone.end_tick), 0};
      if (name == "Launch spin") {
        const auto attributes = thread.attributes.find(i);
        if (attributes && attributes->has_value) span.value = attributes->value;
        s.launches.push_back(span);
      } else if (name == "Synchronize") {
        s.syncs.push_back(span);
      }
    }
    auto by_begin = [](const CpuSpan& a, const CpuSpan& b) { return a.begin_ns < b.begin_ns; };
    std::sort(s.launches.begin(), s.launches.end(), by_begin);
    std::sort(s.syncs.begin(), s.syncs.end(), by_begin);
    r.launches += s.launches.size();
  }

  std::map<std::pair<uint32_t, size_t>, int> kernels_per_launch;
  std::vector<GpuOp> ops;
  r.min_launch_margin_ns = std::numeric_limits<int64_t>::max();
  r.min_sync_margin_ns = std::numeric_limits<int64_t>::max();
  for (const auto& [id, context] : m.gpu_contexts) {
    if (context.api != uint8_t(protocol::GpuApi::kCuda)) continue;
    ++r.lanes;
    r.uncertainty_ns = std::max(r.uncertainty_ns, context.clock.current_uncertainty_ns());
    for (size_t i = 0; i < context.zones.size(); ++i) {
      const auto& zone = context.zones[i];
      const std::string& name = m.Location(zone.source_location).name;
      const bool is_kernel = name.find("SpinFor") != std::string::npos;
      r.kernels += is_kernel;
      r.copies += name.rfind("memcpy", 0) == 0;
      r.memsets += name == "memset";
      if (!zone.is_timed()) {
        ++r.untimed;
        fail(Format("%s (lane %u) was never timed", name.c_str(), id));
        continue;
      }
      const auto mapped = m.MapGpuZone(context, zone);
      ops.push_back({r.lanes, zone.gpu_begin, zone.gpu_end, mapped.begin_ns, mapped.end_ns, is_kernel});
      const int64_t launch_ns = m.clock.TickToNs(zone.cpu_begin_tick);
      const ThreadSpans& s = spans[zone.thread_id];

      const int64_t launch_margin = mapped.begin_ns - launch_ns;
      r.min_launch_margin_ns = std::min(r.min_launch_margin_ns, launch_margin);
      if (launch_margin < 0)
        fail(Format("%s begins %lld ns before its launch", name.c_str(), (long long)-launch_margin));
      auto sync = std::lower_bound(s.syncs.begin(), s.syncs.end(), launch_ns,
                                   [](const CpuSpan& span, int64_t ns) { return span.begin_ns < ns; });
      if (sync == s.syncs.end()) {
        fail(Format("%s has no Synchronize after its launch", name.c_str()));
      } else {
        const int64_t sync_margin = sync->end_ns - mapped.end_ns;
        r.min_sync_margin_ns = std::min(r.min_sync_margin_ns, sync_margin);
        if (sync_margin < 0) {
          fail(Format("%s ends %lld ns after its Synchronize returned", name.c_str(),
                      (long long)-sync_margin));
        }
      }
      if (!is_kernel) continue;
      // The launch zone that holds the call's entry.
      auto launch = std::upper_bound(s.launches.begin(), s.launches.end(), launch_ns,
                                     [](int64_t ns, const CpuSpan& span) { return ns < span.begin_ns; });
      if (launch == s.launches.begin() || std::prev(launch)->end_ns < launch_ns) {
        fail(Format("%s has no Launch spin zone around its launch", name.c_str()));
        continue;
      }
      --launch;
      ++kernels_per_launch[{zone.thread_id, size_t(launch - s.launches.begin())}];
      const double told = double(launch->value);
      const double error = told > 0 ? std::abs(double(mapped.end_ns - mapped.begin_ns) - told) / told : 1.0;
      r.worst_duration_error = std::max(r.worst_duration_error, error);
      if (error > duration_tolerance) {
        fail(Format("%s ran %lld ns, told %.0f ns (%.2f %% off)", name.c_str(),
                    (long long)(mapped.end_ns - mapped.begin_ns), told, error * 100));
      }
    }
  }
  if (r.kernels != r.launches) fail(Format("%zu kernels for %zu launches", r.kernels, r.launches));
  for (const auto& [key, count] : kernels_per_launch) {
    if (count != 1) fail(Format("a launch has %d kernels", count));
  }
  if (r.launches == 0) fail("no Launch spin zone: is this a gnomon-cuda-demo trace?");

  for (size_t i = 0; i < ops.size(); ++i) {
    for (size_t j = i + 1; j < ops.size(); ++j) {
      const GpuOp& a = ops[i];
      const GpuOp& b = ops[j];
      if (a.lane == b.lane) continue;
      if (!(a.gpu_begin < b.gpu_end && b.gpu_begin < a.gpu_end)) continue;
      r.overlapping_kernel_pairs += a.is_kernel && b.is_kernel;
      if (!(a.begin_ns < b.end_ns && b.begin_ns < a.end_ns)) ++r.overlaps_lost;
    }
  }
  if (r.overlaps_lost > 0) fail(Format("%zu overlaps in GPU time are lost once mapped", r.overlaps_lost));
  if (r.overlapping_kernel_pairs == 0) fail("the two streams' kernels never overlapped");
  if (r.lanes < 2) fail(Format("%zu CUDA lanes, expected one per stream", r.lanes));
  if (r.copies == 0 || r.memsets == 0) fail("no memcpy or memset zones");
  if (r.min_launch_margin_ns == std::numeric_limits<int64_t>::max()) r.min_launch_margin_ns = 0;
  if (r.min_sync_margin_ns == std::numeric_limits<int64_t>::max()) r.min_sync_margin_ns = 0;
  if (check_memory) {
    // The demo's buffers: 8 MiB each, two on the device, one of pinned host memory.
    constexpr uint64_t kBuffer = 8u << 20;
    int64_t first_op_ns = std::numeric_limits<int64_t>::max(), last_op_ns = 0;
    for (const GpuOp& op : ops) {
      first_op_ns = std::min(first_op_ns, op.begin_ns);
      last_op_ns = std::max(last_op_ns, op.end_ns);
    }
    auto count = [&](const std::string& name, size_t& buffers) {
      for (const auto& [id, pool] : m.memory_pools) {
        if (pool.name != name) continue;
        r.memory_unmatched_frees += pool.unmatched_frees;
        for (size_t i = 0; i < pool.allocations.size(); ++i) {
          const auto& a = pool.allocations[i];
          if (a.size_bytes != kBuffer) continue;
          ++buffers;
          // Made before the first GPU operation, freed after the last (on the CPU timeline).
          const int64_t made_ns = m.clock.TickToNs(a.alloc_tick);
          if (made_ns > first_op_ns)
            fail(Format("an 8 MiB allocation in '%s' is after the GPU work", name.c_str()));
          if (!a.is_freed()) {
            fail(Format("an 8 MiB allocation in '%s' is never freed", name.c_str()));
          } else if (m.clock.TickToNs(a.free_tick) < last_op_ns) {
            fail(Format("an 8 MiB allocation in '%s' is freed before the GPU work ended", name.c_str()));
          }
        }
      }
    };
    count("CUDA device memory, device 0", r.device_buffers);
    count("CUDA pinned host memory, device 0", r.pinned_buffers);
    if (r.device_buffers != 2) fail(Format("%zu 8 MiB device allocations, not 2", r.device_buffers));
    if (r.pinned_buffers != 1) fail(Format("%zu 8 MiB pinned host allocations, not 1", r.pinned_buffers));
    if (r.memory_unmatched_frees != 0) {
      fail(Format("%llu CUDA frees without their allocation", (unsigned long long)r.memory_unmatched_frees));
    }
  }
  return r;
}

std::string CudaCheckResult::ToJson() const {
  std::ostringstream out;
  out << "{\"lanes\":" << lanes << ",\"launches\":" << launches << ",\"kernels\":" << kernels
      << ",\"copies\":" << copies << ",\"memsets\":" << memsets << ",\"untimed\":" << untimed
      << ",\"worst_duration_error_pct\":" << worst_duration_error * 100
      << ",\"min_launch_margin_ns\":" << min_launch_margin_ns
      << ",\"min_sync_margin_ns\":" << min_sync_margin_ns
      << ",\"overlapping_kernel_pairs\":" << overlapping_kernel_pairs
      << ",\"overlaps_lost\":" << overlaps_lost << ",\"uncertainty_ns\":" << uncertainty_ns
      << ",\"device_buffers\":" << device_buffers << ",\"pinned_buffers\":" << pinned_buffers
      << ",\"memory_unmatched_frees\":" << memory_unmatched_frees
      << ",\"passed\":" << (failures.empty() ? "true" : "false") << "}";
  return out.str();
}

}  // namespace gnomon::test
