// Small units: the CUDA error table, GPU lists, plan validation, the report's verdicts.
#include "specbench/cuda_errors.hpp"
#include "specbench/preflight.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace specbench {
namespace {
using ::testing::HasSubstr;

TEST(CudaErrors, EveryCodeTheStackRaisesHasNameCauseRemedy) {
  for (int code : {999, 35,  34,  100, 3,   802, 803, 804, 46, 101,
                   209, 222, 700, 715, 719, 214, 220, 226, 2,  304}) {
    const CudaErrorInfo* e = find_cuda_error(code);
    ASSERT_NE(e, nullptr) << code;
    EXPECT_EQ(e->code, code);
    EXPECT_STRNE(e->driver_name, "") << code;
    EXPECT_STRNE(e->runtime_name, "") << code;
    EXPECT_GT(std::string(e->cause).size(), 20u) << code;
    EXPECT_GT(std::string(e->remedy).size(), 10u) << code;
  }
  EXPECT_STREQ(find_cuda_error(999)->runtime_name, "cudaErrorUnknown");
  EXPECT_STREQ(find_cuda_error(209)->driver_name, "CUDA_ERROR_NO_BINARY_FOR_GPU");
  EXPECT_STREQ(find_cuda_error(35)->runtime_name, "cudaErrorInsufficientDriver");
  EXPECT_TRUE(find_cuda_error(700)->poisons_process);
  EXPECT_FALSE(find_cuda_error(802)->poisons_process);
  EXPECT_EQ(find_cuda_error(12345), nullptr);
  EXPECT_EQ(cuda_error_name(12345), "CUDA error 12345");
  const auto& t = cuda_error_table();
  for (size_t i = 1; i < t.size(); ++i)
    EXPECT_LT(t[i - 1].code, t[i].code);
}

TEST(GpuList, ParsesListsAndRanges) {
  EXPECT_EQ(*parse_gpu_list("0,1,2,3"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(*parse_gpu_list("4-7"), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(*parse_gpu_list("0,2-3"), (std::vector<int>{0, 2, 3}));
  EXPECT_FALSE(parse_gpu_list(""));
  EXPECT_FALSE(parse_gpu_list("a"));
  EXPECT_FALSE(parse_gpu_list("3-1"));
  EXPECT_FALSE(parse_gpu_list("1,,2"));
}

TEST(Plan, ValidationRejectsImpossiblePlans) {
  PreflightPlan p;
  EXPECT_TRUE(validate_plan(p));
  p.tp = 0;
  EXPECT_FALSE(validate_plan(p));
  p.tp = 2;
  p.gpus = {1, 1};
  EXPECT_THAT(validate_plan(p).message(), HasSubstr("listed twice"));
  p.gpus = {0, 1, 2};
  EXPECT_THAT(validate_plan(p).message(), HasSubstr("3 GPU(s) listed for tp 2"));
  p.gpus = {};
  p.allocation_bytes = 10;
  EXPECT_FALSE(validate_plan(p));
  PreflightPlan bad;
  bad.tp = -1;
  const PreflightReport r = run_preflight(bad);
  EXPECT_TRUE(r.could_not_run());
  EXPECT_STREQ(r.verdict(), "could-not-run");
  EXPECT_TRUE(r.checks.empty()); // nothing touched
}

TEST(Report, VerdictsAndTable) {
  PreflightReport r;
  EXPECT_TRUE(r.passed());
  EXPECT_STREQ(r.verdict(), "pass");
  CheckResult w;
  w.id = "host.cuda_env";
  w.status = CheckStatus::warn;
  w.summary = "set: CUDA_LAUNCH_BLOCKING";
  r.checks.push_back(w);
  EXPECT_TRUE(r.passed());
  EXPECT_STREQ(r.verdict(), "warn");
  CheckResult f;
  f.id = "cuda.init";
  f.layer = PreflightLayer::cuda_driver;
  f.status = CheckStatus::fail;
  f.summary = "boom";
  f.diagnosis = "why";
  f.remedy = "fix";
  r.checks.push_back(f);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.first_failure()->id, "cuda.init");
  const std::string plain = r.to_table(false);
  EXPECT_THAT(plain, HasSubstr("FAIL"));
  EXPECT_THAT(plain, HasSubstr("verdict: FAIL at layer cuda-driver (cuda.init): boom"));
  EXPECT_EQ(plain.find("\033["), std::string::npos);
  EXPECT_THAT(r.to_table(true), HasSubstr("\033[1;31mFAIL\033[0m"));
}

// A drafter's failed check stops only the cells that load it: it is never the headline over a
// failure of the machine or the target, a host one included, and passed_without_drafter()
// leaves it out.
TEST(Report, TheDraftersFailuresComeLast) {
  const auto failed = [](const char* id, PreflightLayer layer) {
    CheckResult c;
    c.id = id;
    c.layer = layer;
    c.status = CheckStatus::fail;
    return c;
  };
  PreflightReport r;
  r.checks.push_back(failed("model.draft_dir", PreflightLayer::model));
  EXPECT_FALSE(r.passed());
  EXPECT_TRUE(r.passed_without_drafter());
  EXPECT_EQ(r.first_failure()->id, "model.draft_dir");
  r.checks.push_back(failed("host.uvm", PreflightLayer::host));
  EXPECT_FALSE(r.passed_without_drafter());
  EXPECT_EQ(r.first_failure()->id, "host.uvm");
  EXPECT_EQ(r.first_drafter_failure()->id, "model.draft_dir");
  r.checks.push_back(failed("model.weights", PreflightLayer::model));
  EXPECT_EQ(r.first_failure()->id, "model.weights");
  EXPECT_TRUE(is_drafter_check("model.draft_memory_fit"));
  EXPECT_FALSE(is_drafter_check("model.memory_fit"));
}

} // namespace
} // namespace specbench
