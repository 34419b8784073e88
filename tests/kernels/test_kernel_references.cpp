// CPU checks of the kernel references on the shared test vectors (run in CI without a GPU): the
// walk the kernels compute equals verify_tree_reference, SGLang's layout gives the same path,
// Philox matches its published known answers, the inverse-CDF draw and both sampling verifiers
// keep the target distribution, the launchers check shapes (and say "not compiled" without
// CUDA), and the fused kernel's multiply-shift division equals integer division.
#include "kernels_ref/kernel_shapes.hpp"
#include "specbench/build_info.hpp"
#include "specbench/cuda_errors.hpp"
#include "specbench/detail/fast_div.hpp"
#include "specbench/detail/philox.hpp"
#include "specbench/kernels.hpp"
#include "specbench/sampling_reference.hpp"
#include "specbench/sglang_layout.hpp"
#include "test_vectors.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

using namespace specbench;
using namespace specbench::testing;

namespace {
constexpr TreeShape kShapes[] = {TreeShape::chain, TreeShape::star, TreeShape::deep,
                                 TreeShape::bushy, TreeShape::ddtree};
constexpr int kSizes[] = {1, 2, 3, 8, 16, 33, 64, 65, 129, 257, 1025};
} // namespace

TEST(KernelReferences, FirstMatchWalkEqualsTreeReference) {
  std::mt19937 rng(7);
  for (TreeShape shape : kShapes)
    for (int n : kSizes)
      for (int rep = 0; rep < 5; ++rep) {
        const DraftTree t = make_tree(rng, shape, n, 1000);
        const auto target = make_targets(rng, t, 1000);
        const Acceptance a = verify_tree_reference(t, target);
        EXPECT_EQ(a.path, walk_by_first_match(t.parents, t.tokens, target))
            << shape_name(shape) << " n=" << n;
        EXPECT_EQ(a.bonus_token, target[a.path.back()]);
        // Every accepted node's token is the target's token at its parent.
        for (size_t i = 1; i < a.path.size(); ++i)
          EXPECT_EQ(t.tokens[a.path[i]], target[t.parents[a.path[i]]]);
      }
}

TEST(KernelReferences, ChainReferenceEqualsChainTree) {
  std::mt19937 rng(8);
  for (int k : {0, 1, 5, 31, 32, 33, 100}) {
    std::vector<int32_t> drafts(k), target(k + 1);
    for (int rep = 0; rep < 20; ++rep) {
      for (auto& d : drafts)
        d = static_cast<int32_t>(rng() % 4);
      for (auto& x : target)
        x = static_cast<int32_t>(rng() % 4);
      const Acceptance a = verify_chain_reference(drafts, target);
      const Acceptance b = verify_tree_reference(chain_as_tree(drafts, 0), target);
      EXPECT_EQ(a.path, b.path);
      EXPECT_EQ(a.bonus_token, b.bonus_token);
    }
  }
}

TEST(KernelReferences, SglangLayoutWalkEqualsParentWalk) {
  std::mt19937 rng(9);
  for (TreeShape shape : kShapes)
    for (int n : {1, 8, 16, 64, 257}) {
      const int batch = 3;
      std::vector<DraftTree> trees;
      std::vector<int64_t> predict(static_cast<size_t>(batch) * n);
      std::vector<std::vector<int32_t>> targets;
      for (int b = 0; b < batch; ++b) {
        trees.push_back(make_tree(rng, shape, n, 500));
        targets.push_back(make_targets(rng, trees.back(), 500));
        for (int i = 0; i < n; ++i)
          predict[static_cast<size_t>(b) * n + i] = targets[b][i];
      }
      for (int steps : {1, 2, 4, n + 1}) {
        for (int b = 0; b < batch; ++b) {
          const Acceptance a = verify_tree_reference(trees[b], targets[b]);
          const SglangAcceptance s =
              verify_tree_greedy_sglang_reference(to_sglang_layout(trees[b], b), predict, steps);
          const int expect = std::min<int>(a.accepted_drafts(), steps - 1);
          ASSERT_EQ(s.accept_token_num, expect) << shape_name(shape) << " n=" << n;
          for (int j = 0; j < steps; ++j)
            EXPECT_EQ(s.accept_index[j], j <= expect ? b * n + a.path[j] : -1);
          ASSERT_FALSE(s.predicts.empty());
          EXPECT_EQ(s.predicts.back().first, b * n + a.path[expect]);
          EXPECT_EQ(s.predicts.back().second, targets[b][a.path[expect]]);
        }
      }
    }
}

