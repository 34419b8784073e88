// The GPU-test main's skip reasons: a test of the verification kernels and a test of the
// preflight's probe kernels ask different questions, so an "80;90" build on an A100 runs the
// preflight's GPU test and skips the kernels' with the reason.
#include "specbench/build_info.hpp"
#include "support/gpu_available.hpp"

#include <gtest/gtest.h>

#include <string>

namespace specbench::testing {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(GpuAvailable, ReasonsFollowTheBuild) {
  const std::string kernels = gpu_unavailable_reason(GpuNeed::verification_kernels);
  const std::string probe = gpu_unavailable_reason(GpuNeed::probe_kernels);
  if (!build_info::cuda_compiled) {
    EXPECT_TRUE(contains(kernels, "without CUDA")) << kernels;
    EXPECT_EQ(kernels, probe);
    return;
  }
  // Whatever the machine, the probe needs no more than the kernels do.
  EXPECT_FALSE(kernels.empty() && !probe.empty())
      << "verification kernels available but the probe is not: " << probe;
  if (build_info::kernel_cuda_architectures[0] == '\0') {
    EXPECT_TRUE(contains(kernels, "no sm_90 or newer entry")) << kernels;
    EXPECT_FALSE(contains(probe, "sm_90")) << probe;
  }
  if (!kernels.empty() && probe.empty()) {
    EXPECT_TRUE(contains(kernels, "compute capability") || contains(kernels, "sm_90")) << kernels;
  }
}

} // namespace
} // namespace specbench::testing
