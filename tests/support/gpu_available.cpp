#include "support/gpu_available.hpp"

#include "specbench/build_info.hpp"

#if SPECBENCH_TEST_CUDA_RUNTIME
#include <cuda_runtime_api.h>
#endif

namespace specbench::testing {
std::string gpu_unavailable_reason(GpuNeed need) {
  if (!build_info::cuda_compiled)
    return "specbench was built without CUDA (no nvcc at configure time, or "
           "SPECBENCH_ENABLE_CUDA=OFF)";
  const bool kernels = need == GpuNeed::verification_kernels;
  if (kernels && build_info::kernel_cuda_architectures[0] == '\0')
    return std::string("specbench was built without its verification kernels: "
                       "CMAKE_CUDA_ARCHITECTURES (") +
           build_info::cuda_architectures + ") has no sm_90 or newer entry";
#if SPECBENCH_TEST_CUDA_RUNTIME
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess)
    return std::string("no usable CUDA device: cudaGetDeviceCount returned ") +
           cudaGetErrorName(err) + " (" + std::to_string(static_cast<int>(err)) + ")";
  if (count == 0)
    return "no CUDA device visible";
  if (kernels) {
    // Why: a "80;90" build runs the preflight on an A100 but its verification kernels need
    // thread-block clusters; on such a GPU the kernel tests have nothing to run.
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    if (major < 9)
      return "GPU 0 has compute capability " + std::to_string(major) + "." + std::to_string(minor) +
             "; the verification kernels need 9.0 or newer";
  }
  return {};
#else
  return "the GPU test main was built without the CUDA runtime";
#endif
}
} // namespace specbench::testing
