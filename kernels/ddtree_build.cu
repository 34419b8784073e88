// DDTree tree building on the GPU. One block per request. Warp 0 runs the reference's best-first
// search exactly: the frontier (candidates not yet in the tree) lives in shared memory, slot s
// owned by lane s % 32; each lane keeps its best candidate under the reference order (score
// descending, depth ascending, rank path ascending), and one step pops the warp-wide best with a
// warp max of the score keys (ties: min depth, then a rank-path comparison that walks both
// candidates' ancestors). Scores are computed with the reference's float operations in the same
// order, so the tree, its node numbering and its scores are bit-identical. The whole block then
// writes the outputs and the ancestor masks in parallel.
#include "common.cuh"

#include <mutex>

namespace specbench::kernels {
namespace detail {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kLogpCacheBytes = 16 * 1024;

struct Cand {
  float score;
  int32_t parent;
  int16_t depth; // -1 once popped
  int16_t rank;
};

// Key of a score under the reference order (larger is better); NaN sorts below -inf.
__device__ __forceinline__ uint32_t score_key(float f) {
  if (f != f) return 1u;
  uint32_t u = __float_as_uint(f + 0.0f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

struct Layout {
  int n, words, kc;
  bool cache_logp, rows_in_smem;
  std::size_t off_tree, off_front, off_logp, off_rows, total;
};

Layout make_layout(int budget, int depth, int k, bool want_mask, int smem_limit) {
  Layout l{};
  l.n = budget + 1;
  l.words = (l.n + 31) / 32;
  l.kc = k < l.n ? k : l.n; // ranks above budget are never reached
  l.off_tree = 0;
  std::size_t off = align_up(7 * sizeof(int32_t) * l.n, 16);
  l.off_front = off;
  off += align_up(sizeof(Cand) * (2 * static_cast<std::size_t>(l.n) + 1), 16);
  const std::size_t logp = sizeof(float) * static_cast<std::size_t>(depth) * l.kc;
  l.cache_logp = logp <= kLogpCacheBytes;
  l.off_logp = off;
  if (l.cache_logp) off += align_up(logp, 16);
  l.off_rows = off;
  const std::size_t rows = sizeof(uint32_t) * static_cast<std::size_t>(l.n) * l.words;
  l.rows_in_smem = want_mask && off + rows <= static_cast<std::size_t>(smem_limit);
  if (l.rows_in_smem) off += rows;
  l.total = off;
  return l;
}

struct BuildArgs {
  const float* top_logp;     // [batch, depth, k]
  const int32_t* top_ids;    // [batch, depth, k]
  const int32_t* root_tokens;
  const int32_t* seq_lens;
  int depth, k, budget;
  Layout lay;
  DdtreeOutputs out;
};

__global__ void __launch_bounds__(kThreads) ddtree_kernel(BuildArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int n = a.lay.n, tid = threadIdx.x, b = blockIdx.x;
  int32_t* t_parent = reinterpret_cast<int32_t*>(smem + a.lay.off_tree);
  int32_t* t_rank = t_parent + n;
  int32_t* t_depth = t_rank + n;
  float* t_score = reinterpret_cast<float*>(t_depth + n);
  int32_t* t_first = reinterpret_cast<int32_t*>(t_score + n);
  int32_t* t_next = t_first + n;
  int32_t* t_last = t_next + n;
  Cand* fr = reinterpret_cast<Cand*>(smem + a.lay.off_front);
  float* lpc = reinterpret_cast<float*>(smem + a.lay.off_logp);
  const int depth = a.depth, k = a.k, kc = a.lay.kc;
  const float* glp = a.top_logp + static_cast<int64_t>(b) * depth * k;
  for (int i = tid; i < n; i += kThreads) {
    t_first[i] = -1;
    t_next[i] = -1;
    t_last[i] = -1;
  }
  if (a.lay.cache_logp)
    for (int e = tid; e < depth * kc; e += kThreads) lpc[e] = glp[(e / kc) * k + e % kc];
  __shared__ int s_count;
  __syncthreads();

  if (tid < 32) {
    const int lane = tid;
    auto lp = [&](int d, int r) -> float {
      return a.lay.cache_logp ? lpc[(d - 1) * kc + r] : __ldg(glp + (d - 1) * k + r);
    };
    // Rank-path order of two candidates of equal depth: walk up to the common ancestor.
    auto path_less = [&](const Cand& x, const Cand& y) {
      int px = x.parent, py = y.parent, rx = x.rank, ry = y.rank;
      while (px != py) {
        rx = t_rank[px];
        ry = t_rank[py];
        px = t_parent[px];
        py = t_parent[py];
      }
      return rx < ry;
    };
    auto better = [&](const Cand& x, const Cand& y) {
      const uint32_t kx = score_key(x.score), ky = score_key(y.score);
      if (kx != ky) return kx > ky;
      if (x.depth != y.depth) return x.depth < y.depth;
      return path_less(x, y);
    };
    if (lane == 0) {
      t_parent[0] = -1;
      t_rank[0] = -1;
      t_depth[0] = 0;
      t_score[0] = 0.0f;
    }
    int count = 1, used = 0;
    int my_best = -1;
    uint32_t my_key = 0;
    int my_depth = 0;
    if (depth > 0 && k > 0 && a.budget > 0) {
      if (lane == 0) {
        fr[0] = Cand{lp(1, 0), 0, 1, 0};
        my_best = 0;
        my_key = score_key(fr[0].score);
        my_depth = 1;
      }
      used = 1;
    }
    __syncwarp();
    const uint32_t key_neg_inf = 0x007FFFFFu;
    while (count <= a.budget) {
      const uint32_t m = __reduce_max_sync(0xFFFFFFFFu, my_key);
      if (m <= key_neg_inf) break; // empty frontier, or only -inf (and NaN) left
      const bool mine = my_key == m;
      const unsigned tied = __ballot_sync(0xFFFFFFFFu, mine);
      int w = __ffs(tied) - 1;
      if (tied & (tied - 1)) {
        const int md = __reduce_min_sync(0xFFFFFFFFu, mine ? my_depth : 0x7FFFFFFF);
        const unsigned t2 = __ballot_sync(0xFFFFFFFFu, mine && my_depth == md);
        w = __ffs(t2) - 1;
        if (t2 & (t2 - 1)) {
          int ws = __shfl_sync(0xFFFFFFFFu, my_best, w);
          unsigned rest = t2 & (t2 - 1);
          while (rest) {
            const int l = __ffs(rest) - 1;
            rest &= rest - 1;
            const int ls = __shfl_sync(0xFFFFFFFFu, my_best, l);
            if (path_less(fr[ls], fr[ws])) {
              w = l;
              ws = ls;
            }
          }
        }
      }
      const int slot = __shfl_sync(0xFFFFFFFFu, my_best, w);
      const Cand c = fr[slot];
      const int node = count++;
      if (lane == 0) {
        t_parent[node] = c.parent;
        t_rank[node] = c.rank;
        t_depth[node] = c.depth;
        t_score[node] = c.score;
        const int p = c.parent;
        if (t_last[p] < 0) t_first[p] = node;
        else t_next[t_last[p]] = node;
        t_last[p] = node;
      }
      const int first_new = used;
      if (c.rank + 1 < k) { // next sibling: the reference's (score - lp(d, r)) + lp(d, r + 1)
        const int s = used++;
        if (lane == (s & 31))
          fr[s] = Cand{__fadd_rn(__fsub_rn(c.score, lp(c.depth, c.rank)), lp(c.depth, c.rank + 1)),
                       c.parent, c.depth, static_cast<int16_t>(c.rank + 1)};
      }
      if (c.depth < depth) { // first child
        const int s = used++;
        if (lane == (s & 31))
          fr[s] = Cand{__fadd_rn(c.score, lp(c.depth + 1, 0)), node,
                       static_cast<int16_t>(c.depth + 1), 0};
      }
      if (lane == w) fr[slot].depth = -1;
      __syncwarp();
      if (lane == w) { // rescan the winner's slots
        my_best = -1;
        my_key = 0;
        for (int s = lane; s < used; s += 32) {
          if (fr[s].depth < 0) continue;
          if (my_best < 0 || better(fr[s], fr[my_best])) my_best = s;
        }
        if (my_best >= 0) {
          my_key = score_key(fr[my_best].score);
          my_depth = fr[my_best].depth;
        }
      } else {
        for (int s = first_new; s < used; ++s)
          if ((s & 31) == lane && (my_best < 0 || better(fr[s], fr[my_best]))) {
            my_best = s;
            my_key = score_key(fr[s].score);
            my_depth = fr[s].depth;
          }
      }
      __syncwarp();
    }
    if (lane == 0) s_count = count;
  }
  __syncthreads();

  const int count = s_count;
  const int64_t ob = static_cast<int64_t>(b) * n;
  const DdtreeOutputs& o = a.out;
  const int seq = a.seq_lens ? a.seq_lens[b] : 0;
  if (tid == 0 && o.node_count) o.node_count[b] = count;
  for (int i = tid; i < n; i += kThreads) {
    const bool real = i < count;
    const int d = real ? t_depth[i] : -1;
    if (o.parents) o.parents[ob + i] = real ? t_parent[i] : -1;
    if (o.depths) o.depths[ob + i] = d;
    if (o.positions) o.positions[ob + i] = real ? seq + d : -1;
    if (o.scores) o.scores[ob + i] = real ? t_score[i] : -INFINITY;
    if (o.first_child) o.first_child[ob + i] = real ? t_first[i] : -1;
    if (o.next_sibling) o.next_sibling[ob + i] = real ? t_next[i] : -1;
    if (o.tokens) {
      int32_t t = -1;
      if (i == 0) t = a.root_tokens[b];
      else if (real) t = a.top_ids[(static_cast<int64_t>(b) * depth + d - 1) * k + t_rank[i]];
      o.tokens[ob + i] = t;
    }
  }
  if (o.mask == nullptr && o.mask_packed == nullptr) return;
  const int W = a.lay.words;
  uint32_t* rows = a.lay.rows_in_smem ? reinterpret_cast<uint32_t*>(smem + a.lay.off_rows)
                                      : o.mask_packed + ob * W;
  for (int i = tid; i < n; i += kThreads) {
    uint32_t* r = rows + static_cast<int64_t>(i) * W;
    for (int w = 0; w < W; ++w) r[w] = 0;
    if (i < count) {
      for (int j = i; j >= 0; j = t_parent[j]) r[j >> 5] |= 1u << (j & 31);
    } else {
      r[i >> 5] |= 1u << (i & 31);
    }
  }
  __syncthreads();
  if (a.lay.rows_in_smem && o.mask_packed)
    for (int e = tid; e < n * W; e += kThreads) o.mask_packed[ob * W + e] = rows[e];
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
  if (batch == 0) return {};
  const int limit = detail::max_smem_per_block();
  const bool want_mask = out.mask != nullptr || out.mask_packed != nullptr;
  const detail::Layout lay = detail::make_layout(budget, depth, k, want_mask, limit);
  if (lay.total > static_cast<std::size_t>(limit))
    return Status(StatusCode::invalid_argument,
                  "budget " + std::to_string(budget) + " needs " + std::to_string(lay.total) +
                      " bytes of shared memory, this GPU offers " + std::to_string(limit),
                  "use a smaller budget", where);
  if (want_mask && !lay.rows_in_smem && out.mask_packed == nullptr)
    return Status(StatusCode::invalid_argument,
                  "the ancestor mask of budget " + std::to_string(budget) +
                      " does not fit in shared memory on this GPU",
                  "also pass out.mask_packed (the kernel builds the rows there)", where);
  static std::once_flag once;
  std::call_once(once, [limit] {
    cudaFuncSetAttribute(detail::ddtree_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         limit);
  });
  detail::BuildArgs a{top_logp, top_ids, root_tokens, seq_lens, depth, k, budget, lay, out};
  detail::ddtree_kernel<<<batch, detail::kThreads, lay.total, stream>>>(a);
  return detail::launch_status(where);
}

} // namespace specbench::kernels
