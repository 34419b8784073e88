#pragma once
/// \file sglang_layout.hpp
/// SGLang's draft-tree buffers (first-child / next-sibling arrays with global node ids, as
/// sgl-kernel's build_tree_kernel_efficient emits them and verify_tree_greedy reads them) and a
/// CPU reference of that greedy walk, to check kernels::verify_tree_greedy_sglang.

#include "specbench/draft_tree.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace specbench {

/// One request's tree in SGLang's layout; node ids in retrive_next_* are local, in
/// retrive_index global (request * n + i). Every array has n entries.
struct SglangTree {
  std::vector<int64_t> candidates;           ///< [n] token per node, candidates[0] = root
  std::vector<int64_t> retrive_index;        ///< [n] global node id
  std::vector<int64_t> retrive_next_token;   ///< [n] first child (local) or -1
  std::vector<int64_t> retrive_next_sibling; ///< [n] next sibling (local) or -1
};

/// `tree` as request `request` of a batch with tree.size() nodes per request.
SglangTree to_sglang_layout(const DraftTree& tree, int request);

/// A batch's buffers as the kernels take them: request b's tree as to_sglang_layout(trees[b], b),
/// the requests' arrays one after another. Every tree must have the same size
/// (std::invalid_argument otherwise).
SglangTree to_sglang_layout(const std::vector<DraftTree>& trees);

/// What sgl-kernel's greedy walk writes for one request.
struct SglangAcceptance {
  std::vector<int32_t> accept_index;                 ///< [steps] global ids of the path, -1 padded
  int32_t accept_token_num = 0;                      ///< drafts accepted
  std::vector<std::pair<int64_t, int32_t>> predicts; ///< (global id, token) writes to predicts
};

/// Greedy walk over SGLang buffers for one request: at most steps - 1 drafts are accepted;
/// `target_predict` is indexed by global node id (the whole batch, [batch * n]).
SglangAcceptance verify_tree_greedy_sglang_reference(const SglangTree& tree,
                                                     std::span<const int64_t> target_predict,
                                                     int steps);

} // namespace specbench
