#pragma once
/// \file sampling_reference.hpp
/// CPU references of the sampling verifiers in kernels.hpp (verify_tree_sampling,
/// verify_chain_sampling): the same Philox coins, the same acceptance tests and tree walk (in the
/// kernels' float arithmetic), and the same segment-race draws, computed in double precision.
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

/// Coin tag of a tree node's walk coin (the coin that picks among its children).
inline constexpr uint32_t kCoinWalk = 0;
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
  Acceptance acceptance;              ///< the path and the bonus token
  std::vector<int32_t> target_tokens; ///< [n] the token taken after each path node, else -1
  std::vector<float> residual;        ///< the weights the bonus was drawn from [vocab]
  DrawCoins coins;                    ///< the coins of that draw
};

/// Target-only tree sampling (verify_tree_sampling; SGLang's tree_speculative_sampling_target_only
/// with both thresholds 1) for request `request` of a batch with n = tree.size() nodes per
/// request; `target_probs` [n, vocab], row i the target's probabilities after node i.
///
/// The walk starts at the root. At node x with coin u = sampling_coin(seed, offset, request * n +
/// x, kCoinWalk), the children are tried in sibling order with weight w_c = max(p_x(t_c), 0)
/// (0 for a token outside [0, vocab) or one an earlier sibling already has), their prefix summed
/// in float, one add at a time: the walk moves to the first child c with w_c > 0 and u < prefix
/// including c, and stops when there is none. At the last node f the bonus is the segment-race
/// draw, with the coins of row request * n + f, from p_f with f's children's tokens set to 0
/// (from p_f itself when that has no mass left). With rows that sum to 1 this commits each token
/// with the target's probability: child c is taken with probability p_x(t_c) and any other token
/// t with p_x(t), as a draw t ~ p_x followed by the child holding t would.
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
