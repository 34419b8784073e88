#pragma once
/// \file fast_div.hpp
/// Division by a divisor that is fixed for a kernel launch, as a multiply and a shift. The host
/// computes the magic number once; the kernel's first loads then no longer wait behind a 32-bit
/// integer division (about 30 dependent instructions on the GPU). Host and device code share it,
/// so the CPU tests check the same arithmetic the kernels run.

#include <cstdint>

#if defined(__CUDACC__)
#define SPECBENCH_FD_HD __host__ __device__ __forceinline__
#else
#define SPECBENCH_FD_HD inline
#endif

namespace specbench::detail {

/// floor(n / d) for 0 <= n < 2^31 and 1 <= d < 2^31. With L = ceil(log2 d) and
/// m = ceil(2^(31 + L) / d) = (2^(31 + L) + e) / d, 0 <= e < d:
///   n * m / 2^(31 + L) = n / d + n * e / (d * 2^(31 + L)),
/// and the second term is below 2^31 / 2^(31 + L) = 2^-L <= 1 / d, while the fraction of n / d is
/// at most 1 - 1 / d: the floor is floor(n / d). m < 2^32 because d > 2^(L - 1).
struct FastDiv {
  uint32_t d = 1; ///< the divisor
  uint32_t m = 0; ///< magic multiplier (unused when d == 1)
  uint32_t s = 0; ///< shift after the high half of the product

  static FastDiv make(uint32_t divisor) {
    FastDiv f;
    f.d = divisor;
    if (divisor > 1) {
      int l = 0; // ceil(log2 divisor)
      while ((1ull << l) < divisor)
        ++l;
      f.m = static_cast<uint32_t>(((1ull << (31 + l)) + divisor - 1) / divisor);
      f.s = static_cast<uint32_t>(l - 1);
    }
    return f;
  }

  SPECBENCH_FD_HD uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t hi = __umulhi(n, m);
#else
    const uint32_t hi = static_cast<uint32_t>((static_cast<uint64_t>(n) * m) >> 32);
#endif
    return d == 1 ? n : hi >> s;
  }
};

} // namespace specbench::detail
