#pragma once
// Phase timestamps for probes. Only the probe's own build of the kernels defines
// SPECBENCH_PHASE_STAMPS (the library never does, and then every macro below is empty): thread 0
// of each block records %globaltimer at named points, so that a probe can see where a
// microsecond-sized call spends its time (block dispatch, load latency, hand-off, walk), which
// switching parts off cannot show. Layout of the buffer a probe attaches, 8 words per record:
//   record b < gridDim.x (block b): [0] start, [1] SM id, [2..7] stamps 2..7;
//   record gridDim.x (the reducing block of request 0): [0] its block index, [1] all ones,
//   [2..7] stamps.
// The start time stays in a register until the block's first stamp, so the stamp stores never
// delay a block's first loads (the buffer's address is a constant-cache load that can miss).
#include <cstdint>

#ifdef SPECBENCH_PHASE_STAMPS
#include <cuda_runtime.h>

namespace specbench::kernels::detail {
namespace {
__constant__ uint64_t* c_phase_buf; // one per translation unit; nullptr: stamps off

__device__ __forceinline__ uint64_t phase_now() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// `dep`: a value the stamp must wait for. The branch on it keeps the timer read after it is known
// (an asm input alone would not stop ptxas from reading the timer earlier).
__device__ __forceinline__ void phase_put(uint64_t t0, int i, uint64_t dep) {
  if (dep == 0x5EC0DE5EC0DE5EC0ull)
    __trap();
  const uint64_t now = phase_now();
  if (threadIdx.x != 0 || c_phase_buf == nullptr)
    return;
  uint32_t sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  uint64_t* r = c_phase_buf + 8ull * blockIdx.x;
  r[0] = t0;
  r[1] = sm;
  r[i] = now;
}
__device__ __forceinline__ void phase_put_last(int i, int request, uint64_t dep = 0) {
  if (dep == 0x5EC0DE5EC0DE5EC0ull)
    __trap();
  const uint64_t now = phase_now();
  if (threadIdx.x != 0 || c_phase_buf == nullptr || request != 0)
    return;
  uint64_t* r = c_phase_buf + 8ull * gridDim.x;
  r[0] = blockIdx.x;
  r[1] = ~0ull; // marks this record
  r[i] = now;
}
// The latest of the warps' stamps in a block: each warp's lane 0 raises `slot` (shared memory,
// zeroed by thread 0 before a block barrier) to its time once `dep` is known.
__device__ __forceinline__ void phase_warp_done(unsigned long long* slot, uint64_t dep) {
  if (dep == 0x5EC0DE5EC0DE5EC0ull)
    __trap();
  const uint64_t now = phase_now();
  if ((threadIdx.x & 31) == 0)
    atomicMax(slot, static_cast<unsigned long long>(now));
}
__device__ __forceinline__ void phase_put_last_at(int i, int request, uint64_t t) {
  if (threadIdx.x != 0 || c_phase_buf == nullptr || request != 0)
    return;
  uint64_t* r = c_phase_buf + 8ull * gridDim.x;
  r[0] = blockIdx.x;
  r[1] = ~0ull;
  r[i] = t;
}
} // namespace
} // namespace specbench::kernels::detail

#define SPECBENCH_PHASE_START() const uint64_t phase_t0_ = ::specbench::kernels::detail::phase_now()
#define SPECBENCH_PHASE(i, dep) ::specbench::kernels::detail::phase_put(phase_t0_, i, dep)
#define SPECBENCH_PHASE_LAST(i, request) ::specbench::kernels::detail::phase_put_last(i, request)
// The same after `dep` is known (see phase_put).
#define SPECBENCH_PHASE_LAST_DEP(i, request, dep)                                                  \
  ::specbench::kernels::detail::phase_put_last(i, request, dep)
// The latest warp of the block: declare and zero (thread 0, before a block barrier), raise per
// warp, and record in the request's record after another block barrier.
#define SPECBENCH_PHASE_WARPS_INIT()                                                               \
  __shared__ unsigned long long phase_warps_;                                                      \
  if (threadIdx.x == 0)                                                                            \
  phase_warps_ = 0
#define SPECBENCH_PHASE_WARP_DONE(dep)                                                             \
  ::specbench::kernels::detail::phase_warp_done(&phase_warps_, dep)
#define SPECBENCH_PHASE_LAST_WARPS(i, request)                                                     \
  ::specbench::kernels::detail::phase_put_last_at(i, request, phase_warps_)
// Defines `void name(uint64_t* buf)` (host) that attaches a buffer to this file's kernels.
#define SPECBENCH_PHASE_ATTACH(name)                                                               \
  void name(uint64_t* buf) {                                                                       \
    cudaMemcpyToSymbol(c_phase_buf, &buf, sizeof buf);                                             \
  }
#else
#define SPECBENCH_PHASE_START() ((void)0)
#define SPECBENCH_PHASE(i, dep) ((void)0)
#define SPECBENCH_PHASE_LAST(i, request) ((void)0)
#define SPECBENCH_PHASE_LAST_DEP(i, request, dep) ((void)0)
#define SPECBENCH_PHASE_WARPS_INIT() ((void)0)
#define SPECBENCH_PHASE_WARP_DONE(dep) ((void)0)
#define SPECBENCH_PHASE_LAST_WARPS(i, request) ((void)0)
#define SPECBENCH_PHASE_ATTACH(name)
#endif
