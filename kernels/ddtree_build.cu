// DDTree tree building on the GPU. One block per request; warp 0 runs the reference's best-first
// search exactly, the whole block then writes the outputs and the ancestor masks.
//
// The search keeps the frontier (candidates not yet in the tree) as one list sorted under the
// reference order (score descending, then depth ascending, then rank path ascending), spread over
// the warp: entry g lives in register g / 32 of lane g % 32. Every lane knows the head (the next
// node) and the second entry. One step pops the head and inserts its next sibling A and first
// child C: each lane compares its entries with A and C, two ballots count the entries ahead of
// each, and one shuffle per register shifts the list into place. The next head is the best of A,
// C and the old second entry, so it is known before the shuffle lands and the next step's loads
// start at once. Ties (equal scores) go to a slow path that compares depths and rank paths by
// walking ancestors in shared memory.
//
// Why the list can be short: after t pops the frontier holds at most t + 1 candidates and only
// budget - t more pops follow, so only the best min(t + 1, budget - t) <= (budget + 1) / 2 can
// ever become nodes; the list keeps 32 * RPL >= that many and lets the rest fall off its end.
// Candidates that could never be popped (score -inf, or rank + depth > budget: such a node needs
// rank + depth - 1 nodes before it) are not inserted at all. Each parent has at most one
// candidate in the frontier (its children are generated one rank at a time), which is why a
// rank-path comparison always meets two different parents.
//
// Scores use the reference's float operations in its order, so the tree, its node numbering and
// its scores are bit-identical to build_ddtree_reference.
#include "common.cuh"
#include "phase_stamps.cuh"

