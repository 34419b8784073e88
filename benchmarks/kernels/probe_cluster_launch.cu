// What does launching a kernel as thread-block clusters cost, per call, in a CUDA graph of
// back-to-back calls? The "rows" tree-sampling kernel needs clusters (its blocks hand their
// entries over through distributed shared memory), and with programmatic dependent launch it saved
// 0.75 us per call against 0.35 for the plain read-once kernel (docs/kernels.md), as if a cluster
// launch cost more between calls. This probe launches the same kernels with and without the
// cluster attribute: two that read a tree-sampling-1x4-sized input (2.43 MB, cold: each call
// reads the next of enough buffers to cover 2.6x a 60 MB L2) with 16-byte streaming loads all in
// flight at once, grid-stride or in the rows kernel's own segments, and an empty one. Per call: the
// median over trials of one graph replay of 32 calls, divided by 32; variants interleaved trial by
// trial.
//   build/benchmarks/kernels/probe_cluster_launch
#include "probe_support.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr int64_t kVocab = 151936;
constexpr int64_t kBytes = 4 * kVocab * 4; // tree sampling 1 x 4: four fp32 rows
constexpr int kCallsPerGraph = 32;
constexpr int kTrials = 25;

// Writes the block's sum of `acc` to out[blockIdx.x], so that no load is dropped.
__device__ void store_block_sum(float acc, float* out) {
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xFFFFFFFFu, acc, o);
  __shared__ float red[32];
  if ((threadIdx.x & 31) == 0)
    red[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w)
      t += red[w];
    out[blockIdx.x] = t;
  }
}

// kLoads 16-byte loads in flight per thread, grid-stride; one float per block goes to `out` so
// that no load is dropped.
template <int kLoads> __global__ void read_kernel(const float4* p, int64_t n4, float* out) {
  float acc = 0.0f;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += kLoads * stride) {
    float4 v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const int64_t j = i + u * stride;
      v[u] = j < n4 ? __ldcs(p + j) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u)
      acc += v[u].x + v[u].y + v[u].z + v[u].w;
  }
  store_block_sum(acc, out);
}

__global__ void empty_kernel(const float4*, int64_t, float*) {}

// The rows kernel's own load pattern at 1 x 4 (V = 151,936, four rows, one row per 15 blocks):
// warp 0 loads nothing (it walks the tree there), and warps 1.. take the 1,024-float segments
// k, k + 15, ... of their block's row, block k of 15 of the row. kWarpsPerSeg warps share a
// segment, each with 8 / kWarpsPerSeg 16-byte loads per lane (1: the kernel as it is). The grid
// must be 60 blocks: four rows of 15.
template <int kWarpsPerSeg> __global__ void read_segments(const float4* p, int64_t, float* out) {
  constexpr int kLoads = 8 / kWarpsPerSeg;
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  const int row = static_cast<int>(blockIdx.x / 15), rank = static_cast<int>(blockIdx.x % 15);
  float acc = 0.0f;
  if (warp > 0) {
    const int64_t seg = static_cast<int64_t>((warp - 1) / kWarpsPerSeg) * 15 + rank;
    const int part = (warp - 1) % kWarpsPerSeg;
    float4 v[kLoads];
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const int64_t e = seg * 1024 + (part * kLoads + j) * 128 + lane * 4; // float in the row
      v[j] = e < kVocab ? __ldcs(p + (row * kVocab + e) / 4) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int j = 0; j < kLoads; ++j)
      acc += v[j].x + v[j].y + v[j].z + v[j].w;
  }
  store_block_sum(acc, out);
}

struct Variant {
  std::string name;
  void (*kernel)(const float4*, int64_t, float*);
  int grid, threads, cluster; // cluster 0: no cluster attribute
};

void launch(const Variant& v, const float4* p, float* out, cudaStream_t s) {
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr{};
  cfg.gridDim = dim3(static_cast<unsigned>(v.grid));
  cfg.blockDim = dim3(static_cast<unsigned>(v.threads));
  cfg.stream = s;
  if (v.cluster > 0) {
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = static_cast<unsigned>(v.cluster);
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  PROBE_CHECK(cudaLaunchKernelEx(&cfg, v.kernel, p, kBytes / 16, out));
}

} // namespace

