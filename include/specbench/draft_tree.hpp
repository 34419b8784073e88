#pragma once
/// \file draft_tree.hpp
/// Draft trees and their CPU reference algorithms: DDTree best-first tree building under a node
/// budget, and greedy (or target-sampled) verification of a tree or a chain. These references
/// define the exact answers the CUDA kernels (kernels.hpp) must reproduce, and the simulated
/// server decodes with them.

#include <cstdint>
#include <span>
#include <vector>

namespace specbench {

/// One request's draft tree. Node 0 is the root (the last verified, "bonus" token); nodes
/// 1..budget are drafts. Every array has size() entries; -1 is the "none" sentinel.
struct DraftTree {
  std::vector<int32_t> parents;      ///< [n] parent node; parents[0] = -1, parents[i] < i
  std::vector<int32_t> tokens;       ///< [n] token id; tokens[0] = root token
  std::vector<int32_t> depths;       ///< [n] depth; depths[0] = 0
  std::vector<int32_t> first_child;  ///< [n] first child (lowest index) or -1
  std::vector<int32_t> next_sibling; ///< [n] next sibling (next higher index) or -1
  std::vector<float> scores;         ///< [n] summed draft log-probabilities; scores[0] = 0
  std::vector<int32_t> ranks;        ///< [n] top-k rank of the token at its depth; ranks[0] = -1

  /// Number of nodes including the root (budget + 1 when the drafter had enough candidates).
  int size() const noexcept { return static_cast<int>(parents.size()); }
};

/// DDTree tree building (Ringel & Romano, 2026), CPU reference.
///
/// `top_logp` [depth, k] float and `top_ids` [depth, k] int32 are the drafter's top-k
/// log-probabilities and tokens per position, each row sorted by descending log-probability.
/// A node is a path of ranks (r1..rd); its score is the sum of top_logp[j][r_j], computed in
/// float as DDTree's own build_ddtree_tree does it: a first child adds top_logp[d][0] to its
/// parent's score, a next sibling swaps the last term, (score - top_logp[d][r]) + top_logp[d][r+1].
/// The swap can round differently from the plain sum, and the order below compares these
/// computed scores, so exact ties follow DDTree's arithmetic, not exact sums. The tree holds
/// the `budget` best paths under the total order (score descending, then depth ascending, then
/// rank path lexicographically ascending); because a child never beats its parent and a sibling
/// never beats its left neighbour under this order, the set is prefix-closed and equals what a
/// best-first heap (pop best, push next sibling and first child) selects. Nodes are numbered in
/// that order, so parents[i] < i. Paths of score -inf are never selected, so the tree can hold
/// fewer than budget+1 nodes.
DraftTree build_ddtree_reference(std::span<const float> top_logp, std::span<const int32_t> top_ids,
                                 int depth, int k, int budget, int32_t root_token);

/// A linear chain as a DraftTree (node i+1 is drafts[i], child of node i).
DraftTree chain_as_tree(std::span<const int32_t> drafts, int32_t root_token);

/// Ancestor ("may attend") mask of a tree: mask[i * n + j] = 1 when j is i or an ancestor of i.
std::vector<uint8_t> ancestor_mask(const DraftTree& tree);

/// The outcome of verifying one request's draft.
struct Acceptance {
  std::vector<int32_t> path; ///< accepted nodes from the root: path[0] = 0, then drafts
  int32_t bonus_token = -1;  ///< the target's token after the last accepted node

  /// Draft tokens accepted (path length minus the root).
  int accepted_drafts() const noexcept { return static_cast<int>(path.size()) - 1; }
  /// Tokens committed this step: accepted drafts + the bonus token (DFlash/DDTree convention).
  int acceptance_length() const noexcept { return static_cast<int>(path.size()); }
};

/// Walk the tree: from the root, move to the child whose token equals the target's token at the
/// current node (the first such child in sibling order), until none matches. `target_tokens`
/// [n] holds the target's argmax (greedy) or the target's own sample (lossless target-only
/// sampling) at every node.
Acceptance verify_tree_reference(const DraftTree& tree, std::span<const int32_t> target_tokens);

/// Chain verification: `drafts` [K], `target_tokens` [K+1] where target_tokens[i] is the target's
/// token after the prefix and drafts[0..i-1]. Accepts the longest matching prefix.
Acceptance verify_chain_reference(std::span<const int32_t> drafts,
                                  std::span<const int32_t> target_tokens);

} // namespace specbench
