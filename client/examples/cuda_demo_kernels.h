// The CUDA demo's kernel, compiled by nvcc apart from the host code (which is C++20).
#pragma once

#include <cuda_runtime_api.h>

// Launches SpinFor<<<1, 1, 0, stream>>>: one thread that spins on the GPU's global timer
// (%globaltimer, ns) for duration_ns. Returns the launch's error.
cudaError_t LaunchSpinFor(cudaStream_t stream, unsigned long long duration_ns);
