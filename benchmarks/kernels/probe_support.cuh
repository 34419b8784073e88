#pragma once
// What the standalone probes share: a check that ends the probe on a CUDA error, and the GPU's
// nanosecond clock.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define PROBE_CHECK(x)                                                                             \
  do {                                                                                             \
    const cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                                \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

namespace specbench::probes {

/// %globaltimer: nanoseconds, the same clock on every SM.
__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

} // namespace specbench::probes
