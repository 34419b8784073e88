// What does a hand-off between two blocks cost on this GPU? The single-request verifiers end with
// one: every block stores a 64-bit partial, and the reducing block polls the slots with relaxed
// device-scope loads until they are all non-zero. This probe times the two pieces on an idle GPU:
//   chase     one thread follows a random cycle through 4 MiB (resident in L2 after one warm-up
//             pass), one dependent load at a time: the L2 hit latency of `ld.relaxed.gpu` (the
//             drains' load) and of `ld.global.cg`;
//   ping-pong thread 0 of block 0 stores i into flag A and spins until flag B holds i; thread 0 of
//             block k spins until A holds i and stores i into B. One round is two hand-offs
//             (store, seen by a spinning poller). Block k runs on another SM; the flags' lines
//             are varied, since an L2 line lives in one of the L2's two partitions.
//   build-kernels/benchmarks/kernels/probe_handoff
#include "probe_support.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

namespace {

using specbench::probes::now_ns;

__device__ __forceinline__ uint32_t sm_id() {
  uint32_t s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
__device__ __forceinline__ uint32_t ld_relaxed(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t ld_cg(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed(uint32_t* p, uint32_t v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// out: cycles and ns for `steps` dependent loads (after one untimed pass over the same cycle).
template <bool kRelaxed> __global__ void chase(const uint32_t* next, int steps, uint64_t* out) {
  uint32_t i = 0;
  for (int s = 0; s < steps; ++s)
    i = kRelaxed ? ld_relaxed(next + i) : ld_cg(next + i);
  const uint64_t c0 = clock64(), t0 = now_ns();
  for (int s = 0; s < steps; ++s)
    i = kRelaxed ? ld_relaxed(next + i) : ld_cg(next + i);
  const uint64_t c1 = clock64(), t1 = now_ns();
  out[0] = c1 - c0;
  out[1] = t1 - t0;
  out[2] = i; // keeps the chain
}

// Thread 0 of a playing block: `rounds` hand-offs each way, block 0 leading (it stores i into A
// and spins until B holds i; its partner waits for A, then stores into B). A poller gives up once
// `limit` cycles have passed since `c0` (the blocks were not co-resident). Writes the lead's time
// and SM (out[0], out[1]), the partner's SM (out[2]) and out[3] = 1 when a poller gave up; returns
// whether one did.
__device__ bool play(uint32_t* a, uint32_t* b, int rounds, bool lead, uint64_t c0, uint64_t limit,
                     uint64_t* out) {
  bool failed = false;
  const uint64_t t0 = now_ns();
  for (uint32_t i = 1; i <= static_cast<uint32_t>(rounds) && !failed; ++i) {
    if (lead) {
      st_relaxed(a, i);
      while (ld_relaxed(b) != i)
        if (clock64() - c0 > limit) {
          failed = true;
          break;
        }
    } else {
      while (ld_relaxed(a) != i)
        if (clock64() - c0 > limit) {
          failed = true;
          break;
        }
      st_relaxed(b, i);
    }
  }
  const uint64_t t1 = now_ns();
  if (lead) {
    out[0] = t1 - t0;
    out[1] = sm_id();
  } else {
    out[2] = sm_id();
  }
  if (failed)
    out[3] = 1;
  return failed;
}

// Blocks 0 and `partner` play; every other block leaves. out: as play's.
__global__ void ping_pong(uint32_t* a, uint32_t* b, int rounds, int partner, uint64_t* out) {
  if (threadIdx.x != 0 || (blockIdx.x != 0 && static_cast<int>(blockIdx.x) != partner))
    return;
  play(a, b, rounds, blockIdx.x == 0, clock64(), 2000000000ull, out); // ~1 s, then give up
}

// The same with every other block streaming `words` 16-byte vectors of `flood` per pass, pass
// after pass, until block 0 is done: is a hand-off slower while the memory system is busy, as at
// the end of a verifier's pass? (Two blocks per SM, so the pollers share their SMs with flooding
// blocks.)
__global__ void ping_pong_loaded(uint32_t* a, uint32_t* b, int rounds, int partner, uint64_t* out,
                                 const uint4* flood, size_t words, uint32_t* stop) {
  const bool player = blockIdx.x == 0 || static_cast<int>(blockIdx.x) == partner;
  if (!player) {
    uint32_t acc = 0;
    const size_t step = static_cast<size_t>(gridDim.x) * blockDim.x;
    while (ld_relaxed(stop) == 0)
      for (size_t w = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; w < words;
           w += step) {
        const uint4 v = __ldcs(flood + w);
        acc ^= v.x ^ v.w;
      }
    if (acc == 0x12345678u)
      out[4] = acc; // keeps the loads
    return;
  }
  if (threadIdx.x != 0)
    return;
  const bool lead = blockIdx.x == 0;
  const uint64_t c0 = clock64();
  while (clock64() - c0 < 20000) { // let the flood start
  }
  const bool failed = play(a, b, rounds, lead, c0, 4000000000ull, out);
  if (lead || failed) // the flooding blocks stop once the lead is done or a poller gave up
    st_relaxed(stop, 1u);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main() {
  int dev = 0, sms = 0, clock_khz = 0;
  PROBE_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDeviceProperties(&prop, dev));
  PROBE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  PROBE_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  std::printf("%s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);

  // A random cycle over 32,768 lines of 128 bytes (4 MiB): entry line * 32 points at the next line.
  constexpr int kLines = 32768, kPerLine = 32;
  std::vector<uint32_t> order(kLines);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937 rng(7);
  std::shuffle(order.begin() + 1, order.end(), rng);
  std::vector<uint32_t> host(static_cast<size_t>(kLines) * kPerLine, 0u);
  for (int j = 0; j < kLines; ++j)
    host[static_cast<size_t>(order[j]) * kPerLine] = order[(j + 1) % kLines] * kPerLine;
  uint32_t* next = nullptr;
  uint64_t* out = nullptr;
  PROBE_CHECK(cudaMalloc(&next, host.size() * sizeof(uint32_t)));
  PROBE_CHECK(cudaMalloc(&out, 8 * sizeof(uint64_t)));
  PROBE_CHECK(cudaMemcpy(next, host.data(), host.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));
  const int steps = 4096;
  for (int kind = 0; kind < 2; ++kind) {
    std::vector<double> ns, cyc;
    for (int rep = 0; rep < 5; ++rep) {
      if (kind == 0)
        chase<true><<<1, 1>>>(next, steps, out);
      else
        chase<false><<<1, 1>>>(next, steps, out);
      PROBE_CHECK(cudaGetLastError());
      uint64_t h[3];
      PROBE_CHECK(cudaMemcpy(h, out, sizeof(h), cudaMemcpyDeviceToHost));
      cyc.push_back(static_cast<double>(h[0]) / steps);
      ns.push_back(static_cast<double>(h[1]) / steps);
    }
    std::printf("chase %-16s L2 hit: %6.1f cycles, %6.1f ns per dependent load (median of 5)\n",
                kind == 0 ? "ld.relaxed.gpu" : "ld.global.cg", median(cyc), median(ns));
  }

  // Ping-pong: flags on lines A and A + 1 + j (j varies the second line's place in L2).
  uint32_t* flags = nullptr;
  constexpr int kFlagLines = 4096;
  PROBE_CHECK(cudaMalloc(&flags, kFlagLines * 128));
  const int rounds = 2000;
  const int partners[] = {1, 2, sms / 4, sms / 2, sms - 1};
  for (int partner : partners) {
    std::vector<double> per;
    uint64_t sm_a = 0, sm_b = 0;
    for (int j = 0; j < 16; ++j) {
      uint32_t* a = flags + (64 * j) * 32;
      uint32_t* b = flags + (64 * j + 1 + 7 * j) * 32;
      PROBE_CHECK(cudaMemset(flags, 0, kFlagLines * 128));
      PROBE_CHECK(cudaMemset(out, 0, 8 * sizeof(uint64_t)));
      ping_pong<<<sms, 32>>>(a, b, rounds, partner, out);
      PROBE_CHECK(cudaGetLastError());
      uint64_t h[4];
      PROBE_CHECK(cudaMemcpy(h, out, sizeof(h), cudaMemcpyDeviceToHost));
      if (h[3]) {
        std::printf("ping-pong with block %d: a poller gave up (not co-resident?)\n", partner);
        break;
      }
      per.push_back(static_cast<double>(h[0]) / rounds / 2.0);
      sm_a = h[1];
      sm_b = h[2];
    }
    if (per.empty())
      continue;
    std::printf("ping-pong SM %3llu <-> SM %3llu: one hand-off (store, seen by a spinning poller) "
                "%6.1f ns median, %6.1f min, %6.1f max over 16 line pairs\n",
                static_cast<unsigned long long>(sm_a), static_cast<unsigned long long>(sm_b),
                median(per), *std::min_element(per.begin(), per.end()),
                *std::max_element(per.begin(), per.end()));
  }
  // Under load: 1 GiB streamed by every other block while two blocks play.
  {
    const size_t flood_bytes = size_t{1} << 30;
    uint4* flood = nullptr;
    uint32_t* stop = nullptr;
    PROBE_CHECK(cudaMalloc(&flood, flood_bytes));
    PROBE_CHECK(cudaMemset(flood, 1, flood_bytes));
    PROBE_CHECK(cudaMalloc(&stop, 128));
    std::vector<double> per;
    uint64_t sm_a = 0, sm_b = 0;
    const int partner = sms + sms / 2; // the second block on a far SM
    for (int j = 0; j < 8; ++j) {
      uint32_t* a = flags + (64 * j) * 32;
      uint32_t* b = flags + (64 * j + 1 + 7 * j) * 32;
      PROBE_CHECK(cudaMemset(flags, 0, kFlagLines * 128));
      PROBE_CHECK(cudaMemset(out, 0, 8 * sizeof(uint64_t)));
      PROBE_CHECK(cudaMemset(stop, 0, 128));
      ping_pong_loaded<<<2 * sms, 256>>>(a, b, 500, partner, out, flood, flood_bytes / 16, stop);
      PROBE_CHECK(cudaGetLastError());
      uint64_t h[4];
      PROBE_CHECK(cudaMemcpy(h, out, sizeof(h), cudaMemcpyDeviceToHost));
      if (h[3]) {
        std::printf("ping-pong under load: a poller gave up\n");
        break;
      }
      per.push_back(static_cast<double>(h[0]) / 500 / 2.0);
      sm_a = h[1];
      sm_b = h[2];
    }
    if (!per.empty())
      std::printf("ping-pong SM %3llu <-> SM %3llu while every other block streams 1 GiB: one "
                  "hand-off %6.1f ns median, %6.1f min, %6.1f max over 8 line pairs\n",
                  static_cast<unsigned long long>(sm_a), static_cast<unsigned long long>(sm_b),
                  median(per), *std::min_element(per.begin(), per.end()),
                  *std::max_element(per.begin(), per.end()));
    PROBE_CHECK(cudaFree(flood));
    PROBE_CHECK(cudaFree(stop));
  }
  std::printf("SM clock attribute: %d MHz (clocks as found)\n", clock_khz / 1000);
  PROBE_CHECK(cudaFree(next));
  PROBE_CHECK(cudaFree(out));
  PROBE_CHECK(cudaFree(flags));
  return 0;
}
