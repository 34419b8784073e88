// Sampling verification with the segment-race draw of sampling_reference.hpp. A warp races
// 1024-element segments of one row: for each segment, while its weights are still in registers,
// it computes the segment's mass, its candidate token (inverse CDF inside the segment with the
// segment's draw coin) and its race key mass / -ln(race coin). The segment with the largest key
// wins with probability mass / total, so a row's draw is a max over (key, candidate) pairs.
// Both verifiers first find, without any draw, the one row the token comes from, and read only
// that row:
// - tree mode walks the tree with one coin per node against the children's target
//   probabilities (SGLang's rule) and draws the bonus at the last node from the row without its
//   children. A request is one thread-block cluster; the blocks reduce through rank 0's shared
//   memory (tree_path_kernel).
// - chain mode runs the acceptance tests and draws from the first rejected draft's residual
//   max(p - q, 0), or p_k; the blocks reduce into 64-bit slots that are zero between calls, and
//   the block holding the request's last ticket (see verify_fused.cu) waits for them
//   (chain_sampling_kernel).
#include "common.cuh"
#include "phase_stamps.cuh"
#include "programmatic_launch.cuh"

#include "specbench/detail/philox.hpp"

#include <atomic>
#include <cooperative_groups.h>
#include <string>
#include <string_view>

namespace specbench::kernels {
namespace detail {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kSeg = static_cast<int>(kSamplingSegment);

// Philox tags (sampling_reference.hpp): a tree node's walk coin, the chain acceptance coin, and
// 2 + s for the race and draw coins of segment s.
constexpr uint32_t kTagWalk = 0, kTagAccept = 1, kTagRace0 = 2;
// Tree mode: at most 16 warps per block and 16 blocks per cluster (one request).
constexpr int kPathMaxThreads = 512;
constexpr int kPathMaxCluster = 16;

struct SamplingArgs {
  const float* target;    // [batch, rows, vocab]
  const float* draft;     // [batch, rows - 1, vocab] (chain) or nullptr
  const int32_t* parents; // [batch, rows] (tree) or nullptr
  const int32_t* tokens;  // tree: [batch, rows] tokens; chain: [batch, rows - 1] drafts
  int rows;               // nodes (tree) or k + 1 (chain)
  int64_t vocab;
  int64_t segs; // segments per row
  int splits;   // blocks per row
  int64_t segs_per_split;
  FastDiv split_div, row_div; // splits and rows as multiply-shift divisors (set by the launcher)
  uint64_t seed, offset;
  const uint64_t* dev_seed_offset;
  int32_t* target_out; // tree: [batch, rows] draws, optional
  int32_t* out_tokens; // tree: accept_path [batch, rows]; chain: output [batch, rows]
  int32_t* accepted;   // [batch]
  int32_t* bonus;      // tree: [batch]
  uint32_t* counters;  // [batch] tickets
  uint64_t* slots;     // [batch * rows, splits]: each block's best (key, candidate)
};

// A race entry: high word the key's float bits (keys are >= 0, so the bits order like the keys),
// low word 0xFFFFFFFF - candidate (the lower candidate wins a tie), or 1 for "no candidate". Never
// zero, so a written slot is told from an empty one; any candidate beats none.
__device__ __forceinline__ uint64_t race_entry(float key, int cand) {
  const uint32_t lo = cand >= 0 ? 0xFFFFFFFFu - static_cast<uint32_t>(cand) : 1u;
  return (static_cast<uint64_t>(__float_as_uint(key)) << 32) | lo;
}
__device__ __forceinline__ int entry_token(uint64_t e) {
  const uint32_t lo = static_cast<uint32_t>(e);
  return lo <= 1u ? -1 : static_cast<int>(0xFFFFFFFFu - lo); // 0: an empty entry
}

/// Element q (0..31) that `lane` holds of the segment starting at `base`: the layout of 16-byte
/// coalesced loads, lane l holding base + 128 j + 4 l + e. The segment's draw order is lane-major
/// (lane 0's 32 elements in q order, then lane 1's, ...), the order of sampling_reference.hpp.
__device__ __forceinline__ int64_t seg_elem(int64_t base, int lane, int q) {
  return base + (q >> 2) * 128 + lane * 4 + (q & 3);
}

/// One lane's 32 elements of the segment at `base`, loads issued and not used yet: `v` from p and,
/// when `residual`, `d` from q; zeros past the end of the row.
template <bool kVec>
__device__ __forceinline__ void issue_segment(const float* p, const float* q, bool residual,
                                              int64_t base, int64_t vocab, float (&v)[32],
                                              float (&d)[32]) {
  const int lane = threadIdx.x & 31;
  if (kVec && base + kSeg <= vocab) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float4 t = __ldcs(reinterpret_cast<const float4*>(p + base + j * 128 + lane * 4));
      v[4 * j] = t.x, v[4 * j + 1] = t.y, v[4 * j + 2] = t.z, v[4 * j + 3] = t.w;
    }
    if (residual) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float4 t = __ldcs(reinterpret_cast<const float4*>(q + base + j * 128 + lane * 4));
        d[4 * j] = t.x, d[4 * j + 1] = t.y, d[4 * j + 2] = t.z, d[4 * j + 3] = t.w;
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < 32; ++k) {
      const int64_t e = seg_elem(base, lane, k);
      v[k] = e < vocab ? p[e] : 0.0f;
      d[k] = residual && e < vocab ? q[e] : 0.0f;
    }
  }
}

/// The weights of issue_segment's elements: max(p, floor), or max(p - q, floor) when `residual`.
/// `floor` is 0 computed from the segment's coins, so that the weights, the loads' first use,
/// wait for the coins: the compiler otherwise puts the coins (a Philox run and a logarithm, about
/// 90 instructions that need no data; two Philox runs when this was found) after that first use,
/// where a warp runs them once its data is in instead of while its loads are in flight (SASS of
/// 2026-12-03 22:05 UTC).
__device__ __forceinline__ void segment_weights(const float (&v)[32], const float (&d)[32],
                                                bool residual, float floor, float (&w)[32]) {
#pragma unroll
  for (int k = 0; k < 32; ++k)
    w[k] = residual ? fmaxf(v[k] - d[k], floor) : fmaxf(v[k], floor);
}

/// A segment's mass, by a whole warp (every lane gets it): `pre` gets this lane's inclusive
/// prefixes in draw order, `acc` its sum (the last prefix) and `incl` the warp's inclusive scan
/// of the sums.
__device__ __forceinline__ float segment_prefixes(const float (&w)[32], float (&pre)[32],
                                                  float& acc, float& incl) {
  acc = 0.0f;
#pragma unroll
  for (int k = 0; k < 32; ++k) {
    acc += w[k];
    pre[k] = acc;
  }
  incl = warp_inclusive_scan(acc);
  return __shfl_sync(0xFFFFFFFFu, incl, 31);
}

