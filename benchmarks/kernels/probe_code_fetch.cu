// What does it cost a warp to run code that its SM has not run yet? The reducing block of the
// single-request verifiers runs its drain and walk once per call, on whichever SM took the last
// ticket, after the call's logits have streamed through L2. This probe times one warp running a
// straight-line region of N independent-chain FFMAs (16 bytes of code each), stamped with
// %globaltimer around the region, in four states:
//   warm      the same SM ran the region in the previous launch;
//   L2        the SM never ran it, another SM did (the code is in L2);
//   flushed   the SM never ran it and 2.5x the L2 of other data was read since any SM ran it;
//   flushed, SM warm   the SM ran it before the flush.
// The flush reads with ordinary loads (`ld`) or streaming loads (`ld.cs`, as the benchmarks'
// rotated inputs do), to see whether either evicts code from L2.
//   build/benchmarks/kernels/probe_code_fetch
#include "probe_support.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

using specbench::probes::now_ns;

// Only the block on SM `target` runs the region; every other block returns at once. Four
// independent chains keep the warp issuing about one instruction per cycle when the code is
// cached, so that the fetch, not the arithmetic, is what grows. `Tag` makes a separate copy of the
// code (a region no SM has run yet).
template <int N, int Tag>
__global__ void region(const float* in, float* out, uint64_t* ns, unsigned target) {
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  if (sm != target)
    return;
  float a = in[threadIdx.x], b = a + 1.0f, c = a + 2.0f, d = a + 3.0f;
  __syncwarp();
  const uint64_t t0 = now_ns();
  // The branch on t0 keeps the region after the timer read.
  if (t0 == 1)
    a = 0.0f;
#pragma unroll
  for (int i = 0; i < N / 4; ++i) {
    const float m = 1.0f + static_cast<float>(i + Tag) * 1.0e-7f;
    const float k = static_cast<float>(i) * 1.0e-6f;
    a = fmaf(a, m, k);
    b = fmaf(b, m, -k);
    c = fmaf(c, m, k + 1.0e-5f);
    d = fmaf(d, m, k - 1.0e-5f);
  }
  const float r = a + b + c + d;
  if (r == 1234.5f) // a use of the result after the region
    ns[1] = 0;
  const uint64_t t1 = now_ns();
  if (r == 1234.25f)
    __trap();
  if (threadIdx.x == 0) {
    out[0] = r;
    ns[0] = t1 - t0;
  }
}

template <bool kStreaming> __global__ void flush_read(const float4* a, int64_t n4, float* out) {
  float acc = 0.0f;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float4 v = kStreaming ? __ldcs(a + i) : a[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1234.5f)
    out[0] = acc;
}

struct Ctx {
  int sms = 0;
  float* in = nullptr;
  float* out = nullptr;
  uint64_t* ns = nullptr;
  float4* big = nullptr;
  int64_t big4 = 0;
};

// -1 when no block landed on SM `sm` (the caller skips that sample).
template <int N, int Tag> double run_on(const Ctx& c, unsigned sm) {
  cudaMemset(c.ns, 0, 8);
  region<N, Tag><<<c.sms * 2, 32>>>(c.in, c.out, c.ns, sm);
  uint64_t v = 0;
  cudaMemcpy(&v, c.ns, sizeof v, cudaMemcpyDeviceToHost);
  return v == 0 ? -1.0 : v / 1e3;
}

void flush(const Ctx& c, bool streaming) {
  if (streaming)
    flush_read<true><<<c.sms * 8, 256>>>(c.big, c.big4, c.out);
  else
    flush_read<false><<<c.sms * 8, 256>>>(c.big, c.big4, c.out);
  cudaDeviceSynchronize();
}

void report(const char* what, std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return x < 0; }), v.end());
  if (v.empty()) {
    std::printf("  %-58s no sample\n", what);
    return;
  }
  std::sort(v.begin(), v.end());
  const auto q = [&](double p) { return v[static_cast<std::size_t>(p * (v.size() - 1) + 0.5)]; };
  std::printf("  %-58s p10 %6.3f  p50 %6.3f  p90 %6.3f  us (%zu)\n", what, q(0.1), q(0.5), q(0.9),
              v.size());
}

// One code size: the four states, each on every SM once (SM k in call k).
template <int N, int Base> void sweep(const Ctx& c) {
  std::printf("\n== region of %d FFMAs (%d KiB of code)\n", N, N * 16 / 1024);
  std::vector<double> first_ever, l2, warm, flushed_warm_ld, cold_ld, cold_cs;
  // Copy Base: SM 0 runs it first (fetched from memory), then every other SM (from L2).
  first_ever.push_back(run_on<N, Base>(c, 0));
  for (int s = 1; s < c.sms; ++s)
    l2.push_back(run_on<N, Base>(c, s));
  for (int s = 0; s < c.sms; ++s)
    warm.push_back(run_on<N, Base>(c, s));
  for (int s = 0; s < c.sms; s += 4) {
    flush(c, false);
    flushed_warm_ld.push_back(run_on<N, Base>(c, s));
  }
  // Copies Base + 1 and Base + 2: a flush before each SM's first run, so the code is neither in
  // that SM nor (unless the flush left it there) in L2.
  for (int s = 0; s < c.sms; s += 4) {
    flush(c, false);
    cold_ld.push_back(run_on<N, Base + 1>(c, s));
  }
  for (int s = 0; s < c.sms; s += 4) {
    flush(c, true);
    cold_cs.push_back(run_on<N, Base + 2>(c, s));
  }
  std::printf("  first run on any SM                                        %6.3f us\n",
              first_ever[0]);
  report("SM never ran it, code in L2", l2);
  report("SM ran it in an earlier launch (warm)", warm);
  report("SM ran it, then a flush with ld", flushed_warm_ld);
  report("SM never ran it, flush with ld before", cold_ld);
  report("SM never ran it, flush with ld.cs before", cold_cs);
}

} // namespace

int main() {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::printf("no CUDA device\n");
    return 1;
  }
  Ctx c;
  c.sms = prop.multiProcessorCount;
  const std::size_t big = static_cast<std::size_t>(prop.l2CacheSize) * 5 / 2;
  cudaMalloc(&c.in, 4096);
  cudaMemset(c.in, 0, 4096);
  cudaMalloc(&c.out, 4096);
  cudaMalloc(&c.ns, 64);
  cudaMalloc(&c.big, big);
  cudaMemset(c.big, 0, big);
  c.big4 = static_cast<int64_t>(big / 16);
  std::printf("%s, %d SMs, L2 %d MB, flush reads %.0f MB\n", prop.name, c.sms,
              prop.l2CacheSize >> 20, big / 1e6);
  sweep<64, 0>(c);
  sweep<256, 10>(c);
  sweep<1024, 20>(c);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(e));
    return 1;
  }
  return 0;
}
