#include "cuda_demo_kernels.h"

// Not in an anonymous namespace: its name is what the timeline shows.
__global__ void SpinFor(unsigned long long duration_ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < duration_ns);
}

cudaError_t LaunchSpinFor(cudaStream_t stream, unsigned long long duration_ns) {
  SpinFor<<<1, 1, 0, stream>>>(duration_ns);
  return cudaGetLastError();
}
