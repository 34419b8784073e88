// The simulated server's model and decoder: speculative decoding must be lossless (every method
// emits exactly the autoregressive tokens), acceptance must be measured from real verification,
// and it must grow with the tree budget and the draft/target agreement.
#include "specbench/sim_server.hpp"

#include <gtest/gtest.h>

#include <numeric>

using namespace specbench;

namespace {

std::vector<int32_t> prompt_of(int seed, int len) {
  std::vector<int32_t> p(len);
  for (int i = 0; i < len; ++i)
    p[i] = (seed * 7919 + i * 104729) % 50000;
  return p;
}

double mean_acceptance(const SyntheticModel& m, SimDecodeConfig c, int prompts, int tokens) {
  int64_t committed = 0, steps = 0;
  for (int s = 0; s < prompts; ++s) {
    auto g = simulate_generation(m, c, prompt_of(s, 16), tokens);
    committed += std::accumulate(g.accept_lengths.begin(), g.accept_lengths.end(), int64_t{0});
    steps += g.verify_steps;
  }
  return static_cast<double>(committed) / static_cast<double>(steps);
}

} // namespace

TEST(SimModel, SpeculativeDecodingIsLosslessGreedyAndSampled) {
  SyntheticModel m({.vocab = 128, .agreement = 0.6});
  for (double temp : {0.0, 1.0}) {
    for (int s = 0; s < 6; ++s) {
      const auto p = prompt_of(s, 10);
      const auto ar = simulate_generation(m, {MethodKind::autoregressive, 1, 0}, p, 90, temp, 42);
      ASSERT_EQ(ar.output.size(), 90u);
      EXPECT_EQ(ar.verify_steps, 0);
      for (SimDecodeConfig c :
           {SimDecodeConfig{MethodKind::linear, 8, 0}, SimDecodeConfig{MethodKind::linear, 16, 0},
            SimDecodeConfig{MethodKind::tree, 16, 8}, SimDecodeConfig{MethodKind::tree, 16, 64}}) {
        const auto sp = simulate_generation(m, c, p, 90, temp, 42);
        EXPECT_EQ(sp.output, ar.output) << "method " << static_cast<int>(c.kind) << " budget "
                                        << c.budget << " temp " << temp << " prompt " << s;
        // Every verify step commits accepted drafts + the bonus token; the first token is prefill.
        const int committed =
            std::accumulate(sp.accept_lengths.begin(), sp.accept_lengths.end(), 0);
        EXPECT_EQ(committed + 1, 90);
        EXPECT_EQ(static_cast<int64_t>(sp.accept_lengths.size()), sp.verify_steps);
        int64_t hist_steps = 0, hist_drafts = 0;
        for (size_t k = 0; k < sp.histogram.size(); ++k) {
          hist_steps += sp.histogram[k];
          hist_drafts += static_cast<int64_t>(k) * sp.histogram[k];
        }
        EXPECT_EQ(hist_steps, sp.verify_steps);
        EXPECT_EQ(hist_drafts, sp.correct_drafts);
        const int per_step = c.kind == MethodKind::linear ? c.block - 1 : c.budget;
        EXPECT_EQ(sp.proposed_drafts, sp.verify_steps * per_step);
      }
    }
  }
}

TEST(SimModel, PerfectDrafterIsAcceptedInFull) {
  SyntheticModel m({.vocab = 64, .agreement = 1.0});
  const auto g = simulate_generation(m, {MethodKind::linear, 8, 0}, prompt_of(3, 5), 1 + 8 * 10);
  EXPECT_EQ(g.verify_steps, 10);
  for (int a : g.accept_lengths)
    EXPECT_EQ(a, 8);
  // A tree always holds the argmax path's first node, so a perfect drafter accepts >= 1 draft.
  const auto t = simulate_generation(m, {MethodKind::tree, 8, 7}, prompt_of(3, 5), 1 + 8 * 10);
  for (size_t i = 0; i + 1 < t.accept_lengths.size(); ++i)
    EXPECT_GE(t.accept_lengths[i], 2);
}

