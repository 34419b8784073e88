#pragma once
/// \file kernels.hpp
/// CUDA kernels for speculative decoding: greedy and sampling verification of draft chains and
/// draft trees, and DDTree tree building under a node budget. Every launcher takes raw device
/// pointers, sizes and a stream, checks the shapes first, launches, checks the launch error and
/// returns a Status; none throws or exits. Built without CUDA, every launcher returns
/// StatusCode::not_compiled with a remedy. The CPU references that define the exact answers are
/// in draft_tree.hpp, sglang_layout.hpp and sampling_reference.hpp; docs/kernels.md has the
/// design, the tie and NaN rules and measured times.
///
/// Conventions shared by all launchers:
/// - Node 0 of every request's tree is the root (the last committed token); nodes 1.. are drafts.
/// - `accept_path` rows hold local node ids from the root (path[0] = 0), padded with -1;
///   `accepted` counts accepted drafts (the root and the bonus token excluded), so the tokens
///   committed this step are accepted + 1.
/// - Parent-array trees: parents[b, 0] is ignored; a node whose parent is outside [0, nodes) is
///   never accepted. Among children of one node the lowest index is tried first (the sibling
///   order of DraftTree), so duplicate sibling tokens resolve to the lowest index.

#include "specbench/status.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

/// CUDA's stream type (`cudaStream_t` is `CUstream_st*`), declared here so that this header needs
/// no CUDA header. Pass nullptr for the default stream.
struct CUstream_st;

