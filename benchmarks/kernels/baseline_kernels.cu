#include "baseline_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace specbench::bench {
namespace {

__device__ __forceinline__ uint32_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

__global__ void fill_bf16_kernel(uint16_t* x, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t h = mix(static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + seed);
    // Sum of 4 bytes -> roughly normal, scaled to about N(0, 3).
    const float v = ((h & 255) + ((h >> 8) & 255) + ((h >> 16) & 255) + (h >> 24) - 510.0f) / 49.0f;
    x[i] = __bfloat16_as_ushort(__float2bfloat16(v));
  }
}

__global__ void fill_f32_kernel(float* x, int64_t n, uint32_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] =
        (mix(static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + seed) >> 8) * (scale / 16777216.0f);
}

__global__ void plant_bf16_kernel(uint16_t* x, int64_t rows, int64_t vocab, const int32_t* idx) {
  const int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (r < rows)
    x[r * vocab + idx[r]] = __bfloat16_as_ushort(__float2bfloat16(30.0f));
}

// Row r of the LM head's input is the unit vector e_r, and weight [idx[r], r] is 30: the GEMM's
// row r is then column r of the weights, with its maximum at idx[r].
__global__ void plant_lm_head_kernel(uint16_t* weights, uint16_t* hidden_states, int rows,
                                     int hidden, const int32_t* idx) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    weights[int64_t(idx[r]) * hidden + r] = __bfloat16_as_ushort(__float2bfloat16(30.0f));
    hidden_states[int64_t(r) * hidden + r] = __bfloat16_as_ushort(__float2bfloat16(1.0f));
  }
}

__global__ void plant_f32_kernel(float* x, int64_t rows, int64_t vocab, const int32_t* idx,
                                 float value) {
  const int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (r < rows)
    x[r * vocab + idx[r]] += value;
}

__global__ void bf16_to_f32_kernel(const uint4* in, float4* out, int64_t n8) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n8;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint4 v = in[i];
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    out[2 * i] = make_float4(__uint_as_float(w[0] << 16), __uint_as_float(w[0] & 0xFFFF0000u),
                             __uint_as_float(w[1] << 16), __uint_as_float(w[1] & 0xFFFF0000u));
    out[2 * i + 1] = make_float4(__uint_as_float(w[2] << 16), __uint_as_float(w[2] & 0xFFFF0000u),
                                 __uint_as_float(w[3] << 16), __uint_as_float(w[3] & 0xFFFF0000u));
  }
}

// torch.argmax's order for (value, index) pairs: a NaN beats any number (the first NaN wins),
// otherwise the larger value, and on a tie the lower index.
__device__ __forceinline__ bool argmax_before(float v, int64_t i, float bv, int64_t bi) {
  if (v != v)
    return bv == bv || i < bi;
  if (bv != bv)
    return false;
  return v > bv || (v == bv && i < bi);
}

// One block per row, as torch.argmax reduces a row this long (SGLang's row_argmax was written
// because of that): 512 threads, 16-byte loads, four of them in flight per thread with one running
// first maximum each, like torch's reduce (4-wide input vectors, 4 values unrolled per thread).
// Earlier versions loaded one float at a time, which made this baseline 3-6x slower than
// torch.argmax at a few rows; the deployed column must be the deployed path, not a strawman.
constexpr int kArgmaxThreads = 512;
__global__ void __launch_bounds__(kArgmaxThreads) argmax_rows_kernel(const float* x, int64_t vocab,
                                                                     int64_t* out) {
  const float* row = x + blockIdx.x * vocab;
  const int t = threadIdx.x;
  float best[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  int64_t idx[4] = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
  // Each slot k scans its own elements in increasing index order, so a strict > (or the first
  // NaN) keeps its first maximum; the slots are merged with the full order below.
  // (idx == INT64_MAX: nothing taken yet, so a row of -inf still answers its first index.)
  auto take = [&](int k, float v, int64_t i) {
    if (v > best[k] || (v != v && best[k] == best[k]) || idx[k] == INT64_MAX) {
      best[k] = v;
      idx[k] = i;
    }
  };
  const bool vec = (vocab % 4) == 0 && (reinterpret_cast<uintptr_t>(row) % 16) == 0;
  int64_t tail = 0;
  if (vec) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    const int64_t n4 = vocab / 4;
    constexpr int64_t kStride = 4 * kArgmaxThreads;
    int64_t base = 0;
    for (; base + kStride <= n4; base += kStride) {
      float4 v[4];
#pragma unroll
      for (int k = 0; k < 4; ++k)
        v[k] = __ldg(row4 + base + t + k * kArgmaxThreads);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int64_t i = 4 * (base + t + k * kArgmaxThreads);
        take(k, v[k].x, i);
        take(k, v[k].y, i + 1);
        take(k, v[k].z, i + 2);
        take(k, v[k].w, i + 3);
      }
    }
    for (int64_t j = base + t; j < n4; j += kArgmaxThreads) {
      const float4 v = __ldg(row4 + j);
      take(0, v.x, 4 * j);
      take(0, v.y, 4 * j + 1);
      take(0, v.z, 4 * j + 2);
      take(0, v.w, 4 * j + 3);
    }
    tail = vocab; // nothing left over
  }
  for (int64_t i = tail + t; i < vocab; i += kArgmaxThreads)
    take(0, __ldg(row + i), i);
  float b = best[0];
  int64_t bi = idx[0];