namespace specbench::kernels {
namespace detail {
namespace {

constexpr int kThreads = 256;
constexpr uint32_t kKeyNegInf = 0x007FFFFFu; // score_key(-inf); NaN gets 1, empty is 0
constexpr int kNone = 0x7FFFFFFF;

// Key of a score under the reference order (larger is better). -0 and +0 share a key (they
// compare equal); score_of returns +0 for it and the search recomputes the sign (a -0 score comes
// from -0 log-probs along the path). Inputs are finite or -inf (the contract), so no NaN test.
__device__ __forceinline__ uint32_t score_key(float f) {
  const uint32_t u = __float_as_uint(__fadd_rn(f, 0.0f));
  return u ^ (static_cast<uint32_t>(static_cast<int32_t>(u) >> 31) | 0x80000000u);
}
__device__ __forceinline__ float score_of(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key);
}

// A candidate's other fields in 32 bits: the node that generated it (its parent for rank 0, its
// previous sibling otherwise; < 2048), its depth (<= budget <= 1024) and rank (< budget).
__device__ __forceinline__ uint32_t pack_meta(int gen, int depth, int rank) {
  return (static_cast<uint32_t>(gen) << 21) | (static_cast<uint32_t>(depth) << 10) |
         static_cast<uint32_t>(rank);
}
__device__ __forceinline__ int meta_gen(uint32_t m) {
  return static_cast<int>(m >> 21);
}
__device__ __forceinline__ int meta_depth(uint32_t m) {
  return static_cast<int>((m >> 10) & 0x7FFu);
}
__device__ __forceinline__ int meta_rank(uint32_t m) {
  return static_cast<int>(m & 0x3FFu);
}

struct Layout {
  int n, words, kc, dc; // nodes, mask words per row, cached row length (ranks + 1 padding), depths
  bool cache_tables, rows_in_smem;
  std::size_t off_logp, off_ids, off_rows, total;
};

Layout make_layout(int budget, int depth, int k, bool want_mask, int smem_limit) {
  Layout l{};
  l.n = budget + 1;
  l.words = (l.n + 31) / 32;
  // A node at depth d and rank r needs r + d <= budget, so deeper rows and higher ranks are
  // never read. The cached table has one padding column and one padding row of -inf.
  l.kc = (k < l.n ? k : l.n) + 1;
  l.dc = depth < budget ? depth : budget;
  // Tree arrays: parent, meta, score, first child, next sibling.
  std::size_t off = align_up(5 * sizeof(int32_t) * l.n, 16);
  const std::size_t rows = sizeof(uint32_t) * static_cast<std::size_t>(l.n) * l.words;
  const std::size_t table = align_up(sizeof(float) * static_cast<std::size_t>(l.dc + 1) * l.kc, 16);
  // Cache both tables when they fit beside the tree and, if wanted, the mask rows.
  l.cache_tables = off + 2 * table + (want_mask ? rows : 0) <= static_cast<std::size_t>(smem_limit);
  l.off_logp = off;
  l.off_ids = off + (l.cache_tables ? table : 0);
  off += l.cache_tables ? 2 * table : 0;
  l.off_rows = off;
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

__device__ __forceinline__ void write_masks(uint32_t* rows, const int32_t* t_parent, int n, int W,
                                            int count, const DdtreeOutputs& o, int64_t ob);

template <int RPL, bool CACHED>
__global__ void __launch_bounds__(kThreads) ddtree_kernel(BuildArgs a) {
  SPECBENCH_PHASE_START();
  extern __shared__ __align__(16) unsigned char smem[];
  const int n = a.lay.n, tid = threadIdx.x, b = blockIdx.x;
  int32_t* t_parent = reinterpret_cast<int32_t*>(smem);
  uint32_t* t_meta = reinterpret_cast<uint32_t*>(t_parent + n);
  float* t_score = reinterpret_cast<float*>(t_meta + n);
  int32_t* t_first = reinterpret_cast<int32_t*>(t_score + n);
  int32_t* t_next = t_first + n;
  float* lpc = reinterpret_cast<float*>(smem + a.lay.off_logp);
  int32_t* idc = reinterpret_cast<int32_t*>(smem + a.lay.off_ids);
  const int depth = a.depth, k = a.k, kc = a.lay.kc, budget = a.budget;
  const int64_t table0 = static_cast<int64_t>(b) * depth * k;
  const float* glp = a.top_logp + table0;
  const int32_t* gid = a.top_ids + table0;
  // Loaded now, used at the end: their latency hides behind the search.
  const int32_t root_token = tid == 0 ? a.root_tokens[b] : 0;
  const int seq = a.seq_lens ? a.seq_lens[b] : 0;
  if (CACHED) {
    // Entries no node can use are -inf. Eight loads of each table in flight per thread before any
    // is stored: one round trip for up to 2,048 entries (budget 64 with 16 depths needs 1,105).
    const int total = (a.lay.dc + 1) * kc;
    for (int e0 = 0; e0 < total; e0 += 8 * kThreads) {
      float lv[8];
      int32_t iv[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int e = e0 + u * kThreads + tid, d = e / kc, r = e - d * kc;
        const bool ok = e < total && d < a.lay.dc && r < kc - 1 && d + 1 + r <= budget;
        lv[u] = ok ? __ldg(glp + static_cast<int64_t>(d) * k + r) : -INFINITY;
        iv[u] = ok ? __ldg(gid + static_cast<int64_t>(d) * k + r) : -1;
      }
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int e = e0 + u * kThreads + tid;
        if (e < total) {
          lpc[e] = lv[u];
          idc[e] = iv[u];
        }
      }
    }
  }
  __shared__ int s_count;
  __syncthreads();
  SPECBENCH_PHASE(2, 0); // tables cached

  if (tid < 32) {
    const int lane = tid;
    // log-prob of rank r at depth d (1-based); callers pass readable entries.
    auto lp = [&](int d, int r) -> float {
      if (CACHED)
        return lpc[(d - 1) * kc + r];
      return __ldg(glp + static_cast<int64_t>(d - 1) * k + r);
    };
    // Parent of tree node x during the search (t_parent is filled in afterwards): a rank-r node's
    // generator is its rank r-1 sibling, so follow generators down to rank 0.
    auto parent_of = [&](int x) {
      uint32_t m = t_meta[x];
      while (meta_rank(m) != 0)
        m = t_meta[meta_gen(m)];
      return meta_gen(m);
    };
    // Rank-path order of two candidates of equal depth given as (parent, rank): walk both up to
    // their common ancestor; the ranks just below it decide. Rare (only on equal scores).
    auto path_less = [&](int px, int rx, int py, int ry) {
      while (px != py) {
        rx = meta_rank(t_meta[px]);
        ry = meta_rank(t_meta[py]);
        px = parent_of(px);
        py = parent_of(py);
      }
      return rx < ry;
    };
    // Full reference order: does list entry (kx, mx) come before candidate (kc_, dc_, pc, rc)?
    auto before = [&](uint32_t kx, uint32_t mx, uint32_t kc_, int dc_, int pc, int rc) {
      if (kx != kc_)
        return kx > kc_;
      const int dx = meta_depth(mx);
      if (dx != dc_)
        return dx < dc_;
      const int rx = meta_rank(mx), gx = meta_gen(mx);
      return path_less(rx == 0 ? gx : parent_of(gx), rx, pc, rc);
    };
    if (lane == 0) {
      t_meta[0] = 0;
      t_score[0] = 0.0f;
    }
    uint32_t key[RPL], meta[RPL]; // the sorted list; key 0 = empty
#pragma unroll
    for (int j = 0; j < RPL; ++j) {
      key[j] = 0;
      meta[j] = 0;
    }
    uint32_t hk = 0, hm = 0, sk = 0, sm = 0; // head and second entry, the same in every lane
    if (depth > 0 && k > 0 && budget > 0) {
      const uint32_t k0 = score_key(lp(1, 0));
      if (k0 > kKeyNegInf) {
        hk = k0;
        hm = pack_meta(0, 1, 0);
      }
    }
    if (lane == 0) {
      key[0] = hk;
      meta[0] = hm;
    }
    int count = 1;
    while (hk != 0 && count <= budget) {
      const int node = count++;
      const int gen = meta_gen(hm), d = meta_depth(hm), r = meta_rank(hm);
      // The candidates this pop generates, with the reference's float operations in its order:
      // (score - lp(d, r)) + lp(d, r + 1) for the next sibling A, score + lp(d + 1, 0) for the
      // first child C. A candidate that does not exist or can never become a node (rank + depth >
      // budget) reads a -inf entry of the padded cached table and is dropped with the -inf ones.
      bool has_sib = true, has_child = true;
      int r1 = r + 1, dch = d + 1;
      if (!CACHED) { // clamp to readable entries instead
        has_sib = r + 1 < k && r + 1 + d <= budget;
        has_child = d < depth && d + 1 <= budget;
        r1 = has_sib ? r + 1 : r;
        dch = has_child ? d + 1 : d;
      }
      const float l_r = lp(d, r), l_r1 = lp(d, r1), l_c = lp(dch, 0);
      float cs = score_of(hk);
      if (hk == 0x80000000u) { // +-0: the key dropped the sign; recompute the reference's value
        __syncwarp();          // lane 0's earlier t_score stores are visible
        cs = r == 0 ? (gen == 0 ? l_r : __fadd_rn(t_score[gen], l_r))
                    : __fadd_rn(__fsub_rn(t_score[gen], lp(d, r - 1)), l_r);
      }
      const uint32_t sA = score_key(__fadd_rn(__fsub_rn(cs, l_r), l_r1));
      const uint32_t sC = score_key(__fadd_rn(cs, l_c));
      const uint32_t kA = has_sib && sA > kKeyNegInf ? sA : 0u;
      const uint32_t kC = has_child && sC > kKeyNegInf ? sC : 0u;
      const uint32_t mA = pack_meta(node, d, r + 1), mC = pack_meta(node, d + 1, 0);
      if (lane == 0) { // the node itself (two stores; parents and links come afterwards)
        t_meta[node] = hm;
        t_score[node] = cs;
      }
      // Entries ahead of A and of C (the head, entry 0, is being popped). Entries at index
      // >= count - 1 are empty (the frontier holds at most count - 1 candidates), so skip them.
      int cntA = 0, cntC = 0;
      bool tie = false;
#pragma unroll
      for (int j = 0; j < RPL; ++j) {
        if (j > 0 && 32 * j >= count)
          break;
        const bool live = j > 0 || lane > 0;
        cntA += __popc(__ballot_sync(0xFFFFFFFFu, live && key[j] > kA));
        cntC += __popc(__ballot_sync(0xFFFFFFFFu, live && key[j] > kC));
        tie |= live && key[j] != 0 && (key[j] == kA || key[j] == kC);
      }
      // On equal scores A (one level shallower) comes before C. Without ties the next head is
      // the best of A, C and the second entry, found without the counts.
      const bool c_first = kC > kA;
      uint32_t nhk = kA > sk && !c_first ? kA : kC > sk && c_first ? kC : sk;
      uint32_t nhm = kA > sk && !c_first ? mA : kC > sk && c_first ? mC : sm;
      if (__any_sync(0xFFFFFFFFu, tie)) { // rare: equal scores; full order with path walks
        __syncwarp();                     // lane 0's node fields are visible
        const int pA = r == 0 ? gen : parent_of(gen);
        cntA = 0;
        cntC = 0;
#pragma unroll
        for (int j = 0; j < RPL; ++j) {
          if (j > 0 && 32 * j >= count)
            break;
          const bool live = (j > 0 || lane > 0) && key[j] != 0;
          const bool bA = live && kA != 0 && before(key[j], meta[j], kA, d, pA, r + 1);
          const bool bC = live && kC != 0 && before(key[j], meta[j], kC, d + 1, node, 0);
          cntA += __popc(__ballot_sync(0xFFFFFFFFu, bA));
          cntC += __popc(__ballot_sync(0xFFFFFFFFu, bC));
        }
        const bool a0 = kA != 0 && cntA == 0 && !c_first, c0 = kC != 0 && cntC == 0 && c_first;
        nhk = a0 ? kA : c0 ? kC : sk;
        nhm = a0 ? mA : c0 ? mC : sm;
      }
      const int posA = kA != 0 ? cntA + (c_first ? 1 : 0) : kNone;
      const int posC = kC != 0 ? cntC + (c_first ? 0 : 1) : kNone;
      // Shift: new entry g is A, C, or old entry g + 1 - (entries inserted before g).
      uint32_t nk[RPL], nm[RPL];
#pragma unroll
      for (int j = 0; j < RPL; ++j) {
        nk[j] = key[j];
        nm[j] = meta[j];
        if (j > 0 && 32 * j > count)
          continue; // stays empty
        const int g = 32 * j + lane;
        const int src = g + 1 - (posA < g ? 1 : 0) - (posC < g ? 1 : 0);
        const int sl = src & 31, sj = src >> 5;
        uint32_t fk = __shfl_sync(0xFFFFFFFFu, key[j], sl);
        uint32_t fm = __shfl_sync(0xFFFFFFFFu, meta[j], sl);
        if (j + 1 < RPL) {
          const uint32_t uk = __shfl_sync(0xFFFFFFFFu, key[j + 1 < RPL ? j + 1 : j], sl);
          const uint32_t um = __shfl_sync(0xFFFFFFFFu, meta[j + 1 < RPL ? j + 1 : j], sl);
          if (sj == j + 1) {
            fk = uk;
            fm = um;
          }
        }
        if (j > 0) {
          const uint32_t dk = __shfl_sync(0xFFFFFFFFu, key[j > 0 ? j - 1 : 0], sl);
          const uint32_t dm = __shfl_sync(0xFFFFFFFFu, meta[j > 0 ? j - 1 : 0], sl);
          if (sj == j - 1) {
            fk = dk;
            fm = dm;
          }
        }
        if (sj >= RPL) {
          fk = 0;
          fm = 0;
        }
        nk[j] = g == posA ? kA : g == posC ? kC : fk;
        nm[j] = g == posA ? mA : g == posC ? mC : fm;
      }
#pragma unroll
      for (int j = 0; j < RPL; ++j) {
        key[j] = nk[j];
        meta[j] = nm[j];
      }
      sk = __shfl_sync(0xFFFFFFFFu, key[0], 1);
      sm = __shfl_sync(0xFFFFFFFFu, meta[0], 1);
      hk = nhk;
      hm = nhm;
    }
    if (lane == 0)
      s_count = count;
  }
  for (int i = tid; i < n; i += kThreads) {
    t_first[i] = -1;
    t_next[i] = -1;
  }
  __syncthreads();
  const int count = s_count;
  SPECBENCH_PHASE(3, count); // the nodes are chosen
  // Children lists in index order (link_children): children are popped in rank order, so a
  // rank-0 node is its parent's first child and a rank-r node its rank r-1 sibling's next.
  for (int i = 1 + tid; i < count; i += kThreads) {
    const uint32_t m = t_meta[i];
    (meta_rank(m) == 0 ? t_first : t_next)[meta_gen(m)] = i;
  }
  if (tid == 0)
    t_parent[0] = -1;
  __syncthreads();
  // Parents: every node hands itself to its children by walking their sibling list.
  for (int p = tid; p < count; p += kThreads)
    for (int c = t_first[p]; c >= 0; c = t_next[c])
      t_parent[c] = p;
  __syncthreads();
  SPECBENCH_PHASE(4, 0); // links and parents
  const int64_t ob = static_cast<int64_t>(b) * n;
  const DdtreeOutputs& o = a.out;
  if (tid == 0 && o.node_count)
    o.node_count[b] = count;
  for (int i = tid; i < n; i += kThreads) {
    const bool real = i < count;
    const uint32_t m = real ? t_meta[i] : 0u;
    const int d = real ? meta_depth(m) : -1;
    if (o.parents)
      o.parents[ob + i] = real ? t_parent[i] : -1;
    if (o.depths)
      o.depths[ob + i] = d;
    if (o.positions)
      o.positions[ob + i] = real ? seq + d : -1;
    if (o.scores)
      o.scores[ob + i] = real ? t_score[i] : -INFINITY;
    if (o.first_child)
      o.first_child[ob + i] = real ? t_first[i] : -1;
    if (o.next_sibling)
      o.next_sibling[ob + i] = real ? t_next[i] : -1;
    if (o.tokens) {
      int32_t t = -1;
      if (i == 0)
        t = root_token;
      else if (real)
        t = CACHED ? idc[(d - 1) * kc + meta_rank(m)]
                   : gid[static_cast<int64_t>(d - 1) * k + meta_rank(m)];
      o.tokens[ob + i] = t;
    }
  }
  SPECBENCH_PHASE(5, 0); // node outputs written
  if (o.mask == nullptr && o.mask_packed == nullptr)
    return;
  const int W = a.lay.words;
  if (a.lay.rows_in_smem)
    write_masks(reinterpret_cast<uint32_t*>(smem + a.lay.off_rows), t_parent, n, W, count, o, ob);
  else
    write_masks(o.mask_packed + ob * W, t_parent, n, W, count, o, ob);
  SPECBENCH_PHASE(6, 0); // masks written
}

// Row i of the ancestor mask: bit j set when j is i or one of its ancestors (padding rows see only
// themselves). `rows` is shared memory or, when the rows do not fit there, mask_packed itself;
// the two calls are separate so that the compiler knows each pointer's address space.
__device__ __forceinline__ void write_masks(uint32_t* rows, const int32_t* t_parent, int n, int W,
                                            int count, const DdtreeOutputs& o, int64_t ob) {
  const int tid = threadIdx.x;
  for (int i = tid; i < n; i += kThreads) {
    uint32_t* row = rows + static_cast<int64_t>(i) * W;
    if (W <= 4) { // the usual case (budget < 128): gather the row in registers
      uint32_t acc[4] = {0u, 0u, 0u, 0u};
      for (int j = i < count ? i : -1; j >= 0; j = t_parent[j]) {
        const uint32_t bit = 1u << (j & 31);
#pragma unroll
        for (int w = 0; w < 4; ++w)
          acc[w] |= (j >> 5) == w ? bit : 0u;
      }
      if (i >= count)
        acc[(i >> 5) & 3] |= 1u << (i & 31);
#pragma unroll
      for (int w = 0; w < 4; ++w)
        if (w < W)
          row[w] = acc[w];
    } else {
      for (int w = 0; w < W; ++w)
        row[w] = 0;
      if (i < count) {
        for (int j = i; j >= 0; j = t_parent[j])
          row[j >> 5] |= 1u << (j & 31);
      } else {
        row[i >> 5] |= 1u << (i & 31);
      }
    }
  }
  __syncthreads();
  if (o.mask_packed && rows != o.mask_packed + ob * W)
    for (int e = tid; e < n * W; e += kThreads)
      o.mask_packed[ob * W + e] = rows[e];
  if (o.mask) {
    // A warp per row: lane j writes column j, j + 32, ... (coalesced, no division).
    const int warp = tid >> 5, lane = tid & 31;
    if (W <= 4) { // four rows per pass, their words loaded before any byte is stored
      for (int i0 = warp; i0 < n; i0 += 4 * (kThreads / 32)) {
        uint32_t wv[4][4];
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            const int i = i0 + u * (kThreads / 32);
            wv[u][c] = i < n && c < W ? rows[static_cast<int64_t>(i) * W + c] : 0u;
          }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int i = i0 + u * (kThreads / 32);
          if (i < n)
#pragma unroll
            for (int c = 0; c < 4; ++c)
              if (32 * c + lane < n)
                o.mask[(ob + i) * n + 32 * c + lane] =
                    static_cast<uint8_t>((wv[u][c] >> lane) & 1u);
        }
      }
    } else {
      for (int i = warp; i < n; i += kThreads / 32) {
        uint8_t* m = o.mask + (ob + i) * n;
        const uint32_t* row = rows + static_cast<int64_t>(i) * W;
        for (int c = 0; c < W; ++c) {
          const int j = 32 * c + lane;
          if (j < n)
            m[j] = static_cast<uint8_t>((row[c] >> lane) & 1u);
        }
      }
    }
  }
}

using KernelFn = void (*)(BuildArgs);

template <bool CACHED> KernelFn pick_kernel(int budget) {
  // The list holds 32 * RPL >= (budget + 1) / 2 entries (see the top of this file).
  return budget <= 64    ? ddtree_kernel<1, CACHED>
         : budget <= 128 ? ddtree_kernel<2, CACHED>
         : budget <= 256 ? ddtree_kernel<4, CACHED>
         : budget <= 512 ? ddtree_kernel<8, CACHED>
                         : ddtree_kernel<16, CACHED>;
}

} // namespace

SPECBENCH_PHASE_ATTACH(phase_attach_ddtree)

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
  const detail::KernelFn kernel =
      lay.cache_tables ? detail::pick_kernel<true>(budget) : detail::pick_kernel<false>(budget);
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
