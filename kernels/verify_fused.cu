// Fused greedy verification from logits: one pass over [batch, nodes, vocab] logits. Each block
// takes one (node, vocabulary chunk), keeps a per-thread running first maximum over 16-byte
// streaming loads, and stores its packed (value key, index) partial into a slot that is zero
// between calls. The hand-off to the block that reduces is a ticket, not an arrival: every block
// takes a ticket from the request's counter once its first loads are issued (off the critical
// path, while they are in flight; a small request's blocks take it before their loads), and the
// block holding the last ticket waits for the request's slots to turn non-zero, reduces them to the
// argmax of every node and walks the tree. That block is the last of the request to take a ticket,
// so every block it waits for is already running and needs nothing from anyone: no deadlock
// whatever the batch or the GPU's occupancy. Against an arrival counter at the end it saves the
// release fence and the dependent atomic round trip (probe_fused_geometry: about 0.4 us of a 4 us
// call). The reducing block keeps its own partial in shared memory instead of storing it and
// reading it back through L2 (it is usually the last partial of all), loads every slot of the
// request at once (up to 768; larger requests drain two rows per warp per L2 round trip), and
// zeroes the slots and the counter again, so the workspace is ready for the next call and for
// graph replays. For a small request (a tree of at most 32 nodes whose slots fit seven
// per thread of two warps) the tail is leaner: warp 0 only prepares the walk, warps 1 and 2 drain
// every slot at once, and the other warps leave.
#include "common.cuh"
#include "phase_stamps.cuh"
#include "programmatic_launch.cuh"
#include "vector_first_max.cuh"

#include <cuda_bf16.h>

