// The preflight on a real GPU (skips with exit 77 and a reason where there is none): every layer
// up to compute must pass on a healthy machine, with the probe kernel, memcpy and GEMM verified.
#include "specbench/build_info.hpp"
#include "specbench/preflight.hpp"

#include <gtest/gtest.h>

#include <iostream>

namespace specbench {
namespace {

TEST(PreflightGpu, HealthyGpuPassesEveryLayer) {
  PreflightPlan plan;
  plan.tp = 1;
  const PreflightReport r = run_preflight(plan);
  std::cout << r.to_table();
  ASSERT_FALSE(r.could_not_run()) << r.run_error.to_string();
  EXPECT_TRUE(r.passed());
  for (const char* id : {"driver.nvml", "cuda.init", "cuda.count", "cuda.match",
                         "compute.gpu0.context", "compute.gpu0.alloc", "compute.gpu0.kernel",
                         "compute.gpu0.memcpy", "compute.gpu0.bandwidth"}) {
    const CheckResult* c = r.find(id);
    ASSERT_NE(c, nullptr) << id;
    EXPECT_EQ(c->status, CheckStatus::pass) << id << ": " << c->summary;
  }
  ASSERT_FALSE(r.gpus.empty());
  EXPECT_GT(r.gpus[0].bandwidth_gbps, 100.0); // any datacenter GPU copies faster than this
  EXPECT_GT(r.host.cuda_driver_version, 0);
}

} // namespace
} // namespace specbench
