// Fused greedy verification from logits: one pass over [batch, nodes, vocab] logits. Each block
// takes one (node, vocabulary chunk), keeps a per-thread running first maximum over 16-byte
// streaming loads, and writes its packed (value key, index) partial. The last block of a request
// to finish (atomic counter) reduces the partials of that request's nodes to the argmax and walks
// the tree in shared memory, then resets the counter so the workspace is ready for the next call.
#include "common.cuh"

#include <cuda_bf16.h>

namespace specbench::kernels {
namespace detail {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

template <typename T> struct Elem;
template <> struct Elem<__nv_bfloat16> {
  static constexpr int kPerVec = 8;
  __device__ static float get(const uint4& v, int e) {
    const uint32_t w = (&v.x)[e >> 1];
    return __uint_as_float((e & 1) ? (w & 0xFFFF0000u) : (w << 16));
  }
  __device__ static float scalar(const __nv_bfloat16* p) { return __bfloat162float(*p); }
};
template <> struct Elem<float> {
  static constexpr int kPerVec = 4;
  __device__ static float get(const uint4& v, int e) { return __uint_as_float((&v.x)[e]); }
  __device__ static float scalar(const float* p) { return *p; }
};

template <typename T, bool kVec>
__global__ void __launch_bounds__(kThreads)
    fused_greedy_kernel(const T* __restrict__ logits,        // [batch, nodes, vocab]
                        const int32_t* __restrict__ parents, // [batch, nodes] or nullptr
                        const int32_t* __restrict__ tokens,  // [batch, nodes]
                        int nodes, int64_t vocab, int splits, int64_t chunk,
                        int32_t* __restrict__ target_out,  // [batch, nodes] or nullptr
                        int32_t* __restrict__ accept_path, // [batch, nodes]
                        int32_t* __restrict__ accepted,    // [batch]
                        int32_t* __restrict__ bonus,       // [batch]
                        uint32_t* __restrict__ counters,   // [batch]
                        uint64_t* __restrict__ partials) { // [batch * nodes, splits]
  using E = Elem<T>;
  const int64_t row = blockIdx.x / splits;
  const int split = static_cast<int>(blockIdx.x - row * splits);
  const int b = static_cast<int>(row / nodes);
  const int64_t start = split * chunk;
  const int64_t end = min(vocab, start + chunk);
  const T* x = logits + row * vocab;
  const int tid = threadIdx.x;

  extern __shared__ int32_t smem[];
  int32_t* par = smem;
  int32_t* tok = par + nodes;
  int32_t* tgt = tok + nodes;
  int32_t* first = tgt + nodes;
  const int64_t off = static_cast<int64_t>(b) * nodes;
  // Small trees are staged now, while the logits loads are in flight, so that the last block
  // does not wait for them after the reduction.
  const bool staged = nodes <= kThreads;
  if (staged && tid < nodes) {
    if (parents)
      par[tid] = parents[off + tid];
    tok[tid] = tokens[off + tid];
  }

  float best = -INFINITY;
  int64_t best_idx = 0x7FFFFFFF; // no element
  bool nan = false;
  if (kVec) {
    constexpr int V = E::kPerVec;
    constexpr int64_t step = static_cast<int64_t>(kThreads) * V;
    if (start + tid * V < end)
      best_idx = start + tid * V;
    for (int64_t base = start + tid * V; base < end; base += kUnroll * step) {
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (base + u * step < end)
          v[u] = __ldcs(reinterpret_cast<const uint4*>(x + base + u * step));
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (base + u * step < end) {
#pragma unroll
          for (int e = 0; e < V; ++e) {
            const float f = E::get(v[u], e);
            nan |= f != f;
            if (f > best) {
              best = f;
              best_idx = base + u * step + e;
            }
          }
        }
      }
    }
  } else {
    if (start + tid < end)
      best_idx = start + tid;
    for (int64_t i = start + tid; i < end; i += kThreads) {
      const float f = E::scalar(x + i);
      nan |= f != f;
      if (f > best) {
        best = f;
        best_idx = i;
      }
    }
  }
  uint64_t key =
      best_idx == 0x7FFFFFFF ? 0ull : pack_argmax(float_key(best), static_cast<uint32_t>(best_idx));
  __shared__ uint64_t red[kThreads / 32];
  __shared__ int nan_first;
  __shared__ bool is_last;
  if (__syncthreads_or(nan)) {
    // Rare: torch.argmax returns the first NaN. Find it in this chunk.
    if (tid == 0)
      nan_first = 0x7FFFFFFF;
    __syncthreads();
    int mine = 0x7FFFFFFF;
    for (int64_t i = start + tid; i < end; i += kThreads) {
      const float f = E::scalar(x + i);
      if (f != f) {
        mine = static_cast<int>(i);
        break;
      }
    }
    atomicMin(&nan_first, mine);
    __syncthreads();
    key = pack_argmax(0xFFFFFFFFu, static_cast<uint32_t>(nan_first));
  }
  key = warp_max_packed(key);
  if ((tid & 31) == 0)
    red[tid >> 5] = key;
  __syncthreads();
  if (tid < 32) {
    key = tid < kThreads / 32 ? red[tid] : 0ull;
    key = warp_max_packed(key);
    if (tid == 0) {
      partials[row * splits + split] = key;
      is_last = arrive_last(&counters[b], static_cast<uint32_t>(nodes * splits));
    }
  }
  __syncthreads();
  if (!is_last)
    return;