namespace specbench::kernels {
namespace detail {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = kFusedLoadsPerThread;
static_assert(kFusedSmallWidths[0] == kThreads, "the narrowest small-request width is the default");
constexpr int kMaxWidth = kFusedSmallWidths[kFusedSmallWidthCount - 1];

/// Slot loads per thread of the general tail's flat drain: its kThreads threads hold up to 768
/// slots of a request at once.
constexpr int kFlatDrainLoads = 3;

/// Whether the general tail drains a request of `nodes` rows in `splits` slots each flat: every
/// slot in flight at once, copied into shared memory (the launcher adds 8 bytes per slot), then a
/// thread per row.
__host__ __device__ __forceinline__ bool flat_drain_fits(int nodes, int splits) {
  return static_cast<int64_t>(nodes) * splits <= kThreads * kFlatDrainLoads;
}

// The launch's arguments. The fields every block reads before its first load come first, so that
// those loads wait on as few constant-cache lines as possible; the rest only the reducing block
// reads.
template <typename T> struct FusedArgs {
  const T* logits;    // [batch, nodes, vocab]
  uint32_t* counters; // [batch]
  int32_t vocab, chunk;
  FastDiv splits, nodes;  // blocks per row, rows per request
  const int32_t* parents; // [batch, nodes] or nullptr
  const int32_t* tokens;  // [batch, nodes]
  int32_t* target_out;    // [batch, nodes] or nullptr
  int32_t* accept_path;   // [batch, nodes]
  int32_t* accepted;      // [batch]
  int32_t* bonus;         // [batch]
  uint64_t* partials;     // [batch * nodes, splits]
};

// kTicketFirst: the ticket is taken before the block's loads instead of after the first ones
// (launch_fused sets it for a small request, the shapes of the lean tail below: lean_drain_fits).
// kWidth: the ticket-first kernel's block size, one of kFusedSmallWidths (fused_small_width: a
// wider block when it takes a third block off the busiest SMs).
// Five blocks per SM for the general kernel: without it ptxas held the flat drain's kernel at 40
// registers and spilled 16 bytes (48 and no spill now, as before the flat drain; 8 x 16 and
// 1 x 64 need five 256-thread blocks per SM in one wave). The ticket-first kernel, which has only
// the lean tail, takes 40 registers with no minimum (0); with a minimum of five it took 45 and
// 1 x 8 got 0.15 us slower (2026-12-04 19:28 UTC).
template <typename T, bool kVec, bool kTicketFirst, int kWidth = kThreads>
__global__ void __launch_bounds__(kTicketFirst ? kWidth : kThreads, kTicketFirst ? 0 : 5)
    fused_greedy_kernel(const FusedArgs<T> a) {
  static_assert(kTicketFirst || kWidth == kThreads, "only the small-request kernel is wider");
  using E = Elem<T>;
  SPECBENCH_PHASE_START();
  // Block -> (row, split) and row -> request by multiply-shift: no integer division before the
  // first load. Offsets inside a row fit in 32 bits (vocab < 2^31).
  const uint32_t rowu = a.splits.div(blockIdx.x);
  const int split = static_cast<int>(blockIdx.x - rowu * a.splits.d);
  const int b = static_cast<int>(a.nodes.div(rowu));
  const int64_t row = rowu;
  const int nodes = static_cast<int>(a.nodes.d), splits = static_cast<int>(a.splits.d);
  const int start = split * a.chunk;
  const int len = min(a.vocab - start, a.chunk); // this block's elements: start .. start + len
  const T* x = a.logits + row * a.vocab + start;
  const int tid = threadIdx.x;
  wait_for_previous_kernel(); // the arithmetic above may overlap the previous kernel's end

  extern __shared__ int32_t smem[];
  int32_t* par = smem;
  int32_t* tok = par + nodes;
  int32_t* tgt = tok + nodes;
  int32_t* first = tgt + nodes;
  const int64_t off = static_cast<int64_t>(b) * nodes;
  const uint32_t per_request = static_cast<uint32_t>(nodes * splits);
  // The ticket stays in a register until the loads are in; nothing waits on its round trip. In a
  // large call it is taken after the first loads are issued, not before them: there its branch
  // and atomic sat in front of the first load (the first elements arrived 0.3 us later in the
  // 2026-12-03 18:12 UTC stamps). A small request takes it first: an atomic issued after the
  // loads waits behind the memory traffic (about 1.8 us at 1 x 16), one issued before them
  // does not. On three machines (2026-12-04 16:05, 16:07, 16:13 UTC) 1 x 8 took 3.30-3.33 us
  // against 3.36-3.40, and 1 x 16 3.87-3.98 against 3.94-4.04 on two of them and 4.00-4.03
  // against 4.01-4.03 on the third; 1 x 64 (not a small request) got 0.2 us slower cold when it did
  // the same.
  uint32_t ticket = 0;
  const auto take = [&] {
    if (tid == 0)
      ticket = take_ticket(&a.counters[b]);
  };

  float best = -INFINITY;
  int best_idx = 0x7FFFFFFF; // no element; otherwise relative to start
  bool nan = false;
  const bool small_tree = nodes <= 32;
  if (kVec) {
    constexpr int V = E::kPerVec;
    if (kTicketFirst) {
      take();
      vector_first_max<T, kUnroll>(x, tid * V, len, kWidth * V, best, best_idx, nan);
    } else {
      vector_first_max<T, kUnroll>(x, tid * V, len, kThreads * V, best, best_idx, nan, take);
    }
  } else {
    take();
    if (tid < len)
      best_idx = tid;
    for (int i = tid; i < len; i += kWidth) {
      const float f = E::scalar(x + i);
      nan |= f != f;
      if (f > best) {
        best = f;
        best_idx = i;
      }
    }
  }
  uint64_t key = best_idx == 0x7FFFFFFF
                     ? 0ull
                     : pack_argmax(float_key(best), static_cast<uint32_t>(start + best_idx));
  SPECBENCH_PHASE(2, key); // thread 0's elements are in
  if (nan) {
    // Rare: torch.argmax returns the first NaN. This thread visited its elements in increasing
    // index order, so the first NaN it meets is its smallest; NaN has the largest key and the
    // reductions keep the smallest index among equal keys, so no block barrier is needed.
    const int first_i = kVec ? tid * E::kPerVec : tid;
    const int stride = kVec ? kWidth * E::kPerVec : kWidth;
    const int run = kVec ? E::kPerVec : 1;
    bool found = false;
    for (int base = first_i; base < len && !found; base += stride)
      for (int e = 0; e < run && !found; ++e) {
        const float f = E::scalar(x + base + e);
        if (f != f) {
          key = pack_argmax(0xFFFFFFFFu, static_cast<uint32_t>(start + base + e));
          found = true;
        }
      }
  }
  __shared__ uint64_t red[kMaxWidth / 32];
  __shared__ bool is_last;
  if (tid == 0)
    is_last = ticket == per_request - 1; // read after block_max_packed's barrier
  __shared__ uint64_t own_key; // the reducing block's own partial never goes through memory
  SPECBENCH_PHASE_WARPS_INIT();
  key = block_max_packed(warp_max_packed(key), red); // valid in thread 0
  if (tid == 0) {
    if (is_last)
      own_key = key;
    else // never zero: every chunk holds an element, and -inf's key is 0x007FFFFF
      store_slot(&a.partials[row * splits + split], key);
    // The request's first block, done early, asks L2 for the request's tree, which the reducing
    // block loads as it starts reducing (1 x 16: 4.61 -> 4.45 us in the 14:12 UTC A/B run).
    if (!is_last && blockIdx.x == static_cast<uint32_t>(b) * per_request && small_tree) {
      prefetch_l2(a.tokens + off);
      prefetch_l2(a.tokens + off + nodes - 1);
      if (a.parents) {
        prefetch_l2(a.parents + off);
        prefetch_l2(a.parents + off + nodes - 1);
      }
    }
  }
  // A larger tree: warp 0 of the request's first block asks for every line of it (one element in
  // each 128 bytes, and the last).
  if (!kTicketFirst && !small_tree && tid < 32 && !is_last &&
      blockIdx.x == static_cast<uint32_t>(b) * per_request) {
    for (int i = tid * 32; i < nodes + 31; i += 32 * 32) {
      const int e = min(i, nodes - 1);
      prefetch_l2(a.tokens + off + e);
      if (a.parents)
        prefetch_l2(a.parents + off + e);
    }
  }
  SPECBENCH_PHASE(3, key); // the block's partial is stored
  allow_next_kernel();     // the reducing block's tail is all that is left
  if (!is_last)
    return;
  SPECBENCH_PHASE_LAST_DEP(4, b, key); // the reducing block knows it reduces

  // A small request's tail in warps 0 to 2 alone, with no full block barrier: warp 0 loads the
  // tree and prepares the walk; thread t < 64 of warps 1 and 2 takes node t % P (P: nodes
  // rounded up to a power of two) and every (64 / P)-th of its slots, all in flight at once, so
  // that no poll waits behind the preparation; shuffles, then one 96-thread barrier, combine a
  // node's threads. The other warps leave. This is lean_drain (common.cuh), written out: this
  // kernel calling the helper took 3.47 and 4.12 us at 1 x 8 and 1 x 16 against 3.39 and 4.03
  // (2026-12-03 21:58 UTC), the same instructions in another order and layout.
  const int pw = lean_node_span(nodes);
  // The ticket-first kernel runs only for these shapes (launch_fused), so it has no other tail.
  if (kTicketFirst || lean_drain_fits(nodes, splits)) { // at most 32 nodes: small_tree
    if (tid >= 96)
      return;
    __shared__ uint64_t part_max[64]; // warps 1 and 2: the max per node of their slots
    const int lane = tid & 31;
    const int own_row = static_cast<int>(row - off);
    SmallTreeWalk walk;
    if (tid < 32) {
      EarlyTree tree;
      tree.load(a.parents, a.tokens, off, nodes);
      walk.prepare(nodes, a.parents == nullptr, tree.parent, tree.token);
      SPECBENCH_PHASE_LAST_DEP(5, b, walk.chain); // the walk is prepared
    } else {
      const int t = tid - 32;
      const int r = t & (pw - 1), first_split = t / pw, groups = 64 / pw;
      uint64_t* slots = a.partials + (off + r) * splits;
      const auto in = [&](int k) {
        const int sp = first_split + k * groups;
        return r < nodes && sp < splits && !(r == own_row && sp == split);
      };
      uint64_t v[kLeanDrainLoads];
      poll_slots(
          v, [&](int k) { return slots + first_split + k * groups; }, in);
      uint64_t m = 0;
#pragma unroll
      for (int k = 0; k < kLeanDrainLoads; ++k)
        if (in(k)) {
          store_slot(slots + first_split + k * groups, 0);
          m = max(m, v[k]);
        }
      for (int o = pw; o < 32; o <<= 1)
        m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
      part_max[t] = m;
    }
    asm volatile("bar.sync 1, 96;" ::: "memory"); // warps 0 to 2 only
    if (tid >= 32)
      return;
    SPECBENCH_PHASE_LAST(2, b);                            // every slot of the request is in
    const uint64_t own = __shfl_sync(0xFFFFFFFFu, key, 0); // block_max_packed's result
    uint64_t m = max(part_max[lane], part_max[32 + lane]);
    if (lane == own_row)
      m = max(m, own);
    const int32_t target = packed_index(m);
    if (a.target_out && lane < nodes)
      a.target_out[off + lane] = target;
    walk.finish(target, nodes, a.accept_path, a.accepted, a.bonus, b);
    if (lane == 0)
      a.counters[b] = 0;        // every block of the request has taken its ticket
    SPECBENCH_PHASE_LAST(3, b); // the walk is written
    return;
  }

  if constexpr (kTicketFirst)
    return;
  // This block took the last ticket of request b: every other block of the request is running or
  // done.
  // Only this block needs the tree; its loads are issued with the first polls. Warp 0 drains the
  // row of the block's own partial, whose slot stays empty. A tree of at most 32 nodes is walked
  // from registers: warp 0 prepares the walk while its first polls are in flight.
  const int warp = tid >> 5, lane = tid & 31;
  EarlyTree tree;
  tree.load(a.parents, a.tokens, off, nodes);
  SmallTreeWalk walk;
  const auto prepare_walk = [&](int rr) {         // runs while a warp's first polls are in flight
    if (rr == 0 && small_tree) {                  // warp 0's first rows
      SPECBENCH_PHASE_LAST_DEP(6, b, tree.token); // the tree is in
      walk.prepare(nodes, a.parents == nullptr, tree.parent, tree.token);
      SPECBENCH_PHASE_LAST_DEP(5, b, walk.chain); // the walk is prepared
    }
  };
  __syncwarp(); // thread 0's own_key is visible to warp 0, the only warp that reads it
  const uint64_t own = warp == 0 ? own_key : 0ull;
  constexpr int kWarps = kThreads / 32;
  const int own_row = static_cast<int>(row - off);
  // Warp w drains rows own_row + w, own_row + w + kWarps, ... (mod nodes).
  const auto node_of = [&](int rr) {
    return own_row + rr < nodes ? own_row + rr : own_row + rr - nodes;
  };
  const auto put = [&](int r, uint64_t m) {
    if (lane == 0) {
      tgt[r] = packed_index(m);
      if (a.target_out)
        a.target_out[off + r] = packed_index(m);
    }
  };
  if (flat_drain_fits(nodes, splits)) {
    // The flat drain (since 2026-12-04 19:39 UTC): every slot of the request in flight at once,
    // slot j (row-major) in thread j % 256, each copied into shared memory, then a thread per
    // row. One L2 round trip, where the drain by rows below takes one per two rows and warp: at
    // 1 x 65 (650 slots) the reducing block saw the last slot 3.3 us after the last partial was
    // stored (stamps of 19:21 UTC). No 64-bit shared-memory atomics (compare-and-swap loops,
    // 1.1 us here at one per slot) and no chain of shuffles (a segmented max over each row's
    // lanes, 0.6 us). The offsets k * kThreads are immediates: the loads need one base register.
    uint64_t* slots = a.partials + off * splits;
    uint64_t* all = reinterpret_cast<uint64_t*>(first + nodes); // [nodes * splits], 8-aligned
    const int total = nodes * splits, own_j = own_row * splits + split;
    const auto in = [&](int k) {
      const int j = tid + k * kThreads;
      return j < total && j != own_j;
    };
    uint64_t v[kFlatDrainLoads];
    poll_slots(
        v, [&](int k) { return slots + tid + k * kThreads; }, in);
    SPECBENCH_PHASE_WARP_DONE(v[0]); // this warp's slots are in
    prepare_walk(warp); // warp 0 only (a tree of at most 32 nodes with many splits: rare)
#pragma unroll
    for (int k = 0; k < kFlatDrainLoads; ++k)
      if (in(k)) {
        store_slot(slots + tid + k * kThreads, 0);
        all[tid + k * kThreads] = v[k];
      }
    if (tid == 0)
      all[own_j] = own_key;
    // A tree of more than 32 nodes (at most one per thread) is walked from each node's first
    // matching child, which every node finds for its parent at once, from the tree in registers.
    const bool node_walk = !small_tree && nodes <= kThreads;
    if (node_walk && tid < nodes)
      first[tid] = 0x7FFFFFFF;
    __syncthreads();                              // every slot in shared memory
    for (int i = tid; i < nodes; i += kThreads) { // four independent chains of loads and maxima
      const uint64_t* row_slots = all + i * splits;
      uint64_t m0 = row_slots[0], m1 = 0, m2 = 0, m3 = 0;
      int sp = 1;
      for (; sp + 3 < splits; sp += 4) {
        m0 = max(m0, row_slots[sp]);
        m1 = max(m1, row_slots[sp + 1]);
        m2 = max(m2, row_slots[sp + 2]);
        m3 = max(m3, row_slots[sp + 3]);
      }
      for (; sp < splits; ++sp)
        m0 = max(m0, row_slots[sp]);
      const int32_t t = packed_index(max(max(m0, m1), max(m2, m3)));
      tgt[i] = t;
      if (a.target_out)
        a.target_out[off + i] = t;
    }
    if (node_walk) {
      __syncthreads();                  // every node's target
      SPECBENCH_PHASE_LAST(6, b);       // every node's target is known
      SPECBENCH_PHASE_LAST_WARPS(7, b); // the last warp's slots were in
      if (tid > 0 && tid < nodes) {
        const int p = a.parents ? tree.parent : tid - 1;
        if (p >= 0 && p < nodes && p != tid && tree.token == tgt[p])
          atomicMin(&first[p], tid);
      }
      __syncthreads();            // every first matching child
      SPECBENCH_PHASE_LAST(2, b); // the request is reduced and its first children found
      if (tid < 32) {
        warp_follow_first_children(tgt, first, nodes, a.accept_path, a.accepted, a.bonus, b);
        if (tid == 0)
          a.counters[b] = 0; // every block of the request has taken its ticket
      }
      SPECBENCH_PHASE_LAST(3, b); // the walk is written
      return;
    }
  } else if (splits <= 32) { // up to 32 slots per row: two rows per L2 round trip
#pragma unroll 1             // one pair of rows in flight per warp
    for (int rr = warp; rr < nodes; rr += 2 * kWarps) {
      const int ra = node_of(rr);
      const bool has_b = rr + kWarps < nodes;
      const int rb = has_b ? node_of(rr + kWarps) : 0;
      uint64_t ma, mb;
      warp_drain_two_rows(a.partials + (off + ra) * splits, rr == 0 ? split : -1,
                          has_b ? a.partials + (off + rb) * splits : nullptr, -1, splits, own, ma,
                          mb, [&] { prepare_walk(rr); });
      put(ra, ma);
      if (has_b)
        put(rb, mb);
    }
  } else {
#pragma unroll 1
    for (int rr = warp; rr < nodes; rr += kWarps) {
      const int r = node_of(rr);
      put(r, warp_drain_slots_max(a.partials + (off + r) * splits, splits, rr == 0 ? split : -1,
                                  own, [&] { prepare_walk(rr); }));
    }
  }
  if (!small_tree)
    tree.store(par, tok, a.parents, a.tokens, off, nodes);
  SPECBENCH_PHASE_WARP_DONE(0); // this warp's rows are drained
  __syncthreads();
  SPECBENCH_PHASE_LAST(2, b);       // every slot of the request is drained
  SPECBENCH_PHASE_LAST_WARPS(7, b); // the last warp's rows were drained
  if (tid < 32) {
    if (small_tree)
      walk.finish(tgt, nodes, a.accept_path, a.accepted, a.bonus, b);
    else
      warp_walk_tree(a.parents ? par : nullptr, tok, tgt, first, nodes, a.accept_path, a.accepted,
                     a.bonus, b);
    if (tid == 0)
      a.counters[b] = 0; // every block of the request has taken its ticket
  }
  SPECBENCH_PHASE_LAST(3, b); // the walk is written
}

} // namespace

SPECBENCH_PHASE_ATTACH(phase_attach_fused)

/// Splits per row for `rows` rows: about four blocks per SM, but never more blocks than the GPU
/// holds at once (`resident_per_sm` per SM, from the compiled kernel's occupancy), so there is
/// never a second wave: a wave's worth of blocks arriving late costs a whole block's time (8 x 16
/// took 15.3 us instead of 13.2 when the kernel grew from 48 to 58 registers and its 640 blocks no
/// longer fit at once). More blocks than four per SM do not help small batches (1 x 16 at 38
/// splits, 608 blocks, took 4.9 us against 4.3 at 25 in probe_fused_geometry). Each chunk is a
/// whole number of `batch_granules` 2048-element granules: a thread loads one batch of vectors at
/// once, and a chunk that ends inside a batch repeats loads for nothing and, when it spans more
/// than one batch, adds a dependent round trip (1 x 16 at 25 splits, three loads in a batch of
/// four, took 4.03 to 4.10 us, and at 19 splits 3.98 to 4.02; 1 x 64 at 9 splits, batches of 4,
/// 4 and 1, 12.3 to 12.5 cold, and at 7 splits 11.1 to 11.6: 19:15 UTC run). When more blocks,
/// still in one wave, give every thread fewer batches, it takes them (1 x 64: 10 splits of two
/// batches, 10.6 us cold, against 7 of three, 11.3: 2026-12-03 22:49 UTC). Returns splits and
/// sets `chunk`.
int greedy_splits(int64_t rows, int64_t vocab, int resident_per_sm, int batch_granules,
                  int64_t* chunk) {
  const int64_t sms = sm_count();
  int64_t splits = (sms * 4 + rows - 1) / rows;
  const int64_t fit = sms * resident_per_sm / rows; // splits that still fit in one wave
  if (splits > fit)
    splits = fit;
  splits = splits < 1 ? 1 : splits;
  const int max_splits = greedy_max_splits(vocab);
  if (splits > max_splits)
    splits = max_splits;
  // More blocks, up to what fits in one wave, when that takes a batch of loads off every thread:
  // each batch is one more dependent round trip (1 x 64: 448 blocks of three batches; 640 of two).
  const int64_t batch = static_cast<int64_t>(batch_granules) * kGreedyGranule;
  const int64_t most = fit < max_splits ? (fit < 1 ? 1 : fit) : max_splits;
  if ((vocab + most * batch - 1) / (most * batch) < (vocab + splits * batch - 1) / (splits * batch))
    splits = most;
  int64_t granules = ((vocab + splits - 1) / splits + kGreedyGranule - 1) / kGreedyGranule;
  granules = (granules + batch_granules - 1) / batch_granules * batch_granules;
  const int64_t c = granules * kGreedyGranule;
  *chunk = c;
  return static_cast<int>((vocab + c - 1) / c);
}

namespace {
/// Blocks of fused_greedy_kernel<T, kVec, false> one SM holds at once (cached per device), which
/// the kTicketFirst kernel matches (the same registers). Computed with the largest dynamic shared
/// memory a call uses (2048 nodes, 32 KiB), which never limits it below what the registers allow.
template <typename T, bool kVec> int resident_per_sm() {
  static DeviceIntCache cache;
  return cached_resident_blocks(fused_greedy_kernel<T, kVec, false>, kThreads, 32 * 1024, cache, 4);
}

/// Blocks of the small-request kernel of width kFusedSmallWidths[i] one SM holds at once (cached
/// per device), with the shared memory of its largest tree (32 nodes).
template <typename T, int kWidth> int small_resident_per_sm() {
  static DeviceIntCache cache;
  return cached_resident_blocks(fused_greedy_kernel<T, true, true, kWidth>, kWidth,
                                4 * sizeof(int32_t) * 32, cache, 1);
}

template <typename T, bool kVec>
Status launch_fused(const T* x, const int32_t* parents, const int32_t* tokens, int batch, int nodes,
                    int64_t vocab, int32_t* target_tokens, int32_t* accept_path, int32_t* accepted,
                    int32_t* bonus, uint32_t* counters, uint64_t* partials, Stream stream,
                    LaunchOptions launch, const char* where) {
  const int64_t rows = static_cast<int64_t>(batch) * nodes;
  int64_t chunk = 0;
  // Granules per batch of loads: a thread loads 8 / kPerVec vectors per granule.
  constexpr int batch_granules = kUnroll * Elem<T>::kPerVec / 8;
  const int splits = greedy_splits(rows, vocab, resident_per_sm<T, kVec>(), batch_granules, &chunk);
  const int64_t blocks = rows * splits;
  if (blocks > 0x7FFFFFFF)
    return Status(StatusCode::invalid_argument, "too many blocks for one launch",
                  "verify fewer requests per call", where);
  // At most 2048 nodes: 32 KiB, under the default 48 KiB limit; the general tail's flat drain
  // copies the request's slots there too (at most 768: 6 KiB more, with at most 768 nodes).
  const std::size_t smem = 4 * sizeof(int32_t) * static_cast<std::size_t>(nodes) +
                           (!lean_drain_fits(nodes, splits) && flat_drain_fits(nodes, splits)
                                ? sizeof(uint64_t) * nodes * splits
                                : 0);
  FusedArgs<T> a{x,
                 counters,
                 static_cast<int32_t>(vocab),
                 static_cast<int32_t>(chunk),
                 FastDiv::make(static_cast<uint32_t>(splits)),
                 FastDiv::make(static_cast<uint32_t>(nodes)),
                 parents,
                 tokens,
                 target_tokens,
                 accept_path,
                 accepted,
                 bonus,
                 partials};
  const LaunchConfig l(blocks, kThreads, smem, stream, launch);
  if constexpr (kVec) {
    if (lean_drain_fits(nodes, splits)) {
      // A small request. When every thread loads one batch, a wider block can take a third block
      // off the busiest SMs (fused_small_width): 1 x 16 bf16 runs as 240 blocks of 320 threads.
      constexpr int kBatch = kThreads * kUnroll * Elem<T>::kPerVec;
      if (chunk == kBatch) {
        const int resident[kFusedSmallWidthCount] = {
            small_resident_per_sm<T, kFusedSmallWidths[0]>(),
            small_resident_per_sm<T, kFusedSmallWidths[1]>(),
            small_resident_per_sm<T, kFusedSmallWidths[2]>()};
        const FusedSmallLaunch pick =
            fused_small_width(rows, vocab, Elem<T>::kPerVec, sm_count(), resident,
                              kLeanDrainLoads * 64 / lean_node_span(nodes));
        const auto wide = [&](auto kernel) -> Status {
          FusedArgs<T> aw = a;
          aw.chunk = static_cast<int32_t>(pick.chunk);
          aw.splits = FastDiv::make(static_cast<uint32_t>(pick.splits));
          const LaunchConfig lw(rows * pick.splits, kFusedSmallWidths[pick.index], smem, stream,
                                launch);
          return launch_kernel(lw, where, kernel, aw);
        };
        if (pick.index == 1)
          return wide(fused_greedy_kernel<T, true, true, kFusedSmallWidths[1]>);
        if (pick.index == 2)
          return wide(fused_greedy_kernel<T, true, true, kFusedSmallWidths[2]>);
      }
      return launch_kernel(l, where, fused_greedy_kernel<T, true, true>, a);
    }
  }
  return launch_kernel(l, where, fused_greedy_kernel<T, kVec, false>, a);
}
} // namespace

} // namespace detail

