// DDTree tree building on the GPU. One block per request; warp 0 (up to budget 128; a warp per
// 32 list entries above) runs the reference's best-first search exactly, the whole block then
// writes the outputs and the ancestor masks.
//
// The search keeps the frontier (candidates not yet in the tree) as one list sorted under the
// reference order (score descending, then depth ascending, then rank path ascending), spread over
// the warp: entry g lives in register g / 32 of lane g % 32, as the candidate's exact score (-inf:
// an empty entry) and a packed word of its generator, depth and rank. Every lane knows the head
// (the next node) and the second entry. One step pops the head and inserts its next sibling A and
// first child C, the better one first (X, then Y). No vote counts places: the list is sorted, so
// entry g lands at g + 1, g or g - 1 according to whether X and Y come before its neighbours, and
// each lane compares its own entry and the two neighbours it received by shuffle at the start of
// the step, while the step's shared-memory loads were in flight. The next head is the better of X
// and the old second entry, so it is known before the list update lands and the next step's loads
// start at once. Equal scores go to a slow path that compares depths and rank paths by walking
// ancestors in shared memory, with the same place rule.
//
// A step stores only the node's record (its packed fields and score, one 8-byte store); links,
// parents, outputs and mask rows are built afterwards by the whole block. For budgets below 128
// each candidate also carries its parent (8-bit fields), so parents need no walk. Per pop the
// loop is latency-bound in one warp: every instruction taken out of it (stores, their address
// arithmetic) shortens the whole search.
//
// Why the list can be short: after t pops the frontier holds at most t + 1 candidates and only
// budget - t more pops follow, so only the best min(t + 1, budget - t) <= (budget + 1) / 2 can
// ever become nodes; the list keeps 32 * RPL * WARPS >= that many and lets the rest fall off its
// end. Candidates that could never be popped (score -inf, or rank + depth > budget: such a node
// needs rank + depth - 1 nodes before it) are empty entries. Each parent has at most one
// candidate in the frontier (its children are generated one rank at a time), which is why a
// rank-path comparison always meets two different parents.
//
// Budgets above 128 spread the list over several warps, one entry per lane (warp w holds entries
// 32w to 32w + 31): every warp computes the step's candidates itself, updates its own entries
// and publishes its first and last entries (and warp 0 entry 1, the next second entry) in shared
// memory, double-buffered by the step's parity, then one named barrier ends the step. A warp
// whose entries are past the frontier or can no longer be popped skips its update.
//
// Scores use the reference's float operations in its order, so the tree, its node numbering and
// its scores are bit-identical to build_ddtree_reference.
#include "common.cuh"
#include "phase_stamps.cuh"
#include "programmatic_launch.cuh"