#pragma unroll
  for (int k = 1; k < 4; ++k)
    if (argmax_before(best[k], idx[k], b, bi)) {
      b = best[k];
      bi = idx[k];
    }
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xFFFFFFFFu, b, o);
    const int64_t oi = __shfl_xor_sync(0xFFFFFFFFu, bi, o);
    if (argmax_before(ov, oi, b, bi)) {
      b = ov;
      bi = oi;
    }
  }
  __shared__ float sv[kArgmaxThreads / 32];
  __shared__ int64_t si[kArgmaxThreads / 32];
  if ((t & 31) == 0) {
    sv[t >> 5] = b;
    si[t >> 5] = bi;
  }
  __syncthreads();
  if (t == 0) {
    for (int w = 1; w < kArgmaxThreads / 32; ++w)
      if (argmax_before(sv[w], si[w], b, bi)) {
        b = sv[w];
        bi = si[w];
      }
    out[blockIdx.x] = bi;
  }
}

// SGLang's walk: a single thread follows first-child / next-sibling lists in global memory.
__global__ void walk_kernel(int32_t* predicts, int32_t* accept_index, int32_t* accept_num,
                            const int64_t* candidates, const int64_t* retrive_index,
                            const int64_t* next_token, const int64_t* next_sibling,
                            const int64_t* target_predict, int nodes, int steps) {
  const int b = blockIdx.x;
  int64_t last_g = retrive_index[b * nodes];
  accept_index[b * steps] = static_cast<int32_t>(last_g);
  int64_t cur = 0;
  int num = 0;
  for (int j = 1; j < steps; ++j) {
    int64_t c = next_token[b * nodes + cur];
    const int64_t want = target_predict[last_g];
    bool found = false;
    while (c != -1) {
      const int64_t g = retrive_index[b * nodes + c];
      if (candidates[b * nodes + c] == want) {
        predicts[last_g] = static_cast<int32_t>(want);
        ++num;
        accept_index[b * steps + num] = static_cast<int32_t>(g);
        last_g = g;
        cur = c;
        found = true;
        break;
      }
      c = next_sibling[b * nodes + c];
    }
    if (!found)
      break;
  }
  accept_num[b] = num;
  predicts[last_g] = static_cast<int32_t>(target_predict[last_g]);
}

__global__ void empty() {}

__global__ void busy(unsigned ns, unsigned signal_ns) {
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  bool signalled = signal_ns == 0;
  do {
    __nanosleep(200);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (!signalled && t - t0 >= signal_ns) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
      signalled = true;
    }
  } while (t - t0 < ns);
}

// Reads every input float once (16-byte loads, 4 in flight per thread, grid-stride) and writes
// one partial sum per block: the least a pass over the inputs costs, launch and latency included.
__global__ void read_once_kernel(const float4* a, int64_t na4, const float4* b, int64_t nb4,
                                 float* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory"); // returns at once in a plain launch
#endif
  float acc = 0.0f;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t total = na4 + nb4;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += 4 * stride) {
    float4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int64_t j = i + u * stride;
      v[u] = j < total ? __ldcs(j < na4 ? a + j : b + (j - na4)) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u)
      acc += v[u].x + v[u].y + v[u].z + v[u].w;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); // the loads are done
#endif
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xFFFFFFFFu, acc, o);
  __shared__ float red[8];
  if ((threadIdx.x & 31) == 0)
    red[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int w = 0; w < 8; ++w)
      t += red[w];
    out[blockIdx.x] = t;
  }
}

unsigned grid_for(int64_t n, int per_block) {
  const int64_t g = (n + per_block - 1) / per_block;
  return static_cast<unsigned>(g < 132 * 32 ? (g < 1 ? 1 : g) : 132 * 32);
}

} // namespace

