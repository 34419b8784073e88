#pragma once
/// \file sampling_reference.hpp
/// CPU references of the sampling verifiers in kernels.hpp (verify_tree_sampling,
/// verify_chain_sampling): the same Philox coins, the same acceptance tests, and the same
/// segment-race draws, computed in double precision.
///
/// The segment-race draw. A row of V weights (negative ones count as 0) is cut into segments of
/// kDrawSegment elements. Segment s gets the key mass(s) / E_s with E_s = -ln(c_s), c_s its race
/// coin in (0, 1): E_s is exponential with rate 1, so the segment with the largest key is segment
/// s with probability mass(s) / total (the exponential race; zero-mass segments never win). The
/// winning segment's draw coin u_s then picks an element of it by inverse CDF over its weights in
/// the segment's draw order. c_s and u_s are the first two words of one Philox block (tag
/// coin_tag_race(s)); u_s is independent of every race coin, so the draw stays exact. P(i) =
/// mass(s) / total * w_i / mass(s) = w_i / total: an exact draw. Why this shape: every segment's
/// key and candidate come from its own elements, so the kernels finish each segment while it is
/// still in registers and reduce the candidates with a max, as greedy verification reduces its
/// argmax: one pass, and nothing is read after it. The draw order inside a segment is the kernels'
/// load layout: lane l (0..31) holds elements base + 128 j + 4 l + e (j = 0..7, e = 0..3); the
/// order is lane 0's 32 elements (j, then e), then lane 1's, and so on (segment_draw_order).

#include "specbench/draft_tree.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace specbench {

/// Coin tag 0 is unused since 2026-12-03 (it was a row's in-segment draw coin, now draw_coin).
/// Coin tag of the acceptance test of a chain draft.
inline constexpr uint32_t kCoinAccept = 1;
/// Coin tag of the race coin and the draw coin of segment `segment` of a row.
constexpr uint32_t coin_tag_race(int64_t segment) noexcept {
  return 2u + static_cast<uint32_t>(segment);
}
/// Elements per segment of the segment-race draw.
inline constexpr int64_t kDrawSegment = 1024;

/// Position `q` (0..1023) of a segment's draw order, as an offset from the segment's start.
constexpr int64_t segment_draw_order(int q) noexcept {
  const int lane = q / 32, r = q % 32;
  return (r / 4) * 128 + lane * 4 + r % 4;
}

/// The coin u in [0, 1) the kernels use for (seed, offset, row, tag) (Philox4x32-10).
float sampling_coin(uint64_t seed, uint64_t offset, uint32_t row, uint32_t tag);

/// The race coin of a segment, in (0, 1) (never 0, so its exponential is finite).
float race_coin(uint64_t seed, uint64_t offset, uint32_t row, int64_t segment);

/// The draw coin u of a segment, in [0, 1): the second word of the race coin's Philox block.
float draw_coin(uint64_t seed, uint64_t offset, uint32_t row, int64_t segment);

/// The coins of one row's draw.
struct DrawCoins {
  uint64_t seed = 0;
  uint64_t offset = 0;
  uint32_t row = 0; ///< the row's index in the call (request * rows + i)
};

/// The segment-race draw (above) in double precision: the segment with the largest
/// mass / -ln(race coin) (the lowest on a tie), then the first element in its draw order whose
/// inclusive prefix exceeds its draw coin u times its mass (the last positive one when none does).
/// Returns -1 when every weight is 0.
int32_t sample_segment_race_reference(std::span<const float> weights, const DrawCoins& coins);

/// True when `token` is a draw the float kernels may legitimately return: its weight is
/// positive, its segment's key is within `rel_tol` of the largest key, and u * mass(segment) lies
/// between its own exclusive and inclusive prefixes in draw order, widened by `rel_tol` of the
/// mass (float summation order and logf may move a boundary by rounding).
bool segment_race_draw_consistent(std::span<const float> weights, const DrawCoins& coins,
                                  int32_t token, double rel_tol = 1e-5);

/// Result of target-only tree sampling for one request.
struct TreeSamplingResult {
  std::vector<int32_t> draws; ///< [n] the target's draw at every node
  Acceptance acceptance;      ///< the walk over `draws` (verify_tree_reference)
};

/// Target-only tree sampling (verify_tree_sampling) for request `request` of a batch with
/// `tree.size()` nodes per request: node i draws from `target_probs` [n, vocab] row i with the
/// coins of row request * n + i, then the tree is walked over the draws.
TreeSamplingResult verify_tree_sampling_reference(const DraftTree& tree,
                                                  std::span<const float> target_probs,
                                                  int64_t vocab, uint64_t seed, uint64_t offset,
                                                  int request);

/// Result of chain speculative sampling for one request.
struct ChainSamplingResult {
  int accepted = 0;            ///< drafts accepted
  std::vector<int32_t> output; ///< [k + 1] accepted drafts, the drawn token, then -1
  std::vector<float> residual; ///< the distribution the last token was drawn from [vocab]
  DrawCoins coins;             ///< the coins of that draw
};

/// Chain speculative sampling (verify_chain_sampling) for request `request`: draft i accepted
/// when coin(request * (k + 1) + i, kCoinAccept) * q_i(d_i) < p_i(d_i), in float as the kernel
/// computes it; the token at the first rejection j is drawn from max(p_j - q_j, 0) (p_j when that
/// is all zero), after k acceptances from p_k, with the coins of row request * (k + 1) + j.
/// `draft_probs` [k, vocab], `target_probs` [k + 1, vocab].
ChainSamplingResult verify_chain_sampling_reference(std::span<const int32_t> drafts,
                                                    std::span<const float> draft_probs,
                                                    std::span<const float> target_probs,
                                                    int64_t vocab, uint64_t seed, uint64_t offset,
                                                    int request);

} // namespace specbench
