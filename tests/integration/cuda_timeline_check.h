// The checks a trace of gnomon-cuda-demo must pass, on any machine that ran it:
//  - every "Launch spin" CPU zone has exactly one SpinFor kernel, and no kernel is
//    without its launch; every GPU operation is timed;
//  - each kernel's mapped duration is within `duration_tolerance` of what it was told to
//    spin (the value of its "Launch spin" zone);
//  - each mapped GPU operation lies between its CPU launch (the call's entry) and the
//    end of the next "Synchronize" zone on the launching thread;
//  - operations of different lanes that overlap in CUPTI's time overlap once mapped, and
//    the two streams' kernels did overlap;
//  - with `check_memory` (traces made since the collector records memory): the demo's
//    two 8 MiB device buffers and its 8 MiB of pinned host memory are allocations in
//    their pools ("CUDA device memory, device 0", "CUDA pinned host memory, device 0"),
//    made before the first GPU operation and freed after the last, and no free is
//    without its allocation.
// Used by gnomon-cuda-check (run on a GPU machine) and by the test of the recorded trace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::test {

struct CudaCheckResult {
  size_t lanes = 0;
  size_t launches = 0;  // "Launch spin" CPU zones
  size_t kernels = 0;   // SpinFor GPU zones
  size_t copies = 0;    // memcpy GPU zones
  size_t memsets = 0;
  size_t untimed = 0;
  double worst_duration_error = 0;   // |mapped - told| / told, largest
  int64_t min_launch_margin_ns = 0;  // begin - launch, smallest
  int64_t min_sync_margin_ns = 0;    // synchronize end - end, smallest
  size_t overlapping_kernel_pairs = 0;
  size_t overlaps_lost = 0;     // overlapping in GPU time, not once mapped
  uint32_t uncertainty_ns = 0;  // largest current uncertainty of a lane
  size_t device_buffers = 0;    // 8 MiB allocations in the device pool (check_memory)
  size_t pinned_buffers = 0;    // and in the pinned host pool
  uint64_t memory_unmatched_frees = 0;
  std::vector<std::string> failures;  // empty: every check passed

  std::string ToJson() const;
};

CudaCheckResult CheckCudaTimeline(const server::TraceModel& model, double duration_tolerance = 0.01,
                                  bool check_memory = false);

}  // namespace gnomon::test