/// The candidate of a segment whose mass is positive, by a whole warp: the first weight in draw
/// order whose inclusive prefix exceeds u * mass, the last positive one when rounding runs past
/// the end. `pre` are this lane's inclusive prefixes, `acc` its sum and `incl` the warp
/// scan of the sums. kCounted finds the first crossing by a count (a shorter dependent chain,
/// more instructions): for the rows kernel, where one warp per block picks and its latency is the
/// call's; where every warp picks (segment_entry) the extra issue costs more than the chain saves
/// (2026-12-07, docs/kernels.md: the path kernel 0.07 us, chain sampling 0.3 us slower).
template <bool kCounted = false>
__device__ __forceinline__ int segment_pick(const float (&w)[32], const float (&pre)[32], float acc,
                                            float incl, float u, float mass, int64_t base) {
  // In each lane the first prefix above what is left of the target (at least 0, so that a lane
  // starting past the target through rounding offers its first positive weight), and the ballot
  // takes the first lane that has one. A zero weight repeats the previous prefix, so it is never
  // the first to cross: no weight test is needed.
  const float rest = fmaxf(u * mass - (incl - acc), 0.0f);
  int cand = -1;
  if (kCounted) {
    // Weights are >= 0 and never NaN, so the prefixes never fall and those above `rest` are a
    // suffix: the first of them sits at the count of those that are not (32: none). Summed as
    // a tree: 5 dependent adds instead of a chain of 32 selects.
    int below[32];
#pragma unroll
    for (int k = 0; k < 32; ++k)
      below[k] = pre[k] > rest ? 0 : 1;
#pragma unroll
    for (int step = 1; step < 32; step <<= 1)
#pragma unroll
      for (int k = 0; k < 32; k += 2 * step)
        below[k] += below[k + step];
    cand = below[0] < 32 ? below[0] : -1;
  } else {
#pragma unroll
    for (int k = 31; k >= 0; --k)
      cand = pre[k] > rest ? k : cand;
  }
  int token;
  const unsigned hit = __ballot_sync(0xFFFFFFFFu, cand >= 0);
  if (hit) {
    const int l = __ffs(hit) - 1;
    token = static_cast<int>(seg_elem(base, l, __shfl_sync(0xFFFFFFFFu, cand, l)));
  } else { // rounding put the target past the end: the last positive weight in draw order
    int last = -1;
#pragma unroll
    for (int k = 0; k < 32; ++k)
      if (w[k] > 0.0f)
        last = k;
    const unsigned pos = __ballot_sync(0xFFFFFFFFu, last >= 0); // non-empty: mass > 0
    const int l = 31 - __clz(pos);
    token = static_cast<int>(seg_elem(base, l, __shfl_sync(0xFFFFFFFFu, last, l)));
  }
  return token;
}

/// The race entry of one segment, by a whole warp: the segment's mass (a warp scan of the lanes'
/// sums), its candidate (the first weight in draw order whose inclusive prefix exceeds u * mass;
/// the last positive one when rounding runs past the end) and its key mass / e, where e is the
/// exponential of the segment's race coin. Every lane returns the same entry.
__device__ __forceinline__ uint64_t segment_entry(const float (&w)[32], float u, float e,
                                                  int64_t base) {
  float pre[32], acc, incl;
  const float mass = segment_prefixes(w, pre, acc, incl);
  if (!(mass > 0.0f))
    return race_entry(0.0f, -1);
  // The pick before the division: the other order spilled the chain kernel (ptxas, 2026-12-04).
  const int token = segment_pick(w, pre, acc, incl, u, mass, base);
  return race_entry(mass / e, token);
}

/// Zeroes the weights of the tokens in `mask` [nmask] (shared memory) that fall into the segment
/// at `base`: the residual of tree mode, a row without the final node's children. Usually no
/// token falls in, and a ballot per 32 tokens is all it costs.
__device__ __forceinline__ void mask_segment(const int32_t* mask, int nmask, int64_t base,
                                             float (&w)[32]) {
  const int lane = threadIdx.x & 31;
  for (int c0 = 0; c0 < nmask; c0 += 32) {
    const int64_t off = c0 + lane < nmask ? mask[c0 + lane] - base : -1;
    unsigned hits = __ballot_sync(0xFFFFFFFFu, off >= 0 && off < kSeg);
    while (hits) {
      const int src = __ffs(hits) - 1;
      hits &= hits - 1;
      const int o = static_cast<int>(__shfl_sync(0xFFFFFFFFu, off, src));
      const int q = (o >> 7) * 4 + (o & 3); // seg_elem's inverse
      if (lane == ((o & 127) >> 2)) {
#pragma unroll
        for (int k = 0; k < 32; ++k)
          w[k] = k == q ? 0.0f : w[k];
      }
    }
  }
}

/// The best race entry of segments first, first + step, ... < end of one row, by a whole warp;
/// with kMasked, the tokens in `mask` weigh 0 (mask_segment).
template <bool kVec, bool kMasked = false>
__device__ __forceinline__ uint64_t race_segments(const float* p, const float* q, bool residual,
                                                  int64_t vocab, int64_t first, int64_t end,
                                                  int64_t step, uint64_t seed, uint64_t offset,
                                                  uint32_t row, const int32_t* mask = nullptr,
                                                  int nmask = 0) {
  // The segment's two coins (one Philox run and a logarithm) need no data: they are computed
  // after its loads are issued, and the weights wait for them (segment_weights).
  float v[32], d[32], w[32];
  const auto race = [&](int64_t seg) {
    issue_segment<kVec>(p, q, residual, seg * kSeg, vocab, v, d);
    const specbench::detail::SegmentCoins c = specbench::detail::philox_segment_coins(
        seed, offset, row, kTagRace0 + static_cast<uint32_t>(seg));
    const float e = -logf(c.race);
    segment_weights(v, d, residual, __fmul_rn(e, 0.0f) * c.draw, w); // 0, after both coins
    if (kMasked)
      mask_segment(mask, nmask, seg * kSeg, w);
    return segment_entry(w, c.draw, e, seg * kSeg);
  };
  if (first >= end)
    return 0;
  uint64_t best = race(first); // peeled: a warp's first loads come before any loop arithmetic
  for (int64_t seg = first + step; seg < end; seg += step)
    best = max(best, race(seg));
  return best;
}

/// race_segments over a whole row of p, out of line: only the chain's rare fallback runs it, and
/// inlined it would put its kilobytes of code into the reducing block's tail, between the drain
/// and the outputs.
template <bool kVec>
__device__ __noinline__ uint64_t race_row(const float* p, int64_t vocab, int64_t first, int64_t end,
                                          int64_t step, uint64_t seed, uint64_t offset,
                                          uint32_t row) {
  return race_segments<kVec>(p, nullptr, false, vocab, first, end, step, seed, offset, row);
}

/// The call's Philox seed and offset: the arguments', or the pair in device memory when given
/// (graph replays draw new numbers).
struct SeedOffset {
  uint64_t seed, offset;
};
__device__ __forceinline__ SeedOffset seed_offset(const SamplingArgs& a) {
  if (a.dev_seed_offset)
    return {a.dev_seed_offset[0], a.dev_seed_offset[1]};
  return {a.seed, a.offset};
}

/// Chain mode, by one whole warp: the first draft that does not stand, or k (every draft stands).
/// Draft j stands when u_j * q_j(d_j) < p_j(d_j). `keep(j, d)` sees each tested draft in its lane.
template <class Keep>
__device__ __forceinline__ int chain_first_reject(const SamplingArgs& a, int b, uint64_t seed,
                                                  uint64_t offset, Keep keep) {
  const int lane = threadIdx.x & 31, k = a.rows - 1;
  const int64_t row0 = static_cast<int64_t>(b) * a.rows;
  for (int c = 0; c < k; c += 32) {
    const int j = c + lane;
    bool reject = false;
    if (j < k) {
      const int32_t d = a.tokens[static_cast<int64_t>(b) * k + j];
      keep(j, d);
      const bool ok = d >= 0 && d < a.vocab;
      const float pp = ok ? __ldcg(a.target + (row0 + j) * a.vocab + d) : 0.0f;
      const float qq =
          ok ? __ldcg(a.draft + (static_cast<int64_t>(b) * k + j) * a.vocab + d) : 0.0f;
      const float u = specbench::detail::philox_uniform(
          seed, offset, static_cast<uint32_t>(row0 + j), kTagAccept);
      reject = !(u * qq < pp);
    }
    const unsigned m = __ballot_sync(0xFFFFFFFFu, reject);
    if (m)
      return c + __ffs(m) - 1;
  }
  return k;
}

