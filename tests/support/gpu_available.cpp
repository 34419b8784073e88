#include "support/gpu_available.hpp"

#if SPECBENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace specbench::testing {
std::string gpu_unavailable_reason() {
#if SPECBENCH_HAVE_CUDA
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess)
    return std::string("no usable CUDA device: cudaGetDeviceCount returned ") +
           cudaGetErrorName(err) + " (" + std::to_string(static_cast<int>(err)) + ")";
  if (count == 0)
    return "no CUDA device visible";
  return {};
#else
  return "specbench was built without its CUDA kernels (no nvcc at configure time, or no sm_90 or "
         "newer entry in CMAKE_CUDA_ARCHITECTURES)";
#endif
}
} // namespace specbench::testing
