#pragma once
// Programmatic dependent launch (LaunchOptions::programmatic_dependent): the launch configuration
// every launcher builds, and the two calls each kernel makes. With the attribute set, a kernel's
// blocks may be scheduled while the previous kernel in the stream is still running; they do
// their index arithmetic, then wait (wait_for_previous_kernel) until that kernel has finished and
// its writes are visible, so results never change. Without it both device calls return at once.

#include "common.cuh"

#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>
#include <utility>

namespace specbench::kernels::detail {

/// Blocks until the kernel before this one in the stream has finished and its memory is visible,
/// when this launch has a programmatic dependency on it; at once otherwise. Every kernel calls it
/// before its first read or write of global memory (its parameters are not global memory).
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Lets the next kernel in the stream, if it is launched with a programmatic dependency, be
/// scheduled once every block of this one has called this or exited. That kernel still waits for
/// this one to end before it reads anything. Kernels call it when a block's bulk reads are done:
/// called at the start, the next call's blocks took the SMs this call's later blocks needed
/// (fused greedy 8 x 16, a grid sized to one wave: 11.0-11.4 us warm against 8.6-8.9,
/// 2026-12-05 02:59 UTC, docs/h200-2026-12-05/ab_0259_pdl_trigger_at_start.txt).
__device__ __forceinline__ void allow_next_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// A cudaLaunchKernelEx configuration: grid, block, dynamic shared memory and stream, plus the
/// attributes a call asks for: a cluster of `cluster` blocks when it is above 0, and the
/// programmatic dependency when `options` ask for it.
struct LaunchConfig {
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attrs[2]{};
  LaunchConfig(const LaunchConfig&) = delete; // cfg points at attrs
  LaunchConfig& operator=(const LaunchConfig&) = delete;
  LaunchConfig(int64_t grid, int threads, std::size_t smem, Stream stream, LaunchOptions options,
               int cluster = 0) {
    cfg.gridDim = dim3(static_cast<unsigned>(grid));
    cfg.blockDim = dim3(static_cast<unsigned>(threads));
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attrs;
    if (cluster > 0) {
      cudaLaunchAttribute& a = attrs[cfg.numAttrs++];
      a.id = cudaLaunchAttributeClusterDimension;
      a.val.clusterDim.x = static_cast<unsigned>(cluster);
      a.val.clusterDim.y = 1;
      a.val.clusterDim.z = 1;
    }
    if (options.programmatic_dependent) {
      cudaLaunchAttribute& a = attrs[cfg.numAttrs++];
      a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      a.val.programmaticStreamSerializationAllowed = 1;
    }
  }
};

/// Launches `kernel` with `l`; the launch error (or cudaLaunchKernelEx's) as a Status.
template <class... Params, class... Args>
Status launch_kernel(const LaunchConfig& l, const char* where, void (*kernel)(Params...),
                     Args&&... args) {
  const cudaError_t err = cudaLaunchKernelEx(&l.cfg, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess)
    return cuda_status(err, where, "cudaLaunchKernelEx");
  return launch_status(where);
}

} // namespace specbench::kernels::detail