/// Tree mode's walk for n <= 32 nodes, by warp 0 (lane i holds node i). Node c is "chosen" when
/// its parent's walk coin u falls in c's interval among its siblings: [before, before + w) with w
/// its weight (its target probability under its parent, 0 for a repeated token or an invalid
/// one) and `before` the sum of its earlier siblings' weights, added one at a time in index order
/// (the reference's float order). A node is on the path when it and every ancestor below the root
/// is chosen. Stores the final node and its children's tokens (the residual's mask) for the
/// block; rank 0 also writes the path, the accepted count and the path's target tokens.
__device__ __forceinline__ void warp_path_walk(const SamplingArgs& a, int b, uint64_t seed,
                                               uint64_t offset, bool writer, int* s_final,
                                               int* s_nmask, int32_t* s_mask) {
  const int lane = threadIdx.x & 31, n = a.rows;
  const int64_t row0 = static_cast<int64_t>(b) * n;
  int parent = -1, token = -1;
  if (lane < n) {
    parent = a.parents ? a.parents[row0 + lane] : lane - 1;
    token = a.tokens[row0 + lane];
  }
  const bool linked = lane > 0 && lane < n && parent >= 0 && parent < n && parent != lane;
  const bool valid = linked && token >= 0 && token < a.vocab;
  const float cp = valid ? __ldcg(a.target + (row0 + parent) * a.vocab + token) : 0.0f;
  // Everything below up to the weight needs the tree only, so it runs while the gather is out.
  const float u = valid ? specbench::detail::philox_uniform(
                              seed, offset, static_cast<uint32_t>(row0 + parent), kTagWalk)
                        : 0.0f;
  unsigned chain = linked ? 1u << lane : 0u; // this node and its ancestors, the root left out
  int up = linked ? parent : lane;
  for (int span = 1; span < n; span <<= 1) {
    chain |= __shfl_sync(0xFFFFFFFFu, chain, up);
    up = __shfl_sync(0xFFFFFFFFu, up, up);
  }
  const bool reaches = up == 0;
  const unsigned lower = (1u << lane) - 1u;
  const unsigned long long key =
      valid ? (static_cast<unsigned long long>(static_cast<uint32_t>(parent)) << 32) |
                  static_cast<uint32_t>(token)
            : ~0ull - static_cast<unsigned long long>(lane);
  const unsigned same = __match_any_sync(0xFFFFFFFFu, key); // every lane votes (no `valid &&`)
  const bool repeated = valid && (same & lower) != 0u;
  const unsigned siblings = __match_any_sync(0xFFFFFFFFu, valid ? parent : -1 - lane) & lower;
  const float w = valid && !repeated ? fmaxf(cp, 0.0f) : 0.0f;
  float before = 0.0f;
  // Up to n only: a sibling has a lower index than its lane. This loop runs after the gather,
  // on the walk's critical path, and unrolled to 32 it cost 0.1 to 0.25 us per call at 4 and 8
  // nodes (2026-12-04 13:59 UTC).
  for (int j = 0; j < n; ++j) {
    const float wj = __shfl_sync(0xFFFFFFFFu, w, j);
    if ((siblings >> j) & 1u)
      before += wj;
  }
  const bool chosen = w > 0.0f && before <= u && u < before + w;
  const unsigned chosen_mask = __ballot_sync(0xFFFFFFFFu, chosen);
  const bool on_path = lane == 0 || (lane < n && reaches && (chain & ~chosen_mask) == 0u);
  const int depth = __popc(chain);
  const int len = static_cast<int>(__reduce_max_sync(0xFFFFFFFFu, on_path ? depth : 0));
  const unsigned last = __ballot_sync(0xFFFFFFFFu, on_path && depth == len);
  const int f = __ffs(last) - 1;
  // The residual's mask: the valid tokens of f's children (a repeated token twice, harmlessly).
  const unsigned kids = __ballot_sync(0xFFFFFFFFu, valid && parent == f);
  if ((kids >> lane) & 1u)
    s_mask[__popc(kids & lower)] = token;
  if (lane == 0) {
    *s_final = f;
    *s_nmask = __popc(kids);
  }
  if (!writer)
    return;
  int32_t* path_row = a.out_tokens + row0;
  const unsigned off_path = __ballot_sync(0xFFFFFFFFu, !on_path && lane < n);
  if (on_path)
    path_row[depth] = lane;
  else if (lane < n) // positions len + 1 .. n - 1; off-path lanes number n - 1 - len
    path_row[len + 1 + __popc(off_path & lower)] = -1;
  if (a.target_out) {
    if (on_path && lane > 0)
      a.target_out[row0 + parent] = token; // the token the walk took at the parent
    else if (!on_path && lane < n)
      a.target_out[row0 + lane] = -1;
  }
  if (lane == 0)
    a.accepted[b] = len;
}

