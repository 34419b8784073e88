#include "specbench/sampling_reference.hpp"

#include "specbench/detail/philox.hpp"

#include "kernel_shapes.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace specbench {

float sampling_coin(uint64_t seed, uint64_t offset, uint32_t row, uint32_t tag) {
  return detail::philox_uniform(seed, offset, row, tag);
}

namespace {

static_assert(kDrawSegment == kernels::detail::kSamplingSegment,
              "the reference and the kernels must cut rows into the same segments");

double weight_at(std::span<const float> w, int64_t i) {
  return i < static_cast<int64_t>(w.size()) ? std::max(0.0f, w[static_cast<size_t>(i)]) : 0.0;
}

std::vector<double> segment_masses(std::span<const float> w) {
  const int64_t segs = (static_cast<int64_t>(w.size()) + kDrawSegment - 1) / kDrawSegment;
  std::vector<double> m(static_cast<size_t>(segs), 0.0);
  for (size_t i = 0; i < w.size(); ++i)
    m[i / kDrawSegment] += std::max(0.0f, w[i]);
  return m;
}

// Keys of the segment race in double: mass / -ln(coin); 0 for a segment without mass.
std::vector<double> race_keys(const std::vector<double>& mass, const DrawCoins& c) {
  std::vector<double> key(mass.size(), 0.0);
  for (size_t s = 0; s < mass.size(); ++s)
    if (mass[s] > 0.0)
      key[s] = mass[s] / -std::log(static_cast<double>(
                             race_coin(c.seed, c.offset, c.row, static_cast<int64_t>(s))));
  return key;
}

} // namespace

float race_coin(uint64_t seed, uint64_t offset, uint32_t row, int64_t segment) {
  return detail::philox_segment_coins(seed, offset, row, coin_tag_race(segment)).race;
}

float draw_coin(uint64_t seed, uint64_t offset, uint32_t row, int64_t segment) {
  return detail::philox_segment_coins(seed, offset, row, coin_tag_race(segment)).draw;
}

int32_t sample_segment_race_reference(std::span<const float> weights, const DrawCoins& coins) {
  const std::vector<double> mass = segment_masses(weights);
  const std::vector<double> key = race_keys(mass, coins);
  int64_t seg = -1;
  for (size_t s = 0; s < key.size(); ++s)
    if (key[s] > 0.0 && (seg < 0 || key[s] > key[static_cast<size_t>(seg)]))
      seg = static_cast<int64_t>(s);
  if (seg < 0)
    return -1;
  const float u = draw_coin(coins.seed, coins.offset, coins.row, seg);
  const int64_t base = seg * kDrawSegment;
  const double in_target = static_cast<double>(u) * mass[static_cast<size_t>(seg)];
  double in_cum = 0.0;
  int32_t last = -1;
  for (int q = 0; q < kDrawSegment; ++q) {
    const int64_t i = base + segment_draw_order(q);
    const double w = weight_at(weights, i);
    if (!(w > 0.0))
      continue;
    in_cum += w;
    last = static_cast<int32_t>(i);
    if (in_cum > in_target)
      return last;
  }
  return last; // rounding ran past the end: the last positive weight
}

bool segment_race_draw_consistent(std::span<const float> weights, const DrawCoins& coins,
                                  int32_t token, double rel_tol) {
  if (token < 0 || static_cast<size_t>(token) >= weights.size() || !(weights[token] > 0.0f))
    return false;
  const std::vector<double> mass = segment_masses(weights);
  const std::vector<double> key = race_keys(mass, coins);
  const int64_t seg = token / kDrawSegment;
  const double best = *std::max_element(key.begin(), key.end());
  if (!(key[static_cast<size_t>(seg)] >= best * (1.0 - rel_tol)))
    return false;
  const float u = draw_coin(coins.seed, coins.offset, coins.row, seg);
  const int64_t base = seg * kDrawSegment;
  double in_before = 0.0;
  for (int q = 0; q < kDrawSegment; ++q) {
    const int64_t i = base + segment_draw_order(q);
    if (i == token)
      break;
    in_before += weight_at(weights, i);
  }
  const double m = mass[static_cast<size_t>(seg)];
  const double in_target = static_cast<double>(u) * m, in_slack = rel_tol * m;
  return in_before <= in_target + in_slack && in_before + weights[token] >= in_target - in_slack;
}

TreeSamplingResult verify_tree_sampling_reference(const DraftTree& tree,
                                                  std::span<const float> target_probs,
                                                  int64_t vocab, uint64_t seed, uint64_t offset,
                                                  int request) {
  const int n = tree.size();
  const size_t V = static_cast<size_t>(vocab);
  if (target_probs.size() < static_cast<size_t>(n) * V)
    throw std::invalid_argument("verify_tree_sampling_reference: target_probs smaller than [n, V]");
  const auto row_of = [&](int node) { return static_cast<uint32_t>(request * n + node); };
  TreeSamplingResult r;
  r.target_tokens.assign(static_cast<size_t>(n), -1);
  r.acceptance.path.push_back(0);
  int cur = 0;
  std::vector<int32_t> kids; // the valid, distinct tokens of cur's children
  for (;;) {
    const float u = sampling_coin(seed, offset, row_of(cur), kCoinWalk);
    const float* p = target_probs.data() + static_cast<size_t>(cur) * V;
    kids.clear();
    float before = 0.0f; // float, one add at a time in sibling order, as the kernels sum
    int next = -1;
    for (int c = tree.first_child[cur]; c >= 0; c = tree.next_sibling[c]) {
      const int32_t t = tree.tokens[c];
      if (t < 0 || static_cast<size_t>(t) >= V ||
          std::find(kids.begin(), kids.end(), t) != kids.end())
        continue;
      kids.push_back(t);
      const float w = std::max(0.0f, p[t]);
      const float upto = before + w;
      if (w > 0.0f && u < upto) {
        next = c;
        break;
      }
      before = upto;
    }
    if (next < 0)
      break;
    r.target_tokens[static_cast<size_t>(cur)] = tree.tokens[next];
    r.acceptance.path.push_back(next);
    cur = next;
  }
  // The bonus: p_cur without its children's tokens (`kids` holds all of them: the walk passed
  // each).
  const std::span<const float> row = target_probs.subspan(static_cast<size_t>(cur) * V, V);
  r.residual.assign(row.begin(), row.end());
  for (int32_t t : kids)
    r.residual[static_cast<size_t>(t)] = 0.0f;
  r.coins = DrawCoins{seed, offset, row_of(cur)};
  int32_t bonus = sample_segment_race_reference(r.residual, r.coins);
  if (bonus < 0 && !kids.empty()) { // the children held all the mass: draw from p_cur itself
    r.residual.assign(row.begin(), row.end());
    bonus = sample_segment_race_reference(r.residual, r.coins);
  }
  r.acceptance.bonus_token = bonus;
  r.target_tokens[static_cast<size_t>(cur)] = bonus;
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
  r.coins = DrawCoins{seed, offset, base + static_cast<uint32_t>(j)};
  r.output[j] = sample_segment_race_reference(r.residual, r.coins);
  return r;
}

} // namespace specbench
