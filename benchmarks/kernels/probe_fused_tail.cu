// Where a single-request fused greedy call spends its time. Builds the call up one stage at a
// time (read + per-block partial, + arrival atomic, + last-block reduction, + tree walk) with the
// fused kernel's own structure and times each stage per call in CUDA graphs of back-to-back
// launches, cold (inputs rotated through more than twice the L2) and warm. The differences
// between rows are the cost of each stage; docs/kernels.md quotes them.
//   build/benchmarks/kernels/probe_fused_tail
#include "../../kernels/common.cuh" // the fused kernel's own argmax keys, reductions and arrival

#include <cuda_bf16.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

using namespace specbench::kernels::detail;

constexpr int64_t kVocab = 151936;
constexpr int kThreads = 256, kUnroll = 4, kMaxNodes = 64;

enum Stage : int { kRead = 0, kArrive = 1, kReduce = 2, kWalk = 3 };

struct Args {
  const __nv_bfloat16* x;
  const int* parents;
  const int* tokens;
  int nodes, splits;
  int64_t chunk;
  int *path, *accepted, *bonus, *sink, *target;
  unsigned* counter;
  unsigned long long* partials;
};

template <int kStage> __global__ void __launch_bounds__(kThreads) staged_call(Args a) {
  const int row = blockIdx.x / a.splits, split = blockIdx.x - row * a.splits;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int64_t start = split * a.chunk, end = min(kVocab, start + a.chunk);
  const __nv_bfloat16* x = a.x + row * kVocab;
  __shared__ int par[kMaxNodes], tok[kMaxNodes], tgt[kMaxNodes];
  __shared__ uint64_t red[kThreads / 32];
  __shared__ bool is_last;
  if (kStage == kWalk && tid < a.nodes) {
    par[tid] = a.parents[tid];
    tok[tid] = a.tokens[tid];
  }
  float best = -INFINITY;
  int64_t best_i = 0x7FFFFFFF;
  constexpr int64_t step = kThreads * 8;
  for (int64_t base = start + tid * 8; base < end; base += kUnroll * step) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (base + u * step < end)
        v[u] = __ldcs(reinterpret_cast<const uint4*>(x + base + u * step));
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (base + u * step < end)
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const uint32_t w = (&v[u].x)[e >> 1];
          const float f = __uint_as_float((e & 1) ? (w & 0xFFFF0000u) : (w << 16));
          if (f > best) {
            best = f;
            best_i = base + u * step + e;
          }
        }
  }
  uint64_t key =
      best_i == 0x7FFFFFFF ? 0ull : pack_argmax(float_key(best), static_cast<uint32_t>(best_i));
  key = warp_max_packed(key);
  if (lane == 0)
    red[warp] = key;
  __syncthreads();
  if (tid < 32) {
    key = warp_max_packed(tid < kThreads / 32 ? red[tid] : 0ull);
    if (tid == 0) {
      a.partials[row * a.splits + split] = key;
      if (kStage >= kArrive)
        is_last = arrive_last(a.counter, static_cast<uint32_t>(a.nodes * a.splits));
    }
  }
  if (kStage == kRead)
    return;
  __syncthreads();
  if (!is_last)
    return;
  if (kStage >= kReduce) {
    for (int r = warp; r < a.nodes; r += kThreads / 32) {
      const unsigned long long* p = a.partials + r * a.splits;
      const uint64_t v0 = lane < a.splits ? __ldcg(p + lane) : 0ull;
      const uint64_t v1 = lane + 32 < a.splits ? __ldcg(p + lane + 32) : 0ull;
      const uint64_t m = warp_max_packed(v0 > v1 ? v0 : v1);
      if (lane == 0) {
        tgt[r] = packed_index(m);
        a.target[r] = tgt[r];
      }
    }
    __syncthreads();
  }
  if (kStage == kWalk && tid < 32) { // a chain walk: accept while draft i matches target i - 1
    const bool match =
        lane > 0 && lane < a.nodes && par[lane] == lane - 1 && tok[lane] == tgt[lane - 1];
    const unsigned miss = ~__ballot_sync(~0u, match) & ~1u;
    const int len = min(__ffs(miss) - 2, a.nodes - 1);
    if (lane < a.nodes)
      a.path[lane] = lane <= len ? lane : -1;
    if (lane == 0) {
      *a.accepted = len;
      *a.bonus = tgt[len];
    }
  } else if (tid == 0) {
    *a.sink = kStage >= kReduce ? tgt[0] : 1;
  }
  if (tid == 0)
    *a.counter = 0;
}

__global__ void empty_kernel() {}

__global__ void fill(__nv_bfloat16* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i % (16 * kVocab)) * 2654435761u;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    x[i] = __float2bfloat16(static_cast<float>(h & 0xFFFF) / 65536.0f * 20.0f - 10.0f);
  }
}