/// The same walk for trees of more than 32 nodes, by the whole block through shared memory
/// (`scratch` holds 9 n ints), with the same float sums; thread 0 follows the chosen children.
/// A node that cannot be taken (the root, a parent out of range or itself, a token outside the
/// vocabulary) gets parent -1 in `par` and is nobody's child (its weight would be 0 anyway).
/// Each node's children are first gathered into one list in index order (a counting sort by
/// parent: warp 0 ranks every node among its earlier siblings, 32 nodes at a time, while warp 1
/// finds where each list starts), so that a node looks only at its own siblings and each parent
/// runs its children once: the work is O(n + sum of squared sibling counts), where testing every
/// earlier node was O(n^2) (1 x 1,024 DDTree-shaped nodes took 153 us, more than reading all
/// 1,024 rows, 2026-12-04 18:12 UTC). A DDTree node has at most k children; a star of n nodes
/// still costs O(n^2) (each node tests every earlier sibling for its token).
__device__ void block_path_walk(const SamplingArgs& a, int b, uint64_t seed, uint64_t offset,
                                bool writer, int* s_final, int* s_nmask, int32_t* s_mask,
                                int32_t* scratch) {
  const int n = a.rows, tid = threadIdx.x, step = blockDim.x, lane = tid & 31;
  const int64_t row0 = static_cast<int64_t>(b) * n;
  int32_t* par = scratch;
  int32_t* tok = par + n;
  float* w = reinterpret_cast<float*>(tok + n);
  int32_t* rank = reinterpret_cast<int32_t*>(w + n); // earlier siblings; later each node's choice
  int32_t* next = rank;                              // the chosen child of each node, or -1
  int32_t* count = rank + n;                         // children per node
  int32_t* first = count + n;                        // where a node's children start in `kids`
  int32_t* kids = first + n;                         // every node's children, in index order
  int32_t* on = kids + n;                            // 1 for a node on the path
  int32_t* seen = on + n;                            // children ranked so far (warp 0)
  for (int i = tid; i < n; i += step) {
    const int p = a.parents ? a.parents[row0 + i] : i - 1;
    const int t = a.tokens[row0 + i];
    const bool ok = i > 0 && p >= 0 && p < n && p != i && t >= 0 && t < a.vocab;
    par[i] = ok ? p : -1;
    tok[i] = t;
    w[i] = ok ? __ldcg(a.target + (row0 + p) * a.vocab + t) : 0.0f;
    count[i] = 0;
    seen[i] = 0;
    on[i] = 0;
  }
  __syncthreads();
  for (int i = tid; i < n; i += step)
    if (par[i] >= 0)
      atomicAdd(&count[par[i]], 1);
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x >> 5);
  if (tid < 32) { // ranks among earlier siblings, 32 nodes at a time, four chunks' groups at once
    const unsigned lower = (1u << lane) - 1u;
    constexpr int kChunks = 4;
    for (int c0 = 0; c0 < n; c0 += 32 * kChunks) {
      int p[kChunks];
      unsigned same[kChunks];
#pragma unroll
      for (int u = 0; u < kChunks; ++u) {
        const int i = c0 + 32 * u + lane;
        p[u] = i < n ? par[i] : -1;
      }
#pragma unroll
      for (int u = 0; u < kChunks; ++u)
        same[u] = __match_any_sync(0xFFFFFFFFu, p[u]);
#pragma unroll
      for (int u = 0; u < kChunks; ++u) {
        const int i = c0 + 32 * u + lane;
        const int base = p[u] >= 0 ? seen[p[u]] : 0;
        __syncwarp();
        if (p[u] >= 0 && (same[u] >> lane) == 1u) // the group's last lane
          seen[p[u]] = base + __popc(same[u]);
        if (i < n)
          rank[i] = base + __popc(same[u] & lower);
        __syncwarp();
      }
    }
  }
  if ((tid >> 5) == (warps > 1 ? 1 : 0)) {
    // Where each node's list starts (a scan of the counts): warp 1, beside warp 0's ranks (warp 0
    // after them in a block of one warp).
    int carry = 0;
    for (int c0 = 0; c0 < n; c0 += 32) {
      const int v = c0 + lane < n ? count[c0 + lane] : 0;
      const int incl = warp_inclusive_scan(v);
      if (c0 + lane < n)
        first[c0 + lane] = carry + incl - v;
      carry += __shfl_sync(0xFFFFFFFFu, incl, 31);
    }
  }
  __syncthreads();
  for (int i = tid; i < n; i += step)
    if (par[i] >= 0)
      kids[first[par[i]] + rank[i]] = i;
  __syncthreads();
  // Weights: a token repeated among earlier siblings weighs 0 (the draw takes the first).
  for (int i = tid; i < n; i += step) {
    const int p = par[i];
    bool ok = p >= 0;
    if (ok)
      for (int q = first[p], e = first[p] + rank[i]; ok && q < e; ++q)
        ok = tok[kids[q]] != tok[i];
    w[i] = ok ? fmaxf(w[i], 0.0f) : 0.0f;
  }
  __syncthreads(); // the ranks are read for the last time above: `next` takes their place
  // Each node with children: its coin falls into at most one child's interval [before,
  // before + w), the earlier siblings' weights added one at a time in index order.
  for (int p = tid; p < n; p += step) {
    int chosen = -1;
    if (count[p] > 0) {
      const float u = specbench::detail::philox_uniform(seed, offset,
                                                        static_cast<uint32_t>(row0 + p), kTagWalk);
      float before = 0.0f;
      for (int q = first[p], e = first[p] + count[p]; q < e && chosen < 0; ++q) {
        const int c = kids[q];
        const float wc = w[c];
        if (wc > 0.0f && before <= u && u < before + wc)
          chosen = c;
        before += wc;
      }
    }
    next[p] = chosen;
  }
  __syncthreads();
  if (tid == 0) {
    int cur = 0, len = 0;
    on[0] = 1;
    // A malformed parent array cannot make this loop run longer than n steps.
    while (len + 1 < n && next[cur] >= 0 && !on[next[cur]]) {
      const int c = next[cur];
      if (writer) {
        a.out_tokens[row0 + len + 1] = c;
        if (a.target_out)
          a.target_out[row0 + cur] = tok[c];
      }
      on[c] = 1;
      cur = c;
      ++len;
    }
    *s_final = cur;
    if (writer) {
      a.out_tokens[row0] = 0;
      a.accepted[b] = len;
    }
    next[0] = len; // the path's length for the block (node 0's entry is no longer needed)
  }
  __syncthreads();
  const int f = *s_final, len = next[0];
  if (tid == 0)
    *s_nmask = count[f];
  for (int i = tid; i < n; i += step) {
    if (i < count[f]) // f's children, the residual's mask
      s_mask[i] = tok[kids[first[f] + i]];
    if (writer && i > len)
      a.out_tokens[row0 + i] = -1;
    if (writer && a.target_out && !on[i])
      a.target_out[row0 + i] = -1;
  }
}

/// Tree mode (SGLang's target-only rule with thresholds 1): the walk first, then one draw. At
/// node x the walk follows child c with probability p_x(t_c) (the coin of x against the
/// children's prefix sums, in sibling order) and stops otherwise; the bonus is drawn at the last
/// node f from p_f with f's children removed. With normalised rows that is the target's own
/// distribution: drawing t ~ p_x and following the child whose token is t, as a draw at every
/// node would, but only the walk's gathers and row f are read. One request is one thread-block
/// cluster: every block runs the walk (tiny, and it saves a broadcast), races its segments of
/// row f, and pushes its best entry into rank 0's shared memory; after one cluster barrier rank 0
/// writes the bonus. No global hand-off, no workspace, no counters.
template <bool kVec>
__global__ void __launch_bounds__(kPathMaxThreads, 1) tree_path_kernel(SamplingArgs a) {
  SPECBENCH_PHASE_START();
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int b = static_cast<int>(a.split_div.div(blockIdx.x));
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int warps = static_cast<int>(blockDim.x >> 5);
  const int n = a.rows;
  const int64_t row0 = static_cast<int64_t>(b) * n;
  // Rank 0's shared memory may be written only once rank 0 runs: every block says it runs here
  // and waits for the others just before its write, long after they all have.
  asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
  wait_for_previous_kernel();
  const SeedOffset so = seed_offset(a);
  const uint64_t seed = so.seed, offset = so.offset;
  __shared__ int s_final, s_nmask;
  __shared__ uint64_t s_red[kPathMaxThreads / 32];
  __shared__ uint64_t s_rank[kPathMaxCluster];
  extern __shared__ __align__(16) int32_t smem[];
  int32_t* s_mask = smem; // [n] tokens of the final node's children
  if (n <= 32) {
    if (warp == 0)
      warp_path_walk(a, b, seed, offset, rank == 0, &s_final, &s_nmask, s_mask);
  } else {
    block_path_walk(a, b, seed, offset, rank == 0, &s_final, &s_nmask, s_mask, smem + n);
  }
  __syncthreads();
  const int f = s_final, nmask = s_nmask;
  SPECBENCH_PHASE(4, f); // the walk is done
  const float* p = a.target + (row0 + f) * a.vocab;
  const uint32_t row = static_cast<uint32_t>(row0 + f);
  // Segments g, g + C W, ... of row f for this block's warp g = rank * W + warp.
  const int64_t per_cluster = static_cast<int64_t>(a.splits) * warps;
  const uint64_t mine = race_segments<kVec, true>(p, nullptr, false, a.vocab,
                                                  static_cast<int64_t>(rank) * warps + warp, a.segs,
                                                  per_cluster, seed, offset, row, s_mask, nmask);
  SPECBENCH_PHASE(2, mine);                            // warp 0's segments are raced
  const uint64_t best = block_max_packed(mine, s_red); // valid in thread 0
  allow_next_kernel();                                 // row f is read
  asm volatile("barrier.cluster.wait;" ::: "memory");
  if (tid == 0)
    cluster.map_shared_rank(s_rank, 0)[rank] = best;
  SPECBENCH_PHASE(3, best); // the block's entry is known
  cluster.sync();           // release / acquire: rank 0 sees every block's entry
  SPECBENCH_PHASE(5, best); // the cluster barrier is passed
  if (rank != 0 || warp != 0)
    return;
  const uint64_t m = warp_max_packed(lane < a.splits ? s_rank[lane] : 0ull);
  int32_t t = entry_token(m);
  SPECBENCH_PHASE_LAST_DEP(2, b, m); // every block's entry is in
  // Rare: f's children hold all of row f's mass while the coin passed them (a row that does not
  // sum to 1); the bonus is then drawn from p_f itself with the same coins (warp 0 races it all).
  if (t < 0 && nmask > 0)
    t = entry_token(race_row<kVec>(p, a.vocab, 0, a.segs, 1, seed, offset, row));
  if (lane == 0) {
    a.bonus[b] = t;
    if (a.target_out)
      a.target_out[row0 + f] = t;
  }
  SPECBENCH_PHASE_LAST(3, b); // the outputs are written
}

