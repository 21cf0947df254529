// Gnomon's CUDA collector: kernels, memcpys and memsets as GPU zones, one lane per
// device and stream, each linked to the CPU call that launched it and placed on the CPU
// timeline through the clock model. Link gnomon::cuda (built when CMake finds the CUDA
// toolkit with CUPTI).
//
//   std::string error;
//   auto collector = gnomon::cuda::Collector::Start({}, &error);  // before the first launch
//   if (!collector) fprintf(stderr, "no CUDA timeline: %s\n", error.c_str());
//   ... launch work ...
//   collector.reset();  // flushes what CUPTI still holds; do it before the program exits
//
// How it works:
//  - A CUPTI callback on the runtime API's launch, memcpy and memset calls opens a GPU
//    zone on the calling thread at the call's entry and closes it at the call's exit.
//    Traced calls: cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpy(Async) and
//    cudaMemset(Async), with their per-thread-stream variants. Work issued by other
//    calls (2D/3D copies, graphs, the driver API) is counted as unlinked, not shown.
//  - CUPTI's activity API records each operation's device start and end; the records
//    arrive in buffers from a budgeted pool (a request past the budget gets none and
//    CUPTI counts the records it lost: stats().records_dropped). A thread of the
//    collector asks CUPTI for finished buffers every flush_period and reads them there,
//    off the launching threads.
//  - With CollectorOptions::memory (the default), CUPTI's memory records -- every
//    allocation and free of device, pinned host and managed memory, by whatever API --
//    become allocations in a memory pool per kind and device, placed on the CPU
//    timeline at the time CUPTI gives them, so the GPU's memory in use is a lane of its
//    own.
//  - CUPTI's timestamp is calibrated against CLOCK_MONOTONIC_RAW with bracketed reads
//    (clock, cuptiGetTimestamp, clock), best of calibration_reads by bracket width, at
//    each lane's creation and every calibration_period; half the bracket is the pair's
//    uncertainty.
//
// Only one CUPTI subscriber may exist per process: Start() fails (with a reason) when
// another tool holds it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace gnomon::cuda {

struct CollectorOptions {
  size_t buffer_bytes = 4u << 20;  // one CUPTI activity buffer
  size_t max_buffers = 16;         // buffers CUPTI may hold at once
  std::chrono::milliseconds flush_period{100};
  std::chrono::milliseconds calibration_period{500};
  uint32_t calibration_reads = 16;  // bracketed reads per calibration; the narrowest wins
  // Every CUDA allocation and free (the runtime's, the driver's, a library's) as memory
  // pools: "CUDA device memory, device 0", "CUDA pinned host memory, device 0", ...
  bool memory = true;
};

struct CollectorStats {
  uint64_t launches = 0;  // traced calls, each a GPU zone
  uint64_t kernels = 0;   // activity records by kind
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t memory_allocations = 0;  // CUPTI's memory records
  uint64_t memory_frees = 0;
  uint64_t records_linked = 0;    // records matched to their launch and timed
  uint64_t records_unlinked = 0;  // records of calls not traced
  uint64_t records_invalid = 0;   // records without usable times
  uint64_t records_dropped = 0;   // records CUPTI lost (no buffer or buffer full)
  uint64_t buffers_refused = 0;   // buffer requests past max_buffers
  uint64_t calibrations = 0;
  uint32_t last_uncertainty_ns = 0;
  uint32_t lanes = 0;  // (device, stream) pairs seen
};

class Collector {
 public:
  // Subscribes to CUPTI and starts tracing; nullptr (and *error, when given) when CUPTI
  // cannot be used (no driver, another subscriber).
  static std::unique_ptr<Collector> Start(const CollectorOptions& options = {}, std::string* error = nullptr);
  // Flushes every record CUPTI holds (the GPU should be idle), then stops tracing.
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Hands every finished record to Gnomon now (e.g. after a synchronize).
  void Flush();
  CollectorStats stats() const;

  struct State;

 private:
  explicit Collector(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace gnomon::cuda
