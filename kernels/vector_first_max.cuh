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
  /// Largest of the 8 values as a float (NaN dropped unless every value is NaN), and the packed
  /// bf16 NaN-propagating max folded into `nan_acc`, which is NaN at the end if any value was:
  /// five packed instructions and a shift, where a NaN test per vector cost five more.
  __device__ static float vec_max(const uint4& v, uint32_t& nan_acc) {
    const auto h = [](uint32_t w) { return *reinterpret_cast<const __nv_bfloat162*>(&w); };
    const auto w32 = [](__nv_bfloat162 b) { return *reinterpret_cast<const uint32_t*>(&b); };
    const __nv_bfloat162 m = __hmax2_nan(__hmax2_nan(h(v.x), h(v.y)), __hmax2_nan(h(v.z), h(v.w)));
    nan_acc = w32(__hmax2_nan(h(nan_acc), m));
    // Both halves hold max(lo, hi) afterwards; the low half, shifted up, is the float.
    const uint32_t mw = w32(m);
    const uint32_t both = w32(__hmax2(m, h(__byte_perm(mw, 0, 0x1032))));
    return __uint_as_float(both << 16);
  }
  __device__ static bool has_nan(uint32_t nan_acc) {
    const float lo = __uint_as_float(nan_acc << 16), hi = __uint_as_float(nan_acc & 0xFFFF0000u);
    return (lo != lo) | (hi != hi);
  }
  static constexpr uint32_t kNanAccInit = 0xFF80FF80u; // -inf, -inf
  __device__ static float get(const uint4& v, int e) {
    const uint32_t w = (&v.x)[e >> 1];
    return __uint_as_float((e & 1) ? (w & 0xFFFF0000u) : (w << 16));
  }
  __device__ static float scalar(const __nv_bfloat16* p) { return __bfloat162float(*p); }
};
template <> struct Elem<float> {
  static constexpr int kPerVec = 4;
  /// Largest of the 4 values; `nan_acc` gains a set bit if one is NaN.
  __device__ static float vec_max(const uint4& v, uint32_t& nan_acc) {
    const float a = __uint_as_float(v.x), b = __uint_as_float(v.y), c = __uint_as_float(v.z),
                d = __uint_as_float(v.w);
    nan_acc |= (a != a) | (b != b) | (c != c) | (d != d);
    return fmaxf(fmaxf(a, b), fmaxf(c, d));
  }
  __device__ static bool has_nan(uint32_t nan_acc) { return nan_acc != 0; }
  static constexpr uint32_t kNanAccInit = 0;
  __device__ static float get(const uint4& v, int e) { return __uint_as_float((&v.x)[e]); }
  __device__ static float scalar(const float* p) { return *p; }
};

/// First maximum of one thread's vectors at x + first, x + first + step, ... (below `end`, a
/// multiple of the vector), kUnroll 16-byte streaming loads at a time. Offsets are 32-bit (a
/// block's chunk of one row): 64-bit bounds arithmetic would sit between a block's start and its
/// first loads. Per vector its max comes first, and the vector itself is kept only when that max
/// beats the running one (strict >, so the earliest vector keeps a tie); the position inside the
/// kept vector is found once, at the end. Visiting vectors in increasing index order keeps torch's
/// first maximum. Sets `best` and `best_idx` (the thread's first element when nothing beats -inf;
/// a thread without vectors of its own may report the chunk's last vector, a real element at its
/// real index) and `nan` when any value read was NaN (the caller then finds the first NaN).
/// `issued()` comes after the first kUnroll loads in program order: work that must not delay them
/// (the request's ticket) goes there. Few instructions before the first load and per vector
/// matter: every warp of the pass runs this, and at one request the SMs' issue slots, more than
/// memory, were the limit (docs/kernels.md, the round "Instructions, not bytes").
template <typename T, int kUnroll, class Issued>
__device__ __forceinline__ void vector_first_max(const T* x, int first, int end, int step,
                                                 float& best, int& best_idx, bool& nan,
                                                 Issued&& issued) {
  using E = Elem<T>;
  constexpr int V = E::kPerVec;
  uint4 best_vec = make_uint4(0u, 0u, 0u, 0u);
  int best_base = -1;
  uint32_t nan_acc = E::kNanAccInit;
  if (first < end)
    best_idx = first;
  if (end < V) {
    issued();
    return;
  }
  // Every batch loads kUnroll vectors at once. A load past the end reads the chunk's last vector
  // instead, one 16-byte broadcast per warp: a second sight of a real element at its real index
  // never changes the first maximum (a strict > keeps the earlier sight), so no branch or filler
  // sits between the loads and their use, and the first batch needs no trip count.
  const int last = end - V;
  const auto batch = [&](int base, bool first_batch) {
    uint4 v[kUnroll];
    int at[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      at[u] = min(base + u * step, last);
      v[u] = __ldcs(reinterpret_cast<const uint4*>(x + at[u]));
    }
    if (first_batch)
      issued();
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const float m = E::vec_max(v[u], nan_acc);
      if (m > best) {
        best = m;
        best_vec = v[u];
        best_base = at[u];
      }
    }
  };
  batch(first, true);
#pragma unroll 1
  for (int base = first + kUnroll * step; base < end; base += kUnroll * step)
    batch(base, false);
  nan = E::has_nan(nan_acc);
  if (best_base >= 0) {
    int e = V - 1;
#pragma unroll
    for (int j = V - 1; j >= 0; --j)
      if (E::get(best_vec, j) == best)
        e = j;
    best_idx = best_base + e;
  }
}

/// The same without a hook.
template <typename T, int kUnroll>
__device__ __forceinline__ void vector_first_max(const T* x, int first, int end, int step,
                                                 float& best, int& best_idx, bool& nan) {
  vector_first_max<T, kUnroll>(x, first, end, step, best, best_idx, nan, [] {});
}

} // namespace specbench::kernels::detail
