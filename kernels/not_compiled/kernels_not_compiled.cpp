// Built when CMake found no CUDA compiler: every launcher says so, with a remedy, after the same
// shape checks the CUDA build runs (so callers see argument errors either way).
#include "../../src/kernels_ref/kernel_shapes.hpp"
#include "specbench/kernels.hpp"

namespace specbench::kernels {
using detail::not_compiled;

bool compiled_with_cuda() noexcept {
  return false;
}

Status verify_chain_greedy(const int32_t* drafts, const int32_t* target_tokens, int batch, int k,
                           int32_t* accepted, int32_t* bonus, Stream, LaunchOptions) {
  if (Status s = detail::check_chain_greedy(drafts, target_tokens, batch, k, accepted, bonus); !s)
    return s;
  return not_compiled("kernels::verify_chain_greedy");
}

Status verify_tree_greedy(const int32_t* parents, const int32_t* tokens,
                          const int32_t* target_tokens, int batch, int nodes, int32_t* accept_path,
                          int32_t* accepted, int32_t* bonus, Stream, LaunchOptions) {
  if (Status s = detail::check_tree_greedy(parents, tokens, target_tokens, batch, nodes,
                                           accept_path, accepted, bonus);
      !s)
    return s;
  return not_compiled("kernels::verify_tree_greedy");
}

Status verify_tree_greedy_sglang(int32_t* predicts, int32_t* accept_index,
                                 int32_t* accept_token_num, const int64_t* candidates,
                                 const int64_t* retrive_index, const int64_t* retrive_next_token,
                                 const int64_t* retrive_next_sibling, const int64_t* target_predict,
                                 int batch, int nodes, int steps, Stream, LaunchOptions) {
  if (Status s = detail::check_sglang(predicts, accept_index, accept_token_num, candidates,
                                      retrive_index, retrive_next_token, retrive_next_sibling,
                                      target_predict, batch, nodes, steps);
      !s)
    return s;
  return not_compiled("kernels::verify_tree_greedy_sglang");
}

Status verify_greedy_fused(const void* logits, LogitsDtype dtype, const int32_t*,
                           const int32_t* tokens, int batch, int nodes, int64_t vocab, int32_t*,
                           int32_t* accept_path, int32_t* accepted, int32_t* bonus, void* workspace,
                           std::size_t workspace_bytes, Stream, LaunchOptions) {
  if (Status s = detail::check_dtype(dtype, "kernels::verify_greedy_fused"); !s)
    return s;
  if (Status s = detail::check_fused(logits, tokens, batch, nodes, vocab, accept_path, accepted,
                                     bonus, workspace, workspace_bytes,
                                     verify_greedy_fused_workspace_bytes(batch, nodes, vocab),
                                     "kernels::verify_greedy_fused");
      !s)
    return s;
  return not_compiled("kernels::verify_greedy_fused");
}

Status clear_workspace(void* workspace, std::size_t bytes, Stream) {
  if (Status s = detail::check_clear_workspace(workspace, bytes); !s)
    return s;
  return not_compiled("kernels::clear_workspace");
}

Status verify_tree_sampling(const float* target_probs, const int32_t*, const int32_t* tokens,
                            int batch, int nodes, int64_t vocab, PhiloxArgs rng, int32_t*,
                            int32_t* accept_path, int32_t* accepted, int32_t* bonus,
                            void* workspace, std::size_t workspace_bytes, Stream, LaunchOptions) {
  if (Status s = detail::check_rng(rng, "kernels::verify_tree_sampling"); !s)
    return s;
  if (Status s = detail::check_fused(target_probs, tokens, batch, nodes, vocab, accept_path,
                                     accepted, bonus, workspace, workspace_bytes, 0,
                                     "kernels::verify_tree_sampling");
      !s)
    return s;
  return not_compiled("kernels::verify_tree_sampling");
}

const char* verify_tree_sampling_kernel(int, int, int64_t) noexcept {
  return "not compiled";
}

bool force_tree_sampling_kernel(const char*) noexcept {
  return false;
}

std::string verify_tree_sampling_launch(int, int, int64_t) {
  return "not compiled";
}

Status verify_chain_sampling(const float* draft_probs, const int32_t* draft_tokens,
                             const float* target_probs, int batch, int k, int64_t vocab,
                             PhiloxArgs rng, int32_t* output_tokens, int32_t* accepted,
                             void* workspace, std::size_t workspace_bytes, Stream, LaunchOptions) {
  if (Status s = detail::check_rng(rng, "kernels::verify_chain_sampling"); !s)
    return s;
  if (Status s =
          detail::check_chain_sampling(draft_probs, draft_tokens, target_probs, batch, k, vocab,
                                       output_tokens, accepted, workspace, workspace_bytes);
      !s)
    return s;
  return not_compiled("kernels::verify_chain_sampling");
}

Status build_ddtree(const float* top_logp, const int32_t* top_ids, const int32_t* root_tokens,
                    const int32_t*, int batch, int depth, int k, int budget, const DdtreeOutputs&,
                    Stream, LaunchOptions) {
  if (Status s = detail::check_ddtree(top_logp, top_ids, root_tokens, batch, depth, k, budget); !s)
    return s;
  return not_compiled("kernels::build_ddtree");
}

} // namespace specbench::kernels
