#include "specbench/sampling_reference.hpp"

#include "specbench/detail/philox.hpp"

#include <algorithm>
#include <stdexcept>

namespace specbench {

float sampling_coin(uint64_t seed, uint64_t offset, uint32_t row, uint32_t tag) {
  return detail::philox_uniform(seed, offset, row, tag);
}

int32_t sample_inverse_cdf_reference(std::span<const float> weights, float u) {
  double total = 0.0;
  for (float w : weights)
    total += std::max(0.0f, w);
  if (!(total > 0.0))
    return -1;
  const double target = static_cast<double>(u) * total;
  double cum = 0.0;
  int32_t last_positive = -1;
  for (size_t i = 0; i < weights.size(); ++i) {
    const float w = std::max(0.0f, weights[i]);
    if (w <= 0.0f)
      continue;
    cum += w;
    last_positive = static_cast<int32_t>(i);
    if (cum > target)
      return last_positive;
  }
  return last_positive; // u * total rounded up to the total
}

bool inverse_cdf_draw_consistent(std::span<const float> weights, float u, int32_t token,
                                 double rel_tol) {
  if (token < 0 || static_cast<size_t>(token) >= weights.size() || !(weights[token] > 0.0f))
    return false;
  double total = 0.0, before = 0.0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const double w = std::max(0.0f, weights[i]);
    if (i < static_cast<size_t>(token))
      before += w;
    total += w;
  }
  const double target = static_cast<double>(u) * total, slack = rel_tol * total;
  return before <= target + slack && before + weights[token] >= target - slack;
}

TreeSamplingResult verify_tree_sampling_reference(const DraftTree& tree,
                                                  std::span<const float> target_probs,
                                                  int64_t vocab, uint64_t seed, uint64_t offset,
                                                  int request) {
  const int n = tree.size();
  if (target_probs.size() < static_cast<size_t>(n) * static_cast<size_t>(vocab))
    throw std::invalid_argument("verify_tree_sampling_reference: target_probs smaller than [n, V]");
  TreeSamplingResult r;
  r.draws.resize(n);
  for (int i = 0; i < n; ++i) {
    const float u = sampling_coin(seed, offset, static_cast<uint32_t>(request * n + i), kCoinDraw);
    r.draws[i] = sample_inverse_cdf_reference(
        target_probs.subspan(static_cast<size_t>(i) * vocab, static_cast<size_t>(vocab)), u);
  }
  r.acceptance = verify_tree_reference(tree, r.draws);
  return r;
}

ChainSamplingResult verify_chain_sampling_reference(std::span<const int32_t> drafts,
                                                    std::span<const float> draft_probs,
                                                    std::span<const float> target_probs,
                                                    int64_t vocab, uint64_t seed, uint64_t offset,
                                                    int request) {
  const size_t k = drafts.size(), V = static_cast<size_t>(vocab);
  if (draft_probs.size() < k * V || target_probs.size() < (k + 1) * V)
    throw std::invalid_argument("verify_chain_sampling_reference: probabilities too small");
  const uint32_t base = static_cast<uint32_t>(request * (k + 1));
  ChainSamplingResult r;
  r.output.assign(k + 1, -1);
  size_t j = 0;
  for (; j < k; ++j) {
    const int32_t d = drafts[j];
    const bool in_range = d >= 0 && static_cast<size_t>(d) < V;
    const float p = in_range ? target_probs[j * V + d] : 0.0f;
    const float q = in_range ? draft_probs[j * V + d] : 0.0f;
    const float u = sampling_coin(seed, offset, base + static_cast<uint32_t>(j), kCoinAccept);
    if (!(u * q < p))
      break;
    r.output[j] = d;
  }
  r.accepted = static_cast<int>(j);
  r.residual.assign(target_probs.begin() + j * V, target_probs.begin() + (j + 1) * V);
  if (j < k) {
    std::vector<float> res(V);
    bool any = false;
    for (size_t i = 0; i < V; ++i) {
      res[i] = std::max(0.0f, target_probs[j * V + i] - draft_probs[j * V + i]);
      any = any || res[i] > 0.0f;
    }
    if (any)
      r.residual = std::move(res);
  }
  r.draw_coin = sampling_coin(seed, offset, base + static_cast<uint32_t>(j), kCoinDraw);
  r.output[j] = sample_inverse_cdf_reference(r.residual, r.draw_coin);
  return r;
}

} // namespace specbench
