#pragma once
// Test vectors shared by the CPU reference tests and the GPU kernel tests: trees of every shape
// the kernels must handle (chains, stars, deep and bushy random trees, DDTree trees with ties and
// -inf), target tokens that walk some way into them, and top-k log-probability tables.
#include "specbench/draft_tree.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace specbench::testing {

enum class TreeShape { chain, star, deep, bushy, ddtree };

inline const char* shape_name(TreeShape s) {
  switch (s) {
  case TreeShape::chain:
    return "chain";
  case TreeShape::star:
    return "star";
  case TreeShape::deep:
    return "deep";
  case TreeShape::bushy:
    return "bushy";
  case TreeShape::ddtree:
    return "ddtree";
  }
  return "?";
}

/// Top-k table [depth, k]: rows sorted descending; `ties` quantises values so that many paths tie;
/// `neg_inf` puts -inf at the tail of some rows.
struct TopK {
  int depth = 0, k = 0;
  std::vector<float> logp;
  std::vector<int32_t> ids;
};

inline TopK random_topk(std::mt19937& rng, int depth, int k, bool ties, bool neg_inf) {
  TopK t{depth, k, std::vector<float>(static_cast<size_t>(depth) * k),
         std::vector<int32_t>(static_cast<size_t>(depth) * k)};
  std::uniform_real_distribution<float> u(-6.0f, 0.0f);
  for (int d = 0; d < depth; ++d) {
    std::vector<float> row(k);
    for (auto& v : row)
      v = ties ? -0.25f * static_cast<float>(rng() % 8) : u(rng);
    std::sort(row.rbegin(), row.rend());
    if (neg_inf && k > 1 && rng() % 3 == 0)
      for (int r = 1 + static_cast<int>(rng() % (k - 1)); r < k; ++r)
        row[r] = -INFINITY;
    for (int r = 0; r < k; ++r) {
      t.logp[static_cast<size_t>(d) * k + r] = row[r];
      t.ids[static_cast<size_t>(d) * k + r] = static_cast<int32_t>(1000 + rng() % 50000);
    }
  }
  return t;
}

/// A DraftTree from parents (parents[i] < i) and tokens, children linked in index order as
/// link_children does.
inline DraftTree tree_from_parents(const std::vector<int32_t>& parents,
                                   const std::vector<int32_t>& tokens) {
  const int n = static_cast<int>(parents.size());
  DraftTree t;
  t.parents = parents;
  t.tokens = tokens;
  t.depths.assign(n, 0);
  t.scores.assign(n, 0.0f);
  t.ranks.assign(n, 0);
  for (int i = 1; i < n; ++i)
    t.depths[i] = t.depths[parents[i]] + 1;
  t.first_child.assign(n, -1);
  t.next_sibling.assign(n, -1);
  std::vector<int32_t> last(n, -1);
  for (int i = 1; i < n; ++i) {
    const int p = parents[i];
    if (last[p] < 0)
      t.first_child[p] = i;
    else
      t.next_sibling[last[p]] = i;
    last[p] = i;
  }
  return t;
}

/// A tree of `n` nodes (root included) of the given shape; tokens are small so that duplicate
/// sibling tokens happen now and then.
inline DraftTree make_tree(std::mt19937& rng, TreeShape shape, int n, int vocab) {
  if (shape == TreeShape::ddtree) {
    const int depth = 1 + static_cast<int>(rng() % 16), k = 1 + static_cast<int>(rng() % 8);
    const TopK t = random_topk(rng, depth, k, rng() % 2 == 0, rng() % 4 == 0);
    DraftTree tree =
        build_ddtree_reference(t.logp, t.ids, depth, k, n - 1, static_cast<int32_t>(rng() % vocab));
    for (auto& tok : tree.tokens)
      tok = static_cast<int32_t>(tok % vocab);
    if (tree.size() == n)
      return tree;
    // Too few finite paths for n nodes: keep the DDTree part, hang the rest on random nodes.
    std::vector<int32_t> parents = tree.parents, tokens = tree.tokens;
    while (static_cast<int>(parents.size()) < n) {
      parents.push_back(static_cast<int32_t>(rng() % parents.size()));
      tokens.push_back(static_cast<int32_t>(rng() % vocab));
    }
    return tree_from_parents(parents, tokens);
  }
  std::vector<int32_t> parents(n, -1), tokens(n);
  for (int i = 1; i < n; ++i) {
    switch (shape) {
    case TreeShape::chain:
      parents[i] = i - 1;
      break;
    case TreeShape::star:
      parents[i] = 0;
      break;
    case TreeShape::deep:
      parents[i] = std::max(0, i - 1 - static_cast<int>(rng() % 3));
      break;
    default:
      parents[i] = static_cast<int>(rng() % i);
      break;
    }
  }
  const int token_range = std::min(vocab, shape == TreeShape::star ? 4 * n + 4 : 16);
  for (auto& tok : tokens)
    tok = static_cast<int32_t>(rng() % token_range);
  return tree_from_parents(parents, tokens);
}

/// Target tokens for every node: with probability `follow`, the token of a random child (so the
/// walk goes deeper), else a random token.
inline std::vector<int32_t> make_targets(std::mt19937& rng, const DraftTree& t, int vocab,
                                         double follow = 0.8) {
  const int n = t.size();
  std::vector<int32_t> target(n);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> kids;
    for (int c = t.first_child[i]; c >= 0; c = t.next_sibling[c])
      kids.push_back(c);
    if (!kids.empty() && u(rng) < follow)
      target[i] = t.tokens[kids[rng() % kids.size()]];
    else
      target[i] = static_cast<int32_t>(rng() % vocab);
  }
  return target;
}

/// The walk as the kernels compute it (first matching child per node by index, then follow),
/// written independently of verify_tree_reference's sibling lists.
inline std::vector<int32_t> walk_by_first_match(const std::vector<int32_t>& parents,
                                                const std::vector<int32_t>& tokens,
                                                const std::vector<int32_t>& target) {
  const int n = static_cast<int>(parents.size());
  std::vector<int32_t> first(n, -1);
  for (int i = n - 1; i >= 1; --i)
    if (parents[i] >= 0 && parents[i] < n && parents[i] != i && tokens[i] == target[parents[i]])
      first[parents[i]] = i;
  std::vector<int32_t> path = {0};
  for (int cur = 0; first[cur] >= 0 && static_cast<int>(path.size()) < n;) {
    cur = first[cur];
    path.push_back(cur);
  }
  return path;
}

} // namespace specbench::testing
