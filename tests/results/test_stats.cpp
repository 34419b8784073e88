// Statistics: percentiles, distributions, per-run and per-cell summaries.
#include "specbench/results.hpp"

#include <gtest/gtest.h>

using namespace specbench;

TEST(Percentile, InterpolatesBetweenClosestRanks) {
  // numpy.percentile([1,2,3,4], [50, 90, 99]) = 2.5, 3.7, 3.97
  const std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 2.5);
  EXPECT_NEAR(percentile(v, 0.9), 3.7, 1e-12);
  EXPECT_NEAR(percentile(v, 0.99), 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(percentile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(percentile({}, 0.5), 0.0);
  EXPECT_DOUBLE_EQ(percentile({7}, 0.99), 7.0);
}

TEST(Summarize, MeanStddevMinMax) {
  const auto d = summarize({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(d.count, 8);
  EXPECT_DOUBLE_EQ(d.mean, 5.0);
  EXPECT_NEAR(d.stddev, 2.138089935299395, 1e-12); // sample stddev (n-1)
  EXPECT_DOUBLE_EQ(d.min, 2);
  EXPECT_DOUBLE_EQ(d.max, 9);
  EXPECT_DOUBLE_EQ(d.p50, 4.5);
  const auto one = summarize({3});
  EXPECT_EQ(one.count, 1);
  EXPECT_DOUBLE_EQ(one.stddev, 0);
  EXPECT_EQ(summarize({}).count, 0);
}

namespace {
RequestMetrics req(int run, int index, double start, double ttft, double e2e, int out,
                   int64_t verify, bool ok = true) {
  RequestMetrics r;
  r.run = run;
  r.index = index;
  r.start_s = start;
  r.ttft_s = ttft;
  r.e2e_s = e2e;
  r.output_tokens = out;
  r.verify_steps = verify;
  r.ok = ok;
  if (!ok)
    r.error = "boom";
  return r;
}
} // namespace

TEST(RequestMetrics, TpotExcludesFirstToken) {
  auto r = req(0, 0, 0, 0.5, 2.5, 11, -1);
  EXPECT_DOUBLE_EQ(r.tpot_s(), 0.2);
  r.output_tokens = 1;
  EXPECT_DOUBLE_EQ(r.tpot_s(), 0.0);
}

TEST(SummarizeRuns, ThroughputIsTokensOverRunWallTime) {
  // Run 0: two overlapping requests from t=0 to t=2 -> 30 tokens / 2 s.
  // Run 1: one request 1..3 ok (10 tokens), one failed (tokens ignored).
  std::vector<RequestMetrics> reqs = {
      req(0, 0, 0.0, 0.1, 1.0, 10, 5), req(0, 1, 0.5, 0.1, 1.5, 20, 4),
      req(1, 0, 1.0, 0.1, 2.0, 10, -1), req(1, 1, 1.0, 0.1, 0.5, 99, 1, false)};
  const auto runs = summarize_runs(reqs, 3);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].requests, 2);
  EXPECT_EQ(runs[0].failed, 0);
  EXPECT_EQ(runs[0].output_tokens, 30);
  EXPECT_DOUBLE_EQ(runs[0].duration_s, 2.0);
  EXPECT_DOUBLE_EQ(runs[0].output_tokens_per_s, 15.0);
  ASSERT_TRUE(runs[0].acceptance_length.has_value());
  EXPECT_DOUBLE_EQ(*runs[0].acceptance_length, 30.0 / 9.0); // verify-weighted, not mean of ratios
  EXPECT_EQ(runs[1].failed, 1);
  EXPECT_EQ(runs[1].output_tokens, 10);
  EXPECT_FALSE(runs[1].acceptance_length.has_value()); // no ok request reported verify steps
  EXPECT_EQ(runs[2].requests, 0);
  EXPECT_DOUBLE_EQ(runs[2].output_tokens_per_s, 0.0);

  const auto cell = summarize_cell(reqs, runs);
  EXPECT_EQ(cell.runs, 3);
  EXPECT_EQ(cell.requests, 4);
  EXPECT_EQ(cell.failed, 1);
  EXPECT_EQ(cell.ttft_s.count, 3); // the failed request is not in latency figures
  EXPECT_EQ(cell.output_tokens_per_s.count, 3);
  ASSERT_TRUE(cell.acceptance_length.has_value());
  EXPECT_DOUBLE_EQ(*cell.acceptance_length, 30.0 / 9.0);
  EXPECT_EQ(cell.acceptance_length_runs.count, 1);
}

// An ok answer of zero tokens (EOS first, without ignore_eos) has no first token: its TTFT of 0
// used to enter the cell's TTFT figures. Its latency still counts.
TEST(SummarizeCell, AnAnswerWithoutTokensHasNoTimeToFirstToken) {
  const std::vector<RequestMetrics> rs = {req(0, 0, 0.0, 0.2, 1.0, 10, -1),
                                          req(0, 1, 0.0, 0.0, 0.05, 0, -1)};
  const auto c = summarize_cell(rs, summarize_runs(rs, 1));
  EXPECT_EQ(c.ttft_s.count, 1);
  EXPECT_DOUBLE_EQ(c.ttft_s.min, 0.2);
  EXPECT_EQ(c.e2e_s.count, 2);
}