  // This block finished last for request b: every partial of the request is visible.
  if (!staged)
    for (int i = tid; i < nodes; i += kThreads) {
      if (parents)
        par[i] = parents[off + i];
      tok[i] = tokens[off + i];
    }
  const int warp = tid >> 5, lane = tid & 31;
  for (int r = warp; r < nodes; r += kThreads / 32) {
    const uint64_t* p = partials + (off + r) * splits;
    // The first two loads are issued before either is used: one L2 round trip for up to 64
    // splits (small batches use 19 to 66), instead of one per 32.
    const uint64_t v0 = lane < splits ? __ldcg(p + lane) : 0ull;
    const uint64_t v1 = lane + 32 < splits ? __ldcg(p + lane + 32) : 0ull;
    uint64_t m = v0 > v1 ? v0 : v1;
    for (int j = lane + 64; j < splits; j += 32) {
      const uint64_t v = __ldcg(p + j);
      m = v > m ? v : m;
    }
    m = warp_max_packed(m);
    if (lane == 0) {
      tgt[r] = packed_index(m);
      if (target_out)
        target_out[off + r] = packed_index(m);
    }
  }
  __syncthreads();
  if (tid < 32) {
    warp_walk_tree(parents ? par : nullptr, tok, tgt, first, nodes, accept_path, accepted, bonus,
                   b);
    if (tid == 0)
      counters[b] = 0; // ready for the next call (and for graph replays)
  }
}

} // namespace

/// Splits per row for `rows` rows: enough blocks to fill the GPU a few times over, each chunk a
/// multiple of the 2048-element granule. Returns splits and sets `chunk`.
int greedy_splits(int64_t rows, int64_t vocab, int64_t* chunk) {
  const int64_t target_blocks = static_cast<int64_t>(sm_count()) * 4;
  int64_t splits = (target_blocks + rows - 1) / rows;
  splits = splits < 1 ? 1 : splits;
  const int max_splits = greedy_max_splits(vocab);
  if (splits > max_splits)
    splits = max_splits;
  int64_t c = (vocab + splits - 1) / splits;
  c = (c + kGreedyGranule - 1) / kGreedyGranule * kGreedyGranule;
  *chunk = c;
  return static_cast<int>((vocab + c - 1) / c);
}

} // namespace detail

Status verify_greedy_fused(const void* logits, LogitsDtype dtype, const int32_t* parents,
                           const int32_t* tokens, int batch, int nodes, int64_t vocab,
                           int32_t* target_tokens, int32_t* accept_path, int32_t* accepted,
                           int32_t* bonus, void* workspace, std::size_t workspace_bytes,
                           Stream stream) {
  const char* where = "kernels::verify_greedy_fused";
  if (Status s = detail::check_fused(
          logits, tokens, batch, nodes, vocab, accept_path, accepted, bonus, workspace,
          workspace_bytes, verify_greedy_fused_workspace_bytes(batch, nodes, vocab), where);
      !s)
    return s;
  if (batch == 0)
    return {};
  const int64_t rows = static_cast<int64_t>(batch) * nodes;
  int64_t chunk = 0;
  const int splits = detail::greedy_splits(rows, vocab, &chunk);
  const int64_t blocks = rows * splits;
  if (blocks > 0x7FFFFFFF)
    return Status(StatusCode::invalid_argument, "too many blocks for one launch",
                  "verify fewer requests per call", where);
  auto* counters = static_cast<uint32_t*>(workspace);
  auto* partials = reinterpret_cast<uint64_t*>(
      static_cast<char*>(workspace) +
      detail::align_up(sizeof(uint32_t) * batch, detail::kWorkspaceAlign));
  // At most 2048 nodes: 32 KiB, under the default 48 KiB limit.
  const std::size_t smem = 4 * sizeof(int32_t) * static_cast<std::size_t>(nodes);
  const std::size_t elem = dtype == LogitsDtype::bf16 ? 2 : 4;
  // 16-byte loads need every row to start on a 16-byte boundary.
  const bool vec = reinterpret_cast<uintptr_t>(logits) % 16 == 0 && (vocab * elem) % 16 == 0;
  const unsigned g = static_cast<unsigned>(blocks);
  using namespace detail;
  if (dtype == LogitsDtype::bf16) {
    const auto* x = static_cast<const __nv_bfloat16*>(logits);
    if (vec) {
      fused_greedy_kernel<__nv_bfloat16, true><<<g, kThreads, smem, stream>>>(
          x, parents, tokens, nodes, vocab, splits, chunk, target_tokens, accept_path, accepted,
          bonus, counters, partials);
    } else {
      fused_greedy_kernel<__nv_bfloat16, false><<<g, kThreads, smem, stream>>>(
          x, parents, tokens, nodes, vocab, splits, chunk, target_tokens, accept_path, accepted,
          bonus, counters, partials);
    }
  } else {
    const auto* x = static_cast<const float*>(logits);
    if (vec) {
      fused_greedy_kernel<float, true><<<g, kThreads, smem, stream>>>(
          x, parents, tokens, nodes, vocab, splits, chunk, target_tokens, accept_path, accepted,
          bonus, counters, partials);
    } else {
      fused_greedy_kernel<float, false><<<g, kThreads, smem, stream>>>(
          x, parents, tokens, nodes, vocab, splits, chunk, target_tokens, accept_path, accepted,
          bonus, counters, partials);
    }
  }
  return detail::launch_status(where);
}

} // namespace specbench::kernels
