#include "kernel_shapes.hpp"

#include "specbench/build_info.hpp"
#include "specbench/cuda_errors.hpp"

#include <limits>
#include <string>

namespace specbench::kernels::detail {
namespace {

constexpr int kMaxNodes = 2048;

Status bad(const std::string& where, const std::string& what, const std::string& fix) {
  return Status(StatusCode::invalid_argument, what, fix, where);
}

Status need(const void* p, const char* name, const char* where) {
  if (p == nullptr)
    return bad(where, std::string(name) + " is null",
               std::string("pass a device buffer for ") + name);
  return {};
}

} // namespace

int greedy_max_splits(int64_t vocab) noexcept {
  const int64_t s = (vocab + kGreedyGranule - 1) / kGreedyGranule;
  return static_cast<int>(s < 1 ? 1 : (s > kGreedyMaxSplits ? kGreedyMaxSplits : s));
}

FusedSmallLaunch fused_small_width(int64_t rows, int64_t vocab, int elems_per_vector, int sms,
                                   const int* resident, int max_splits) noexcept {
  FusedSmallLaunch best;
  if (rows <= 0 || vocab <= 0 || elems_per_vector <= 0 || sms <= 0)
    return best;
  bool best_full = false;
  int64_t best_load = 0;
  for (int i = 0; i < kFusedSmallWidthCount; ++i) {
    const int64_t chunk =
        static_cast<int64_t>(kFusedSmallWidths[i]) * kFusedLoadsPerThread * elems_per_vector;
    const int64_t splits = (vocab + chunk - 1) / chunk;
    const int64_t blocks = rows * splits;
    if (splits > max_splits || blocks > static_cast<int64_t>(sms) * resident[i])
      continue;
    const bool full = blocks >= sms;               // every SM has a block
    const int64_t load = (blocks + sms - 1) / sms; // blocks on the busiest SM
    if (best.index < 0 || (full && !best_full) || (full == best_full && load < best_load)) {
      best = {i, chunk, splits};
      best_full = full;
      best_load = load;
    }
  }
  return best;
}

int64_t sampling_segments(int64_t vocab) noexcept {
  return (vocab + kSamplingSegment - 1) / kSamplingSegment;
}

Status check_workspace_alignment(const void* workspace, const char* where) {
  if (const auto rem = reinterpret_cast<std::uintptr_t>(workspace) % 16; rem != 0)
    return bad(where,
               "workspace is not 16-byte aligned (address % 16 = " + std::to_string(rem) + ")",
               "pass the start of a device allocation (cudaMalloc aligns to 256 bytes) or an "
               "offset into one that is a multiple of 16");
  return {};
}

Status check_clear_workspace(const void* workspace, std::size_t bytes) {
  const char* w = "kernels::clear_workspace";
  if (bytes == 0)
    return {};
  if (Status s = need(workspace, "workspace", w); !s)
    return s;
  return check_workspace_alignment(workspace, w);
}

Status check_dtype(LogitsDtype dtype, const char* where) {
  if (dtype != LogitsDtype::bf16 && dtype != LogitsDtype::fp32)
    return bad(where, "dtype " + std::to_string(static_cast<int>(dtype)) + " is not a LogitsDtype",
               "pass LogitsDtype::bf16 or LogitsDtype::fp32");
  return {};
}

Status check_rng(const PhiloxArgs& rng, const char* where) {
  if (reinterpret_cast<std::uintptr_t>(rng.device_seed_offset) % 8 != 0)
    return bad(where, "rng.device_seed_offset is not 8-byte aligned",
               "point it at two uint64 values in device memory (or pass nullptr)");
  return {};
}

Status check_chain_greedy(const void* drafts, const void* target, int batch, int k,
                          const void* accepted, const void* bonus) {
  const char* w = "kernels::verify_chain_greedy";
  // Four requests per block, counted in int: 2^26 requests keep that far from overflow.
  if (batch < 0 || batch > 1 << 26 || k < 0 || k > 1 << 20)
    return bad(w, "batch " + std::to_string(batch) + ", k " + std::to_string(k) + " out of range",
               "pass 0 <= batch <= 2^26 and 0 <= k <= 2^20");
  if (batch == 0)
    return {};
  for (auto [p, n] : {std::pair{target, "target_tokens"}, {accepted, "accepted"}, {bonus, "bonus"}})
    if (Status s = need(p, n, w); !s)
      return s;
  if (k > 0)
    if (Status s = need(drafts, "drafts", w); !s)
      return s;
  return {};
}

Status check_tree_greedy(const void* parents, const void* tokens, const void* target, int batch,
                         int nodes, const void* path, const void* accepted, const void* bonus) {
  const char* w = "kernels::verify_tree_greedy";
  if (batch < 0 || nodes < 1 || nodes > kMaxNodes)
    return bad(
        w, "batch " + std::to_string(batch) + ", nodes " + std::to_string(nodes) + " out of range",
        "pass batch >= 0 and 1 <= nodes <= " + std::to_string(kMaxNodes));
  if (batch == 0)
    return {};
  for (auto [p, n] : {std::pair{parents, "parents"},
                      {tokens, "tokens"},
                      {target, "target_tokens"},
                      {path, "accept_path"},
                      {accepted, "accepted"},
                      {bonus, "bonus"}})
    if (Status s = need(p, n, w); !s)
      return s;
  return {};
}

Status check_sglang(const void* predicts, const void* accept_index, const void* accept_num,
                    const void* candidates, const void* retrive_index, const void* next_token,
                    const void* next_sibling, const void* target_predict, int batch, int nodes,
                    int steps) {
  const char* w = "kernels::verify_tree_greedy_sglang";
  if (batch < 0 || nodes < 1 || nodes > kMaxNodes || steps < 1)
    return bad(w,
               "batch " + std::to_string(batch) + ", nodes " + std::to_string(nodes) + ", steps " +
                   std::to_string(steps) + " out of range",
               "pass batch >= 0, 1 <= nodes <= " + std::to_string(kMaxNodes) + ", steps >= 1");
  if (batch == 0)
    return {};
  for (auto [p, n] : {std::pair{predicts, "predicts"},
                      {accept_index, "accept_index"},
                      {accept_num, "accept_token_num"},
                      {candidates, "candidates"},
                      {retrive_index, "retrive_index"},
                      {next_token, "retrive_next_token"},
                      {next_sibling, "retrive_next_sibling"},
                      {target_predict, "target_predict"}})
    if (Status s = need(p, n, w); !s)
      return s;
  return {};
}

Status check_fused(const void* logits, const void* tokens, int batch, int nodes, int64_t vocab,
                   const void* path, const void* accepted, const void* bonus, const void* workspace,
                   std::size_t workspace_bytes, std::size_t needed, const char* w) {
  if (batch < 0 || nodes < 1 || nodes > kMaxNodes)
    return bad(
        w, "batch " + std::to_string(batch) + ", nodes " + std::to_string(nodes) + " out of range",
        "pass batch >= 0 and 1 <= nodes <= " + std::to_string(kMaxNodes));
  if (vocab < 1 || vocab > std::numeric_limits<int32_t>::max())
    return bad(w, "vocab " + std::to_string(vocab) + " out of range", "pass 1 <= vocab < 2^31");
  if (batch == 0)
    return {};
  for (auto [p, n] : {std::pair{logits, "logits/probs"},
                      {tokens, "tokens"},
                      {path, "accept_path"},
                      {accepted, "accepted"},
                      {bonus, "bonus"}})
    if (Status s = need(p, n, w); !s)
      return s;
  if (needed > 0) // tree sampling needs none and may pass null
    if (Status s = need(workspace, "workspace", w); !s)
      return s;
  if (workspace_bytes < needed)
    return bad(w,
               "workspace of " + std::to_string(workspace_bytes) + " bytes, " +
                   std::to_string(needed) + " needed",
               "allocate the size the matching *_workspace_bytes() returns and zero it once");
  if (needed > 0)
    return check_workspace_alignment(workspace, w);
  return {};
}

Status check_chain_sampling(const void* draft_probs, const void* draft_tokens,
                            const void* target_probs, int batch, int k, int64_t vocab,
                            const void* output_tokens, const void* accepted, const void* workspace,
                            std::size_t workspace_bytes) {
  const char* w = "kernels::verify_chain_sampling";
  if (batch < 0 || k < 0 || k + 1 > kMaxNodes)
    return bad(w, "batch " + std::to_string(batch) + ", k " + std::to_string(k) + " out of range",
               "pass batch >= 0 and 0 <= k < " + std::to_string(kMaxNodes));
  if (vocab < 1 || vocab > std::numeric_limits<int32_t>::max())
    return bad(w, "vocab " + std::to_string(vocab) + " out of range", "pass 1 <= vocab < 2^31");
  if (batch == 0)
    return {};
  for (auto [p, n] : {std::pair{target_probs, "target_probs"},
                      {output_tokens, "output_tokens"},
                      {accepted, "accepted"},
                      {workspace, "workspace"}})
    if (Status s = need(p, n, w); !s)
      return s;
  if (k > 0) {
    if (Status s = need(draft_probs, "draft_probs", w); !s)
      return s;
    if (Status s = need(draft_tokens, "draft_tokens", w); !s)
      return s;
  }
  const std::size_t needed = verify_sampling_workspace_bytes(batch, k + 1, vocab);
  if (workspace_bytes < needed)
    return bad(w,
               "workspace of " + std::to_string(workspace_bytes) + " bytes, " +
                   std::to_string(needed) + " needed",
               "allocate verify_sampling_workspace_bytes(batch, k + 1, vocab) and zero it once");
  return check_workspace_alignment(workspace, w);
}

Status check_ddtree(const void* top_logp, const void* top_ids, const void* root_tokens, int batch,
                    int depth, int k, int budget) {
  const char* w = "kernels::build_ddtree";
  if (batch < 0 || depth < 0 || depth > 4096 || k < 0 || budget < 0 || budget > kMaxDdtreeBudget)
    return bad(w,
               "batch " + std::to_string(batch) + ", depth " + std::to_string(depth) + ", k " +
                   std::to_string(k) + ", budget " + std::to_string(budget) + " out of range",
               "pass batch >= 0, 0 <= depth <= 4096, k >= 0, 0 <= budget <= " +
                   std::to_string(kMaxDdtreeBudget));
  if (batch == 0)
    return {};
  if (Status s = need(root_tokens, "root_tokens", w); !s)
    return s;
  if (depth > 0 && k > 0) {
    if (Status s = need(top_logp, "top_logp", w); !s)
      return s;
    if (Status s = need(top_ids, "top_ids", w); !s)
      return s;
  }
  return {};
}

Status cuda_call_status(int code, const char* name, const char* text, const char* call,
                        const char* where) {
  std::string what = std::string(call) + " failed: " + name + " (" + text + ")";
  std::string remedy = "check that the pointers are device buffers of the documented sizes and "
                       "that the GPU is healthy (specbench preflight)";
  const CudaErrorInfo* info = find_cuda_error(code);
  // No kernel image: a GPU older than the kernels (they need sm_90: thread-block clusters), or a
  // newer one that this build has neither SASS nor PTX for.
  if (code == 209)
    remedy = "the kernels need compute capability 9.0 or newer (H100/H200, B200, RTX PRO 6000); on "
             "such a GPU, rebuild with -DCMAKE_CUDA_ARCHITECTURES including its architecture "
             "(this build: " +
             std::string(build_info::kernel_cuda_architectures) + ")";
  else if (info != nullptr && code != 1) {
    // The catalogue's cause and remedy (cuda_errors.hpp); an invalid value keeps the generic
    // remedy, since at a launch it is nearly always a size or pointer the caller passed.
    what += ": " + std::string(info->cause);
    remedy = info->remedy;
  }
  if (info != nullptr && info->poisons_process)
    what += " (the CUDA context of this process is now unusable)";
  return Status(StatusCode::cuda_error, what, remedy, where);
}

Status not_compiled(const char* where) {
  if (build_info::cuda_compiled) // nvcc was there, but no architecture the kernels can use
    return Status(StatusCode::not_compiled,
                  std::string(where) +
                      " is a CUDA kernel and this specbench was built without the kernels: "
                      "CMAKE_CUDA_ARCHITECTURES (" +
                      build_info::cuda_architectures + ") has no sm_90 or newer entry",
                  "the kernels need compute capability 9.0 or newer; reconfigure with "
                  "-DCMAKE_CUDA_ARCHITECTURES including 90 (H100/H200), 100 (B200) or 120 (RTX "
                  "PRO 6000)",
                  where);
  return Status(StatusCode::not_compiled,
                std::string(where) + " is a CUDA kernel and this specbench was built without CUDA",
                "install the CUDA toolkit (nvcc 12.8 or newer) and reconfigure with "
                "-DSPECBENCH_ENABLE_CUDA=ON",
                where);
}

} // namespace specbench::kernels::detail

namespace specbench::kernels {

std::size_t verify_greedy_fused_workspace_bytes(int batch, int nodes, int64_t vocab) noexcept {
  if (batch <= 0 || nodes <= 0 || vocab <= 0)
    return 0;
  using namespace detail;
  return align_up(sizeof(uint32_t) * static_cast<std::size_t>(batch), kWorkspaceAlign) +
         align_up(sizeof(uint64_t) * static_cast<std::size_t>(batch) * nodes *
                      greedy_max_splits(vocab),
                  kWorkspaceAlign);
}

std::size_t verify_sampling_workspace_bytes(int batch, int rows, int64_t vocab) noexcept {
  if (batch <= 0 || rows <= 0 || vocab <= 0)
    return 0;
  using namespace detail;
  // A ticket counter per request, and a 64-bit race slot per block of the pass; a row never has
  // more blocks than segments, so one slot per segment is always enough.
  return align_up(sizeof(uint32_t) * static_cast<std::size_t>(batch), kWorkspaceAlign) +
         align_up(sizeof(uint64_t) * static_cast<std::size_t>(batch) * rows *
                      static_cast<std::size_t>(sampling_segments(vocab)),
                  kWorkspaceAlign);
}

} // namespace specbench::kernels