namespace specbench::kernels {

/// A CUDA stream; nullptr is the legacy default stream.
using Stream = CUstream_st*;

/// How a launcher launches its kernel; the default is a plain launch.
struct LaunchOptions {
  /// Programmatic dependent launch (sm_90 and newer; CUDA graphs keep it as a programmatic edge).
  /// The kernel's blocks may be scheduled before the previous kernel in the stream has finished:
  /// they do their set-up, then wait until that kernel has ended and its writes are visible before
  /// they touch any buffer, so the results are exactly those of a plain launch. The kernel in turn
  /// lets the next kernel launched this way be scheduled once its own bulk reads are done. It pays
  /// only where the kernel before allows an early launch too (CUTLASS and Triton kernels can):
  /// after a kernel that allows it 1 us before its end, fused greedy 1 x 16 cost 3.56 us instead
  /// of 4.1, but after one that allows none every kernel took about 0.25 us longer
  /// (docs/kernels.md). Measure it in your pipeline. As with any such kernel, a kernel launched
  /// after one of these with the same attribute must wait (cudaGridDependencySynchronize or
  /// griddepcontrol.wait) before it reads their outputs; a plainly launched one always waits.
  bool programmatic_dependent = false;
};

/// Element type of a logits tensor.
enum class LogitsDtype {
  bf16, ///< bfloat16, as the LM head writes it
  fp32, ///< float32, as SGLang's LogitsProcessor up-casts it
};

/// True when this binary contains the CUDA kernels (false: every launcher says not_compiled).
bool compiled_with_cuda() noexcept;

// ---------------------------------------------------------------------------------------------
// Greedy verification from target tokens (the target's argmax is already known).
// ---------------------------------------------------------------------------------------------

/// Chain greedy verification (DFlash): accept the longest prefix of `drafts` that equals the
/// target's tokens, then emit the target's token after it as the bonus token. One warp per
/// request. Same answers as verify_chain_reference.
Status verify_chain_greedy(const int32_t* drafts,        // [batch, k] int32
                           const int32_t* target_tokens, // [batch, k + 1] int32
                           int batch, int k,
                           int32_t* accepted, // [batch] int32 out: drafts accepted (0..k)
                           int32_t* bonus,    // [batch] int32 out: target token after them
                           Stream stream, LaunchOptions launch = {});

/// Tree greedy verification, parent-array layout: from the root, move to the lowest-index child
/// whose token equals the target's token at the current node, until none does. Same answers as
/// verify_tree_reference on the tree those parents describe.
Status
verify_tree_greedy(const int32_t* parents,       // [batch, nodes] int32, parents[b,0] unused
                   const int32_t* tokens,        // [batch, nodes] int32, draft token per node
                   const int32_t* target_tokens, // [batch, nodes] int32, target token per node
                   int batch, int nodes,
                   int32_t* accept_path, // [batch, nodes] int32 out, -1 padded
                   int32_t* accepted,    // [batch] int32 out
                   int32_t* bonus,       // [batch] int32 out
                   Stream stream, LaunchOptions launch = {});

/// Tree greedy verification with SGLang's buffers (`verify_tree_greedy` of sgl-kernel, the same
/// int64 inputs and int32 outputs, global node id = b * nodes + i as `retrive_index` holds it).
/// For every node on the accepted path `predicts[global id]` receives the target token there;
/// `accept_index[b, 0..accepted]` the global ids of the path (rest set to -1);
/// `accept_token_num[b]` the drafts accepted. At most steps - 1 drafts are accepted.
Status verify_tree_greedy_sglang(int32_t* predicts,                   // [batch * nodes] int32 out
                                 int32_t* accept_index,               // [batch, steps] int32 out
                                 int32_t* accept_token_num,           // [batch] int32 out
                                 const int64_t* candidates,           // [batch, nodes] int64
                                 const int64_t* retrive_index,        // [batch, nodes] int64
                                 const int64_t* retrive_next_token,   // [batch, nodes] int64
                                 const int64_t* retrive_next_sibling, // [batch, nodes] int64
                                 const int64_t* target_predict,       // [batch * nodes] int64
                                 int batch, int nodes, int steps, Stream stream,
                                 LaunchOptions launch = {});

// ---------------------------------------------------------------------------------------------
// Fused greedy verification from logits: argmax of every node and the walk, one pass.
// ---------------------------------------------------------------------------------------------

/// Bytes of device workspace verify_greedy_fused needs for these sizes.
std::size_t verify_greedy_fused_workspace_bytes(int batch, int nodes, int64_t vocab) noexcept;

/// Greedy verification straight from the target's logits. The vocabulary of every node is split
/// across thread blocks so that small batches fill the GPU; the last block of each request
/// reduces the partial maxima and walks the tree. The argmax follows torch.argmax: the first
/// maximum wins ties, a NaN counts as larger than every number (the first NaN wins), -0 equals
/// +0. `parents` == nullptr means a chain (parent of node i is i - 1, DFlash). `workspace` must
/// hold verify_greedy_fused_workspace_bytes and be zeroed once before the first call
/// (clear_workspace); the kernel leaves it zeroed again, so it can be reused and graph-captured.
Status verify_greedy_fused(const void* logits, // [batch, nodes, vocab] bf16 or fp32
                           LogitsDtype dtype,
                           const int32_t* parents, // [batch, nodes] int32, or nullptr for chains
                           const int32_t* tokens,  // [batch, nodes] int32, draft token per node
                           int batch, int nodes, int64_t vocab,
                           int32_t* target_tokens, // [batch, nodes] int32 out (argmax), optional
                           int32_t* accept_path,   // [batch, nodes] int32 out, -1 padded
                           int32_t* accepted,      // [batch] int32 out
                           int32_t* bonus,         // [batch] int32 out
                           void* workspace, std::size_t workspace_bytes, Stream stream,
                           LaunchOptions launch = {});

/// Zero `bytes` of device memory on `stream` (the one-time preparation of a workspace).
Status clear_workspace(void* workspace, std::size_t bytes, Stream stream);

// ---------------------------------------------------------------------------------------------
// Sampling verification (temperature > 0), lossless, Philox random numbers.
// ---------------------------------------------------------------------------------------------

/// Where the Philox seed and offset come from. A call draws counters (offset, row, tag) under
/// key seed, so advance `offset` by one per call. With `device_seed_offset` set, the kernel reads
/// {seed, offset} from that device buffer instead, so a captured CUDA graph can be replayed with
/// new random numbers by updating the buffer.
struct PhiloxArgs {
  uint64_t seed = 0;                            ///< Philox key
  uint64_t offset = 0;                          ///< Philox counter offset for this call
  const uint64_t* device_seed_offset = nullptr; ///< [2] uint64 on the device, optional
};

/// Bytes of device workspace verify_chain_sampling needs for `rows` (k + 1) rows per request
/// (verify_tree_sampling needs none).
std::size_t verify_sampling_workspace_bytes(int batch, int rows, int64_t vocab) noexcept;

/// Tree speculative sampling, target-only (DDTree; SGLang's tree_speculative_sampling_target_only
/// with thresholds 1), the rule of verify_tree_sampling_reference (sampling_reference.hpp): the
/// walk takes child c of node x when x's walk coin falls in c's share p_x(t_c) of the children's
/// prefix sums (sibling order = index order), and the bonus at the last node f is the segment-race
/// draw from p_f without f's children. Each committed token then has the target's distribution,
/// exactly as drawing at every node and following the matching child, but the call reads only the
/// walk's gathers and row f: rows must be probabilities that sum to 1 (as after softmax and top-k
/// / top-p renormalisation); the walk compares its coin with unnormalised prefix sums.
/// target_tokens (optional): at each path node the token taken after it (the next path node's
/// token, the bonus at the last), -1 at every other node. Two kernels (sm_90+), the same results:
/// "path", one thread-block cluster per request that reads the walk's gathers and row f; and for
/// the smallest calls (a few rows, see verify_tree_sampling_kernel) "rows", a cluster per node
/// row that loads its row while the walk runs, so that only f's cluster races and the others
/// stop. `workspace` is unused (may be null with 0 bytes); kept so that both sampling verifiers
/// take the same arguments.
Status verify_tree_sampling(const float* target_probs, // [batch, nodes, vocab] fp32
                            const int32_t* parents,    // [batch, nodes] int32, or nullptr (chain)
                            const int32_t* tokens,     // [batch, nodes] int32
                            int batch, int nodes, int64_t vocab, PhiloxArgs rng,
                            int32_t* target_tokens, // [batch, nodes] int32 out, optional
                            int32_t* accept_path,   // [batch, nodes] int32 out, -1 padded
                            int32_t* accepted,      // [batch] int32 out
                            int32_t* bonus,         // [batch] int32 out
                            void* workspace, std::size_t workspace_bytes, Stream stream,
                            LaunchOptions launch = {});

/// The kernel verify_tree_sampling runs on the current device for these sizes with 16-byte
/// aligned rows: "rows" or "path" ("not compiled" in a build without CUDA). For benchmarks and
/// tests; the results do not depend on it.
const char* verify_tree_sampling_kernel(int batch, int nodes, int64_t vocab) noexcept;

/// The launch verify_tree_sampling makes on the current device for these sizes (aligned rows),
/// for benchmark labels, e.g. "rows: 8 clusters of 9 blocks x 18 warps" or "path: 64 clusters of
/// 2 blocks x 16 warps" (H200); "not compiled" in a build without CUDA.
std::string verify_tree_sampling_launch(int batch, int nodes, int64_t vocab);

/// For benchmarks and tests: makes verify_tree_sampling (and the two queries above) run "path"
/// for every call that follows on the calling thread; other threads keep their own choice. "rows"
/// or "auto" (or nullptr) restore the automatic choice, which runs "rows" wherever it can. False,
/// and nothing changes, for another name.
bool force_tree_sampling_kernel(const char* kernel) noexcept;

/// Chain speculative sampling (Leviathan et al.): draft i is accepted when u_i * q_i(d_i) <
/// p_i(d_i) with u_i = u(seed, offset, b * (k + 1) + i, tag 1); at the first rejection the token
/// is drawn from max(p - q, 0) (from p when that is all zero), after k acceptances from p_k, each
/// by the segment-race draw with the coins of row b * (k + 1) + i. The acceptance tests run
/// first, so only the row drawn from is read: one target row and at most one draft row per request
/// (when that max(p - q, 0) is all zero, the target row is read a second time, to draw from p).
/// Workspace: verify_sampling_workspace_bytes(batch, k + 1, vocab), zeroed once.
Status verify_chain_sampling(const float* draft_probs,    // [batch, k, vocab] fp32
                             const int32_t* draft_tokens, // [batch, k] int32
                             const float* target_probs,   // [batch, k + 1, vocab] fp32
                             int batch, int k, int64_t vocab, PhiloxArgs rng,
                             int32_t* output_tokens, // [batch, k + 1] int32 out, -1 padded
                             int32_t* accepted,      // [batch] int32 out: drafts accepted
                             void* workspace, std::size_t workspace_bytes, Stream stream,
                             LaunchOptions launch = {});

// ---------------------------------------------------------------------------------------------
// DDTree tree building.
// ---------------------------------------------------------------------------------------------

/// Output buffers of build_ddtree; n = budget + 1 nodes per request. Every pointer may be null
/// (that output is skipped). Nodes the drafter cannot fill (only -inf paths left) are padding:
/// parents/depths/tokens/positions/first_child/next_sibling -1, scores -inf, and their mask rows
/// see only themselves.
struct DdtreeOutputs {
  int32_t* node_count = nullptr;   ///< [batch] int32: nodes built incl. the root (<= budget + 1)
  int32_t* parents = nullptr;      ///< [batch, n] int32, parents[b,0] = -1
  int32_t* depths = nullptr;       ///< [batch, n] int32
  int32_t* tokens = nullptr;       ///< [batch, n] int32, tokens[b,0] = root token
  int32_t* first_child = nullptr;  ///< [batch, n] int32
  int32_t* next_sibling = nullptr; ///< [batch, n] int32
  int32_t* positions = nullptr;    ///< [batch, n] int32: seq_lens[b] + depth
  float* scores = nullptr;         ///< [batch, n] fp32: summed log-probabilities
  uint8_t* mask = nullptr;         ///< [batch, n, n] bool: 1 when column j is row i or its ancestor
  uint32_t* mask_packed = nullptr; ///< [batch, n, ceil(n/32)] uint32: bit j%32 of word j/32
};

/// DDTree best-first tree building (the same tree as build_ddtree_reference, bit for bit,
/// including ties and the order of nodes): from the drafter's top-k log-probabilities per
/// position, select the `budget` best rank paths. One block per request: the best-first search
/// keeps its frontier as a sorted list in registers, one warp's up to budget 128 and up to 16
/// warps' above (each step then ends on a barrier); the whole block then writes the outputs.
/// Inputs must be finite or -inf (a NaN has no defined place in the reference's order); each row
/// sorted descending, as top-k returns it. 0 <= budget <= 1024.
Status build_ddtree(const float* top_logp,      // [batch, depth, k] fp32
                    const int32_t* top_ids,     // [batch, depth, k] int32
                    const int32_t* root_tokens, // [batch] int32
                    const int32_t* seq_lens,    // [batch] int32 (positions base), or nullptr = 0
                    int batch, int depth, int k, int budget, const DdtreeOutputs& out,
                    Stream stream, LaunchOptions launch = {});

} // namespace specbench::kernels
