// The CPU references define the answers the kernels must give, so they are checked against
// hand-worked trees and against an independent brute force.
#include "specbench/draft_tree.hpp"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace specbench;

TEST(DraftTreeReference, BuildsBestFirstTreeByHand) {
  // depth 2, k 2: position 1: tokens 10 (-0.1), 11 (-1.0); position 2: 20 (-0.2), 21 (-3.0).
  const std::vector<float> logp = {-0.1f, -1.0f, -0.2f, -3.0f};
  const std::vector<int32_t> ids = {10, 11, 20, 21};
  const DraftTree t = build_ddtree_reference(logp, ids, 2, 2, 3, 7);
  // Best paths: (0)=-0.1, (0,0)=-0.3, (1)=-1.0; then (1,0)=-1.2 would be 4th.
  ASSERT_EQ(t.size(), 4);
  EXPECT_EQ(t.tokens, (std::vector<int32_t>{7, 10, 20, 11}));
  EXPECT_EQ(t.parents, (std::vector<int32_t>{-1, 0, 1, 0}));
  EXPECT_EQ(t.depths, (std::vector<int32_t>{0, 1, 2, 1}));
  EXPECT_EQ(t.first_child, (std::vector<int32_t>{1, 2, -1, -1}));
  EXPECT_EQ(t.next_sibling, (std::vector<int32_t>{-1, 3, -1, -1}));
  EXPECT_FLOAT_EQ(t.scores[2], -0.3f);
}

TEST(DraftTreeReference, TiesPreferShallowThenLowerRank) {
  // All log-probs equal: order is by depth, then rank path.
  const std::vector<float> logp(3 * 3, 0.0f);
  const std::vector<int32_t> ids = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const DraftTree t = build_ddtree_reference(logp, ids, 3, 3, 5, 0);
  ASSERT_EQ(t.size(), 6);
  EXPECT_EQ(t.depths, (std::vector<int32_t>{0, 1, 1, 1, 2, 2}));
  EXPECT_EQ(t.tokens, (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(t.parents, (std::vector<int32_t>{-1, 0, 0, 0, 1, 1}));
}

TEST(DraftTreeReference, StopsAtMinusInfinity) {
  const std::vector<float> logp = {0.0f, -INFINITY};
  const std::vector<int32_t> ids = {5, 6};
  const DraftTree t = build_ddtree_reference(logp, ids, 1, 2, 8, 0);
  EXPECT_EQ(t.size(), 2); // only the one finite candidate
}

// Brute force: enumerate every rank path, sort by the documented order, take the best budget.
TEST(DraftTreeReference, MatchesBruteForceOnRandomInputs) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 200; ++trial) {
    const int depth = 1 + rng() % 4, k = 1 + rng() % 3, budget = 1 + rng() % 30;
    std::vector<float> logp(depth * k);
    std::vector<int32_t> ids(depth * k);
    for (int d = 0; d < depth; ++d) {
      std::vector<float> row(k);
      // Coarse values make ties common.
      for (auto& v : row) v = -static_cast<float>(rng() % 4) * 0.5f;
      std::sort(row.rbegin(), row.rend());
      for (int r = 0; r < k; ++r) {
        logp[d * k + r] = row[r];
        ids[d * k + r] = d * 100 + r;
      }
    }
    struct P {
      float s;
      std::vector<int32_t> path;
    };
    std::vector<P> all;
    std::vector<P> layer = {{0.0f, {}}};
    for (int d = 0; d < depth; ++d) {
      std::vector<P> next;
      for (auto& p : layer)
        for (int r = 0; r < k; ++r) {
          P q = p;
          q.s += logp[d * k + r];
          q.path.push_back(r);
          next.push_back(q);
        }
      all.insert(all.end(), next.begin(), next.end());
      layer = next;
    }
    std::stable_sort(all.begin(), all.end(), [](const P& a, const P& b) {
      if (a.s != b.s) return a.s > b.s;
      if (a.path.size() != b.path.size()) return a.path.size() < b.path.size();
      return a.path < b.path;
    });
    const DraftTree t = build_ddtree_reference(logp, ids, depth, k, budget, -1);
    const int expect_n = std::min<int>(budget, static_cast<int>(all.size()));
    ASSERT_EQ(t.size(), expect_n + 1) << "trial " << trial;
    for (int i = 1; i <= expect_n; ++i) {
      // Reconstruct node i's rank path from the tree and compare with the i-th best.
      std::vector<int32_t> path;
      for (int j = i; j > 0; j = t.parents[j]) path.insert(path.begin(), t.ranks[j]);
      EXPECT_EQ(path, all[i - 1].path) << "trial " << trial << " node " << i;
      EXPECT_LT(t.parents[i], i);
    }
  }
}

TEST(DraftTreeReference, AncestorMask) {
  const std::vector<float> logp = {-0.1f, -1.0f, -0.2f, -3.0f};
  const std::vector<int32_t> ids = {10, 11, 20, 21};
  const DraftTree t = build_ddtree_reference(logp, ids, 2, 2, 3, 7);
  const auto m = ancestor_mask(t);
  // node 2 (depth 2) sees 0, 1, 2; node 3 sees 0, 3.
  EXPECT_EQ(std::vector<uint8_t>(m.begin() + 8, m.begin() + 12), (std::vector<uint8_t>{1, 1, 1, 0}));
  EXPECT_EQ(std::vector<uint8_t>(m.begin() + 12, m.end()), (std::vector<uint8_t>{1, 0, 0, 1}));
}

TEST(DraftTreeReference, VerifyTreeWalksMatchingChildren) {
  const std::vector<float> logp = {-0.1f, -1.0f, -0.2f, -3.0f};
  const std::vector<int32_t> ids = {10, 11, 20, 21};
  const DraftTree t = build_ddtree_reference(logp, ids, 2, 2, 3, 7);
  // Target says 11 after root (node 3), then 99 after node 3.
  const std::vector<int32_t> target = {11, 0, 0, 99};
  const Acceptance a = verify_tree_reference(t, target);
  EXPECT_EQ(a.path, (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(a.bonus_token, 99);
  EXPECT_EQ(a.acceptance_length(), 2);
  // Nothing matches: only the bonus token.
  const Acceptance none = verify_tree_reference(t, std::vector<int32_t>{42, 0, 0, 0});
  EXPECT_EQ(none.accepted_drafts(), 0);
  EXPECT_EQ(none.bonus_token, 42);
}

TEST(DraftTreeReference, ChainVerificationAndChainTreeAgree) {
  const std::vector<int32_t> drafts = {1, 2, 3, 4};
  const std::vector<int32_t> target = {1, 2, 9, 4, 5};
  const Acceptance a = verify_chain_reference(drafts, target);
  EXPECT_EQ(a.accepted_drafts(), 2);
  EXPECT_EQ(a.bonus_token, 9);
  const DraftTree t = chain_as_tree(drafts, 0);
  const Acceptance b = verify_tree_reference(t, target);
  EXPECT_EQ(b.path, a.path);
  EXPECT_EQ(b.bonus_token, a.bonus_token);
  const Acceptance all = verify_chain_reference(drafts, std::vector<int32_t>{1, 2, 3, 4, 8});
  EXPECT_EQ(all.acceptance_length(), 5);
  EXPECT_EQ(all.bonus_token, 8);
}
