#pragma once
// What the GPU kernel tests share: assertions on CUDA errors and launcher statuses, and the bf16
// rounding the tests use to write logits (torch's float -> bfloat16 conversion).
#include "specbench/status.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x << ": " << cudaGetErrorString(x)
#define STATUS_OK(x)                                                                               \
  do {                                                                                             \
    const ::specbench::Status s_ = (x);                                                            \
    ASSERT_TRUE(s_.is_ok()) << s_.to_string();                                                     \
  } while (0)

namespace specbench::testing {

/// float -> bf16, rounded to nearest even; any NaN becomes the canonical quiet NaN 0x7FC0.
inline uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return 0x7FC0;
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

} // namespace specbench::testing
