#pragma once
// Shape checks and workspace layouts shared by the CUDA launchers (kernels/*.cu) and the
// "not compiled" stand-ins, so both builds agree on sizes. Internal to specbench_kernels.

#include "specbench/kernels.hpp"

#include <cstddef>
#include <cstdint>

namespace specbench::kernels::detail {

/// Vocabulary elements per split granule of the fused greedy pass (256 threads x 8 bf16).
inline constexpr int64_t kGreedyGranule = 2048;
/// Most vocabulary splits per row of the fused greedy pass.
inline constexpr int kGreedyMaxSplits = 64;
/// Elements per segment of the sampling passes (one warp: 32 lanes x 8 float4).
inline constexpr int64_t kSamplingSegment = 1024;
/// Largest DDTree budget the tree-building kernel supports.
inline constexpr int kMaxDdtreeBudget = 1024;
/// Alignment of every workspace region.
inline constexpr std::size_t kWorkspaceAlign = 256;

inline std::size_t align_up(std::size_t x, std::size_t a) {
  return (x + a - 1) / a * a;
}

/// Most splits a row of `vocab` elements can be cut into by the fused greedy pass.
int greedy_max_splits(int64_t vocab) noexcept;

/// Block widths (threads) of the fused greedy kernel for small requests, narrowest first.
inline constexpr int kFusedSmallWidths[] = {256, 320, 384};
inline constexpr int kFusedSmallWidthCount = 3;
/// 16-byte loads per thread of one batch of the fused greedy pass.
inline constexpr int kFusedLoadsPerThread = 4;

/// The block width for a small fused greedy request in which every thread loads one batch
/// (kFusedLoadsPerThread 16-byte vectors of `elems_per_vector` values): the entry of
/// kFusedSmallWidths whose grid of rows x ceil(vocab / (width x 4 x elems_per_vector)) blocks puts
/// the fewest blocks on the busiest of `sms` SMs while it still gives every SM a block; ties, and
/// grids smaller than the GPU, take the narrower width. A width qualifies when its splits per row
/// are at most `max_splits` and its grid fits one wave (`resident[i]` blocks of width i per SM).
/// Returns the chosen width's index into kFusedSmallWidths with its chunk (values per block) and
/// splits per row, or index -1 when no width qualifies. Why: at 1 x 16 bf16
/// (V = 151,936) 256 threads make 304 blocks, three on 40 SMs, and those SMs end the pass last;
/// 320 threads make 240, at most two per SM (docs/kernels.md, round "Fused greedy 1 x 16: wider
/// blocks, at most two per SM").
struct FusedSmallLaunch {
  int index = -1;     // into kFusedSmallWidths; -1: none qualifies
  int64_t chunk = 0;  // values per block
  int64_t splits = 0; // blocks per row
};
FusedSmallLaunch fused_small_width(int64_t rows, int64_t vocab, int elems_per_vector, int sms,
                                   const int* resident, int max_splits) noexcept;
/// Segments per row of the sampling passes.
int64_t sampling_segments(int64_t vocab) noexcept;

/// Shape checks: ok, or invalid_argument saying which argument is wrong and how to fix it.
Status check_chain_greedy(const void* drafts, const void* target, int batch, int k,
                          const void* accepted, const void* bonus);
Status check_tree_greedy(const void* parents, const void* tokens, const void* target, int batch,
                         int nodes, const void* path, const void* accepted, const void* bonus);
Status check_sglang(const void* predicts, const void* accept_index, const void* accept_num,
                    const void* candidates, const void* retrive_index, const void* next_token,
                    const void* next_sibling, const void* target_predict, int batch, int nodes,
                    int steps);
Status check_fused(const void* logits, const void* tokens, int batch, int nodes, int64_t vocab,
                   const void* path, const void* accepted, const void* bonus, const void* workspace,
                   std::size_t workspace_bytes, std::size_t needed, const char* where);
Status check_chain_sampling(const void* draft_probs, const void* draft_tokens,
                            const void* target_probs, int batch, int k, int64_t vocab,
                            const void* output_tokens, const void* accepted, const void* workspace,
                            std::size_t workspace_bytes);
/// The workspace is used with 16-byte stores and 64-bit atomics: a slice at an odd offset would
/// fault on the GPU (a misaligned address poisons the CUDA context), so it is refused here.
Status check_workspace_alignment(const void* workspace, const char* where);
/// clear_workspace's arguments: a non-null, 16-byte aligned buffer when bytes > 0.
Status check_clear_workspace(const void* workspace, std::size_t bytes);
/// An element type the fused kernel knows (a bad enum value from a binding or a cast would read
/// bf16 data as fp32: twice the bytes).
Status check_dtype(LogitsDtype dtype, const char* where);
/// A device {seed, offset} pair, when given, must be 8-byte aligned (64-bit loads).
Status check_rng(const PhiloxArgs& rng, const char* where);
Status check_ddtree(const void* top_logp, const void* top_ids, const void* root_tokens, int batch,
                    int depth, int k, int budget);

/// A failed CUDA call (`call`, e.g. "cudaLaunchKernelEx") of launcher `where` as a cuda_error
/// Status: the error's name and text, and where the CUDA error catalogue (cuda_errors.hpp) knows
/// the code, its likely cause and remedy. Plain C++, so that the wording is tested without a GPU;
/// the launchers pass cudaGetErrorName and cudaGetErrorString.
Status cuda_call_status(int code, const char* name, const char* text, const char* call,
                        const char* where);

/// The "built without CUDA" answer of launcher `where`.
Status not_compiled(const char* where);

} // namespace specbench::kernels::detail
