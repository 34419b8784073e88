#include "late_writer.hpp"

#include <cstdint>

namespace specbench::testing {
namespace {

__device__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void late_copy_kernel(uint4* dst, const uint4* src, std::size_t n16, uint8_t* dst_tail,
                                 const uint8_t* src_tail, std::size_t ntail, unsigned delay_ns) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const uint64_t until = now_ns() + delay_ns;
  while (now_ns() < until)
    __nanosleep(1000);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n16;
       i += stride)
    dst[i] = src[i];
  if (blockIdx.x == 0)
    for (std::size_t i = threadIdx.x; i < ntail; i += blockDim.x)
      dst_tail[i] = src_tail[i];
}

} // namespace

cudaError_t launch_late_copy(void* dst, const void* src, std::size_t bytes, unsigned delay_ns,
                             cudaStream_t stream) {
  const std::size_t n16 = bytes / 16, ntail = bytes % 16;
  late_copy_kernel<<<132, 256, 0, stream>>>(
      static_cast<uint4*>(dst), static_cast<const uint4*>(src), n16,
      static_cast<uint8_t*>(dst) + n16 * 16, static_cast<const uint8_t*>(src) + n16 * 16, ntail,
      delay_ns);
  return cudaGetLastError();
}

} // namespace specbench::testing