TEST(SimModel, AcceptanceGrowsWithBudgetAndAgreement) {
  SyntheticModel m({.vocab = 256, .agreement = 0.7});
  const double chain = mean_acceptance(m, {MethodKind::linear, 16, 0}, 12, 160);
  const double b8 = mean_acceptance(m, {MethodKind::tree, 16, 8}, 12, 160);
  const double b32 = mean_acceptance(m, {MethodKind::tree, 16, 32}, 12, 160);
  const double b128 = mean_acceptance(m, {MethodKind::tree, 16, 128}, 12, 160);
  EXPECT_GT(chain, 1.0);
  EXPECT_LT(b8, b32);
  EXPECT_LT(b32, b128);
  EXPECT_GT(b32, chain); // a 32-node tree beats a 15-deep chain at this agreement
  SyntheticModel weak({.vocab = 256, .agreement = 0.4});
  EXPECT_LT(mean_acceptance(weak, {MethodKind::tree, 16, 32}, 12, 160), b32);
  std::printf("acceptance: chain-16 %.2f, tree b8 %.2f, b32 %.2f, b128 %.2f\n", chain, b8, b32,
              b128);
}

TEST(SimModel, DecoderReportsVerifyWidthAndDraftPositions) {
  SyntheticModel m;
  SimDecoder d(m, {MethodKind::tree, 16, 20}, prompt_of(1, 12), 30, 0.0, 0);
  EXPECT_EQ(d.next_verify_width(), 12); // prefill width = prompt
  EXPECT_EQ(d.next_draft_positions(), 0);
  EXPECT_EQ(d.step().size(), 1u);
  EXPECT_EQ(d.next_verify_width(), 21);
  EXPECT_EQ(d.next_draft_positions(), 15);
  while (!d.done())
    EXPECT_FALSE(d.step().empty());
  EXPECT_TRUE(d.step().empty());
  EXPECT_EQ(d.generation().output.size(), 30u);
}

TEST(SimFaults, ParseEveryFaultAndRejectNonsense) {
  for (const char* f :
       {"none", "fail-start", "oom-start", "exit-start", "nccl-error", "hang", "unavailable",
        "malformed-json", "trickle", "wrong-content-length", "no-metrics"}) {
    auto p = parse_sim_fault(f);
    ASSERT_TRUE(p.has_value()) << f;
    EXPECT_STREQ(to_string(p->kind), f);
  }
  auto c = parse_sim_fault("crash-after:7");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->kind, SimFault::crash_after);
  EXPECT_EQ(c->after, 7);
  auto h = parse_sim_fault("hang-after:2");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->after, 2);
  EXPECT_FALSE(parse_sim_fault("crash-after:x").has_value());
  EXPECT_EQ(parse_sim_fault("crash-after")->after, 0);
  auto empty = parse_sim_fault("crash-after:"); // a count was meant
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.status().message().find("no count"), std::string::npos);
  EXPECT_FALSE(parse_sim_fault("hang:3").has_value());
  auto bad = parse_sim_fault("explode");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().remedy().find("crash-after:N"), std::string::npos);
}

// The list --help shows is the parser's own: every name in it parses (the counted ones with a
// count), and the newest faults are in it (--help once lacked stop-early and no-generation).
TEST(SimFaults, TheListInHelpIsEveryFaultTheParserTakes) {
  const std::string names = sim_fault_names();
  std::vector<std::string> listed;
  for (std::size_t at = 0; at < names.size();) {
    const std::size_t comma = names.find(", ", at);
    listed.push_back(names.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    at = comma == std::string::npos ? names.size() : comma + 2;
  }
  EXPECT_EQ(listed.size(), 22u) << names;
  for (std::string f : listed) {
    if (f.ends_with(":N"))
      f = f.substr(0, f.size() - 1) + "3";
    EXPECT_TRUE(parse_sim_fault(f).has_value()) << f;
  }
  for (const char* f : {"stop-early", "no-generation", "truncate-prompts", "crash-after:N"})
    EXPECT_NE(names.find(f), std::string::npos) << f;
}