/// The address in the cluster's shared memory window of `p` (this block's shared memory) in
/// block rank 0.
__device__ __forceinline__ uint32_t rank0_address(const void* p) {
  uint32_t r;
  asm("mapa.shared::cluster.u32 %0, %1, 0;"
      : "=r"(r)
      : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(p))));
  return r;
}

// Warp 0 walks and each other warp holds one segment. 18 warps (17 segments): the H200 runs only
// 7 clusters of 10 to 16 blocks of one block per SM at once, and 9 of 9, so 8 rows of V = 151,936
// (149 segments) take clusters of 9 blocks of 17 segments (cudaOccupancyMaxActiveClusters,
// 2026-12-04).
constexpr int kRowsMaxWarps = 18;

/// Tree mode for the smallest calls ("rows"): the same walk and draw as tree_path_kernel, but
/// every node's row is read while the walk runs. At one request of 8 nodes the path kernel is
/// three dependent memory trips (tree, gathers, row f) followed by the race, all on one
/// cluster's 15 SMs (4.7 us against 2.8 for reading the rows once). Here each node's row has its
/// own cluster of C blocks, and the clusters of all rows together cover most of the GPU: block
/// rank k of row r's cluster loads segments k, k + C, ... of row r into registers (warps 1, 2,
/// ...) and computes their coins, which depend on the row and the segment only, while warp 0
/// walks. Once the walk has found f, every cluster but f's leaves. f's races its segments from
/// registers in two steps (every warp its key, then the in-segment pick in the block's best
/// warp only); each block sends its entry to rank 0 by an asynchronous store that completes a
/// transaction count on rank 0's mbarrier, so that rank 0 alone waits (no cluster barrier at the
/// end). The loads cost what reading the inputs once costs, and no block waits on memory after
/// the walk.
template <bool kVec>
__global__ void __launch_bounds__(kRowsMaxWarps * 32, 1) tree_rows_kernel(SamplingArgs a) {
  SPECBENCH_PHASE_START();
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int C = a.splits;
  const uint32_t cid = a.split_div.div(blockIdx.x); // cluster: (request, row)
  const uint32_t bu = a.row_div.div(cid);
  const int b = static_cast<int>(bu), r = static_cast<int>(cid - bu * a.row_div.d);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int64_t row0 = static_cast<int64_t>(b) * a.rows;
  // Rank 0's shared memory may be written only once rank 0 runs (see tree_path_kernel).
  // Rank 0 receives the other blocks' entries by asynchronous stores that complete a transaction
  // count on its mbarrier: it alone waits, and the others leave once they have sent.
  __shared__ uint64_t s_bar_in;
  if (tid == 0 && rank == 0) {
    const uint32_t bar = static_cast<uint32_t>(__cvta_generic_to_shared(&s_bar_in));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
                 "r"(8u * (a.splits - 1))
                 : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
  __shared__ int s_final, s_nmask;
  __shared__ int32_t s_mask[32];
  __shared__ uint64_t s_red[kRowsMaxWarps];
  __shared__ uint64_t s_rank[kPathMaxCluster];
  wait_for_previous_kernel();
  const SeedOffset so = seed_offset(a);
  const uint64_t seed = so.seed, offset = so.offset;
  const int64_t seg = static_cast<int64_t>(warp - 1) * C + rank;
  const bool racer = warp > 0 && seg < a.segs;
  const uint32_t row = static_cast<uint32_t>(row0 + r);
  float v[32], d[32], w[32];
  float e = 1.0f, draw = 0.0f;
  if (racer) {
    issue_segment<kVec>(a.target + (row0 + r) * a.vocab, nullptr, false, seg * kSeg, a.vocab, v, d);
    const specbench::detail::SegmentCoins c = specbench::detail::philox_segment_coins(
        seed, offset, row, kTagRace0 + static_cast<uint32_t>(seg));
    e = -logf(c.race);
    draw = c.draw;
  } else if (warp == 0) {
    warp_path_walk(a, b, seed, offset, r == 0 && rank == 0, &s_final, &s_nmask, s_mask);
  }
  SPECBENCH_PHASE(2, e > 0.0f); // warp 0 walked (thread 0's stamp)
  __syncthreads();              // the walk's result
  allow_next_kernel();          // every row's loads are issued and the walk is done
  const int f = s_final, nmask = s_nmask;
  if (f != r) { // not the row the bonus comes from: the whole cluster leaves
    asm volatile("barrier.cluster.wait;" ::: "memory");
    return;
  }
  // The race in two steps, so that the SM's 17 warps do not all run the in-segment pick, most of
  // a segment's instructions: every warp computes its segment's key mass / e; the block's best
  // key (ties to the lower segment, as the lower candidate wins in race_entry) picks the one warp
  // that finds its candidate. Same entry as segment_entry.
  const int warps = static_cast<int>(blockDim.x >> 5);
  float pre[32], acc = 0.0f, incl = 0.0f, mass = 0.0f;
  uint64_t key = 0;
  if (racer) {
    segment_weights(v, d, false, 0.0f, w);
    mask_segment(s_mask, nmask, seg * kSeg, w);
    mass = segment_prefixes(w, pre, acc, incl);
    // Lane 31's own scan is the mass: its key does not wait for the broadcast (only the pick
    // needs that, and it comes in while the key is divided and stored).
    key = incl > 0.0f ? (static_cast<uint64_t>(__float_as_uint(incl / e)) << 32) |
                            (0xFFFFFFFFu - static_cast<uint32_t>(seg))
                      : 1ull;
  }
  if (lane == 31)
    s_red[warp] = key; // 0 for warp 0 and warps without a segment
  __syncthreads();
  const uint64_t top = warp_max_packed(lane < warps ? s_red[lane] : 0ull);
  SPECBENCH_PHASE(3, top); // the block's best key is known
  uint64_t entry = race_entry(0.0f, -1);
  // The best key names its segment in its low word (a key without mass is 1, no segment's).
  // Packed by hand, not through entry_token / race_entry: 0xFFFFFFFF - seg is ready before the
  // block's best key is, where entry_token's test and subtraction would wait for it, and
  // race_entry's select for the pick (0.05 us at 1 x 4 on an H100, rows_helpers.patch and
  // ab_1320_rows_helpers.txt in docs/h100-2026-12-07/).
  const bool winner =
      racer && top > 1 && static_cast<uint32_t>(top) == 0xFFFFFFFFu - static_cast<uint32_t>(seg);
  if (winner) { // race_entry(mass / e, token), the quotient taken from the key: no second division
    const int token = segment_pick<true>(w, pre, acc, incl, draw, mass, seg * kSeg);
    entry = (top & 0xFFFFFFFF00000000ull) | (0xFFFFFFFFu - static_cast<uint32_t>(token));
  }
  // Rank 0 runs and its barrier is initialised (the fence before its arrive at the start).
  asm volatile("barrier.cluster.wait;" ::: "memory");
  const bool sender = (winner && lane == 0) || (top <= 1 && tid == 0);
  if (rank != 0) { // an asynchronous store to rank 0 that completes its barrier's transaction
    if (sender) {
      const uint32_t slot = rank0_address(&s_rank[rank]), bar = rank0_address(&s_bar_in);
      asm volatile(
          "st.async.shared::cluster.mbarrier::complete_tx::bytes.u64 [%0], %1, [%2];" ::"r"(slot),
          "l"(entry), "r"(bar)
          : "memory");
    }
    return;
  }
  if (sender)
    s_rank[0] = entry;
  __syncthreads(); // rank 0's own entry
  if (warp != 0)
    return;
  {
    const uint32_t bar = static_cast<uint32_t>(__cvta_generic_to_shared(&s_bar_in));
    uint32_t done = 0;
    do {
      asm volatile(
          "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, "
          "[%1], 0;\n selp.u32 %0, 1, 0, p;\n}"
          : "=r"(done)
          : "r"(bar)
          : "memory");
    } while (!done);
  }
  SPECBENCH_PHASE(4, entry);
  const uint64_t m = warp_max_packed(lane < C ? s_rank[lane] : 0ull);
  int32_t t = entry_token(m);
  SPECBENCH_PHASE_LAST_DEP(2, b, m); // every block's entry is in
  // Rare: f's children hold all of row f's mass (a row that does not sum to 1); the bonus is
  // drawn from p_f itself with the same coins, as in tree_path_kernel.
  if (t < 0 && nmask > 0)
    t = entry_token(
        race_row<kVec>(a.target + (row0 + f) * a.vocab, a.vocab, 0, a.segs, 1, seed, offset, row));
  if (lane == 0) {
    a.bonus[b] = t;
    if (a.target_out)
      a.target_out[row0 + f] = t;
  }
  SPECBENCH_PHASE_LAST(3, b); // the outputs are written
}

/// Chain mode. The token comes from one row only: the first rejected draft's residual
/// max(p - q, 0), or p_k when every draft stands, and the acceptance tests that find that row
/// need no draw. So every block first runs the tests (warp 0; the request's other blocks run the
/// same ones and find their gathers in L2), then races its segments of that row alone: the pass
/// reads one target row and at most one draft row per request instead of all 2k + 1. Same draws
/// as racing every row, since a row's coins depend on the row alone.
template <bool kVec>
__global__ void __launch_bounds__(kThreads, 2) chain_sampling_kernel(SamplingArgs a) {
  SPECBENCH_PHASE_START();
  const uint32_t bu = a.split_div.div(blockIdx.x); // one row per request: blocks (request, split)
  const int split = static_cast<int>(blockIdx.x - bu * a.split_div.d);
  const int b = static_cast<int>(bu);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int warps = static_cast<int>(blockDim.x >> 5);
  const int n = a.rows, k = n - 1;
  const int64_t row0 = static_cast<int64_t>(b) * n;
  wait_for_previous_kernel();
  uint32_t ticket = 0;
  if (tid == 0)
    ticket = take_ticket(&a.counters[b]);
  const SeedOffset so = seed_offset(a);
  const uint64_t seed = so.seed, offset = so.offset;

  // The acceptance tests: the row to draw from.
  __shared__ int reject_at;
  int32_t draft = -1; // lane j's draft, j < 32 (the outputs)
  if (warp == 0) {
    const int pos = chain_first_reject(a, b, seed, offset, [&](int j, int32_t d) {
      if (j < 32)
        draft = d;
    });
    if (lane == 0)
      reject_at = pos;
  }
  __syncthreads();
  const int pos = reject_at;
  const bool residual = pos < k;
  const float* p = a.target + (row0 + pos) * a.vocab;
  const float* q = residual ? a.draft + (static_cast<int64_t>(b) * k + pos) * a.vocab : nullptr;
  const uint32_t row = static_cast<uint32_t>(row0 + pos);

  // The pass over that row, then the hand-off as in tree mode (one row, so always the lean tail).
  const int64_t seg_begin = split * a.segs_per_split;
  const int64_t seg_end = min(a.segs, seg_begin + a.segs_per_split);
  const uint64_t mine = race_segments<kVec>(p, q, residual, a.vocab, seg_begin + warp, seg_end,
                                            warps, seed, offset, row);
  SPECBENCH_PHASE(2, mine); // warp 0's segments are raced
  __shared__ uint64_t red[kWarps];
  __shared__ bool is_last;
  const uint64_t best = block_max_packed(mine, red); // valid in thread 0
  allow_next_kernel();                               // the row is read
  if (tid == 0) {
    is_last = ticket == static_cast<uint32_t>(a.splits) - 1;
    if (!is_last)
      store_slot(&a.slots[blockIdx.x], best); // block (request, split)'s slot; never zero
  }
  SPECBENCH_PHASE(3, best); // the block's entry is stored
  __syncthreads();
  if (!is_last || tid >= 96)
    return;
  SPECBENCH_PHASE_LAST_DEP(4, b, best); // the reducing block knows it reduces
  const uint64_t m =
      lean_drain(a.slots + static_cast<int64_t>(b) * a.splits, 1, a.split_div, split, best, [] {});
  if (tid >= 32)
    return;
  SPECBENCH_PHASE_LAST(2, b); // every slot of the request is in
  int32_t t = entry_token(__shfl_sync(0xFFFFFFFFu, m, 0));
  // Rare: p <= q everywhere on row pos, so max(p - q, 0) has no mass and the token is drawn from
  // p with the same coins (warp 0 races p's whole row).
  if (t < 0 && residual)
    t = entry_token(race_row<kVec>(p, a.vocab, 0, a.segs, 1, seed, offset, row));
  int32_t* out = a.out_tokens + row0;
  for (int j = lane; j < n; j += 32) {
    const int32_t d = j < pos ? (j < 32 ? draft : a.tokens[static_cast<int64_t>(b) * k + j]) : -1;
    out[j] = j < pos ? d : (j == pos ? t : -1);
  }
  if (lane == 0) {
    a.accepted[b] = pos;
    a.counters[b] = 0; // every block of the request has taken its ticket
  }
  SPECBENCH_PHASE_LAST(3, b); // the outputs are written
}

/// Blocks of `warps` warps of the chain kernel that one SM holds at once.
int chain_resident_blocks(bool vec, int warps) {
  static DeviceIntCache cache[2][kWarps + 1];
  DeviceIntCache& c = cache[vec ? 1 : 0][warps];
  const int t = warps * 32;
  return vec ? cached_resident_blocks(chain_sampling_kernel<true>, t, 0, c, 1)
             : cached_resident_blocks(chain_sampling_kernel<false>, t, 0, c, 1);
}

Status launch_chain(SamplingArgs a, int batch, Stream stream, LaunchOptions launch,
                    const char* where) {
  a.segs = sampling_segments(a.vocab);
  const bool vec = reinterpret_cast<uintptr_t>(a.target) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(a.draft) % 16 == 0 && a.vocab % 4 == 0;
  const int64_t rows = batch; // one row raced per request
  // About four blocks of 8 warps per SM, a warp per segment at a time.
  const int64_t sms = sm_count();
  int warps = kWarps;
  const int64_t max_splits = (a.segs + kWarps - 1) / kWarps;
  int64_t splits = (sms * 4 + rows - 1) / rows;
  if (splits >= max_splits) {
    // Few rows: each warp races one segment, and the call waits for the busiest SM, whose warps
    // share its issue slots (a segment costs a warp about 400 instructions). Blocks of w warps
    // put ceil(blocks / SMs) * w warps on it; take the w (3 to 8, the larger on a tie) that puts
    // the fewest there within one wave.
    int64_t least = INT64_MAX;
    for (int w = kWarps; w >= 3; --w) {
      const int64_t blocks = rows * ((a.segs + w - 1) / w);
      const int64_t per_sm = (blocks + sms - 1) / sms, busiest = per_sm * w;
      if (busiest < least && per_sm <= chain_resident_blocks(vec, w)) {
        least = busiest;
        warps = w;
      }
    }
    splits = (a.segs + warps - 1) / warps;
  }
  splits = splits < 1 ? 1 : splits;
  if (splits > 64 * kLeanDrainLoads) // the chain kernel always drains with lean_drain
    splits = 64 * kLeanDrainLoads;
  a.segs_per_split = (a.segs + splits - 1) / splits;
  a.splits = static_cast<int>((a.segs + a.segs_per_split - 1) / a.segs_per_split);
  const int64_t blocks = rows * a.splits;
  if (blocks > 0x7FFFFFFF)
    return Status(StatusCode::invalid_argument, "too many blocks for one launch",
                  "verify fewer requests per call", where);
  a.split_div = FastDiv::make(static_cast<uint32_t>(a.splits));
  a.row_div = FastDiv::make(static_cast<uint32_t>(a.rows));
  const LaunchConfig l(blocks, warps * 32, 0, stream, launch);
  return vec ? launch_kernel(l, where, chain_sampling_kernel<true>, a)
             : launch_kernel(l, where, chain_sampling_kernel<false>, a);
}

// Dynamic shared memory of tree mode: the residual's mask, and for trees of more than 32 nodes
// the block walk's scratch.
std::size_t path_smem(int nodes) {
  return sizeof(int32_t) * static_cast<std::size_t>(nodes <= 32 ? 32 : 10 * nodes);
}

/// Clusters of `blocks` blocks of `warps` warps with `smem` bytes of dynamic shared memory that
/// the device runs at once of `kernel` (cudaOccupancyMaxActiveClusters); 0 when it cannot.
int active_clusters(const void* kernel, int blocks, int warps, std::size_t smem) {
  const LaunchConfig l(blocks, warps * 32, smem, nullptr, {}, blocks);
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, kernel, &l.cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    n = 0;
  }
  return n;
}

