#pragma once
// Checks the server-side figures a run against the simulated server recorded (the runner and
// end-to-end tests share them).
//
// Why the comparison is exact: the sim-server counts, per verify step, the tokens it commits and
// the step itself (specbench_sim:spec_accepted_tokens_total, spec_verify_steps_total), and counts
// them before the tokens are published, so a client never sees an answer the counters do not
// show yet. Nothing else talks to a cell's server while a run is measured (the readiness probe
// and the warm-up come before the first scrape; the watchdog only asks /health). So the deltas
// of one run are exactly its requests' sums: accepted = Σ (output tokens − 1), because a
// request's first token comes from prefill, not from a verify step; steps = Σ verify steps.
// The client-side acceptance length (Σ output / Σ verify) is therefore higher by exactly
// requests / Σ verify. Both are ratios of integers well below 2^53: 1e-9 is rounding only.
#include "specbench/results.hpp"

#include <gtest/gtest.h>

#include <string>

namespace specbench::testing {

inline void expect_sim_server_side_matches_requests(const CellResult& r) {
  SCOPED_TRACE(r.cell_id);
  ASSERT_EQ(r.runs.size(), static_cast<size_t>(r.workload.runs));
  const bool speculative = r.method.kind != MethodKind::autoregressive;
  for (const auto& run : r.runs) {
    SCOPED_TRACE("run " + std::to_string(run.run));
    ASSERT_TRUE(run.server_side) << "no server-side figures stored";
    const ServerSideFigures& s = *run.server_side;
    EXPECT_TRUE(s.metrics_ok) << s.metrics_error;
    EXPECT_TRUE(s.server_info_ok) << s.server_info_error;
    // The interval brackets the run (wall clock vs steady clock: a little slack).
    EXPECT_GE(s.interval_s, run.duration_s - 0.05);
    if (!speculative) {
      EXPECT_FALSE(s.acceptance_length) << "an autoregressive server has no spec counters";
      continue;
    }
    int64_t output = 0, verify = 0, n = 0;
    for (const auto& q : r.requests)
      if (q.run == run.run && q.ok && q.verify_steps > 0) {
        output += q.output_tokens;
        verify += q.verify_steps;
        ++n;
      }
    ASSERT_GT(verify, 0);
    ASSERT_TRUE(s.acceptance_length) << s.acceptance_source;
    EXPECT_NE(s.acceptance_source.find("sim-server"), std::string::npos) << s.acceptance_source;
    const double server = *s.acceptance_length;
    EXPECT_NEAR(server, static_cast<double>(output - n) / static_cast<double>(verify), 1e-9);
    ASSERT_TRUE(run.acceptance_length);
    EXPECT_NEAR(*run.acceptance_length - server,
                static_cast<double>(n) / static_cast<double>(verify), 1e-9);
    ASSERT_TRUE(s.draft_acceptance_rate);
    EXPECT_GT(*s.draft_acceptance_rate, 0.0);
    EXPECT_LE(*s.draft_acceptance_rate, 1.0);
  }
}

} // namespace specbench::testing