// Microseconds per call: `calls` launches captured in a graph, replayed back to back.
template <class F> float per_call_us(F launch, int calls, int replays) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaGraph_t g;
  cudaGraphExec_t ge;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < calls; ++i)
    launch(i, s);
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&ge, g, 0);
  for (int w = 0; w < 3; ++w)
    cudaGraphLaunch(ge, s);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0, s);
  for (int r = 0; r < replays; ++r)
    cudaGraphLaunch(ge, s);
  cudaEventRecord(e1, s);
  cudaEventSynchronize(e1);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  return ms * 1000.0f / (calls * replays);
}

} // namespace

int main() {
  int dev_count = 0;
  if (cudaGetDeviceCount(&dev_count) != cudaSuccess || dev_count == 0) {
    std::printf("SKIPPED: no usable CUDA device\n");
    return 0;
  }
  // Every copy holds the same values (so the walk sees the same targets), at different addresses.
  const int copies = 40; // 40 x 4.9 MB (1 x 16 bf16 rows) = 194 MB, over 3x the H200's L2
  const std::size_t copy_elems = 16 * kVocab;
  __nv_bfloat16* x = nullptr;
  int *par, *tok, *path, *acc, *bonus, *sink, *target;
  unsigned* counter;
  unsigned long long* partials;
  if (cudaMalloc(&x, copy_elems * copies * 2) != cudaSuccess) {
    std::printf("out of device memory\n");
    return 1;
  }
  fill<<<1024, 256>>>(x, static_cast<int64_t>(copy_elems) * copies);
  cudaMalloc(&par, 4 * kMaxNodes);
  cudaMalloc(&tok, 4 * kMaxNodes);
  cudaMalloc(&path, 4 * kMaxNodes);
  cudaMalloc(&target, 4 * kMaxNodes);
  cudaMalloc(&acc, 4);
  cudaMalloc(&bonus, 4);
  cudaMalloc(&sink, 4);
  cudaMalloc(&counter, 4);
  cudaMemset(counter, 0, 4);
  cudaMalloc(&partials, 8 * kMaxNodes * 1024);
  std::vector<int> hp(kMaxNodes), ht(kMaxNodes, 0);
  for (int i = 0; i < kMaxNodes; ++i)
    hp[i] = i - 1; // a chain
  cudaMemcpy(par, hp.data(), 4 * kMaxNodes, cudaMemcpyHostToDevice);
  cudaDeviceSynchronize();
  std::printf("empty kernel: %.2f us per call\n",
              per_call_us([](int, cudaStream_t s) { empty_kernel<<<1, 32, 0, s>>>(); }, 100, 20));

  for (int nodes : {8, 16}) {
    Args a{};
    a.splits = greedy_splits(nodes, kVocab, &a.chunk); // the shipped split rule
    a.parents = par;
    a.tokens = tok;
    a.nodes = nodes;
    a.path = path;
    a.accepted = acc;
    a.bonus = bonus;
    a.sink = sink;
    a.target = target;
    a.counter = counter;
    a.partials = partials;
    const int blocks = nodes * a.splits;
    auto time = [&](auto kernel, const char* name) {
      const float cold = per_call_us(
          [&](int i, cudaStream_t s) {
            Args c = a;
            c.x = x + static_cast<std::size_t>(i % copies) * copy_elems;
            kernel<<<blocks, kThreads, 0, s>>>(c);
          },
          copies, 5);
      const float warm = per_call_us(
          [&](int, cudaStream_t s) {
            Args c = a;
            c.x = x;
            kernel<<<blocks, kThreads, 0, s>>>(c);
          },
          100, 5);
      std::printf("1 x %-2d %-34s cold %5.2f  warm %5.2f us\n", nodes, name, cold, warm);
    };
    // Drafts that all match, so the walk goes to the end: tokens[i] = target of node i - 1.
    time(staged_call<kReduce>, "(targets for the drafts)");
    std::vector<int> tg(nodes);
    cudaMemcpy(tg.data(), target, 4 * nodes, cudaMemcpyDeviceToHost);
    for (int i = 1; i < nodes; ++i)
      ht[i] = tg[i - 1];
    cudaMemcpy(tok, ht.data(), 4 * kMaxNodes, cudaMemcpyHostToDevice);
    std::printf("1 x %d: %d blocks of %d threads, %d splits per row\n", nodes, blocks, kThreads,
                a.splits);
    time(staged_call<kRead>, "read + per-block partial");
    time(staged_call<kArrive>, "+ arrival atomic (acq_rel)");
    time(staged_call<kReduce>, "+ last block reduces partials");
    time(staged_call<kWalk>, "+ walk and outputs");
    int accepted = -1;
    cudaMemcpy(&accepted, acc, 4, cudaMemcpyDeviceToHost);
    std::printf("1 x %d: accepted %d of %d drafts\n", nodes, accepted, nodes - 1);
  }
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  return 0;
}
