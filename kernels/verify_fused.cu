// Fused greedy verification from logits: one pass over [batch, nodes, vocab] logits. Each block
// takes one (node, vocabulary chunk), keeps a per-thread running first maximum over 16-byte
// streaming loads, and stores its packed (value key, index) partial into a slot that is zero
// between calls. The hand-off to the block that reduces is a ticket, not an arrival: every block
// takes a ticket from the request's counter as it starts (off the critical path, while its loads
// are in flight), and the block holding the last ticket waits for the request's slots to turn
// non-zero, reduces them to the argmax of every node and walks the tree. That block is the last of
// the request to start, so every block it waits for is already running and needs nothing from
// anyone: no deadlock whatever the batch or the GPU's occupancy. Against an arrival counter at the
// end it saves the release fence and the dependent atomic round trip (probe_fused_geometry: about
// 0.4 us of a 4 us call). The reducing block zeroes the slots and the counter again, so the
// workspace is ready for the next call and for graph replays.
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
  // Largest of the 8 values (any of them when a NaN is among them) and whether one is NaN: a
  // packed-bf16 max tree that lets NaN through, then one fp32 max of its two halves.
  __device__ static float vec_max(const uint4& v, bool* nan) {
    const auto h = [](uint32_t w) { return *reinterpret_cast<const __nv_bfloat162*>(&w); };
    const __nv_bfloat162 m = __hmax2_nan(__hmax2_nan(h(v.x), h(v.y)), __hmax2_nan(h(v.z), h(v.w)));
    const uint32_t mw = *reinterpret_cast<const uint32_t*>(&m);
    const float lo = __uint_as_float(mw << 16), hi = __uint_as_float(mw & 0xFFFF0000u);
    *nan |= (lo != lo) | (hi != hi);
    return fmaxf(lo, hi);
  }
  __device__ static float get(const uint4& v, int e) {
    const uint32_t w = (&v.x)[e >> 1];
    return __uint_as_float((e & 1) ? (w & 0xFFFF0000u) : (w << 16));
  }
  __device__ static float scalar(const __nv_bfloat16* p) { return __bfloat162float(*p); }
};
template <> struct Elem<float> {
  static constexpr int kPerVec = 4;
  __device__ static float vec_max(const uint4& v, bool* nan) {
    const float a = __uint_as_float(v.x), b = __uint_as_float(v.y), c = __uint_as_float(v.z),
                d = __uint_as_float(v.w);
    *nan |= (a != a) | (b != b) | (c != c) | (d != d);
    return fmaxf(fmaxf(a, b), fmaxf(c, d));
  }
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
  const uint32_t per_request = static_cast<uint32_t>(nodes * splits);
  // The ticket stays in a register until after the loads: nothing waits on its round trip.
  uint32_t ticket = 0;
  if (tid == 0)
    ticket = take_ticket(&counters[b]);

  float best = -INFINITY;
  int64_t best_idx = 0x7FFFFFFF; // no element
  bool nan = false;
  if (kVec) {
    // Per 16-byte vector: its max first (a few instructions for 8 or 4 values), and the vector
    // itself only when that max beats the running one (strict >, so the earliest vector keeps a
    // tie). The position inside the winning vector is found once, at the end: the first element
    // equal to the max. Visiting vectors in increasing index order keeps torch's first maximum.
    constexpr int V = E::kPerVec;
    constexpr int64_t step = static_cast<int64_t>(kThreads) * V;
    uint4 best_vec = make_uint4(0u, 0u, 0u, 0u);
    int64_t best_base = -1;
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
          const float m = E::vec_max(v[u], &nan);
          if (m > best) {
            best = m;
            best_vec = v[u];
            best_base = base + u * step;
          }
        }
      }
    }
    if (best_base >= 0) {
      int e = V - 1;
#pragma unroll
      for (int j = V - 1; j >= 0; --j)
        if (E::get(best_vec, j) == best)
          e = j;
      best_idx = best_base + e;
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
  if (nan) {
    // Rare: torch.argmax returns the first NaN. This thread visited its elements in increasing
    // index order, so the first NaN it meets is its smallest; NaN has the largest key and the
    // reductions keep the smallest index among equal keys, so no block barrier is needed.
    const int64_t first_i = kVec ? start + tid * E::kPerVec : start + tid;
    const int64_t stride = kVec ? static_cast<int64_t>(kThreads) * E::kPerVec : kThreads;
    const int run = kVec ? E::kPerVec : 1;
    bool found = false;
    for (int64_t base = first_i; base < end && !found; base += stride)
      for (int e = 0; e < run && !found; ++e) {
        const float f = E::scalar(x + base + e);
        if (f != f) {
          key = pack_argmax(0xFFFFFFFFu, static_cast<uint32_t>(base + e));
          found = true;
        }
      }
  }
  __shared__ uint64_t red[kThreads / 32];
  __shared__ bool is_last;
  key = warp_max_packed(key);
  if ((tid & 31) == 0)
    red[tid >> 5] = key;
  if (tid == 0)
    is_last = ticket == per_request - 1;
  __syncthreads();
  if (tid < 32) {
    key = tid < kThreads / 32 ? red[tid] : 0ull;
    key = warp_max_packed(key);
    if (tid == 0) // never zero: every chunk holds an element, and -inf's key is 0x007FFFFF
      store_slot(&partials[row * splits + split], key);
  }
  if (!is_last)
    return;

  // This block started last for request b: every other block of the request is running or done.
  // Only this block needs the tree; its loads are issued with the first polls.
  const int warp = tid >> 5, lane = tid & 31;
  const bool one_each = nodes <= kThreads;
  int32_t my_par = -1, my_tok = 0;
  if (one_each && tid < nodes) {
    if (parents)
      my_par = parents[off + tid];
    my_tok = tokens[off + tid];
  }
  for (int r = warp; r < nodes; r += kThreads / 32) {
    // Small batches use 19 to 66 splits: one L2 round trip for the row's slots.
    const uint64_t m = warp_drain_slots_max(partials + (off + r) * splits, splits);
    if (lane == 0) {
      tgt[r] = packed_index(m);
      if (target_out)
        target_out[off + r] = packed_index(m);
    }
  }
  if (one_each) {
    if (tid < nodes) {
      par[tid] = my_par;
      tok[tid] = my_tok;
    }
  } else {
    for (int i = tid; i < nodes; i += kThreads) {
      if (parents)
        par[i] = parents[off + i];
      tok[i] = tokens[off + i];
    }
  }
  __syncthreads();
  if (tid < 32) {
    warp_walk_tree(parents ? par : nullptr, tok, tgt, first, nodes, accept_path, accepted, bonus,
                   b);
    if (tid == 0)
      counters[b] = 0; // every block of the request has taken its ticket
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