void fill_random_bf16(uint16_t* x, int64_t n, uint32_t seed, CUstream_st* s) {
  fill_bf16_kernel<<<grid_for(n, 256), 256, 0, s>>>(x, n, seed);
}
void fill_random_f32(float* x, int64_t n, uint32_t seed, CUstream_st* s, float scale) {
  fill_f32_kernel<<<grid_for(n, 256), 256, 0, s>>>(x, n, seed, scale);
}
void plant_bf16(uint16_t* logits, int64_t rows, int64_t vocab, const int32_t* idx, CUstream_st* s) {
  plant_bf16_kernel<<<static_cast<unsigned>((rows + 255) / 256), 256, 0, s>>>(logits, rows, vocab,
                                                                              idx);
}
void plant_f32(float* probs, int64_t rows, int64_t vocab, const int32_t* idx, CUstream_st* s,
               float value) {
  plant_f32_kernel<<<static_cast<unsigned>((rows + 255) / 256), 256, 0, s>>>(probs, rows, vocab,
                                                                             idx, value);
}
void plant_lm_head(uint16_t* weights, uint16_t* hidden_states, int rows, int hidden,
                   const int32_t* idx, CUstream_st* s) {
  cudaMemsetAsync(hidden_states, 0, std::size_t(rows) * hidden * 2, s);
  plant_lm_head_kernel<<<(rows + 255) / 256, 256, 0, s>>>(weights, hidden_states, rows, hidden,
                                                           idx);
}
void bf16_to_f32(const uint16_t* in, float* out, int64_t n, CUstream_st* s) {
  // n is a multiple of 8 in every benchmark shape.
  bf16_to_f32_kernel<<<grid_for(n / 8, 256), 256, 0, s>>>(reinterpret_cast<const uint4*>(in),
                                                          reinterpret_cast<float4*>(out), n / 8);
}
void argmax_rows_f32(const float* x, int64_t rows, int64_t vocab, int64_t* out, CUstream_st* s) {
  argmax_rows_kernel<<<static_cast<unsigned>(rows), kArgmaxThreads, 0, s>>>(x, vocab, out);
}
void walk_one_thread(int32_t* predicts, int32_t* accept_index, int32_t* accept_num,
                     const int64_t* candidates, const int64_t* retrive_index,
                     const int64_t* next_token, const int64_t* next_sibling,
                     const int64_t* target_predict, int batch, int nodes, int steps,
                     CUstream_st* s) {
  walk_kernel<<<batch, 1, 0, s>>>(predicts, accept_index, accept_num, candidates, retrive_index,
                                  next_token, next_sibling, target_predict, nodes, steps);
}
void deployed_greedy(const uint16_t* logits, float* f32, int64_t* pred64, int32_t* predicts,
                     int32_t* accept_index, int32_t* accept_num, const int64_t* candidates,
                     const int64_t* retrive_index, const int64_t* next_token,
                     const int64_t* next_sibling, int batch, int nodes, int64_t vocab, int steps,
                     CUstream_st* s) {
  const int64_t rows = int64_t(batch) * nodes;
  bf16_to_f32(logits, f32, rows * vocab, s);
  argmax_rows_f32(f32, rows, vocab, pred64, s);
  walk_one_thread(predicts, accept_index, accept_num, candidates, retrive_index, next_token,
                  next_sibling, pred64, batch, nodes, steps, s);
}
void read_once_f32(const float* a, int64_t na, const float* b, int64_t nb, float* out,
                   int max_blocks, CUstream_st* s, bool programmatic) {
  const int64_t n4 = (na + nb) / 4;
  int64_t g = (n4 + 4 * 256 - 1) / (4 * 256);
  g = g < 1 ? 1 : (g > max_blocks ? max_blocks : g);
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr{};
  cfg.gridDim = dim3(static_cast<unsigned>(g));
  cfg.blockDim = dim3(256);
  cfg.stream = s;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = programmatic ? 1 : 0;
  (void)cudaLaunchKernelEx(&cfg, read_once_kernel, reinterpret_cast<const float4*>(a), na / 4,
                           reinterpret_cast<const float4*>(b), nb / 4, out);
}
void empty_kernel(CUstream_st* s) {
  empty<<<1, 32, 0, s>>>();
}
void busy_kernel(unsigned ns, unsigned signal_ns, CUstream_st* s) {
  busy<<<132, 128, 0, s>>>(ns, signal_ns);
}

} // namespace specbench::bench
