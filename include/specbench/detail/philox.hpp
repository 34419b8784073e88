#pragma once
/// \file philox.hpp
/// Philox4x32-10 (Salmon et al., SC'11), usable from host and device code, so the CUDA sampling
/// kernels and their CPU references draw exactly the same random numbers.

#include <cstdint>

#if defined(__CUDACC__)
#define SPECBENCH_HD __host__ __device__ __forceinline__
#else
#define SPECBENCH_HD inline
#endif

namespace specbench::detail {

/// Four 32-bit words: a Philox counter or its output block.
struct Philox4 {
  uint32_t x[4]; ///< the words, x[0] first
};

/// The Philox4x32-10 bijection of `counter` under the 64-bit key (k0, k1).
SPECBENCH_HD Philox4 philox4x32_10(Philox4 c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c.x[0];
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c.x[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c = Philox4{{hi1 ^ c.x[1] ^ k0, lo1, hi0 ^ c.x[3] ^ k1, lo0}};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

/// The uniform coin in [0, 1) of (seed, offset, row, tag): counter {offset lo, offset hi, row,
/// tag}, key seed; the top 24 bits of the first output word, so every value is an exact float.
SPECBENCH_HD float philox_uniform(uint64_t seed, uint64_t offset, uint32_t row, uint32_t tag) {
  const Philox4 r = philox4x32_10(
      Philox4{{static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32), row, tag}},
      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return static_cast<float>(r.x[0] >> 8) * (1.0f / 16777216.0f);
}

/// The two coins of one segment of the segment-race draw, from one Philox block: `race`, the top
/// 23 bits of the first word as an odd multiple of 2^-24, exact in float and never 0 or 1, so -ln
/// of it is finite and positive (the exponential of the race); and `draw` in [0, 1) from the
/// second word, as philox_uniform takes the first. One Philox run per segment instead of two.
struct SegmentCoins {
  float race; ///< the race coin (its -ln is the segment's exponential)
  float draw; ///< the in-segment draw coin
};
SPECBENCH_HD SegmentCoins philox_segment_coins(uint64_t seed, uint64_t offset, uint32_t row,
                                               uint32_t tag) {
  const Philox4 r = philox4x32_10(
      Philox4{{static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32), row, tag}},
      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return SegmentCoins{static_cast<float>(((r.x[0] >> 9) << 1) | 1u) * (1.0f / 16777216.0f),
                      static_cast<float>(r.x[1] >> 8) * (1.0f / 16777216.0f)};
}

} // namespace specbench::detail
