#pragma once
// Per-thread first maximum over 16-byte vectors of bf16 or fp32 values: the inner loop of fused
// greedy verification (verify_fused.cu), shared with probe_fused_geometry so that the probe times
// the shipped loop.

#include <cstdint>
#include <cuda_bf16.h>

namespace specbench::kernels::detail {

/// Element access for one 16-byte vector of T.
template <typename T> struct Elem;
template <> struct Elem<__nv_bfloat16> {
  static constexpr int kPerVec = 8;
  // Largest of the 8 values (any of them when a NaN is among them) and whether one is NaN: a
  // packed-bf16 max tree that lets NaN through, then one fp32 max of its two halves.
  __device__ static float vec_max(const uint4& v, bool* nan) {
    const auto h = [](uint32_t w) { return *reinterpret_cast<const __nv_bfloat162*>(&w); };
    const __nv_bfloat162 m = __hmax2_nan(__hmax2_nan(h(v.x), h(v.y)), __hmax2_nan(h(v.z), h(v.w)));
    const uint32_t mw = *reinterpret_cast<const uint32_t*>(&m);
    const float lo = __uint_as_float(mw << 16), hi = __uint_as_float(mw & 0xFFFF0000u);
    *nan |= (lo != lo) | (hi != hi);
    return fmaxf(lo, hi);
  }
  __device__ static float get(const uint4& v, int e) {
    const uint32_t w = (&v.x)[e >> 1];
    return __uint_as_float((e & 1) ? (w & 0xFFFF0000u) : (w << 16));
  }
  __device__ static float scalar(const __nv_bfloat16* p) { return __bfloat162float(*p); }
};
template <> struct Elem<float> {
  static constexpr int kPerVec = 4;
  __device__ static float vec_max(const uint4& v, bool* nan) {
    const float a = __uint_as_float(v.x), b = __uint_as_float(v.y), c = __uint_as_float(v.z),
                d = __uint_as_float(v.w);
    *nan |= (a != a) | (b != b) | (c != c) | (d != d);
    return fmaxf(fmaxf(a, b), fmaxf(c, d));
  }
  __device__ static float get(const uint4& v, int e) { return __uint_as_float((&v.x)[e]); }
  __device__ static float scalar(const float* p) { return *p; }
};

/// First maximum of one thread's vectors at x + first, x + first + step, ... (below `end`), with
/// kUnroll 16-byte streaming loads in flight. Offsets are 32-bit (a block's chunk of one row):
/// 64-bit bounds arithmetic would sit between a block's start and its first loads. Per vector its
/// max comes first (a few instructions for 8 or 4 values), and the vector itself is kept only
/// when that max beats the running one (strict >, so the earliest vector keeps a tie). The
/// position inside the kept vector is found once, at the end: the first element equal to the max.
/// Visiting vectors in increasing index order keeps torch's first maximum. Sets `best` and
/// `best_idx` (the thread's first element when nothing beats -inf; unchanged when the thread has
/// no element) and ORs any NaN into `nan`.
template <typename T, int kUnroll>
__device__ __forceinline__ void vector_first_max(const T* x, int first, int end, int step,
                                                 float& best, int& best_idx, bool& nan) {
  using E = Elem<T>;
  constexpr int V = E::kPerVec;
  uint4 best_vec = make_uint4(0u, 0u, 0u, 0u);
  int best_base = -1;
  if (first < end)
    best_idx = first;
  for (int base = first; base < end; base += kUnroll * step) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (base + u * step < end)
        v[u] = __ldcs(reinterpret_cast<const uint4*>(x + base + u * step));
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * step < end) {
        const float m = E::vec_max(v[u], &nan);
        if (m > best) {
          best = m;
          best_vec = v[u];
          best_base = base + u * step;
        }
      }
    }
  }
  if (best_base >= 0) {
    int e = V - 1;
#pragma unroll
    for (int j = V - 1; j >= 0; --j)
      if (E::get(best_vec, j) == best)
        e = j;
    best_idx = best_base + e;
  }
}

} // namespace specbench::kernels::detail