/// Clusters of `blocks` blocks of `warps` warps of tree_path_kernel<vec> (with the shared memory
/// of `nodes` nodes) that the device runs at once; 0 when it cannot run such a cluster. Asked
/// once per device and shape.
int path_active_clusters(bool vec, int blocks, int warps, int nodes) {
  const void* k = vec ? reinterpret_cast<const void*>(tree_path_kernel<true>)
                      : reinterpret_cast<const void*>(tree_path_kernel<false>);
  const int dev = current_device_below(16);
  if (dev < 0)
    return blocks <= 8 ? 1 : 0; // unknown: portable clusters only
  // Atomics: launches may come from several host threads (the answers are the same).
  static std::atomic<int> cache[16][2][2][kPathMaxCluster + 1][kPathMaxThreads / 32 + 1];
  static std::atomic<bool> opted[16][2];
  const bool big = nodes > 32;
  std::atomic<int>& slot = cache[dev][vec ? 1 : 0][big ? 1 : 0][blocks][warps];
  if (const int known = slot.load(std::memory_order_relaxed); known != 0)
    return known - 1;
  if (!opted[dev][vec ? 1 : 0]) {
    // Clusters of more than 8 blocks are "non-portable" (Hopper runs 16 when asked); the block
    // walk of a 2048-node tree needs 80 KiB of shared memory.
    (void)cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    (void)cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(path_smem(2048)));
    (void)cudaGetLastError();
    opted[dev][vec ? 1 : 0] = true;
  }
  // Asked with the largest shared memory of the class, so the answer holds for every tree in it.
  const int n = active_clusters(k, blocks, warps, path_smem(big ? 2048 : 32));
  slot.store(n + 1, std::memory_order_relaxed);
  return n;
}