// The batch form is each request's layout, in request order, with global ids b * n + i.
TEST(KernelReferences, SglangBatchLayoutConcatenatesTheRequests) {
  std::mt19937 rng(10);
  const int n = 9;
  std::vector<DraftTree> trees;
  for (int b = 0; b < 3; ++b)
    trees.push_back(make_tree(rng, TreeShape::bushy, n, 500));
  const SglangTree all = to_sglang_layout(trees);
  ASSERT_EQ(all.candidates.size(), 3u * n);
  ASSERT_EQ(all.retrive_index.size(), 3u * n);
  ASSERT_EQ(all.retrive_next_token.size(), 3u * n);
  ASSERT_EQ(all.retrive_next_sibling.size(), 3u * n);
  for (int b = 0; b < 3; ++b) {
    const SglangTree one = to_sglang_layout(trees[b], b);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(all.candidates[b * n + i], one.candidates[i]);
      EXPECT_EQ(all.retrive_index[b * n + i], b * n + i);
      EXPECT_EQ(all.retrive_next_token[b * n + i], one.retrive_next_token[i]);
      EXPECT_EQ(all.retrive_next_sibling[b * n + i], one.retrive_next_sibling[i]);
    }
  }
  trees.push_back(make_tree(rng, TreeShape::bushy, n + 1, 500));
  EXPECT_THROW(to_sglang_layout(trees), std::invalid_argument);
}

// The small-request fused greedy launch picks the block width that keeps a third block off the
// busiest SMs while every SM still gets one (V = 151,936, 132 SMs, as on an H200 or H100).
TEST(KernelReferences, FusedSmallWidthTakesAThirdBlockOffTheBusiestSMs) {
  using kernels::detail::fused_small_width;
  using kernels::detail::kFusedSmallWidths;
  const int64_t V = 151936;
  const int roomy[] = {5, 4, 4};
  const auto width = [&](int64_t rows, int epv = 8, const int* resident = nullptr,
                         int max_splits = 64) {
    const int i =
        fused_small_width(rows, V, epv, 132, resident ? resident : roomy, max_splits).index;
    return i < 0 ? -1 : kFusedSmallWidths[i];
  };
  // bf16: 256 threads make 19 splits per row, 320 15, 384 13.
  EXPECT_EQ(width(16), 320); // 304 blocks (three on 40 SMs) -> 240 (at most two)
  EXPECT_EQ(width(15), 320); // 285 -> 225
  EXPECT_EQ(width(18), 384); // 342 and 270 have three on some SMs; 234 has at most two
  EXPECT_EQ(width(8), 256);  // 152 (two on 20 SMs); 120 would leave 12 SMs idle
  EXPECT_EQ(width(12), 256); // 228: two at most already, as with 180
  EXPECT_EQ(width(4), 256);  // no width fills the GPU: the narrowest
  EXPECT_EQ(width(1), 256);
  // fp32 (four values a vector): 38 splits at 256, 30 at 320; 1 x 8 is 1 x 16 bf16's geometry.
  EXPECT_EQ(width(8, 4), 320);
  // The lean drain's slot limit and one wave bound the choice.
  EXPECT_EQ(width(16, 8, nullptr, 14), 384); // 19 and 15 splits too many
  EXPECT_EQ(width(16, 8, nullptr, 12), -1);  // even 13 too many
  const int tight[] = {3, 1, 1};             // only 132 wider blocks fit at once
  EXPECT_EQ(width(16, 8, tight), 256);
  EXPECT_EQ(width(128), -1); // 8 x 16: no width reads it in one batch per thread in one wave
  // The launch's chunk and splits come with the width: 1 x 16 bf16 at 320 threads.
  const auto sixteen = fused_small_width(16, V, 8, 132, roomy, 64);
  EXPECT_EQ(sixteen.chunk, 320 * 4 * 8);
  EXPECT_EQ(sixteen.splits, 15);
  // Nonsense in, no width out.
  EXPECT_EQ(fused_small_width(0, V, 8, 132, roomy, 64).index, -1);
  EXPECT_EQ(fused_small_width(16, 0, 8, 132, roomy, 64).index, -1);
  EXPECT_EQ(fused_small_width(16, V, 8, 0, roomy, 64).index, -1);
}

