#include "specbench/sglang_layout.hpp"

#include <stdexcept>

namespace specbench {

SglangTree to_sglang_layout(const DraftTree& tree, int request) {
  const int n = tree.size();
  SglangTree s;
  s.candidates.assign(tree.tokens.begin(), tree.tokens.end());
  s.retrive_index.resize(n);
  for (int i = 0; i < n; ++i)
    s.retrive_index[i] = static_cast<int64_t>(request) * n + i;
  s.retrive_next_token.assign(tree.first_child.begin(), tree.first_child.end());
  s.retrive_next_sibling.assign(tree.next_sibling.begin(), tree.next_sibling.end());
  return s;
}

SglangTree to_sglang_layout(const std::vector<DraftTree>& trees) {
  SglangTree all;
  for (std::size_t b = 0; b < trees.size(); ++b) {
    if (trees[b].size() != trees[0].size())
      throw std::invalid_argument("to_sglang_layout: the batch's trees differ in size");
    const SglangTree s = to_sglang_layout(trees[b], static_cast<int>(b));
    const auto append = [](std::vector<int64_t>& to, const std::vector<int64_t>& from) {
      to.insert(to.end(), from.begin(), from.end());
    };
    append(all.candidates, s.candidates);
    append(all.retrive_index, s.retrive_index);
    append(all.retrive_next_token, s.retrive_next_token);
    append(all.retrive_next_sibling, s.retrive_next_sibling);
  }
  return all;
}

SglangAcceptance verify_tree_greedy_sglang_reference(const SglangTree& tree,
                                                     std::span<const int64_t> target_predict,
                                                     int steps) {
  const int64_t n = static_cast<int64_t>(tree.candidates.size());
  if (steps < 1)
    throw std::invalid_argument("verify_tree_greedy_sglang_reference: steps < 1");
  auto predict = [&](int64_t local) {
    const int64_t g = tree.retrive_index[local];
    if (g < 0 || static_cast<size_t>(g) >= target_predict.size())
      throw std::invalid_argument(
          "verify_tree_greedy_sglang_reference: retrive_index out of range");
    return target_predict[g];
  };
  SglangAcceptance a;
  a.accept_index.assign(steps, -1);
  int64_t cur = 0;
  a.accept_index[0] = static_cast<int32_t>(tree.retrive_index[0]);
  int accepted = 0;
  for (int j = 1; j < steps; ++j) {
    const int64_t want = predict(cur);
    int64_t next = -1;
    int64_t guard = 0;
    for (int64_t c = tree.retrive_next_token[cur]; c >= 0 && c < n && guard++ < n;
         c = tree.retrive_next_sibling[c])
      if (tree.candidates[c] == want) {
        next = c;
        break;
      }
    if (next < 0)
      break;
    a.predicts.emplace_back(tree.retrive_index[cur], static_cast<int32_t>(want));
    a.accept_index[j] = static_cast<int32_t>(tree.retrive_index[next]);
    ++accepted;
    cur = next;
  }
  a.predicts.emplace_back(tree.retrive_index[cur], static_cast<int32_t>(predict(cur)));
  a.accept_token_num = accepted;
  return a;
}

} // namespace specbench