Status verify_greedy_fused(const void* logits, LogitsDtype dtype, const int32_t* parents,
                           const int32_t* tokens, int batch, int nodes, int64_t vocab,
                           int32_t* target_tokens, int32_t* accept_path, int32_t* accepted,
                           int32_t* bonus, void* workspace, std::size_t workspace_bytes,
                           Stream stream, LaunchOptions launch) {
  const char* where = "kernels::verify_greedy_fused";
  if (Status s = detail::check_dtype(dtype, where); !s)
    return s;
  if (Status s = detail::check_fused(
          logits, tokens, batch, nodes, vocab, accept_path, accepted, bonus, workspace,
          workspace_bytes, verify_greedy_fused_workspace_bytes(batch, nodes, vocab), where);
      !s)
    return s;
  if (batch == 0)
    return {};
  auto* counters = static_cast<uint32_t*>(workspace);
  auto* partials = reinterpret_cast<uint64_t*>(
      static_cast<char*>(workspace) +
      detail::align_up(sizeof(uint32_t) * batch, detail::kWorkspaceAlign));
  const std::size_t elem = dtype == LogitsDtype::bf16 ? 2 : 4;
  // 16-byte loads need every row to start on a 16-byte boundary.
  const bool vec = reinterpret_cast<uintptr_t>(logits) % 16 == 0 && (vocab * elem) % 16 == 0;
  using detail::launch_fused;
  if (dtype == LogitsDtype::bf16) {
    const auto* x = static_cast<const __nv_bfloat16*>(logits);
    return vec ? launch_fused<__nv_bfloat16, true>(x, parents, tokens, batch, nodes, vocab,
                                                   target_tokens, accept_path, accepted, bonus,
                                                   counters, partials, stream, launch, where)
               : launch_fused<__nv_bfloat16, false>(x, parents, tokens, batch, nodes, vocab,
                                                    target_tokens, accept_path, accepted, bonus,
                                                    counters, partials, stream, launch, where);
  }
  const auto* x = static_cast<const float*>(logits);
  return vec ? launch_fused<float, true>(x, parents, tokens, batch, nodes, vocab, target_tokens,
                                         accept_path, accepted, bonus, counters, partials, stream,
                                         launch, where)
             : launch_fused<float, false>(x, parents, tokens, batch, nodes, vocab, target_tokens,
                                          accept_path, accepted, bonus, counters, partials, stream,
                                          launch, where);
}

} // namespace specbench::kernels