// The fused greedy kernel divides block indices by the splits per row and by the nodes per
// request with FastDiv (the same code runs on the device, with __umulhi).
TEST(KernelReferences, FastDivEqualsIntegerDivision) {
  std::mt19937_64 rng(11);
  const uint32_t kMaxN = 0x7FFFFFFFu;
  auto check = [&](uint32_t d) {
    const detail::FastDiv f = detail::FastDiv::make(d);
    const uint32_t edges[] = {
        0u, 1u, d - 1, d, d + 1, kMaxN, kMaxN - 1, (kMaxN / d) * d, (kMaxN / d) * d - 1};
    for (uint32_t n : edges) {
      if (n <= kMaxN) {
        ASSERT_EQ(f.div(n), n / d) << "n " << n << " d " << d;
      }
    }
    for (int t = 0; t < 64; ++t) {
      const uint32_t n = static_cast<uint32_t>(rng() % (uint64_t{kMaxN} + 1));
      ASSERT_EQ(f.div(n), n / d) << "n " << n << " d " << d;
    }
  };
  for (uint32_t d = 1; d <= 4096; ++d)
    check(d);
  for (int p = 12; p < 31; ++p) // powers of two and their neighbours
    for (uint32_t d : {(1u << p) - 1, 1u << p, (1u << p) + 1})
      check(d);
  for (int t = 0; t < 20000; ++t)
    check(1 + static_cast<uint32_t>(rng() % kMaxN));
  for (uint32_t n = 0; n < 100000; ++n) // every small n for the shapes the kernel sees
    for (uint32_t d : {19u, 25u, 38u, 64u, 65u})
      ASSERT_EQ(detail::FastDiv::make(d).div(n), n / d);
}