namespace specbench::kernels {
namespace detail {
namespace {

constexpr int kThreads = 256; // at least; a search of more than 8 warps takes one thread per lane
constexpr float kEmpty = -INFINITY;

// The block of a search by `warps` warps: 256 threads, or one per search lane when more.
constexpr int block_threads(int warps) {
  return 32 * warps > kThreads ? 32 * warps : kThreads;
}

// The most warps a search takes: 512 list entries, enough for budget 1024 (kMaxDdtreeBudget).
constexpr int kMaxSearchWarps = 16;

// A candidate's other fields in 32 bits, depth in the top bits (one shift on the step's critical
// path). Small budgets (< 128, node indices < 128): depth, generator (its parent for rank 0, its
// previous sibling otherwise), parent and rank, 8 bits each. Larger budgets: depth (<= budget <=
// 1024, 11 bits), generator (< 2048, 11 bits) and rank (< budget, 10 bits); no parent.
template <bool SMALL> struct Meta;
template <> struct Meta<true> {
  __device__ static uint32_t pack(int gen, int parent, int depth, int rank) {
    return (static_cast<uint32_t>(depth) << 24) | (static_cast<uint32_t>(gen) << 16) |
           (static_cast<uint32_t>(parent) << 8) | static_cast<uint32_t>(rank);
  }
  __device__ static int depth(uint32_t m) { return static_cast<int>(m >> 24); }
  __device__ static int gen(uint32_t m) { return static_cast<int>((m >> 16) & 0xFFu); }
  __device__ static int parent(uint32_t m) { return static_cast<int>((m >> 8) & 0xFFu); }
  __device__ static int rank(uint32_t m) { return static_cast<int>(m & 0xFFu); }
};
template <> struct Meta<false> {
  __device__ static uint32_t pack(int gen, int, int depth, int rank) {
    return (static_cast<uint32_t>(depth) << 21) | (static_cast<uint32_t>(gen) << 10) |
           static_cast<uint32_t>(rank);
  }
  __device__ static int depth(uint32_t m) { return static_cast<int>(m >> 21); }
  __device__ static int gen(uint32_t m) { return static_cast<int>((m >> 10) & 0x7FFu); }
  __device__ static int parent(uint32_t) { return 0; } // not carried
  __device__ static int rank(uint32_t m) { return static_cast<int>(m & 0x3FFu); }
};

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

template <int THREADS>
__device__ __forceinline__ void write_masks(uint32_t* rows, const int32_t* t_parent, int n, int W,
                                            int count, const DdtreeOutputs& o, int64_t ob);

/// Waits for the `warps` search warps of the block (named barrier 1; the other warps of the block
/// are already at the barrier after the search).
template <int WARPS> __device__ __forceinline__ void search_barrier() {
  asm volatile("bar.sync 1, %0;" ::"n"(32 * WARPS) : "memory");
}

// Declared for one resident block per SM: a block's search is one warp's chain of dependent steps,
// so more blocks per SM only matter for batches larger than the GPU holds at once (budget 64: 80
// registers, three blocks per SM, 396 requests on an H200). Without the bound ptxas kept registers
// free for more blocks and spilled the larger lists (RPL 4: 16 bytes, RPL 16: 48 bytes); with it
// none spills, and budget 16 / 64 / 1024 took 4.37 / 9.25 / 1,337 us against 4.51 / 9.36 / 1,399,
// budget 256 88.1-88.5 against 87.3 (B = 1, 2026-12-04 16:54 UTC).
//
// Budgets above 128 spread the list over WARPS warps, one entry per lane (RPL = 1): a step is the
// same few instructions in every warp at once, then one barrier, instead of RPL registers' worth
// in one warp (2026-12-04: about 1.4 us per pop at budget 1024 with RPL 16 in one warp, 0.5 us
// over 16 warps).
template <int RPL, int WARPS, bool CACHED, bool SMALL>
__global__ void __launch_bounds__(block_threads(WARPS), 1) ddtree_kernel(BuildArgs a) {
  static_assert(WARPS == 1 || RPL == 1, "a multi-warp search holds one entry per lane");
  constexpr int kBlock = block_threads(WARPS);
  using M = Meta<SMALL>;
  SPECBENCH_PHASE_START();
  extern __shared__ __align__(16) unsigned char smem[];
  const int n = a.lay.n, tid = threadIdx.x, b = blockIdx.x;
  // Tree arrays: each node's record (packed fields, score bits: one 8-byte store per pop), parent,
  // first child, next sibling.
  uint2* t_node = reinterpret_cast<uint2*>(smem);
  int32_t* t_parent = reinterpret_cast<int32_t*>(t_node + n);
  int32_t* t_first = t_parent + n;
  int32_t* t_next = t_first + n;
  float* lpc = reinterpret_cast<float*>(smem + a.lay.off_logp);
  int32_t* idc = reinterpret_cast<int32_t*>(smem + a.lay.off_ids);
  uint32_t* rows = reinterpret_cast<uint32_t*>(smem + a.lay.off_rows); // if rows_in_smem
  const int W = a.lay.words;
  const int depth = a.depth, k = a.k, kc = a.lay.kc, budget = a.budget;
  const int64_t table0 = static_cast<int64_t>(b) * depth * k;
  const float* glp = a.top_logp + table0;
  const int32_t* gid = a.top_ids + table0;
  wait_for_previous_kernel();
  // Loaded now, used at the end: their latency hides behind the search.
  const int32_t root_token = tid == 0 ? a.root_tokens[b] : 0;
  const int seq = a.seq_lens ? a.seq_lens[b] : 0;
  if (CACHED) {
    // Entries no node can use are -inf. Eight loads of each table in flight per thread before any
    // is stored: one round trip for up to 2,048 entries (budget 64 with 16 depths needs 1,105).
    const int total = (a.lay.dc + 1) * kc;
    for (int e0 = 0; e0 < total; e0 += 8 * kBlock) {
      float lv[8];
      int32_t iv[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int e = e0 + u * kBlock + tid, d = e / kc, r = e - d * kc;
        const bool ok = e < total && d < a.lay.dc && r < kc - 1 && d + 1 + r <= budget;
        lv[u] = ok ? __ldg(glp + static_cast<int64_t>(d) * k + r) : -INFINITY;
        iv[u] = ok ? __ldg(gid + static_cast<int64_t>(d) * k + r) : -1;
      }
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int e = e0 + u * kBlock + tid;
        if (e < total) {
          lpc[e] = lv[u];
          idc[e] = iv[u];
        }
      }
    }
  }
  allow_next_kernel(); // the tables are read (or being read); the search takes the time
  for (int i = tid; i < n; i += kBlock) {
    t_first[i] = -1;
    t_next[i] = -1;
  }
  __shared__ int s_count;
  // A multi-warp search's exchange, [step parity][warp] (score bits, meta): each warp's first
  // and last entries (its neighbours' lane 31 and lane 0 read them) and entry 1, the next second
  // entry; double-buffered so that one barrier per step is enough.
  __shared__ uint2 s_first[WARPS > 1 ? 2 : 1][WARPS], s_last[WARPS > 1 ? 2 : 1][WARPS];
  __shared__ uint2 s_second[2];
  static_assert(WARPS <= kMaxSearchWarps, "the list holds at most 512 entries");
  __syncthreads();
  SPECBENCH_PHASE(2, 0); // tables cached

