// DDTree tree building on the GPU. One block per request. Warp 0 runs the reference's best-first
// search exactly: the frontier (candidates not yet in the tree) lives in registers, S slots per
// lane (the live frontier never exceeds budget + 1); each lane keeps a copy of its best candidate
// under the reference order (score descending, depth ascending, rank path ascending), and one
// step pops the warp-wide best with a warp max of the score keys (ties: min depth, then a
// rank-path comparison that walks both candidates' ancestors in shared memory). The popped slot
// takes the next sibling, lane (node % 32) takes the first child, and every lane refreshes its
// best with a branch-free max tree over its slots' keys. Scores use the reference's float
// operations in the same order, so the tree, its node numbering and its scores are bit-identical.
// The whole block then writes the outputs and the ancestor masks in parallel.
#include "common.cuh"

namespace specbench::kernels {
namespace detail {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kLogpCacheBytes = 16 * 1024;

// Key of a score under the reference order (larger is better); NaN sorts below -inf.
__device__ __forceinline__ uint32_t score_key(float f) {
  if (f != f)
    return 1u;
  uint32_t u = __float_as_uint(f + 0.0f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

struct Layout {
  int n, words, kc;
  bool cache_logp, rows_in_smem;
  std::size_t off_tree, off_logp, off_rows, total;
};

Layout make_layout(int budget, int depth, int k, bool want_mask, int smem_limit) {
  Layout l{};
  l.n = budget + 1;
  l.words = (l.n + 31) / 32;
  l.kc = k < l.n ? k : l.n; // ranks above budget are never reached
  l.off_tree = 0;
  std::size_t off = align_up(6 * sizeof(int32_t) * l.n, 16);
  const std::size_t logp = sizeof(float) * static_cast<std::size_t>(depth) * l.kc;
  l.cache_logp = logp <= kLogpCacheBytes;
  l.off_logp = off;
  if (l.cache_logp)
    off += align_up(logp, 16);
  l.off_rows = off;
  const std::size_t rows = sizeof(uint32_t) * static_cast<std::size_t>(l.n) * l.words;
  l.rows_in_smem = want_mask && off + rows <= static_cast<std::size_t>(smem_limit);
  if (l.rows_in_smem)
    off += rows;
  l.total = off;
  return l;
}

struct BuildArgs {
  const float* top_logp;  // [batch, depth, k]
  const int32_t* top_ids; // [batch, depth, k]
  const int32_t* root_tokens;
  const int32_t* seq_lens;
  int depth, k, budget;
  Layout lay;
  DdtreeOutputs out;
};

template <int S> __global__ void __launch_bounds__(kThreads) ddtree_kernel(BuildArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int n = a.lay.n, tid = threadIdx.x, b = blockIdx.x;
  int32_t* t_parent = reinterpret_cast<int32_t*>(smem + a.lay.off_tree);
  int32_t* t_rank = t_parent + n;
  int32_t* t_depth = t_rank + n;
  float* t_score = reinterpret_cast<float*>(t_depth + n);
  int32_t* t_first = reinterpret_cast<int32_t*>(t_score + n);
  int32_t* t_next = t_first + n;
  float* lpc = reinterpret_cast<float*>(smem + a.lay.off_logp);
  const int depth = a.depth, k = a.k, kc = a.lay.kc;
  const float* glp = a.top_logp + static_cast<int64_t>(b) * depth * k;
  for (int i = tid; i < n; i += kThreads) {
    t_first[i] = 0x7FFFFFFF;
    t_next[i] = -1;
  }
  if (a.lay.cache_logp)
    for (int e = tid; e < depth * kc; e += kThreads)
      lpc[e] = glp[(e / kc) * k + e % kc];
  __shared__ int s_count;
  __syncthreads();

  if (tid < 32) {
    const int lane = tid;
    auto lp = [&](int d, int r) -> float {
      return a.lay.cache_logp ? lpc[(d - 1) * kc + r] : __ldg(glp + (d - 1) * k + r);
    };
    // Rank-path order of two candidates of equal depth, given as (parent, rank): walk both up to
    // their common ancestor; the ranks just below it decide.
    auto path_less = [&](int px, int rx, int py, int ry) {
      while (px != py) {
        rx = t_rank[px];
        ry = t_rank[py];
        px = t_parent[px];
        py = t_parent[py];
      }
      return rx < ry;
    };
    if (lane == 0) {
      t_parent[0] = -1;
      t_rank[0] = -1;
      t_depth[0] = 0;
      t_score[0] = 0.0f;
    }
    // This lane's frontier slots, in registers (static indices only). kk[j] is the slot's score
    // key, 0 when the slot is empty (a real candidate's key is at least 1).
    float sc[S];
    uint32_t kk[S];
    int32_t pa[S];
    uint32_t dr[S]; // depth << 16 | rank
#pragma unroll
    for (int j = 0; j < S; ++j) {
      sc[j] = 0.0f;
      kk[j] = 0;
      pa[j] = 0;
      dr[j] = 0;
    }
    uint32_t bk = 0; // this lane's best key (0: no candidate)
    int bslot = 0;   // and its slot
    // The lane's best slot under the reference order: the largest key by a max tree, then (rare)
    // the smallest depth and the rank path among equal keys.
    auto recompute = [&]() {
      uint32_t t[S];
#pragma unroll
      for (int j = 0; j < S; ++j)
        t[j] = kk[j];
#pragma unroll
      for (int w = 1; w < S; w *= 2)
#pragma unroll
        for (int j = 0; j + w < S; j += 2 * w)
          t[j] = max(t[j], t[j + w]);
      bk = t[0];
      uint64_t eq = 0;
#pragma unroll
      for (int j = 0; j < S; ++j)
        eq |= static_cast<uint64_t>(kk[j] == bk) << j;
      bslot = __ffsll(static_cast<long long>(eq)) - 1;
      if (bk != 0 && (eq & (eq - 1))) { // equal scores inside this lane
        int bd = 0x7FFFFFFF, bp = 0, br = 0;
#pragma unroll
        for (int j = 0; j < S; ++j) {
          if ((eq >> j) & 1ull) {
            const int dj = static_cast<int>(dr[j] >> 16), rj = static_cast<int>(dr[j] & 0xFFFFu);
            if (dj < bd || (dj == bd && path_less(pa[j], rj, bp, br))) {
              bd = dj;
              bp = pa[j];
              br = rj;
              bslot = j;
            }
          }
        }
      }
      if (bk == 0)
        bslot = 0;
    };
    int count = 1;
    if (depth > 0 && k > 0 && a.budget > 0 && lane == 0) {
      sc[0] = lp(1, 0);
      kk[0] = score_key(sc[0]);
      pa[0] = 0;
      dr[0] = 1u << 16;
      bk = kk[0];
      bslot = 0;
    }
    __syncwarp();
    const uint32_t key_neg_inf = 0x007FFFFFu;
    while (count <= a.budget) {
      const uint32_t m = __reduce_max_sync(0xFFFFFFFFu, bk);
      if (m <= key_neg_inf)
        break; // empty frontier, or only -inf (and NaN) left
      // This lane's best candidate's fields.
      float es = 0.0f;
      int ep = 0;
      uint32_t edr = 0;
#pragma unroll
      for (int j = 0; j < S; ++j)
        if (j == bslot) {
          es = sc[j];
          ep = pa[j];
          edr = dr[j];
        }
      const bool mine = bk == m;
      const unsigned tied = __ballot_sync(0xFFFFFFFFu, mine);
      int w = __ffs(tied) - 1;
      if (tied & (tied - 1)) { // rare: equal scores; then depth, then rank path
        const int ed = static_cast<int>(edr >> 16), er = static_cast<int>(edr & 0xFFFFu);
        const int md = __reduce_min_sync(0xFFFFFFFFu, mine ? ed : 0x7FFFFFFF);
        const unsigned t2 = __ballot_sync(0xFFFFFFFFu, mine && ed == md);
        w = __ffs(t2) - 1;
        if (t2 & (t2 - 1)) {
          int wp = __shfl_sync(0xFFFFFFFFu, ep, w), wr = __shfl_sync(0xFFFFFFFFu, er, w);
          unsigned rest = t2 & (t2 - 1);
          while (rest) {
            const int l = __ffs(rest) - 1;
            rest &= rest - 1;
            const int lp_ = __shfl_sync(0xFFFFFFFFu, ep, l), lr = __shfl_sync(0xFFFFFFFFu, er, l);
            if (path_less(lp_, lr, wp, wr)) {
              w = l;
              wp = lp_;
              wr = lr;
            }
          }
        }
      }
      const float cs = __shfl_sync(0xFFFFFFFFu, es, w);
      const int cp = __shfl_sync(0xFFFFFFFFu, ep, w);
      const uint32_t cdr = __shfl_sync(0xFFFFFFFFu, edr, w);
      const int cd = static_cast<int>(cdr >> 16), cr = static_cast<int>(cdr & 0xFFFFu);
      const int node = count++;
      if (lane == 0) {
        t_parent[node] = cp;
        t_rank[node] = cr;
        t_depth[node] = cd;
        t_score[node] = cs;
      }
      // The reference's float operations, in its order: (score - lp(d, r)) + lp(d, r + 1) for the
      // next sibling, score + lp(d + 1, 0) for the first child.
      const bool has_sib = cr + 1 < k, has_child = cd < depth;
      const float sib = has_sib ? __fadd_rn(__fsub_rn(cs, lp(cd, cr)), lp(cd, cr + 1)) : 0.0f;
      const float child = has_child ? __fadd_rn(cs, lp(cd + 1, 0)) : 0.0f;
      // The sibling takes the popped slot (or it empties). Children go round-robin: lane L
      // receives at most ceil(budget / 32) of them and so holds at most that many plus one
      // candidate, which S covers (see the launcher).
      const bool winner = lane == w, receiver = has_child && lane == (node & 31);
#pragma unroll
      for (int j = 0; j < S; ++j)
        if (winner && j == bslot) {
          sc[j] = sib;
          kk[j] = has_sib ? score_key(sib) : 0u;
          dr[j] = (static_cast<uint32_t>(cd) << 16) | static_cast<uint32_t>(cr + 1);
        }
      uint64_t empty = 0;
#pragma unroll
      for (int j = 0; j < S; ++j)
        empty |= static_cast<uint64_t>(kk[j] == 0) << j;
      const int free_slot = __ffsll(static_cast<long long>(empty)) - 1;
#pragma unroll
      for (int j = 0; j < S; ++j)
        if (receiver && j == free_slot) {
          sc[j] = child;
          kk[j] = score_key(child);
          pa[j] = node;
          dr[j] = static_cast<uint32_t>(cd + 1) << 16;
        }
      __syncwarp(); // the new tree node is visible to path_less
      recompute();
    }
    if (lane == 0)
      s_count = count;
  }
  __syncthreads();

  const int count = s_count;
  // Children lists in index order (link_children): first child = lowest index with that parent,
  // next sibling = the next higher index with the same parent.
  for (int i = 1 + tid; i < count; i += kThreads) {
    const int p = t_parent[i];
    atomicMin(&t_first[p], i);
    int nx = -1;
    for (int j = i + 1; j < count; ++j)
      if (t_parent[j] == p) {
        nx = j;
        break;
      }
    t_next[i] = nx;
  }
  __syncthreads();
  const int64_t ob = static_cast<int64_t>(b) * n;
  const DdtreeOutputs& o = a.out;
  const int seq = a.seq_lens ? a.seq_lens[b] : 0;
  if (tid == 0 && o.node_count)
    o.node_count[b] = count;
  for (int i = tid; i < n; i += kThreads) {
    const bool real = i < count;
    const int d = real ? t_depth[i] : -1;
    if (o.parents)
      o.parents[ob + i] = real ? t_parent[i] : -1;
    if (o.depths)
      o.depths[ob + i] = d;
    if (o.positions)
      o.positions[ob + i] = real ? seq + d : -1;
    if (o.scores)
      o.scores[ob + i] = real ? t_score[i] : -INFINITY;
    if (o.first_child)
      o.first_child[ob + i] = (real && t_first[i] != 0x7FFFFFFF) ? t_first[i] : -1;
    if (o.next_sibling)
      o.next_sibling[ob + i] = real ? t_next[i] : -1;
    if (o.tokens) {
      int32_t t = -1;
      if (i == 0)
        t = a.root_tokens[b];
      else if (real)
        t = a.top_ids[(static_cast<int64_t>(b) * depth + d - 1) * k + t_rank[i]];
      o.tokens[ob + i] = t;
    }
  }
  if (o.mask == nullptr && o.mask_packed == nullptr)
    return;
  const int W = a.lay.words;
  uint32_t* rows = a.lay.rows_in_smem ? reinterpret_cast<uint32_t*>(smem + a.lay.off_rows)
                                      : o.mask_packed + ob * W;
  for (int i = tid; i < n; i += kThreads) {
    uint32_t* r = rows + static_cast<int64_t>(i) * W;
    for (int w = 0; w < W; ++w)
      r[w] = 0;
    if (i < count) {
      for (int j = i; j >= 0; j = t_parent[j])
        r[j >> 5] |= 1u << (j & 31);
    } else {
      r[i >> 5] |= 1u << (i & 31);
    }
  }
  __syncthreads();
  if (a.lay.rows_in_smem && o.mask_packed)
    for (int e = tid; e < n * W; e += kThreads)
      o.mask_packed[ob * W + e] = rows[e];
  if (o.mask) {
    uint8_t* m = o.mask + ob * n;
    for (int e = tid; e < n * n; e += kThreads) {
      const int i = e / n, j = e - i * n;
      m[e] = static_cast<uint8_t>((rows[i * W + (j >> 5)] >> (j & 31)) & 1u);
    }
  }
}

} // namespace
} // namespace detail

Status build_ddtree(const float* top_logp, const int32_t* top_ids, const int32_t* root_tokens,
                    const int32_t* seq_lens, int batch, int depth, int k, int budget,
                    const DdtreeOutputs& out, Stream stream) {
  const char* where = "kernels::build_ddtree";
  if (Status s = detail::check_ddtree(top_logp, top_ids, root_tokens, batch, depth, k, budget); !s)
    return s;
  if (batch == 0)
    return {};
  const int limit = detail::max_smem_per_block();
  const bool want_mask = out.mask != nullptr || out.mask_packed != nullptr;
  // 1 KiB left for the kernel's static shared memory.
  const detail::Layout lay = detail::make_layout(budget, depth, k, want_mask, limit - 1024);
  if (lay.total > static_cast<std::size_t>(limit - 1024))
    return Status(StatusCode::invalid_argument,
                  "budget " + std::to_string(budget) + " needs " + std::to_string(lay.total) +
                      " bytes of shared memory, this GPU offers " + std::to_string(limit),
                  "use a smaller budget", where);
  if (want_mask && !lay.rows_in_smem && out.mask_packed == nullptr)
    return Status(StatusCode::invalid_argument,
                  "the ancestor mask of budget " + std::to_string(budget) +
                      " does not fit in shared memory on this GPU",
                  "also pass out.mask_packed (the kernel builds the rows there)", where);
  detail::BuildArgs a{top_logp, top_ids, root_tokens, seq_lens, depth, k, budget, lay, out};
  const int n = budget + 1;
  // Slots per lane S >= ceil(budget / 32) + 1 (round-robin children plus one sibling).
  (void)n;
  const auto kernel = budget <= 96    ? detail::ddtree_kernel<4>
                      : budget <= 256 ? detail::ddtree_kernel<9>
                                      : detail::ddtree_kernel<33>;
  if (lay.total > 48 * 1024) {
    cudaFuncAttributes attr{};
    cudaError_t e = cudaFuncGetAttributes(&attr, kernel);
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               limit - static_cast<int>(attr.sharedSizeBytes));
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return detail::cuda_status(e, where, "cudaFuncSetAttribute");
    }
  }
  kernel<<<batch, detail::kThreads, lay.total, stream>>>(a);
  return detail::launch_status(where);
}

} // namespace specbench::kernels