/// A tree kernel's launch: clusters of `blocks` blocks of `warps` warps (blocks 0: none fits).
struct TreeLaunchShape {
  int blocks = 0, warps = 0;
};

/// tree_path_kernel's shape for this call. Blocks per request (the cluster) and warps per block:
/// a warp per segment of the final row when the requests fit in one wave, else fewer blocks per
/// request, each warp racing several segments. The cost is waves x segment rounds (a round is a
/// trip to memory and back); on a tie the larger cluster (fewer warps per SM) wins. One request
/// at V = 151,936 (149 segments): 15 blocks of 10 warps.
TreeLaunchShape path_shape(const SamplingArgs& a, int batch, bool vec) {
  TreeLaunchShape best;
  int64_t best_cost = INT64_MAX;
  for (int c = kPathMaxCluster; c >= 1; --c) {
    const int64_t w64 = (a.segs + c - 1) / c;
    const int warps = static_cast<int>(w64 < kPathMaxThreads / 32 ? w64 : kPathMaxThreads / 32);
    if ((a.segs + warps - 1) / warps < c)
      continue; // a block would have no segment: a smaller cluster does the same
    const int active = path_active_clusters(vec, c, warps, a.rows);
    if (active <= 0)
      continue;
    const int64_t rounds = (a.segs + static_cast<int64_t>(c) * warps - 1) / (c * warps);
    const int64_t waves = (batch + active - 1) / active;
    if (waves * rounds < best_cost) {
      best_cost = waves * rounds;
      best = {c, warps};
    }
  }
  return best;
}

/// tree_path_kernel<vec>; `a.segs` set.
Status launch_tree_path(SamplingArgs a, int batch, bool vec, Stream stream, LaunchOptions launch,
                        const char* where) {
  const TreeLaunchShape shape = path_shape(a, batch, vec);
  if (shape.blocks == 0)
    return Status(StatusCode::cuda_error,
                  "this GPU cannot run tree sampling's thread-block clusters",
                  "tree sampling needs an sm_90 or newer GPU", where);
  const int64_t blocks = static_cast<int64_t>(batch) * shape.blocks;
  if (blocks > 0x7FFFFFFF)
    return Status(StatusCode::invalid_argument, "too many blocks for one launch",
                  "verify fewer requests per call", where);
  a.splits = shape.blocks;
  a.split_div = FastDiv::make(static_cast<uint32_t>(shape.blocks));
  const LaunchConfig l(blocks, shape.warps * 32, path_smem(a.rows), stream, launch, shape.blocks);
  return vec ? launch_kernel(l, where, tree_path_kernel<true>, a)
             : launch_kernel(l, where, tree_path_kernel<false>, a);
}