TEST(KernelReferences, PhiloxKnownAnswers) {
  // Known-answer vectors of Philox4x32-10 published with Random123 (kat_vectors).
  using detail::Philox4;
  const Philox4 z = detail::philox4x32_10(Philox4{{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(z.x[0], 0x6627e8d5u);
  EXPECT_EQ(z.x[1], 0xe169c58du);
  EXPECT_EQ(z.x[2], 0xbc57ac4cu);
  EXPECT_EQ(z.x[3], 0x9b00dbd8u);
  const Philox4 f = detail::philox4x32_10(
      Philox4{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
  EXPECT_EQ(f.x[0], 0x408f276du);
  EXPECT_EQ(f.x[1], 0x41c83b0eu);
  EXPECT_EQ(f.x[2], 0xa20bc7c6u);
  EXPECT_EQ(f.x[3], 0x6d5451fdu);
  const Philox4 p = detail::philox4x32_10(
      Philox4{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(p.x[0], 0xd16cfe09u);
  EXPECT_EQ(p.x[1], 0x94fdccebu);
  EXPECT_EQ(p.x[2], 0x5001e420u);
  EXPECT_EQ(p.x[3], 0x24126ea1u);
}

TEST(KernelReferences, CoinsAreUniformAndDistinct) {
  double sum = 0.0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const float u = sampling_coin(42, 7, static_cast<uint32_t>(i), kCoinAccept);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.01);
  EXPECT_NE(sampling_coin(42, 7, 3, kCoinAccept), sampling_coin(42, 8, 3, kCoinAccept));
  EXPECT_NE(sampling_coin(42, 7, 3, kCoinAccept), sampling_coin(42, 7, 4, kCoinAccept));
  EXPECT_NE(sampling_coin(42, 7, 3, kCoinAccept), sampling_coin(42, 7, 3, coin_tag_race(0)));
  EXPECT_EQ(sampling_coin(42, 7, 3, kCoinAccept), sampling_coin(42, 7, 3, kCoinAccept));
}

TEST(KernelReferences, DrawCoinsAreUniformAndIndependentOfTheRaceCoins) {
  // A segment's draw coin is the second word of the Philox block whose first word is its race
  // coin: uniform on [0, 1), and uncorrelated with the race coin.
  const int n = 40000;
  double su = 0.0, sc = 0.0, suu = 0.0, scc = 0.0, suc = 0.0;
  for (int i = 0; i < n; ++i) {
    const uint32_t row = static_cast<uint32_t>(i % 89);
    const int64_t seg = i / 89;
    const double u = draw_coin(42, 7, row, seg), c = race_coin(42, 7, row, seg);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    su += u, sc += c, suu += u * u, scc += c * c, suc += u * c;
  }
  EXPECT_NEAR(su / n, 0.5, 0.01);
  EXPECT_NEAR(suu / n - (su / n) * (su / n), 1.0 / 12, 0.003); // the variance of U(0, 1)
  const double cov = suc / n - (su / n) * (sc / n);
  const double corr =
      cov / std::sqrt((suu / n - (su / n) * (su / n)) * (scc / n - (sc / n) * (sc / n)));
  EXPECT_LT(std::abs(corr), 0.02); // 4 standard errors of a zero correlation over 40,000 pairs
  EXPECT_NE(draw_coin(42, 7, 3, 0), draw_coin(42, 7, 3, 1));
  EXPECT_NE(draw_coin(42, 7, 3, 0), race_coin(42, 7, 3, 0));
  EXPECT_EQ(draw_coin(42, 7, 3, 5), draw_coin(42, 7, 3, 5));
}

TEST(KernelReferences, SegmentDrawOrderIsAPermutationOfTheSegment) {
  std::vector<int> seen(kDrawSegment, 0);
  for (int q = 0; q < kDrawSegment; ++q)
    ++seen[static_cast<size_t>(segment_draw_order(q))];
  for (int i = 0; i < kDrawSegment; ++i)
    EXPECT_EQ(seen[i], 1) << "offset " << i;
  // The kernels' load layout: lane 1 (q = 32..63) starts at offset 4 and its second group of
  // four (q = 36) is 128 further on.
  EXPECT_EQ(segment_draw_order(0), 0);
  EXPECT_EQ(segment_draw_order(3), 3);
  EXPECT_EQ(segment_draw_order(4), 128);
  EXPECT_EQ(segment_draw_order(32), 4);
  EXPECT_EQ(segment_draw_order(36), 132);
  EXPECT_EQ(segment_draw_order(1023), 1023);
}

TEST(KernelReferences, RaceCoinsAreOpenAndExponentialOfThemHasMeanOne) {
  double sum_e = 0.0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    const float c = race_coin(42, 7, static_cast<uint32_t>(i % 97), i / 97);
    ASSERT_GT(c, 0.0f);
    ASSERT_LT(c, 1.0f);
    sum_e += -std::log(static_cast<double>(c));
  }
  EXPECT_NEAR(sum_e / n, 1.0, 0.03); // Exp(1): mean 1, sd 1, so 5 sd of the mean is 0.025
  EXPECT_NE(race_coin(42, 7, 3, 0), race_coin(42, 7, 3, 1));
  EXPECT_NE(race_coin(42, 7, 3, 0), race_coin(42, 7, 4, 0));
}

TEST(KernelReferences, SegmentRaceDrawInsideOneSegmentFollowsTheDrawOrder) {
  // One segment: the in-segment coin u decides. In draw order offset 1 comes first (lane 0,
  // q = 1), then 128 (lane 0, q = 4); offset 4 (lane 1) comes after both.
  std::vector<float> w(200, 0.0f);
  w[1] = 0.25f;
  w[4] = 0.5f;
  w[128] = 0.25f;
  w[199] = -1.0f; // negative weights count as zero
  int seen[3] = {0, 0, 0};
  for (uint32_t row = 0; row < 400; ++row) {
    const DrawCoins c{11, 5, row};
    const float u = draw_coin(c.seed, c.offset, row, 0);       // the only segment's draw coin
    const int expected = u < 0.25f ? 1 : (u < 0.5f ? 128 : 4); // natural order would give 4 second
    ASSERT_EQ(sample_segment_race_reference(w, c), expected) << "u = " << u;
    EXPECT_TRUE(segment_race_draw_consistent(w, c, expected));
    EXPECT_FALSE(segment_race_draw_consistent(w, c, 2));   // zero weight
    EXPECT_FALSE(segment_race_draw_consistent(w, c, 199)); // negative weight
    if (u < 0.24f || u > 0.26f) { // away from a boundary only one answer is right
      EXPECT_FALSE(segment_race_draw_consistent(w, c, expected == 1 ? 128 : 1));
    }
    ++seen[expected == 1 ? 0 : (expected == 128 ? 1 : 2)];
  }
  EXPECT_GT(seen[0], 0);
  EXPECT_GT(seen[1], 0);
  EXPECT_GT(seen[2], 0);
  EXPECT_EQ(sample_segment_race_reference(std::vector<float>{0.0f, -1.0f}, DrawCoins{1, 2, 3}), -1);
}

TEST(KernelReferences, SegmentRacePicksTheLargestKeyWithProbabilityProportionalToMass) {
  // Three segments with masses 1, 0, 3 (the last one partial).
  std::vector<float> x(2 * kDrawSegment + 100, 0.0f);
  x[7] = 1.0f;
  x[2 * kDrawSegment + 10] = 2.0f;
  x[2 * kDrawSegment + 99] = 1.0f;
  const int n = 40000;
  int first = 0;
  for (int i = 0; i < n; ++i) {
    const DrawCoins c{9, 1, static_cast<uint32_t>(i)};
    const int32_t t = sample_segment_race_reference(x, c);
    // The winner is the larger of 1 / E_0 and 3 / E_2, computed here independently.
    const double k0 = 1.0 / -std::log(static_cast<double>(race_coin(9, 1, c.row, 0)));
    const double k2 = 3.0 / -std::log(static_cast<double>(race_coin(9, 1, c.row, 2)));
    ASSERT_EQ(t / kDrawSegment, k0 > k2 ? 0 : 2) << "row " << i;
    ASSERT_NE(t / kDrawSegment, 1); // no mass, never drawn
    EXPECT_TRUE(segment_race_draw_consistent(x, c, t));
    // The other segment loses unless the keys are within the tolerance.
    const int32_t other = t == 7 ? 2 * kDrawSegment + 10 : 7;
    if (std::abs(k0 - k2) > 1e-4 * std::max(k0, k2)) {
      EXPECT_FALSE(segment_race_draw_consistent(x, c, other));
    }
    first += t == 7;
  }
  // P(segment 0) = 1/4; 5 standard deviations of the count is about 433.
  EXPECT_NEAR(first, n / 4, 450);
}

namespace {
// Chi-square statistic of observed counts against probabilities p (cells with p = 0 must be 0).
double chi_square(const std::vector<int>& counts, const std::vector<double>& p, int total,
                  bool* impossible) {
  double chi = 0.0;
  *impossible = false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0.0) {
      if (counts[i] != 0)
        *impossible = true;
      continue;
    }
    const double e = p[i] * total;
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}
} // namespace

TEST(KernelReferences, ChainSamplingKeepsTargetDistribution) {
  // Draft q and target p over 6 tokens; the first emitted token must follow p0, and the second
  // (when the first draft was accepted) p1.
  const int V = 6, k = 2;
  const std::vector<float> q = {0.5f, 0.1f, 0.1f, 0.1f, 0.2f, 0.0f,
                                0.3f, 0.3f, 0.1f, 0.1f, 0.1f, 0.1f};
  const std::vector<float> p = {0.1f,  0.4f, 0.2f, 0.0f, 0.2f, 0.1f, 0.25f, 0.25f, 0.25f,
                                0.25f, 0.0f, 0.0f, 0.5f, 0.5f, 0.0f, 0.0f,  0.0f,  0.0f};
  std::vector<int> first(V, 0);
  const int trials = 60000;
  std::mt19937 rng(3);
  std::discrete_distribution<int> draft0({0.5, 0.1, 0.1, 0.1, 0.2, 0.0});
  std::discrete_distribution<int> draft1({0.3, 0.3, 0.1, 0.1, 0.1, 0.1});
  for (int t = 0; t < trials; ++t) {
    const std::vector<int32_t> drafts = {draft0(rng), draft1(rng)};
    const ChainSamplingResult r =
        verify_chain_sampling_reference(drafts, q, p, V, 1234, static_cast<uint64_t>(t), 0);
    ASSERT_GE(r.output[0], 0);
    ++first[r.output[0]];
    EXPECT_GE(r.output[r.accepted], 0);
    for (int j = 0; j < r.accepted; ++j)
      EXPECT_EQ(r.output[j], drafts[j]);
    for (int j = r.accepted + 1; j <= k; ++j)
      EXPECT_EQ(r.output[j], -1);
  }
  bool impossible = false;
  const double chi = chi_square(first, {0.1, 0.4, 0.2, 0.0, 0.2, 0.1}, trials, &impossible);
  EXPECT_FALSE(impossible);
  EXPECT_LT(chi, 20.5) << "chi-square with 4 degrees of freedom, p < 0.0005";
}

TEST(KernelReferences, TreeSamplingKeepsTargetDistribution) {
  // Star tree with children tokens {1, 3, 1} (a repeated token counts once); the first committed
  // token must follow the root row.
  const DraftTree t = tree_from_parents({-1, 0, 0, 0}, {0, 1, 3, 1});
  const int V = 5;
  std::vector<float> probs = {0.3f, 0.2f, 0.0f, 0.4f, 0.1f}; // root row
  probs.resize(4 * V, 0.2f);
  std::vector<int> first(V, 0);
  const int trials = 40000;
  for (int s = 0; s < trials; ++s) {
    const TreeSamplingResult r =
        verify_tree_sampling_reference(t, probs, V, 99, static_cast<uint64_t>(s), 0);
    ASSERT_NE(r.acceptance.path.size() > 1 ? r.acceptance.path[1] : 0, 3)
        << "the repeated child is never taken";
    const int tok = r.acceptance.accepted_drafts() > 0 ? t.tokens[r.acceptance.path[1]]
                                                       : r.acceptance.bonus_token;
    ASSERT_EQ(r.target_tokens[0], tok);
    ++first[tok];
  }
  bool impossible = false;
  const double chi = chi_square(first, {0.3, 0.2, 0.0, 0.4, 0.1}, trials, &impossible);
  EXPECT_FALSE(impossible);
  EXPECT_LT(chi, 20.5);
}

TEST(KernelReferences, TreeSamplingKeepsTheTargetDistributionTwoNodesDeep) {
  // root -> 1 -> 2 and root -> 3: after the walk took token 1, the next committed token (the
  // draft 2 when taken, else the bonus at node 1) must follow node 1's row.
  const DraftTree t = tree_from_parents({-1, 0, 1, 0}, {0, 1, 2, 3});
  const int V = 4;
  const std::vector<float> probs = {0.1f,  0.5f,  0.1f,  0.3f, // root
                                    0.25f, 0.15f, 0.4f,  0.2f, // node 1
                                    0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f};
  std::vector<int> second(V, 0);
  int took_one = 0;
  for (int s = 0; s < 60000; ++s) {
    const TreeSamplingResult r =
        verify_tree_sampling_reference(t, probs, V, 7, static_cast<uint64_t>(s), 0);
    const auto& path = r.acceptance.path;
    if (path.size() < 2 || path[1] != 1)
      continue;
    ++took_one;
    ++second[path.size() > 2 ? t.tokens[path[2]] : r.acceptance.bonus_token];
    EXPECT_EQ(r.target_tokens[1], path.size() > 2 ? 2 : r.acceptance.bonus_token);
  }
  EXPECT_NEAR(static_cast<double>(took_one) / 60000, 0.5, 0.01);
  bool impossible = false;
  const double chi = chi_square(second, {0.25, 0.15, 0.4, 0.2}, took_one, &impossible);
  EXPECT_FALSE(impossible);
  EXPECT_LT(chi, 17.7) << "chi-square with 3 degrees of freedom, p < 0.0005";
}

TEST(KernelReferences, TreeSamplingBonusFallsBackToTheWholeRowWhenChildrenHoldAllTheMass) {
  // The root row sums to 0.5, all of it on the children: a coin above 0.5 passes both children
  // and leaves nothing to draw from, so the bonus comes from the whole row (a child's token).
  const DraftTree t = tree_from_parents({-1, 0, 0}, {0, 1, 2});
  const std::vector<float> probs = {0.0f, 0.2f, 0.3f, 0.0f, 0.0f, 0.0f,
                                    0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int stopped = 0;
  for (int s = 0; s < 2000; ++s) {
    const TreeSamplingResult r =
        verify_tree_sampling_reference(t, probs, 4, 3, static_cast<uint64_t>(s), 0);
    if (r.acceptance.path.size() > 1)
      continue;
    ++stopped;
    EXPECT_TRUE(r.acceptance.bonus_token == 1 || r.acceptance.bonus_token == 2);
    EXPECT_EQ(r.residual, std::vector<float>(probs.begin(), probs.begin() + 4));
  }
  EXPECT_GT(stopped, 800);
  EXPECT_LT(stopped, 1200);
}

TEST(KernelLaunchers, RejectBadShapesBeforeTouchingTheGpu) {
  using namespace specbench::kernels;
  int32_t dummy = 0;
  EXPECT_EQ(verify_chain_greedy(&dummy, &dummy, -1, 4, &dummy, &dummy, nullptr).code(),
            StatusCode::invalid_argument);
  EXPECT_EQ(verify_chain_greedy(&dummy, nullptr, 1, 4, &dummy, &dummy, nullptr).code(),
            StatusCode::invalid_argument);
  EXPECT_EQ(
      verify_tree_greedy(&dummy, &dummy, &dummy, 1, 0, &dummy, &dummy, &dummy, nullptr).code(),
      StatusCode::invalid_argument);
  EXPECT_EQ(verify_greedy_fused(&dummy, LogitsDtype::bf16, nullptr, &dummy, 1, 8, 0, nullptr,
                                &dummy, &dummy, &dummy, &dummy, 1 << 20, nullptr)
                .code(),
            StatusCode::invalid_argument);
  // Workspace too small.
  const Status ws = verify_greedy_fused(&dummy, LogitsDtype::bf16, nullptr, &dummy, 4, 8, 151936,
                                        nullptr, &dummy, &dummy, &dummy, &dummy, 16, nullptr);
  EXPECT_EQ(ws.code(), StatusCode::invalid_argument);
  EXPECT_NE(ws.remedy().find("workspace_bytes"), std::string::npos);
  EXPECT_EQ(build_ddtree(nullptr, nullptr, &dummy, nullptr, 1, 4, 4, 2000, DdtreeOutputs{}, nullptr)
                .code(),
            StatusCode::invalid_argument);
  EXPECT_EQ(verify_chain_sampling(nullptr, nullptr, nullptr, 1, 3, 100, PhiloxArgs{}, &dummy,
                                  &dummy, &dummy, 1 << 20, nullptr)
                .code(),
            StatusCode::invalid_argument);
  // Buffers the GPU would fault on, or read wrongly, are refused first (a misaligned-address
  // fault would poison the process's CUDA context), with or without CUDA compiled.
  alignas(16) static unsigned char buf[8192];
  const Status mis = verify_greedy_fused(&dummy, LogitsDtype::bf16, nullptr, &dummy, 1, 8, 151936,
                                         nullptr, &dummy, &dummy, &dummy, buf + 4, 8000, nullptr);
  EXPECT_EQ(mis.code(), StatusCode::invalid_argument) << mis.to_string();
  EXPECT_NE(mis.message().find("not 16-byte aligned"), std::string::npos) << mis.to_string();
  const float prob = 0;
  const Status mis_chain = verify_chain_sampling(&prob, &dummy, &prob, 1, 3, 100, PhiloxArgs{},
                                                 &dummy, &dummy, buf + 8, 8000, nullptr);
  EXPECT_NE(mis_chain.message().find("not 16-byte aligned"), std::string::npos)
      << mis_chain.to_string();
  EXPECT_EQ(verify_greedy_fused(&dummy, static_cast<LogitsDtype>(7), nullptr, &dummy, 1, 8, 100,
                                nullptr, &dummy, &dummy, &dummy, buf, sizeof buf, nullptr)
                .code(),
            StatusCode::invalid_argument);
  const PhiloxArgs odd_seed{1, 2, reinterpret_cast<const uint64_t*>(buf + 4)};
  EXPECT_EQ(verify_tree_sampling(&prob, nullptr, &dummy, 1, 8, 100, odd_seed, nullptr, &dummy,
                                 &dummy, &dummy, nullptr, 0, nullptr)
                .code(),
            StatusCode::invalid_argument);
  EXPECT_EQ(clear_workspace(buf + 4, 64, nullptr).code(), StatusCode::invalid_argument);
  EXPECT_EQ(clear_workspace(nullptr, 64, nullptr).code(), StatusCode::invalid_argument);
  EXPECT_EQ(verify_chain_greedy(&dummy, &dummy, 1 << 27, 4, &dummy, &dummy, nullptr).code(),
            StatusCode::invalid_argument);
  // Batch 0 is a valid no-op with CUDA; without it every launcher says "not compiled".
  const Status empty = verify_chain_greedy(nullptr, nullptr, 0, 4, nullptr, nullptr, nullptr);
  if (compiled_with_cuda())
    EXPECT_TRUE(empty.is_ok()) << empty.to_string();
  else
    EXPECT_EQ(empty.code(), StatusCode::not_compiled);
  EXPECT_GT(verify_greedy_fused_workspace_bytes(64, 64, 151936), 64u * 64u * 8u);
  EXPECT_GT(verify_sampling_workspace_bytes(2, 9, 151936), 2u * 9u * 149u * 8u - 1u);
}

TEST(KernelLaunchers, CudaErrorsSayTheCauseAndTheRemedy) {
  using specbench::kernels::detail::cuda_call_status;
  // No kernel image (an A100, or a GPU this build has no code for): what to run it on, how to
  // rebuild, and the architectures this build has.
  const Status image = cuda_call_status(209, "cudaErrorNoKernelImageForDevice",
                                        "no kernel image is available for execution on the device",
                                        "cudaLaunchKernelEx", "kernels::verify_tree_sampling");
  EXPECT_EQ(image.code(), StatusCode::cuda_error);
  EXPECT_NE(image.message().find("cudaLaunchKernelEx failed: cudaErrorNoKernelImageForDevice"),
            std::string::npos)
      << image.to_string();
  EXPECT_NE(image.remedy().find("compute capability 9.0"), std::string::npos) << image.remedy();
  EXPECT_NE(image.remedy().find("CMAKE_CUDA_ARCHITECTURES"), std::string::npos) << image.remedy();
  // A catalogued error: its cause in the message, its remedy, and a poisoned context said so.
  const Status illegal =
      cuda_call_status(700, "cudaErrorIllegalAddress", "an illegal memory access was encountered",
                       "kernel launch", "kernels::verify_greedy_fused");
  EXPECT_NE(illegal.message().find("illegal address"), std::string::npos) << illegal.to_string();
  EXPECT_NE(illegal.message().find("context of this process is now unusable"), std::string::npos)
      << illegal.to_string();
  EXPECT_EQ(illegal.remedy(), find_cuda_error(700)->remedy);
  // An invalid value at a launch is nearly always the caller's sizes or pointers; an unknown code
  // keeps its name and the same generic remedy.
  for (int code : {1, 123456}) {
    const Status s = cuda_call_status(code, "cudaErrorX", "text", "kernel launch", "kernels::x");
    EXPECT_NE(s.message().find("kernel launch failed: cudaErrorX (text)"), std::string::npos)
        << s.to_string();
    EXPECT_NE(s.remedy().find("device buffers of the documented sizes"), std::string::npos)
        << s.remedy();
    EXPECT_EQ(s.message().find("unusable"), std::string::npos) << s.to_string();
  }
}

TEST(KernelLaunchers, SayNotCompiledWithoutCuda) {
  using namespace specbench::kernels;
  if (compiled_with_cuda())
    GTEST_SKIP() << "CUDA build: the GPU tests exercise the launchers";
  int32_t d[4] = {};
  const Status s = verify_chain_greedy(d, d, 1, 1, d, d, nullptr);
  EXPECT_EQ(s.code(), StatusCode::not_compiled);
  // Built with nvcc for architectures older than sm_90 only: the remedy names the architectures;
  // built without nvcc: the toolkit.
  EXPECT_NE(s.remedy().find(build_info::cuda_compiled ? "CMAKE_CUDA_ARCHITECTURES"
                                                      : "SPECBENCH_ENABLE_CUDA=ON"),
            std::string::npos)
      << s.to_string();
  EXPECT_EQ(build_ddtree(nullptr, nullptr, d, nullptr, 1, 0, 0, 0, DdtreeOutputs{}, nullptr).code(),
            StatusCode::not_compiled);
  // Tree sampling takes no workspace: its shapes pass with a null one, and the answer is the
  // missing build, not a bad argument.
  float probs[4] = {};
  EXPECT_EQ(verify_tree_sampling(probs, nullptr, d, 1, 1, 4, PhiloxArgs{}, nullptr, d, d, d,
                                 nullptr, 0, nullptr)
                .code(),
            StatusCode::not_compiled);
  EXPECT_STREQ(verify_tree_sampling_kernel(1, 8, 151936), "not compiled");
  EXPECT_EQ(verify_tree_sampling_launch(1, 8, 151936), "not compiled");
}
