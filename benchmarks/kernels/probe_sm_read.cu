// How fast can a few SMs read a single request's logits? Fused greedy verification hands partial
// results between blocks through L2 (about 0.3 to 0.5 us at one request). A verifier inside one
// thread-block cluster (at most 16 SMs on Hopper) would hand them over through distributed shared
// memory instead, but only pays off if 16 SMs read the request about as fast as the whole GPU.
// This probe reads `bytes` (cold: each trial reads a fresh region of a 2 GiB buffer) with k SMs
// (one block per SM) and reports the span from the first block's start to the last block's end
// (%globaltimer), median of the trials, and the bandwidth that gives:
//   ld    1,024 threads per block, eight 16-byte streaming loads in flight per thread;
//   bulk  one thread per block streams 16 KiB bulk copies (cp.async.bulk) into a 4-stage
//         shared-memory ring, each stage completing on its own mbarrier (pure ingest: nothing
//         reads the ring).
//   build/benchmarks/kernels/probe_sm_read
#include "probe_support.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using specbench::probes::now_ns;

constexpr int kLdThreads = 1024;
constexpr int kInFlight = 8;

// Block b reads 16-byte vectors b * 1024 + t, + k * 1024, ... of `n16` vectors, eight in flight
// per thread; the xor of everything read goes to `sink` so that no load is dropped.
__global__ void __launch_bounds__(kLdThreads, 1)
    read_ld(const uint4* p, int64_t n16, uint64_t* stamps, uint32_t* sink) {
  const uint64_t t0 = now_ns();
  const int64_t step = static_cast<int64_t>(gridDim.x) * kLdThreads;
  uint32_t acc = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kLdThreads + threadIdx.x; i < n16;
       i += step * kInFlight) {
    uint4 v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int64_t j = i + u * step;
      v[u] = j < n16 ? __ldcs(p + j) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
      acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  acc = __reduce_xor_sync(0xFFFFFFFFu, acc);
  __syncthreads();
  if (threadIdx.x == 0) {
    stamps[2 * blockIdx.x] = t0;
    stamps[2 * blockIdx.x + 1] = now_ns();
  }
  if ((threadIdx.x & 31) == 0 && acc == 0x12345678u)
    atomicAdd(sink, 1u);
}

constexpr int kStages = 4;
constexpr int kChunk = 16 * 1024;

// Waits until the mbarrier at shared address `bar` has completed the phase of parity `parity`.
__device__ __forceinline__ void wait_parity(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done)
    asm volatile("{\n .reg .pred q;\n mbarrier.try_wait.parity.shared::cta.b64 q, [%1], %2;\n"
                 " selp.u32 %0, 1, 0, q;\n}"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
}

// Block b streams chunks b, b + k, ... of `bytes` (a multiple of kChunk) into its ring.
__global__ void __launch_bounds__(32, 1)
    read_bulk(const char* p, int64_t bytes, uint64_t* stamps) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) uint64_t bar[kStages];
  const uint64_t t0 = now_ns();
  if (threadIdx.x != 0)
    return;
  for (int s = 0; s < kStages; ++s) {
    const uint32_t b = static_cast<uint32_t>(__cvta_generic_to_shared(&bar[s]));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
  }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  const int64_t chunks = bytes / kChunk;
  uint32_t phase[kStages] = {};
  int issued = 0;
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x, ++issued) {
    const int s = issued % kStages;
    const uint32_t b = static_cast<uint32_t>(__cvta_generic_to_shared(&bar[s]));
    if (issued >= kStages) { // wait for this stage's previous copy before reusing it
      wait_parity(b, phase[s]);
      phase[s] ^= 1u;
    }
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(ring + s * kChunk));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(kChunk)
                 : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], "
                 "%2, [%3];" ::"r"(dst),
                 "l"(p + c * kChunk), "r"(kChunk), "r"(b)
                 : "memory");
  }
  // Wait for the copies still in flight.
  for (int k = 0; k < kStages && k < issued; ++k) {
    const int s = (issued - 1 - k) % kStages;
    const uint32_t b = static_cast<uint32_t>(__cvta_generic_to_shared(&bar[s]));
    wait_parity(b, phase[s]);
  }
  stamps[2 * blockIdx.x] = t0;
  stamps[2 * blockIdx.x + 1] = now_ns();
}

double span_us(const std::vector<uint64_t>& st, int blocks) {
  uint64_t lo = ~0ull, hi = 0;
  for (int b = 0; b < blocks; ++b) {
    lo = std::min(lo, st[2 * b]);
    hi = std::max(hi, st[2 * b + 1]);
  }
  return (hi - lo) / 1000.0;
}

} // namespace

int main() {
  int dev = 0, sms = 0;
  PROBE_CHECK(cudaGetDevice(&dev));
  PROBE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDeviceProperties(&prop, dev));
  const std::size_t pool = std::size_t{2} << 30;
  char* buf = nullptr;
  uint64_t* stamps = nullptr;
  uint32_t* sink = nullptr;
  PROBE_CHECK(cudaMalloc(&buf, pool));
  PROBE_CHECK(cudaMemset(buf, 1, pool));
  PROBE_CHECK(cudaMalloc(&stamps, sizeof(uint64_t) * 2 * 1024));
  PROBE_CHECK(cudaMalloc(&sink, sizeof(uint32_t)));
  PROBE_CHECK(cudaFuncSetAttribute(read_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kStages * kChunk));
  std::printf("%s, %d SMs; span from the first block's start to the last block's end, median of "
              "15 cold trials\n",
              prop.name, sms);
  std::printf("%-10s %5s %-5s %10s %10s\n", "bytes", "SMs", "how", "span_us", "GB/s");
  std::vector<uint64_t> st(2 * 1024);
  std::size_t cursor = 0;
  const int64_t sizes[] = {2'432'000, 4'864'000}; // about 1 x 8 and 1 x 16 of bf16 151,936
  const int counts[] = {8, 16, 32, 64, sms};
  for (const int64_t raw : sizes) {
    const int64_t bytes = (raw + kChunk - 1) / kChunk * kChunk;
    for (const int k : counts) {
      for (int how = 0; how < 2; ++how) {
        std::vector<double> spans;
        for (int trial = 0; trial < 16; ++trial) {
          if (cursor + bytes > pool)
            cursor = 0;
          const char* p = buf + cursor;
          cursor += (bytes + 4095) / 4096 * 4096;
          if (how == 0)
            read_ld<<<k, kLdThreads>>>(reinterpret_cast<const uint4*>(p), bytes / 16, stamps,
                                       sink);
          else
            read_bulk<<<k, 32, kStages * kChunk>>>(p, bytes, stamps);
          PROBE_CHECK(cudaGetLastError());
          PROBE_CHECK(cudaDeviceSynchronize());
          PROBE_CHECK(cudaMemcpy(st.data(), stamps, sizeof(uint64_t) * 2 * k, cudaMemcpyDeviceToHost));
          if (trial > 0) // the first trial also fetches the code
            spans.push_back(span_us(st, k));
        }
        std::sort(spans.begin(), spans.end());
        const double med = spans[spans.size() / 2];
        std::printf("%-10lld %5d %-5s %10.2f %10.0f\n", static_cast<long long>(bytes), k,
                    how == 0 ? "ld" : "bulk", med, bytes / med / 1e3);
      }
    }
  }
  return 0;
}