int main() {
  int dev = 0;
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDevice(&dev));
  PROBE_CHECK(cudaGetDeviceProperties(&prop, dev));
  const int64_t l2 = prop.l2CacheSize > 0 ? prop.l2CacheSize : 64LL << 20;
  const int nbuf = static_cast<int>((l2 * 26 / 10 + kBytes - 1) / kBytes) + 1;
  char* base = nullptr;
  float* out = nullptr;
  PROBE_CHECK(cudaMalloc(&base, nbuf * kBytes));
  PROBE_CHECK(cudaMemset(base, 0, nbuf * kBytes));
  PROBE_CHECK(cudaMalloc(&out, 4096 * sizeof(float)));
  for (auto k : {read_kernel<4>, read_kernel<8>, empty_kernel, read_segments<1>, read_segments<2>})
    PROBE_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));

  // Read-once's own shape (149 blocks of 256 threads, four loads each), and the rows kernel's at
  // 1 x 4 (four clusters of 15 blocks of 11 warps; eight loads each covers the input in one round).
  const std::vector<Variant> variants = {
      {"read 149x256 plain", read_kernel<4>, 149, 256, 0},
      {"read 149x256 cluster 1", read_kernel<4>, 149, 256, 1},
      {"read 60x352 plain", read_kernel<8>, 60, 352, 0},
      {"read 60x352 cluster 1", read_kernel<8>, 60, 352, 1},
      {"read 60x352 cluster 2", read_kernel<8>, 60, 352, 2},
      {"read 60x352 cluster 4", read_kernel<8>, 60, 352, 4},
      {"read 60x352 cluster 15", read_kernel<8>, 60, 352, 15},
      {"read 120x192 plain", read_kernel<8>, 120, 192, 0},
      {"empty 60x352 plain", empty_kernel, 60, 352, 0},
      {"empty 60x352 cluster 1", empty_kernel, 60, 352, 1},
      {"empty 60x352 cluster 15", empty_kernel, 60, 352, 15},
      // The rows kernel's pattern: 10 segments per block, one or two warps per segment.
      {"segs 60x352 1 warp/seg cl 15", read_segments<1>, 60, 352, 15},
      {"segs 60x672 2 warps/seg cl 15", read_segments<2>, 60, 672, 15},
      {"segs 60x672 2 warps/seg plain", read_segments<2>, 60, 672, 0},
  };

  cudaStream_t s;
  PROBE_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<cudaGraphExec_t> execs;
  int next = 0; // the buffer the next captured call reads: rotation continues across graphs
  for (const Variant& v : variants) {
    cudaGraph_t g;
    PROBE_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int c = 0; c < kCallsPerGraph; ++c) {
      launch(v, reinterpret_cast<const float4*>(base + static_cast<int64_t>(next) * kBytes), out,
             s);
      next = (next + 1) % nbuf;
    }
    PROBE_CHECK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t e;
    PROBE_CHECK(cudaGraphInstantiate(&e, g, 0));
    PROBE_CHECK(cudaGraphDestroy(g));
    execs.push_back(e);
  }
  cudaEvent_t t0, t1;
  PROBE_CHECK(cudaEventCreate(&t0));
  PROBE_CHECK(cudaEventCreate(&t1));
  std::vector<std::vector<float>> us(variants.size());
  for (int trial = -2; trial < kTrials; ++trial) // two warm-up rounds
    for (size_t i = 0; i < variants.size(); ++i) {
      PROBE_CHECK(cudaEventRecord(t0, s));
      PROBE_CHECK(cudaGraphLaunch(execs[i], s));
      PROBE_CHECK(cudaEventRecord(t1, s));
      PROBE_CHECK(cudaEventSynchronize(t1));
      float ms = 0.0f;
      PROBE_CHECK(cudaEventElapsedTime(&ms, t0, t1));
      if (trial >= 0)
        us[i].push_back(ms * 1000.0f / kCallsPerGraph);
    }
  std::printf("%s, %d SMs, L2 %lld MB; input %lld bytes, %d buffers; us per call in a graph of %d "
              "back-to-back calls, %d trials\n",
              prop.name, prop.multiProcessorCount, static_cast<long long>(l2 >> 20),
              static_cast<long long>(kBytes), nbuf, kCallsPerGraph, kTrials);
  std::printf("%-32s %8s %8s %8s\n", "variant", "p50", "min", "max");
  for (size_t i = 0; i < variants.size(); ++i) {
    std::vector<float> v = us[i];
    std::sort(v.begin(), v.end());
    std::printf("%-32s %8.3f %8.3f %8.3f\n", variants[i].name.c_str(), v[v.size() / 2], v.front(),
                v.back());
  }
  return 0;
}
