// Main for GPU tests: when this machine cannot run CUDA work, print why and exit with the skip
// code (77, CTest SKIP_RETURN_CODE) so the test shows as skipped, never as passed.
// SPECBENCH_GPU_TEST_PROBE_ONLY: the test needs the preflight's probe kernels, not the
// verification kernels (so it runs on GPUs older than Hopper too).
#include "support/gpu_available.hpp"

#include <cstdio>
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const auto need = SPECBENCH_GPU_TEST_PROBE_ONLY
                        ? specbench::testing::GpuNeed::probe_kernels
                        : specbench::testing::GpuNeed::verification_kernels;
  const std::string reason = specbench::testing::gpu_unavailable_reason(need);
  if (!reason.empty()) {
    std::printf("SKIPPED: %s\n", reason.c_str());
    return 77;
  }
  return RUN_ALL_TESTS();
}