/// Clusters of `blocks` blocks of `warps` warps of tree_rows_kernel that the device runs at once
/// (0: none). Asked once per device and shape.
int rows_active_clusters(int blocks, int warps) {
  const int dev = current_device_below(16);
  if (dev < 0)
    return 0;
  static std::atomic<int> cache[16][kPathMaxCluster + 1][kRowsMaxWarps + 1];
  static std::atomic<bool> opted[16];
  std::atomic<int>& slot = cache[dev][blocks][warps];
  if (const int known = slot.load(std::memory_order_relaxed); known != 0)
    return known - 1;
  if (!opted[dev]) {
    (void)cudaFuncSetAttribute(tree_rows_kernel<true>,
                               cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    (void)cudaGetLastError();
    opted[dev] = true;
  }
  const int n =
      active_clusters(reinterpret_cast<const void*>(tree_rows_kernel<true>), blocks, warps, 0);
  slot.store(n + 1, std::memory_order_relaxed);
  return n;
}

/// Blocks per cluster of tree_rows_kernel for this call, or 0 when the call should take
/// tree_path_kernel: rows not 16-byte aligned, more than 32 nodes, more than 17 segments per
/// block, or more rows than clusters the GPU runs at once (one wave; the rows are raced while the
/// walk runs only when they all load at once). The largest cluster that fits: the more SMs, the
/// faster the rows come in.
int rows_cluster(const SamplingArgs& a, int batch, bool vec) {
  if (!vec || a.rows > 32)
    return 0;
  const int64_t clusters = static_cast<int64_t>(batch) * a.rows;
  if (clusters * 2 > sm_count()) // two SMs per row at least (more rows: not measured)
    return 0;
  for (int c = kPathMaxCluster; c >= 1; --c) {
    const int64_t per_block = (a.segs + c - 1) / c;
    if (per_block > kRowsMaxWarps - 1)
      break; // smaller clusters hold even more per block
    if (clusters * c > sm_count() || (a.segs + per_block - 1) / per_block < c)
      continue; // more blocks than SMs, or a block without a segment
    if (rows_active_clusters(c, static_cast<int>(per_block + 1)) >= clusters)
      return c;
  }
  return 0;
}

/// tree_rows_kernel's warps per block in clusters of `c` blocks: warp 0 and a warp per segment.
int rows_warps(const SamplingArgs& a, int c) {
  return static_cast<int>((a.segs + c - 1) / c + 1);
}

Status launch_tree_rows(SamplingArgs a, int batch, int c, Stream stream, LaunchOptions launch,
                        const char* where) {
  const int warps = rows_warps(a, c);
  a.splits = c;
  a.split_div = FastDiv::make(static_cast<uint32_t>(c));
  a.row_div = FastDiv::make(static_cast<uint32_t>(a.rows));
  const int64_t blocks = static_cast<int64_t>(batch) * a.rows * c;
  const LaunchConfig l(blocks, warps * 32, 0, stream, launch, c);
  return launch_kernel(l, where, tree_rows_kernel<true>, a);
}

/// force_tree_sampling_kernel's choice: 0 automatic, 1 path.
/// Per thread: a benchmark that forces one kernel does not change what other threads run.
thread_local int g_tree_kernel = 0;

/// rows_cluster unless force_tree_sampling_kernel asked for the path kernel: the one choice that
/// launch_tree and the two queries share.
int chosen_rows_cluster(const SamplingArgs& a, int batch, bool vec) {
  return g_tree_kernel == 1 ? 0 : rows_cluster(a, batch, vec);
}

/// The sizes the launch choice reads, for the queries (no buffers).
SamplingArgs sizing_args(int nodes, int64_t vocab) {
  SamplingArgs a{};
  a.rows = nodes;
  a.vocab = vocab;
  a.segs = sampling_segments(vocab);
  return a;
}

/// Tree mode: tree_rows_kernel for the smallest calls, else tree_path_kernel.
Status launch_tree(SamplingArgs a, int batch, Stream stream, LaunchOptions launch,
                   const char* where) {
  a.segs = sampling_segments(a.vocab);
  const bool vec = reinterpret_cast<uintptr_t>(a.target) % 16 == 0 && a.vocab % 4 == 0;
  if (const int c = chosen_rows_cluster(a, batch, vec); c > 0)
    return launch_tree_rows(a, batch, c, stream, launch, where);
  return launch_tree_path(a, batch, vec, stream, launch, where);
}

SamplingArgs base_args(int rows, int64_t vocab, PhiloxArgs rng, void* workspace, int batch) {
  SamplingArgs a{};
  a.rows = rows;
  a.vocab = vocab;
  a.seed = rng.seed;
  a.offset = rng.offset;
  a.dev_seed_offset = rng.device_seed_offset;
  if (workspace == nullptr) // tree mode runs without one
    return a;
  a.counters = static_cast<uint32_t*>(workspace);
  a.slots = reinterpret_cast<uint64_t*>(static_cast<char*>(workspace) +
                                        align_up(sizeof(uint32_t) * batch, kWorkspaceAlign));
  return a;
}

} // namespace

SPECBENCH_PHASE_ATTACH(phase_attach_sampling)

} // namespace detail

Status verify_tree_sampling(const float* target_probs, const int32_t* parents,
                            const int32_t* tokens, int batch, int nodes, int64_t vocab,
                            PhiloxArgs rng, int32_t* target_tokens, int32_t* accept_path,
                            int32_t* accepted, int32_t* bonus, void* workspace,
                            std::size_t workspace_bytes, Stream stream,
                            LaunchOptions launch) {
  const char* where = "kernels::verify_tree_sampling";
  if (Status s = detail::check_rng(rng, where); !s)
    return s;
  if (Status s = detail::check_fused(target_probs, tokens, batch, nodes, vocab, accept_path,
                                     accepted, bonus, workspace, workspace_bytes, 0, where);
      !s)
    return s;
  if (batch == 0)
    return {};
  detail::SamplingArgs a = detail::base_args(nodes, vocab, rng, workspace, batch);
  a.target = target_probs;
  a.parents = parents;
  a.tokens = tokens;
  a.target_out = target_tokens;
  a.out_tokens = accept_path;
  a.accepted = accepted;
  a.bonus = bonus;
  return detail::launch_tree(a, batch, stream, launch, where);
}

bool force_tree_sampling_kernel(const char* kernel) noexcept {
  const std::string_view k = kernel != nullptr ? kernel : "auto";
  const int mode = k == "auto" || k == "rows" ? 0 : k == "path" ? 1 : -1;
  if (mode < 0)
    return false;
  detail::g_tree_kernel = mode;
  return true;
}

const char* verify_tree_sampling_kernel(int batch, int nodes, int64_t vocab) noexcept {
  if (batch < 1 || nodes < 1 || vocab < 1)
    return "path";
  return detail::chosen_rows_cluster(detail::sizing_args(nodes, vocab), batch, vocab % 4 == 0) > 0
             ? "rows"
             : "path";
}

std::string verify_tree_sampling_launch(int batch, int nodes, int64_t vocab) {
  if (batch < 1 || nodes < 1 || vocab < 1)
    return "nothing to launch";
  const detail::SamplingArgs a = detail::sizing_args(nodes, vocab);
  const bool vec = vocab % 4 == 0;
  int64_t clusters = batch;
  detail::TreeLaunchShape shape;
  std::string kernel = "path";
  if (const int c = detail::chosen_rows_cluster(a, batch, vec); c > 0) {
    kernel = "rows";
    clusters = static_cast<int64_t>(batch) * nodes;
    shape = {c, detail::rows_warps(a, c)};
  } else {
    shape = detail::path_shape(a, batch, vec);
  }
  if (shape.blocks == 0)
    return "path: no cluster fits this GPU";
  return kernel + ": " + std::to_string(clusters) + " clusters of " + std::to_string(shape.blocks) +
         " blocks x " + std::to_string(shape.warps) + " warps";
}

Status verify_chain_sampling(const float* draft_probs, const int32_t* draft_tokens,
                             const float* target_probs, int batch, int k, int64_t vocab,
                             PhiloxArgs rng, int32_t* output_tokens, int32_t* accepted,
                             void* workspace, std::size_t workspace_bytes, Stream stream,
                             LaunchOptions launch) {
  const char* where = "kernels::verify_chain_sampling";
  if (Status s = detail::check_rng(rng, where); !s)
    return s;
  if (Status s =
          detail::check_chain_sampling(draft_probs, draft_tokens, target_probs, batch, k, vocab,
                                       output_tokens, accepted, workspace, workspace_bytes);
      !s)
    return s;
  if (batch == 0)
    return {};
  detail::SamplingArgs a = detail::base_args(k + 1, vocab, rng, workspace, batch);
  a.target = target_probs;
  a.draft = draft_probs;
  a.tokens = draft_tokens;
  a.out_tokens = output_tokens;
  a.accepted = accepted;
  return detail::launch_chain(a, batch, stream, launch, where);
}

} // namespace specbench::kernels