  if (tid < 32 * WARPS) {
    const int lane = tid & 31, warp = WARPS > 1 ? tid >> 5 : 0;
    // log-prob of rank r at depth d (1-based); callers pass readable entries.
    auto lp = [&](int d, int r) -> float {
      if (CACHED)
        return lpc[(d - 1) * kc + r];
      return __ldg(glp + static_cast<int64_t>(d - 1) * k + r);
    };
    // Parent of tree node x during the search. Small budgets carry it; otherwise a rank-r node's
    // generator is its rank r-1 sibling, so follow generators down to rank 0.
    auto parent_of = [&](int x) {
      uint32_t m = t_node[x].x;
      if constexpr (SMALL) {
        return M::parent(m);
      } else {
        while (M::rank(m) != 0)
          m = t_node[M::gen(m)].x;
        return M::gen(m);
      }
    };
    // Rank-path order of two candidates of equal depth given as (parent, rank): walk both up to
    // their common ancestor; the ranks just below it decide. Rare (only on equal scores).
    auto path_less = [&](int px, int rx, int py, int ry) {
      while (px != py) {
        rx = M::rank(t_node[px].x);
        ry = M::rank(t_node[py].x);
        px = parent_of(px);
        py = parent_of(py);
      }
      return rx < ry;
    };
    // Full reference order: does list entry (kx, mx) come before candidate (kc_, dc_, pc, rc)?
    auto before = [&](float kx, uint32_t mx, float kc_, int dc_, int pc, int rc) {
      if (kx != kc_)
        return kx > kc_;
      const int dx = M::depth(mx);
      if (dx != dc_)
        return dx < dc_;
      const int rx = M::rank(mx), gx = M::gen(mx);
      const int px = SMALL ? M::parent(mx) : rx == 0 ? gx : parent_of(gx);
      return path_less(px, rx, pc, rc);
    };
    t_node[0] = make_uint2(0u, 0u); // every lane, the same value: the root, score +0
    float key[RPL];
    uint32_t meta[RPL]; // the sorted list
#pragma unroll
    for (int j = 0; j < RPL; ++j) {
      key[j] = kEmpty;
      meta[j] = 0;
    }
    float hk = kEmpty, sk = kEmpty; // head and second entry, the same in every lane
    uint32_t hm = 0, sm = 0;
    if (depth > 0 && k > 0 && budget > 0) {
      hk = lp(1, 0);
      hm = M::pack(0, 0, 1, 0);
    }
    if (tid == 0) {
      key[0] = hk;
      meta[0] = hm;
    }
    const uint2 empty = make_uint2(__float_as_uint(kEmpty), 0u);
    int p = 0; // the step's parity (multi-warp exchange)
    if constexpr (WARPS > 1) {
      if (lane == 0)
        for (int q = 0; q < 2; ++q) {
          s_first[q][warp] = warp == 0 ? make_uint2(__float_as_uint(hk), hm) : empty;
          s_last[q][warp] = empty;
        }
      if (tid == 0)
        s_second[0] = s_second[1] = empty;
      search_barrier<WARPS>();
    }
    int count = 1;
    while (hk > kEmpty && count <= budget) {
      const int node = count++;
      // A warp updates its entries while they can matter: inside the frontier (at most count + 1
      // entries, the rest empty) and at most budget - node + 1 from the head (only budget - node
      // more pops follow, and a list entry moves up at most one place per pop; the margin keeps
      // the entries this one reads exact). Entries of skipped warps are never popped.
      const bool active =
          WARPS == 1 || warp == 0 || (32 * warp <= count + 1 && 32 * warp <= budget - node + 1);
      const int gen = M::gen(hm), d = M::depth(hm), r = M::rank(hm), par = M::parent(hm);
      // The candidates this pop generates, with the reference's float operations in its order:
      // (score - lp(d, r)) + lp(d, r + 1) for the next sibling A, score + lp(d + 1, 0) for the
      // first child C. A candidate that does not exist or can never become a node (rank + depth >
      // budget) reads a -inf entry of the padded cached table: an empty entry.
      bool has_sib = true, has_child = true;
      int r1 = r + 1, dch = d + 1;
      if (!CACHED) { // clamp to readable entries instead
        has_sib = r + 1 < k && r + 1 + d <= budget;
        has_child = d < depth && d + 1 <= budget;
        r1 = has_sib ? r + 1 : r;
        dch = has_child ? d + 1 : d;
      }
      float l_r, l_r1, l_c;
      if (CACHED) { // one row pointer: lp(d + 1, 0) at its start, lp(d, r) one row back
        const float* row = lpc + d * kc;
        l_c = row[0];
        l_r = row[r - kc];
        l_r1 = row[r + 1 - kc];
      } else {
        l_r = lp(d, r);
        l_r1 = lp(d, r1);
        l_c = lp(dch, 0);
      }
      // The list's neighbours of every entry (g - 1 and g + 1), from before the step. A
      // multi-warp search takes lane 0's and lane 31's from the neighbouring warps' exchange.
      float up[RPL], dn[RPL];
      uint32_t upm[RPL], dnm[RPL];
#pragma unroll
      for (int j = 0; j < RPL; ++j) {
        up[j] = __shfl_up_sync(0xFFFFFFFFu, key[j], 1);
        upm[j] = __shfl_up_sync(0xFFFFFFFFu, meta[j], 1);
        dn[j] = __shfl_down_sync(0xFFFFFFFFu, key[j], 1);
        dnm[j] = __shfl_down_sync(0xFFFFFFFFu, meta[j], 1);
      }
#pragma unroll
      for (int j = 0; j < RPL; ++j) { // across register boundaries
        if (j > 0) {
          const float wk = __shfl_sync(0xFFFFFFFFu, key[j - 1], 31);
          const uint32_t wm = __shfl_sync(0xFFFFFFFFu, meta[j - 1], 31);
          if (lane == 0) {
            up[j] = wk;
            upm[j] = wm;
          }
        }
        float nk = kEmpty;
        uint32_t nm = 0;
        if (j + 1 < RPL) {
          nk = __shfl_sync(0xFFFFFFFFu, key[j + 1 < RPL ? j + 1 : j], 0);
          nm = __shfl_sync(0xFFFFFFFFu, meta[j + 1 < RPL ? j + 1 : j], 0);
        }
        if (lane == 31) {
          dn[j] = nk;
          dnm[j] = nm;
        }
      }
      if constexpr (WARPS > 1) {
        const uint2 u = warp > 0 ? s_last[p][warp - 1] : empty;
        const uint2 v = warp + 1 < WARPS ? s_first[p][warp + 1] : empty;
        if (lane == 0) {
          up[0] = __uint_as_float(u.x);
          upm[0] = u.y;
        }
        if (lane == 31) {
          dn[0] = __uint_as_float(v.x);
          dnm[0] = v.y;
        }
      }
      const float cs = hk;
      const float sA = __fadd_rn(__fsub_rn(cs, l_r), l_r1);
      const float sC = __fadd_rn(cs, l_c);
      const float kA = has_sib ? sA : kEmpty, kC = has_child ? sC : kEmpty;
      const uint32_t mA = M::pack(node, par, d, r + 1), mC = M::pack(node, node, d + 1, 0);
      // The node itself, one 8-byte store; parents, links and mask rows come afterwards, in
      // parallel. Every lane stores the same value to the same address: no branch in the loop.
      t_node[node] = make_uint2(hm, __float_as_uint(cs));
      // X comes before Y: on equal scores A (one level shallower) comes before C.
      const bool c_first = kC > kA;
      const float kX = c_first ? kC : kA, kY = c_first ? kA : kC;
      const uint32_t mX = c_first ? mC : mA, mY = c_first ? mA : mC;
      // Does list entry (k_, m_) come before X (of_x) or Y? The full order on equal scores.
      auto ahead = [&](float k_, uint32_t m_, bool of_x) {
        const float kk = of_x ? kX : kY;
        if (!(k_ > kEmpty) || !(kk > kEmpty) || k_ != kk)
          return k_ > kk;
        const int pA = SMALL ? par : r == 0 ? gen : parent_of(gen);
        return (of_x == c_first) ? before(k_, m_, kC, d + 1, node, 0)
                                 : before(k_, m_, kA, d, pA, r + 1);
      };
      // Equal scores between X or Y and a list entry need the full order (rare). A multi-warp
      // search votes per warp, so each warp also checks the neighbours it reads from the others.
      bool tie = false; // bitwise operators: no short-circuit branches
#pragma unroll
      for (int j = 0; j < RPL; ++j)
        tie |= ((WARPS > 1 && warp > 0) | (j > 0) | (lane > 0)) &
               (((kX > kEmpty) & (key[j] == kX)) | ((kY > kEmpty) & (key[j] == kY)));
      if constexpr (WARPS > 1)
        tie |= ((lane == 0) & (kY > kEmpty) & (up[0] == kY)) |
               ((lane == 31) & (kX > kEmpty) & (dn[0] == kX));
      const bool slow = __any_sync(0xFFFFFFFFu, tie & active);
      // The next head: the old second entry or X. Every warp of a multi-warp search decides it
      // alike, whatever its own vote.
      bool keep_second = sk > kX;
      if constexpr (WARPS > 1)
        if ((kX > kEmpty) & (sk == kX)) {
          __syncwarp(); // this step's node record is visible
          keep_second = ahead(sk, sm, true);
        }
      // The list update. With bX(i) = "old entry i comes before X" (i >= 1; entry 0 is popped and
      // counts as before everything), X lands at pos_x = #{i >= 1: bX(i)} and Y at
      // #{i >= 1: bY(i)} + 1; new entry g is X, Y, or old entry g + 1 - (entries inserted
      // before g), and the sorted list makes each of those a test on entries g - 1, g, g + 1:
      // bx_g = bX(g), bx_n = bX(g + 1), by_p = bY(g - 1), by_g = bY(g). Empty entries come
      // before nothing. Without equal scores the scores decide (straight-line code); the rare
      // slow path redoes the tests in the full order.
      bool bx_g[RPL], bx_n[RPL], by_p[RPL], by_g[RPL];
#pragma unroll
      for (int j = 0; j < RPL; ++j) {
        const int g = 32 * (j + warp * RPL) + lane;
        bx_g[j] = (g == 0) | (key[j] > kX);
        bx_n[j] = dn[j] > kX;
        by_p[j] = (g <= 1) | (up[j] > kY);
        by_g[j] = (g == 0) | (key[j] > kY);
      }
      if (slow) {
        __syncwarp(); // this step's node record is visible
        if constexpr (WARPS == 1)
          keep_second = ahead(sk, sm, true);
#pragma unroll
        for (int j = 0; j < RPL; ++j) {
          const int g = 32 * (j + warp * RPL) + lane;
          bx_g[j] = g == 0 || ahead(key[j], meta[j], true);
          bx_n[j] = ahead(dn[j], dnm[j], true);
          by_p[j] = g <= 1 || ahead(up[j], upm[j], false);
          by_g[j] = g == 0 || ahead(key[j], meta[j], false);
        }
      }
      const float nhk = keep_second ? sk : kX;
      const uint32_t nhm = keep_second ? sm : mX;
#pragma unroll
      for (int j = 0; j < RPL; ++j) {
        if (!active || (j > 0 && 32 * j > count + 1))
          continue; // beyond the frontier, or never popped: stays as it is
        const int g = 32 * (j + warp * RPL) + lane;
        const bool is_x = bx_g[j] && !bx_n[j], is_y = g >= 1 && by_p[j] && !by_g[j];
        // Old entry g + 1, g or g - 1 for 0, 1 or 2 insertions before g (!bx_g, !by_p).
        const float fk = bx_g[j] ? (by_p[j] ? dn[j] : key[j]) : (by_p[j] ? key[j] : up[j]);
        const uint32_t fm = bx_g[j] ? (by_p[j] ? dnm[j] : meta[j]) : (by_p[j] ? meta[j] : upm[j]);
        key[j] = is_x ? kX : is_y ? kY : fk;
        meta[j] = is_x ? mX : is_y ? mY : fm;
      }
      if constexpr (WARPS == 1) {
        sk = __shfl_sync(0xFFFFFFFFu, key[0], 1);
        sm = __shfl_sync(0xFFFFFFFFu, meta[0], 1);
      } else { // publish this warp's ends and entry 1, then read the next step's
        const int q = p ^ 1;
        const uint2 mine = make_uint2(__float_as_uint(key[0]), meta[0]);
        if (active && lane == 0)
          s_first[q][warp] = mine;
        if (active && lane == 31)
          s_last[q][warp] = mine;
        if (tid == 1)
          s_second[q] = mine;
        search_barrier<WARPS>();
        const uint2 e1 = s_second[q];
        sk = __uint_as_float(e1.x);
        sm = e1.y;
        p = q;
      }
      hk = nhk;
      hm = nhm;
    }
    if (tid == 0)
      s_count = count;
  }
  __syncthreads();
  const int count = s_count;
  SPECBENCH_PHASE(3, count); // the nodes are chosen
  // Children lists in index order (link_children): children are popped in rank order, so a
  // rank-0 node is its parent's first child and a rank-r node its rank r-1 sibling's next. Small
  // budgets carry each node's parent in its record.
  for (int i = 1 + tid; i < count; i += kBlock) {
    const uint32_t m = t_node[i].x;
    (M::rank(m) == 0 ? t_first : t_next)[M::gen(m)] = i;
    if (SMALL)
      t_parent[i] = M::parent(m);
  }
  if (tid == 0)
    t_parent[0] = -1;
  __syncthreads();
  if (!SMALL) {
    // Parents: every node hands itself to its children by walking their sibling list.
    for (int p = tid; p < count; p += kBlock)
      for (int c = t_first[p]; c >= 0; c = t_next[c])
        t_parent[c] = p;
    __syncthreads();
  }
  SPECBENCH_PHASE(4, 0); // links and parents
  const int64_t ob = static_cast<int64_t>(b) * n;
  const DdtreeOutputs& o = a.out;
  if (tid == 0 && o.node_count)
    o.node_count[b] = count;
  for (int i = tid; i < n; i += kBlock) {
    const bool real = i < count;
    const uint2 rec = real ? t_node[i] : make_uint2(0u, 0u);
    const uint32_t m = rec.x;
    const int d = real ? M::depth(m) : -1;
    if (o.parents)
      o.parents[ob + i] = real ? t_parent[i] : -1;
    if (o.depths)
      o.depths[ob + i] = d;
    if (o.positions)
      o.positions[ob + i] = real ? seq + d : -1;
    if (o.scores)
      o.scores[ob + i] = real ? __uint_as_float(rec.y) : -INFINITY;
    if (o.first_child)
      o.first_child[ob + i] = real ? t_first[i] : -1;
    if (o.next_sibling)
      o.next_sibling[ob + i] = real ? t_next[i] : -1;
    if (o.tokens) {
      int32_t t = -1;
      if (i == 0)
        t = root_token;
      else if (real)
        t = CACHED ? idc[(d - 1) * kc + M::rank(m)]
                   : gid[static_cast<int64_t>(d - 1) * k + M::rank(m)];
      o.tokens[ob + i] = t;
    }
  }
  SPECBENCH_PHASE(5, 0); // node outputs written
  if (o.mask == nullptr && o.mask_packed == nullptr)
    return;
  if (a.lay.rows_in_smem)
    write_masks<kBlock>(rows, t_parent, n, W, count, o, ob);
  else
    write_masks<kBlock>(o.mask_packed + ob * W, t_parent, n, W, count, o, ob);
  SPECBENCH_PHASE(6, 0); // masks written
}

// Row i of the ancestor mask: bit j set when j is i or one of its ancestors (padding rows see only
// themselves). `rows` is shared memory or, when the rows do not fit there, mask_packed itself;
// the two calls are separate so that the compiler knows each pointer's address space.
template <int THREADS>
__device__ __forceinline__ void write_masks(uint32_t* rows, const int32_t* t_parent, int n, int W,
                                            int count, const DdtreeOutputs& o, int64_t ob) {
  const int tid = threadIdx.x;
  for (int i = tid; i < n; i += THREADS) {
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
    for (int e = tid; e < n * W; e += THREADS)
      o.mask_packed[ob * W + e] = rows[e];
  if (o.mask) {
    // A warp per row: lane j writes column j, j + 32, ... (coalesced, no division).
    const int warp = tid >> 5, lane = tid & 31;
    if (W <= 4) { // four rows per pass, their words loaded before any byte is stored
      for (int i0 = warp; i0 < n; i0 += 4 * (THREADS / 32)) {
        uint32_t wv[4][4];
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            const int i = i0 + u * (THREADS / 32);
            wv[u][c] = i < n && c < W ? rows[static_cast<int64_t>(i) * W + c] : 0u;
          }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int i = i0 + u * (THREADS / 32);
          if (i < n)
#pragma unroll
            for (int c = 0; c < 4; ++c)
              if (32 * c + lane < n)
                o.mask[(ob + i) * n + 32 * c + lane] =
                    static_cast<uint8_t>((wv[u][c] >> lane) & 1u);
        }
      }
    } else {
      for (int i = warp; i < n; i += THREADS / 32) {
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

struct Kernel {
  void (*fn)(BuildArgs);
  int threads;
};
template <int RPL, int WARPS, bool CACHED, bool SMALL> Kernel kernel_of() {
  return {ddtree_kernel<RPL, WARPS, CACHED, SMALL>, block_threads(WARPS)};
}

template <bool CACHED> Kernel pick_kernel(int budget) {
  // The list holds 32 * RPL * WARPS >= (budget + 1) / 2 entries (see the top of this file):
  // one warp up to budget 128, then a warp per 32 entries (two warps at budget 128 took 32.8 us
  // against 26.4 for one warp of two registers, 2026-12-04). Budgets below 128 carry parents in
  // the candidates' 8-bit fields.
  return budget <= 64    ? kernel_of<1, 1, CACHED, true>()
         : budget < 128  ? kernel_of<2, 1, CACHED, true>()
         : budget <= 128 ? kernel_of<2, 1, CACHED, false>()
         : budget <= 256 ? kernel_of<1, 4, CACHED, false>()
         : budget <= 512 ? kernel_of<1, 8, CACHED, false>()
                         : kernel_of<1, 16, CACHED, false>();
}

} // namespace

SPECBENCH_PHASE_ATTACH(phase_attach_ddtree)

} // namespace detail

Status build_ddtree(const float* top_logp, const int32_t* top_ids, const int32_t* root_tokens,
                    const int32_t* seq_lens, int batch, int depth, int k, int budget,
                    const DdtreeOutputs& out, Stream stream, LaunchOptions launch) {
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
  const detail::Kernel kernel =
      lay.cache_tables ? detail::pick_kernel<true>(budget) : detail::pick_kernel<false>(budget);
  if (lay.total > 48 * 1024) {
    cudaFuncAttributes attr{};
    cudaError_t e = cudaFuncGetAttributes(&attr, kernel.fn);
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(kernel.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               limit - static_cast<int>(attr.sharedSizeBytes));
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return detail::cuda_status(e, where, "cudaFuncSetAttribute");
    }
  }
  const detail::LaunchConfig l(batch, kernel.threads, lay.total, stream, launch);
  return detail::launch_kernel(l, where, kernel.fn, a);
}

} // namespace specbench::kernels
