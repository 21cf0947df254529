// gnomon-cuda-demo: CUDA kernels of known duration on two streams, with copies and a
// memset between them, traced by Gnomon's CUDA collector.
//
//   gnomon-cuda-demo [--iterations N] [--device ORDINAL] [--buffer-kb K] [--max-buffers N]
//                    [--no-collector]
//
// Each iteration launches one SpinFor kernel on each stream. A kernel spins on the GPU's
// global timer for the time it is given, which its CPU zone "Launch spin" carries as its
// value. Stream B waits for stream A's kernel before copying A's buffer (device to
// device), then copies it to the host; a memset clears the buffer on stream A. The
// iteration ends in a "Synchronize" zone around cudaDeviceSynchronize(): every GPU
// operation of the iteration lies between its launch and that zone's end.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <gnomon/cuda.hpp>
#include <gnomon/gnomon.hpp>
#include <string>

#include "cuda_demo_kernels.h"

namespace {

void Check(cudaError_t result, const char* what) {
  if (result == cudaSuccess) return;
  std::fprintf(stderr, "gnomon-cuda-demo: %s: %s\n", what, cudaGetErrorString(result));
  std::exit(1);
}

void LaunchSpin(cudaStream_t stream, unsigned long long duration_ns) {
  GNOMON_ZONE("Launch spin");
  gnomon::ZoneValue(duration_ns);
  Check(LaunchSpinFor(stream, duration_ns), "launching SpinFor");
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 50;
  int device = 0;
  bool collect = true;
  gnomon::cuda::CollectorOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else if (arg == "--device" && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else if (arg == "--buffer-kb" && i + 1 < argc) {
      options.buffer_bytes = size_t(std::atoi(argv[++i])) << 10;
    } else if (arg == "--max-buffers" && i + 1 < argc) {
      options.max_buffers = size_t(std::atoi(argv[++i]));
    } else if (arg == "--no-collector") {
      collect = false;
    } else if (arg == "-h" || arg == "--help") {
      std::printf(
          "usage: gnomon-cuda-demo [--iterations N] [--device ORDINAL] [--buffer-kb K]\n"
          "                        [--max-buffers N] [--no-collector]\n"
          "Spins CUDA kernels of known duration on two streams, with copies between them,\n"
          "and traces them with Gnomon's CUDA collector. Capture it with gnomon-capture.\n"
          "  --iterations N   iterations of two kernels, three copies and a memset (50)\n"
          "  --buffer-kb K    size of one CUPTI activity buffer (4096)\n"
          "  --max-buffers N  buffers CUPTI may hold at once (16); past them records are\n"
          "                   dropped and counted (exit code 2)\n"
          "  --no-collector   CPU zones only (to measure what the collector costs)\n");
      return 0;
    } else {
      std::fprintf(stderr, "gnomon-cuda-demo: unknown argument '%s' (try --help)\n", arg.c_str());
      return 1;
    }
  }
  if (iterations < 1) iterations = 1;
  gnomon::SetThreadName("main");

  // The device's context exists before tracing starts, so that every launch names it.
  Check(cudaSetDevice(device), "cudaSetDevice");
  Check(cudaFree(nullptr), "creating the device's context");
  std::string error;
  std::unique_ptr<gnomon::cuda::Collector> collector;
  if (collect) collector = gnomon::cuda::Collector::Start(options, &error);
  if (collect && !collector) {
    std::fprintf(stderr, "gnomon-cuda-demo: no CUDA timeline: %s\n", error.c_str());
    return 1;
  }

  constexpr size_t kBytes = 8u << 20;
  cudaStream_t a = nullptr, b = nullptr;
  Check(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), "cudaStreamCreate");
  Check(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t a_done = nullptr;
  Check(cudaEventCreateWithFlags(&a_done, cudaEventDisableTiming), "cudaEventCreate");
  void *buffer_a = nullptr, *buffer_b = nullptr, *host = nullptr;
  Check(cudaMalloc(&buffer_a, kBytes), "cudaMalloc");
  Check(cudaMalloc(&buffer_b, kBytes), "cudaMalloc");
  Check(cudaMallocHost(&host, kBytes), "cudaMallocHost");
  std::memset(host, 1, kBytes);

  for (int i = 0; i < iterations; ++i) {
    GNOMON_ZONE("Iteration");
    {
      GNOMON_ZONE("Issue");
      Check(cudaMemcpyAsync(buffer_a, host, kBytes, cudaMemcpyHostToDevice, a), "cudaMemcpyAsync");
      LaunchSpin(a, 1'000'000ull + 250'000ull * (i % 4));  // 1.00 to 1.75 ms
      LaunchSpin(b, 1'500'000ull - 250'000ull * (i % 3));  // 1.50 to 1.00 ms, concurrent with A's
      Check(cudaEventRecord(a_done, a), "cudaEventRecord");
      Check(cudaStreamWaitEvent(b, a_done, 0), "cudaStreamWaitEvent");
      Check(cudaMemcpyAsync(buffer_b, buffer_a, kBytes, cudaMemcpyDeviceToDevice, b), "cudaMemcpyAsync");
      Check(cudaMemcpyAsync(host, buffer_b, kBytes, cudaMemcpyDeviceToHost, b), "cudaMemcpyAsync");
      Check(cudaMemsetAsync(buffer_a, i & 0xFF, kBytes, a), "cudaMemsetAsync");
    }
    GNOMON_ZONE("Synchronize");
    Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  GNOMON_FRAME_MARK();
  // Freed while the collector records: the trace shows the memory given back.
  Check(cudaFreeHost(host), "cudaFreeHost");
  Check(cudaFree(buffer_a), "cudaFree");
  Check(cudaFree(buffer_b), "cudaFree");

  gnomon::cuda::CollectorStats stats;
  if (collector) {
    collector->Flush();
    stats = collector->stats();
    collector.reset();
  }
  std::printf(
      "gnomon-cuda-demo: %d iterations; %llu launches traced; records: %llu kernels, %llu memcpys, %llu "
      "memsets, "
      "%llu linked, %llu unlinked, %llu dropped; %u lanes; %llu calibrations, last +-%u ns; memory: %llu "
      "allocations, %llu frees\n",
      iterations, (unsigned long long)stats.launches, (unsigned long long)stats.kernels,
      (unsigned long long)stats.memcpys, (unsigned long long)stats.memsets,
      (unsigned long long)stats.records_linked, (unsigned long long)stats.records_unlinked,
      (unsigned long long)stats.records_dropped, stats.lanes, (unsigned long long)stats.calibrations,
      stats.last_uncertainty_ns, (unsigned long long)stats.memory_allocations,
      (unsigned long long)stats.memory_frees);
  cudaEventDestroy(a_done);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  return stats.records_dropped == 0 ? 0 : 2;
}
