#pragma once
/// \file sampling_reference.hpp
/// CPU references of the sampling verifiers in kernels.hpp (verify_tree_sampling,
/// verify_chain_sampling): the same Philox coins, the same acceptance tests, and inverse-CDF
/// draws computed in double precision.

#include "specbench/draft_tree.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace specbench {

/// Coin tag of the inverse-CDF draw of a row.
inline constexpr uint32_t kCoinDraw = 0;
/// Coin tag of the acceptance test of a chain draft.
inline constexpr uint32_t kCoinAccept = 1;

/// The coin u in [0, 1) the kernels use for (seed, offset, row, tag) (Philox4x32-10).
float sampling_coin(uint64_t seed, uint64_t offset, uint32_t row, uint32_t tag);

/// Inverse-CDF draw: the smallest i with w[0] + ... + w[i] > u * sum(w), summed in double;
/// negative weights count as 0. Returns -1 when every weight is 0.
int32_t sample_inverse_cdf_reference(std::span<const float> weights, float u);

/// True when `token` is a draw the float kernels may legitimately return for coin `u`: its weight
/// is positive and u * sum(w) lies between its exclusive and inclusive prefix sums, widened by
/// `rel_tol` of the total (float summation order may move a boundary by rounding).
bool inverse_cdf_draw_consistent(std::span<const float> weights, float u, int32_t token,
                                 double rel_tol = 1e-5);

/// Result of target-only tree sampling for one request.
struct TreeSamplingResult {
  std::vector<int32_t> draws; ///< [n] the target's draw at every node
  Acceptance acceptance;      ///< the walk over `draws` (verify_tree_reference)
};

/// Target-only tree sampling (verify_tree_sampling) for request `request` of a batch with
/// `tree.size()` nodes per request: node i draws from `target_probs` [n, vocab] row i with coin
/// (seed, offset, request * n + i, kCoinDraw), then the tree is walked over the draws.
TreeSamplingResult verify_tree_sampling_reference(const DraftTree& tree,
                                                  std::span<const float> target_probs,
                                                  int64_t vocab, uint64_t seed, uint64_t offset,
                                                  int request);

/// Result of chain speculative sampling for one request.
struct ChainSamplingResult {
  int accepted = 0;            ///< drafts accepted
  std::vector<int32_t> output; ///< [k + 1] accepted drafts, the drawn token, then -1
  std::vector<float> residual; ///< the distribution the last token was drawn from [vocab]
  float draw_coin = 0.0f;      ///< the coin of that draw
};

/// Chain speculative sampling (verify_chain_sampling) for request `request`: draft i accepted
/// when coin(request * (k + 1) + i, kCoinAccept) * q_i(d_i) < p_i(d_i), in float as the kernel
/// computes it; the token at the first rejection j is drawn from max(p_j - q_j, 0) (p_j when that
/// is all zero), after k acceptances from p_k, with coin (request * (k + 1) + j, kCoinDraw).
/// `draft_probs` [k, vocab], `target_probs` [k + 1, vocab].
ChainSamplingResult verify_chain_sampling_reference(std::span<const int32_t> drafts,
                                                    std::span<const float> draft_probs,
                                                    std::span<const float> target_probs,
                                                    int64_t vocab, uint64_t seed, uint64_t offset,
                                                    int request);

} // namespace specbench
