// Sampling verification in one pass, with the segment-race draw of sampling_reference.hpp. Every
// warp of the pass takes 1024-element segments of one row (target probabilities, or max(p - q, 0)
// for a chain's rejected draft). For each segment, while its weights are still in registers, it
// computes the segment's mass, its candidate token (inverse CDF inside the segment with the
// segment's draw coin) and its race key mass / -ln(race coin). The segment with the largest key
// wins with probability mass / total, so the row's draw is a max over (key, candidate) pairs:
// each block reduces its warps' pairs into one 64-bit slot that is zero between calls, and the
// block holding the request's last ticket (see verify_fused.cu) waits for the request's slots,
// takes each row's winner, walks the tree (tree mode) or writes the chain's outputs, and empties
// the slots and the counter for the next call. Nothing is read a second time after the pass, so
// the finish costs one dependent L2 trip, as greedy verification's does. Tree mode draws at every
// node. Chain mode runs the acceptance tests first, in every block, and draws from the one row
// they select: it reads one target row and at most one draft row per request.
#include "common.cuh"
#include "phase_stamps.cuh"

#include "specbench/detail/philox.hpp"

namespace specbench::kernels {
namespace detail {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kSeg = static_cast<int>(kSamplingSegment);

enum Mode : int { kTree = 0, kChain = 1 };

// Philox tags (sampling_reference.hpp): the chain acceptance coin, and 2 + s for the race and
// draw coins of segment s (tag 0 is unused).
constexpr uint32_t kTagAccept = 1, kTagRace0 = 2;

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

/// The race entry of one segment, by a whole warp: the segment's mass (a warp scan of the lanes'
/// sums), its candidate (the first weight in draw order whose inclusive prefix exceeds u * mass;
/// the last positive one when rounding runs past the end) and its key mass / e, where e is the
/// exponential of the segment's race coin. Every lane returns the same entry.
__device__ __forceinline__ uint64_t segment_entry(const float (&w)[32], float u, float e,
                                                  int64_t base) {
  // This lane's inclusive prefixes in draw order; the last one is the lane's mass.
  float pre[32];
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < 32; ++k) {
    acc += w[k];
    pre[k] = acc;
  }
  const float incl = warp_inclusive_scan(acc);
  const float mass = __shfl_sync(0xFFFFFFFFu, incl, 31);
  if (!(mass > 0.0f))
    return race_entry(0.0f, -1);
  // The first prefix that exceeds u * mass: in each lane the first prefix above what is left of
  // the target (at least 0, so that a lane starting past the target through rounding offers its
  // first positive weight), and the ballot takes the first lane that has one. A zero weight
  // repeats the previous prefix, so it is never the first to cross: no weight test is needed.
  const float rest = fmaxf(u * mass - (incl - acc), 0.0f);
  int cand = -1;
#pragma unroll
  for (int k = 31; k >= 0; --k)
    cand = pre[k] > rest ? k : cand;
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
  return race_entry(mass / e, token);
}

/// The best race entry of segments first, first + step, ... < end of one row, by a whole warp.
template <bool kVec>
__device__ __forceinline__ uint64_t race_segments(const float* p, const float* q, bool residual,
                                                  int64_t vocab, int64_t first, int64_t end,
                                                  int64_t step, uint64_t seed, uint64_t offset,
                                                  uint32_t row) {
  // The segment's two coins (one Philox run and a logarithm) need no data: they are computed
  // after its loads are issued, and the weights wait for them (segment_weights).
  float v[32], d[32], w[32];
  const auto race = [&](int64_t seg) {
    issue_segment<kVec>(p, q, residual, seg * kSeg, vocab, v, d);
    const specbench::detail::SegmentCoins c = specbench::detail::philox_segment_coins(
        seed, offset, row, kTagRace0 + static_cast<uint32_t>(seg));
    const float e = -logf(c.race);
    segment_weights(v, d, residual, __fmul_rn(e, 0.0f) * c.draw, w); // 0, after both coins
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

/// Tree mode: a draw at every node, then the walk.
template <bool kVec>
__global__ void __launch_bounds__(kThreads, 2) tree_sampling_kernel(SamplingArgs a) {
  SPECBENCH_PHASE_START();
  // Block -> (row, split) -> (request, row) by multiply-shift: no integer division before the
  // first loads (a 64-bit one here before).
  const uint32_t growu = a.split_div.div(blockIdx.x);
  const int split = static_cast<int>(blockIdx.x - growu * a.split_div.d);
  const int b = static_cast<int>(a.row_div.div(growu));
  const int64_t grow = growu;
  const float* p = a.target + grow * a.vocab;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int warps = static_cast<int>(blockDim.x >> 5);
  const int n = a.rows;
  const int64_t row0 = static_cast<int64_t>(b) * n;
  // The ticket stays in a register until after the loads: nothing waits on its round trip.
  uint32_t ticket = 0;
  if (tid == 0)
    ticket = take_ticket(&a.counters[b]);
  const SeedOffset so = seed_offset(a);
  const uint64_t seed = so.seed, offset = so.offset;

  // The pass: each warp races its segments; the block's best entry goes into its slot.
  const int64_t seg_begin = split * a.segs_per_split;
  const int64_t seg_end = min(a.segs, seg_begin + a.segs_per_split);
  const uint64_t mine = race_segments<kVec>(p, nullptr, false, a.vocab, seg_begin + warp, seg_end,
                                            warps, seed, offset, static_cast<uint32_t>(grow));
  SPECBENCH_PHASE(2, mine); // warp 0's segments are raced
  __shared__ uint64_t red[kWarps];
  __shared__ bool is_last;
  SPECBENCH_PHASE_WARPS_INIT();
  const uint64_t best = block_max_packed(mine, red); // valid in thread 0
  const uint32_t per_request = static_cast<uint32_t>(n * a.splits);
  const bool lean = lean_tail_fits(n, a.splits);
  if (tid == 0) {
    is_last = ticket == per_request - 1;
    // The lean tail takes the reducing block's own entry from a register (lean_drain).
    if (!(is_last && lean))
      store_slot(&a.slots[blockIdx.x], best); // block (row, split)'s slot; never zero
    // The request's first block, done early, asks L2 for the tree that the reducing block reads.
    if (lean && !is_last && blockIdx.x == static_cast<uint32_t>(b) * per_request) {
      prefetch_l2(a.tokens + row0);
      prefetch_l2(a.tokens + row0 + n - 1);
      if (a.parents) {
        prefetch_l2(a.parents + row0);
        prefetch_l2(a.parents + row0 + n - 1);
      }
    }
  }
  SPECBENCH_PHASE(3, best); // the block's entry is stored
  __syncthreads();
  if (!is_last)
    return;
  SPECBENCH_PHASE_LAST_DEP(4, b, best); // the reducing block knows it reduces

  if (lean) {
    // A small request (lean_drain): warps 1 and 2 drain every slot at once while warp 0 prepares
    // the walk; the other warps leave.
    if (tid >= 96)
      return;
    SmallTreeWalk walk;
    // The own slot from the block index: `i` and `split` are not kept live through the pass.
    const int own_slot = static_cast<int>(blockIdx.x - static_cast<uint32_t>(row0 * a.splits));
    const uint64_t m = lean_drain(a.slots + row0 * a.splits, n, a.split_div, own_slot, best, [&] {
      EarlyTree tree;
      tree.load(a.parents, a.tokens, row0, n);
      walk.prepare(n, a.parents == nullptr, tree.parent, tree.token);
    });
    if (tid >= 32)
      return;
    SPECBENCH_PHASE_LAST(2, b); // every slot of the request is in
    const int32_t t = entry_token(m);
    if (a.target_out && lane < n)
      a.target_out[row0 + lane] = t;
    walk.finish(t, n, a.out_tokens, a.accepted, a.bonus, b);
    if (lane == 0)
      a.counters[b] = 0;        // every block of the request has taken its ticket
    SPECBENCH_PHASE_LAST(3, b); // the outputs are written
    return;
  }

  // This block started last for request b: every other block of the request is running or done.
  extern __shared__ __align__(16) int32_t smem[];
  int32_t* par = smem;
  int32_t* tok = par + n;
  int32_t* tgt = tok + n;
  int32_t* first = tgt + n;
  // Loads that do not depend on the slots are issued before the polls.
  EarlyTree tree;
  tree.load(a.parents, a.tokens, row0, n);
  // Wait until each slot of the request is written, empty it for the next call, and keep each
  // row's max: a warp per row, or a thread per row when a row has one slot (large batches or
  // trees, small vocabularies).
  if (a.splits == 1) {
    const int pollers = warps * 32;
    uint64_t* s = a.slots + row0;
    for (int r0 = tid; r0 < n; r0 += 4 * pollers) {
      uint64_t v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) // four loads in flight before any is used
        v[u] = r0 + u * pollers < n ? load_slot(s + r0 + u * pollers) : 1ull;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int r = r0 + u * pollers;
        if (r < n) {
          while (v[u] == 0)
            v[u] = load_slot(s + r);
          store_slot(s + r, 0);
          const int t = entry_token(v[u]);
          tgt[r] = t;
          if (a.target_out)
            a.target_out[row0 + r] = t;
        }
      }
    }
  } else {
    for (int r = warp; r < n; r += warps) {
      const uint64_t m = warp_drain_slots_max(a.slots + (row0 + r) * a.splits, a.splits);
      if (r == 0)
        SPECBENCH_PHASE_LAST_DEP(6, b, m); // warp 0's row is drained
      if (lane == 0) {
        const int t = entry_token(m);
        tgt[r] = t;
        if (a.target_out)
          a.target_out[row0 + r] = t;
      }
    }
  }
  tree.store(par, tok, a.parents, a.tokens, row0, n);
  SPECBENCH_PHASE_WARP_DONE(0); // this warp's rows are drained
  __syncthreads();
  SPECBENCH_PHASE_LAST(2, b);       // every slot of the request is drained
  SPECBENCH_PHASE_LAST_WARPS(7, b); // the last warp's rows were drained
  if (warp == 0)
    warp_walk_tree(a.parents ? par : nullptr, tok, tgt, first, n, a.out_tokens, a.accepted, a.bonus,
                   b);
  if (tid == 0)
    a.counters[b] = 0;        // every block of the request has taken its ticket
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

/// Blocks of `warps` warps of the kernel for (mode, vec) that one SM holds at once.
int sampling_resident_blocks(int mode, bool vec, int warps) {
  static int cache[4][kWarps + 1][64] = {};
  int* c = cache[mode * 2 + (vec ? 1 : 0)][warps];
  const int t = warps * 32;
  if (mode == kTree)
    return vec ? cached_resident_blocks(tree_sampling_kernel<true>, t, 0, c, 1)
               : cached_resident_blocks(tree_sampling_kernel<false>, t, 0, c, 1);
  return vec ? cached_resident_blocks(chain_sampling_kernel<true>, t, 0, c, 1)
             : cached_resident_blocks(chain_sampling_kernel<false>, t, 0, c, 1);
}

Status launch_sampling(int mode, SamplingArgs a, int batch, std::size_t smem, Stream stream,
                       const char* where) {
  a.segs = sampling_segments(a.vocab);
  const bool vec = reinterpret_cast<uintptr_t>(a.target) % 16 == 0 &&
                   (a.draft == nullptr || reinterpret_cast<uintptr_t>(a.draft) % 16 == 0) &&
                   a.vocab % 4 == 0;
  // Rows raced: every node's in tree mode, one per request in chain mode.
  const int64_t rows = mode == kTree ? static_cast<int64_t>(batch) * a.rows : batch;
  // About four blocks of 8 warps per SM, a warp per segment at a time.
  const int64_t sms = sm_count();
  int warps = kWarps;
  const int64_t max_splits = (a.segs + kWarps - 1) / kWarps;
  int64_t splits = (sms * 4 + rows - 1) / rows;
  if (splits >= max_splits) {
    // Few rows: each warp races one segment, and the call waits for the busiest SM, whose warps
    // share its issue slots (a segment costs a warp about 400 instructions). Blocks of w warps
    // put ceil(blocks / SMs) * w warps on it; take the w (3 to 8, the larger on a tie) that puts
    // the fewest there within one wave. One request of 8 rows: 152 blocks of 8 warps leave 20 SMs
    // with 16 warps; 240 blocks of 5 leave none with more than 10.
    int64_t least = INT64_MAX;
    for (int w = kWarps; w >= 3; --w) {
      const int64_t blocks = rows * ((a.segs + w - 1) / w);
      const int64_t per_sm = (blocks + sms - 1) / sms, busiest = per_sm * w;
      if (busiest < least && per_sm <= sampling_resident_blocks(mode, vec, w)) {
        least = busiest;
        warps = w;
      }
    }
    splits = (a.segs + warps - 1) / warps;
  }
  splits = splits < 1 ? 1 : splits;
  if (mode == kChain && splits > 64 * kLeanDrainLoads) // chain mode always drains with lean_drain
    splits = 64 * kLeanDrainLoads;
  a.segs_per_split = (a.segs + splits - 1) / splits;
  a.splits = static_cast<int>((a.segs + a.segs_per_split - 1) / a.segs_per_split);
  const int64_t blocks = rows * a.splits;
  if (blocks > 0x7FFFFFFF)
    return Status(StatusCode::invalid_argument, "too many blocks for one launch",
                  "verify fewer requests per call", where);
  a.split_div = FastDiv::make(static_cast<uint32_t>(a.splits));
  a.row_div = FastDiv::make(static_cast<uint32_t>(a.rows));
  const unsigned g = static_cast<unsigned>(blocks);
  const unsigned t = static_cast<unsigned>(warps * 32);
  if (mode == kTree) {
    if (vec)
      tree_sampling_kernel<true><<<g, t, smem, stream>>>(a);
    else
      tree_sampling_kernel<false><<<g, t, smem, stream>>>(a);
  } else {
    if (vec)
      chain_sampling_kernel<true><<<g, t, 0, stream>>>(a);
    else
      chain_sampling_kernel<false><<<g, t, 0, stream>>>(a);
  }
  return launch_status(where);
}

// Dynamic shared memory of the reducing block: parents, tokens, draws and the walk's scratch.
std::size_t sampling_smem(int rows) {
  return 4 * sizeof(int32_t) * static_cast<std::size_t>(rows);
}

SamplingArgs base_args(int rows, int64_t vocab, PhiloxArgs rng, void* workspace, int batch) {
  SamplingArgs a{};
  a.rows = rows;
  a.vocab = vocab;
  a.seed = rng.seed;
  a.offset = rng.offset;
  a.dev_seed_offset = rng.device_seed_offset;
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
                            std::size_t workspace_bytes, Stream stream) {
  const char* where = "kernels::verify_tree_sampling";
  if (Status s = detail::check_fused(target_probs, tokens, batch, nodes, vocab, accept_path,
                                     accepted, bonus, workspace, workspace_bytes,
                                     verify_sampling_workspace_bytes(batch, nodes, vocab), where);
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
  return detail::launch_sampling(detail::kTree, a, batch, detail::sampling_smem(nodes), stream,
                                 where);
}

Status verify_chain_sampling(const float* draft_probs, const int32_t* draft_tokens,
                             const float* target_probs, int batch, int k, int64_t vocab,
                             PhiloxArgs rng, int32_t* output_tokens, int32_t* accepted,
                             void* workspace, std::size_t workspace_bytes, Stream stream) {
  const char* where = "kernels::verify_chain_sampling";
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
  return detail::launch_sampling(detail::kChain, a, batch, 0, stream, where);
}

} // namespace specbench::kernels
