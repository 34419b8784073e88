#pragma once
// Helpers shared by the kernel files: launch-error mapping, device properties (cached), the
// order-preserving float key used by every argmax, and the per-request tree walk that all
// parent-array verifiers share.

#include "../src/kernels_ref/kernel_shapes.hpp"
#include "specbench/detail/fast_div.hpp"
#include "specbench/kernels.hpp"

#include <atomic>
#include <cstdint>
#include <cuda/atomic>
#include <cuda_runtime.h>
#include <string>
#include <type_traits>

namespace specbench::kernels::detail {

using specbench::detail::FastDiv;

inline Status cuda_status(cudaError_t err, const char* where, const char* call) {
  if (err == cudaSuccess)
    return {};
  return cuda_call_status(static_cast<int>(err), cudaGetErrorName(err), cudaGetErrorString(err),
                          call, where);
}

/// The launch error of the kernel just launched, as a Status.
inline Status launch_status(const char* where) {
  return cuda_status(cudaGetLastError(), where, "kernel launch");
}

/// The current device when its index is below `limit` (the size of a per-device cache), else -1.
inline int current_device_below(int limit) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= limit) {
    (void)cudaGetLastError();
    return -1;
  }
  return dev;
}

/// A per-device cache of one positive int (64 devices; 0: not asked yet). Atomic, because
/// launches may come from several host threads; they all compute the same answer.
using DeviceIntCache = std::atomic<int>[64];

/// The current device's entry of `cache`, computed by `ask` (which returns 0 or less when the
/// runtime cannot say: then `fallback`) the first time; `fallback` also when there is no current
/// device below 64.
template <class Ask> int cached_per_device(DeviceIntCache& cache, int fallback, Ask ask) {
  const int dev = current_device_below(64);
  if (dev < 0)
    return fallback;
  int v = cache[dev].load(std::memory_order_relaxed);
  if (v == 0) {
    v = ask(dev);
    v = v > 0 ? v : fallback;
    cache[dev].store(v, std::memory_order_relaxed);
  }
  return v;
}

/// Blocks of `kernel` that one SM of the current device holds at once with `threads` threads
/// and `smem` bytes of dynamic shared memory, asked once per device. `fallback` when the runtime
/// cannot say.
template <class Kernel>
int cached_resident_blocks(Kernel kernel, int threads, std::size_t smem, DeviceIntCache& cache,
                           int fallback) {
  return cached_per_device(cache, fallback, [&](int) {
    int v = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, kernel, threads, smem) != cudaSuccess) {
      (void)cudaGetLastError();
      return fallback;
    }
    return v > 0 ? v : 1;
  });
}

/// Multiprocessors of the current device (cached per device; 132 on an H200).
int sm_count();
/// Opt-in shared memory per block of the current device, bytes.
int max_smem_per_block();
/// Vocabulary splits per row of the fused greedy pass for `rows` rows when an SM holds
/// `resident_per_sm` blocks and a thread's batch of loads covers `batch_granules` granules; sets
/// the chunk length (verify_fused.cu).
int greedy_splits(int64_t rows, int64_t vocab, int resident_per_sm, int batch_granules,
                  int64_t* chunk);

/// Order-preserving 32-bit key of a float: a < b  <=>  key(a) < key(b) for numbers; -0 and +0
/// share a key; every NaN gets the largest key (torch.argmax treats NaN as the maximum).
__device__ __forceinline__ uint32_t float_key(float f) {
  if (f != f)
    return 0xFFFFFFFFu;
  uint32_t u = __float_as_uint(f + 0.0f); // -0 + 0 = +0
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/// Packs (value key, index) so that the max of packed keys is the first maximum.
__device__ __forceinline__ uint64_t pack_argmax(uint32_t key, uint32_t index) {
  return (static_cast<uint64_t>(key) << 32) | static_cast<uint32_t>(~index);
}
__device__ __forceinline__ int32_t packed_index(uint64_t p) {
  return static_cast<int32_t>(~static_cast<uint32_t>(p));
}

/// Warp-wide max of packed argmax keys with two single-instruction reductions (sm_80+): the
/// largest value key, then the smallest index among the lanes holding it.
__device__ __forceinline__ uint64_t warp_max_packed(uint64_t v) {
  const uint32_t key = static_cast<uint32_t>(v >> 32), inv = static_cast<uint32_t>(v);
  const uint32_t m = __reduce_max_sync(0xFFFFFFFFu, key);
  const uint32_t i = __reduce_max_sync(0xFFFFFFFFu, key == m ? inv : 0u);
  return (static_cast<uint64_t>(m) << 32) | i;
}

/// Max over the block of one value per warp (`v` must be the same in every lane of a warp, e.g.
/// after warp_max_packed): every thread calls it; the result is valid in thread 0. `red` is
/// shared memory for blockDim.x / 32 values. Contains one block barrier.
__device__ __forceinline__ uint64_t block_max_packed(uint64_t v, uint64_t* red) {
  const int lane = threadIdx.x & 31;
  if (lane == 0)
    red[threadIdx.x >> 5] = v;
  __syncthreads();
  uint64_t m = 0;
  if (threadIdx.x < 32) {
    m = lane < static_cast<int>(blockDim.x >> 5) ? red[lane] : 0ull;
    m = warp_max_packed(m);
  }
  return m;
}

/// Inclusive prefix sum over the lanes of a warp (lane l adds lanes l - 1, l - 2, l - 4, ... in
/// that order, so float sums are the same on every call).
template <class T> __device__ __forceinline__ T warp_inclusive_scan(T v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const T t = __shfl_up_sync(0xFFFFFFFFu, v, o);
    if (lane >= o)
      v += t;
  }
  return v;
}

/// Counts a block in on `counter` and returns true for the block that arrives last of `total`.
/// One thread calls it after a block barrier that follows the block's partial-result stores. The
/// add is acquire-release at device scope: release publishes this block's stores (the barrier
/// makes them this thread's to publish), acquire makes every earlier block's stores visible to the
/// last one, which then shares the answer through another block barrier. This replaces a full
/// sequentially consistent fence on each side (the same pattern as CUTLASS's arrival barriers).
__device__ __forceinline__ bool arrive_last(uint32_t* counter, uint32_t total) {
  cuda::atomic_ref<uint32_t, cuda::thread_scope_device> c(*counter);
  return c.fetch_add(1u, cuda::memory_order_acq_rel) == total - 1;
}

/// Takes a ticket from `counter` (relaxed: it orders nothing, it only ranks the blocks by start).
/// The block with the last ticket of a request is the last to start, so every block it may wait
/// for is already resident and never waits itself.
__device__ __forceinline__ uint32_t take_ticket(uint32_t* counter) {
  cuda::atomic_ref<uint32_t, cuda::thread_scope_device> c(*counter);
  return c.fetch_add(1u, cuda::memory_order_relaxed);
}

/// A 64-bit result slot shared between blocks of one launch: written once by its block, read by
/// the reducing block until it turns non-zero (each access is single-copy atomic and bypasses L1).
__device__ __forceinline__ void store_slot(uint64_t* slot, uint64_t v) {
  cuda::atomic_ref<uint64_t, cuda::thread_scope_device>(*slot).store(v, cuda::memory_order_relaxed);
}
__device__ __forceinline__ uint64_t load_slot(uint64_t* slot) {
  return cuda::atomic_ref<uint64_t, cuda::thread_scope_device>(*slot).load(
      cuda::memory_order_relaxed);
}

/// Loads the N slots `at(k)` that `in(k)` selects all at once (the others read as 1, present),
/// then polls the ones still zero again, together, until every slot is written: every load of a
/// round is in flight before any is tested.
template <int N, class At, class In>
__device__ __forceinline__ void poll_slots(uint64_t (&v)[N], const At& at, const In& in) {
#pragma unroll
  for (int k = 0; k < N; ++k)
    v[k] = in(k) ? load_slot(at(k)) : 1ull;
  for (;;) { // blocks not done yet: poll them again together
    bool missing = false;
#pragma unroll
    for (int k = 0; k < N; ++k)
      missing |= v[k] == 0;
    if (!missing)
      break;
#pragma unroll
    for (int k = 0; k < N; ++k)
      if (v[k] == 0)
        v[k] = load_slot(at(k));
  }
}

/// Does nothing: the default for the drains' `in_flight` step.
struct NoStep {
  __device__ void operator()() const {}
};

/// Max of one row's `count` slots, by a whole warp: waits until each slot is written (non-zero),
/// empties it for the next call, and returns the max in every lane. Two loads per lane are in
/// flight before any is used: one L2 round trip for up to 64 slots. Slot `own` (-1: none) is the
/// calling block's own partial, `own_key`, which it never stored: reading it back would cost a
/// store and a load round trip through L2, and the block that reduces is usually the last to
/// store. `in_flight()` runs once, after the first loads are issued and before any is used, so
/// that work which needs no slot (the walk's preparation) overlaps their round trip.
template <class Step = NoStep>
__device__ __forceinline__ uint64_t warp_drain_slots_max(uint64_t* slots, int count, int own = -1,
                                                         uint64_t own_key = 0,
                                                         Step in_flight = {}) {
  const int lane = threadIdx.x & 31;
  uint64_t m = 0;
  // Without a step, lanes past `count` skip the loop; with one, the first round runs in every
  // lane (the step may use the whole warp) and lanes without a slot read nothing.
  constexpr bool kStep = !std::is_same_v<Step, NoStep>;
  for (int j = lane; j < count || (kStep && j == lane); j += 64) {
    const bool in = !kStep || j < count, two = j + 32 < count;
    // The own slot is read too (it is empty, never written) and its value replaced.
    uint64_t v0 = in ? load_slot(slots + j) : 1ull;
    uint64_t v1 = two ? load_slot(slots + j + 32) : 1ull;
    if (kStep && j == lane) // the first round
      in_flight();
    if (j == own)
      v0 = own_key;
    if (j + 32 == own)
      v1 = own_key;
    while (v0 == 0) // a block not done yet
      v0 = load_slot(slots + j);
    while (v1 == 0)
      v1 = load_slot(slots + j + 32);
    if (in)
      store_slot(slots + j, 0);
    if (two)
      store_slot(slots + j + 32, 0);
    m = max(m, max(in ? v0 : uint64_t{0}, two ? v1 : uint64_t{0}));
  }
  return warp_max_packed(m);
}

/// warp_drain_slots_max for two rows `a` and `b` (b may be nullptr) of `count` <= 32 slots each,
/// with both rows' loads in flight at once: one L2 round trip for both instead of one after the
/// other. `own_a` and `own_b` are each row's slot holding `own_key` (-1: none), as above, and
/// `in_flight()` runs while the loads are in flight. Sets each row's max in every lane.
template <class Step = NoStep>
__device__ __forceinline__ void warp_drain_two_rows(uint64_t* a, int own_a, uint64_t* b, int own_b,
                                                    int count, uint64_t own_key, uint64_t& max_a,
                                                    uint64_t& max_b, Step in_flight = {}) {
  const int lane = threadIdx.x & 31;
  const bool in = lane < count, in_b = in && b != nullptr;
  uint64_t va = in ? load_slot(a + lane) : 0ull;
  uint64_t vb = in_b ? load_slot(b + lane) : 0ull;
  in_flight();
  if (lane == own_a)
    va = own_key;
  if (lane == own_b)
    vb = own_key;
  while (in && va == 0)
    va = load_slot(a + lane);
  while (in_b && vb == 0)
    vb = load_slot(b + lane);
  if (in)
    store_slot(a + lane, 0);
  if (in_b)
    store_slot(b + lane, 0);
  max_a = warp_max_packed(va);
  max_b = warp_max_packed(vb);
}

/// Slot loads per thread of lean_drain (fused greedy's own copy of this drain has the same
/// limit: more would raise that kernel above 48 registers).
constexpr int kLeanDrainLoads = 7;

/// Threads per node in lean_drain: `nodes` rounded up to a power of two (host and device).
__host__ __device__ __forceinline__ int lean_node_span(int nodes) {
#ifdef __CUDA_ARCH__
  return nodes <= 1 ? 1 : 1 << (32 - __clz(nodes - 1));
#else
  int p = 1;
  while (p < nodes)
    p <<= 1;
  return p;
#endif
}

/// Whether a request of `nodes` rows in `splits` slots each fits lean_drain (and fused greedy's
/// copy of it): at most 32 rows, and every slot one of kLeanDrainLoads loads per thread of two
/// warps. Launchers ask it on the host, kernels on the device.
__host__ __device__ __forceinline__ bool lean_drain_fits(int nodes, int splits) {
  return nodes <= 32 && (splits * lean_node_span(nodes) + 63) / 64 <= kLeanDrainLoads;
}

/// A small request's drain (at most 32 rows, every slot one of kLeanDrainLoads loads per thread
/// of two warps: splits * lean_node_span(nodes) <= 64 * kLeanDrainLoads) in warps 0 to 2 of the
/// reducing block, with no full
/// block barrier: threads 96 and up must have left. Thread t < 64 of warps 1 and 2 takes node
/// t % P (P = lean_node_span) and every (64 / P)-th of its slots, all in flight at once, so that
/// no poll waits behind warp 0, which runs `prepare()` meanwhile (work that needs no slot, such
/// as the walk's preparation). Shuffles, then one 96-thread barrier,
/// combine a node's threads. Slot `own_slot` (row * splits + split, counted from `slots`) holds
/// the calling block's own entry `own` (valid in thread 0), which it never stored: the reducing
/// block is usually the last to finish, and a store read back through L2 is a round trip. Returns
/// the max of node `lane`'s slots in warp 0 (0 for lanes past `nodes`), each slot emptied for the
/// next call; threads 32 to 95 get 0 and should leave.
template <class Prepare>
__device__ __forceinline__ uint64_t lean_drain(uint64_t* slots, int nodes, FastDiv splits_div,
                                               int own_slot, uint64_t own, Prepare prepare) {
  const int splits = static_cast<int>(splits_div.d);
  __shared__ uint64_t part_max[64]; // warps 1 and 2: the max per node of their slots
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31;
  const int pw = lean_node_span(nodes);
  int own_row = 0;
  if (tid < 32) {
    prepare();
    own_row = static_cast<int>(splits_div.div(static_cast<uint32_t>(own_slot)));
  } else {
    const int t = tid - 32;
    const int r = t & (pw - 1), first_split = t / pw, groups = 64 / pw;
    uint64_t* row_slots = slots + static_cast<int64_t>(r) * splits;
    const int own_split = own_slot - r * splits; // in [0, splits) on the own row only
    const auto in = [&](int k) {
      const int sp = first_split + k * groups;
      return r < nodes && sp < splits && sp != own_split;
    };
    uint64_t v[kLeanDrainLoads];
    poll_slots(
        v, [&](int k) { return row_slots + first_split + k * groups; }, in);
    uint64_t m = 0;
#pragma unroll
    for (int k = 0; k < kLeanDrainLoads; ++k)
      if (in(k)) {
        store_slot(row_slots + first_split + k * groups, 0);
        m = max(m, v[k]);
      }
    for (int o = pw; o < 32; o <<= 1)
      m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
    part_max[t] = m;
  }
  asm volatile("bar.sync 1, 96;" ::: "memory"); // warps 0 to 2 only
  if (tid >= 32)
    return 0;
  own = __shfl_sync(0xFFFFFFFFu, own, 0);
  uint64_t m = max(part_max[lane], part_max[32 + lane]);
  if (lane == own_row)
    m = max(m, own);
  return lane < nodes ? m : 0ull;
}

/// A request's tree for the reducing block: load() issues the loads (one node per thread when the
/// tree has at most blockDim.x nodes) before the block polls its slots, and store() puts the tree
/// into shared memory after, so that the loads' round trip overlaps the polls. Larger trees are
/// read by store() itself. `parents == nullptr` (a chain) leaves `parents_s` unused.
struct EarlyTree {
  int32_t parent = -1, token = 0;
  __device__ void load(const int32_t* parents, const int32_t* tokens, int64_t off, int n) {
    const int i = static_cast<int>(threadIdx.x);
    if (n <= static_cast<int>(blockDim.x) && i < n) {
      if (parents)
        parent = parents[off + i];
      token = tokens[off + i];
    }
  }
  __device__ void store(int32_t* parents_s, int32_t* tokens_s, const int32_t* parents,
                        const int32_t* tokens, int64_t off, int n) const {
    const int i0 = static_cast<int>(threadIdx.x), step = static_cast<int>(blockDim.x);
    if (n <= step) {
      if (i0 < n) {
        parents_s[i0] = parent;
        tokens_s[i0] = token;
      }
      return;
    }
    for (int i = i0; i < n; i += step) {
      if (parents)
        parents_s[i] = parents[off + i];
      tokens_s[i] = tokens[off + i];
    }
  }
};

/// One thread's part of a greedy walk's end, once `first_s[i]` holds node i's first matching child
/// (0x7FFFFFFF: none; shared memory): follows those links from the root and writes positions
/// 0..len of `path_row`, the accepted count and the bonus of request `b`; returns len. A
/// malformed parent array cannot make the loop run longer than n steps.
__device__ __forceinline__ int follow_first_children(const int32_t* target_s,
                                                     const int32_t* first_s, int n,
                                                     int32_t* path_row, int32_t* accepted,
                                                     int32_t* bonus, int b) {
  int cur = 0, len = 0;
  path_row[0] = 0;
  while (len + 1 < n && first_s[cur] != 0x7FFFFFFF) {
    cur = first_s[cur];
    path_row[++len] = cur;
  }
  accepted[b] = len;
  bonus[b] = target_s[cur];
  return len;
}

/// The end of a greedy walk, by one warp, once `first_s[i]` holds node i's first matching child
/// (0x7FFFFFFF: none; shared memory): lane 0 follows those links from the root, then the warp
/// writes the path, the rest of the row (-1), the accepted count and the bonus of request `b`.
__device__ inline void warp_follow_first_children(const int32_t* target_s, const int32_t* first_s,
                                                  int n, int32_t* accept_path, int32_t* accepted,
                                                  int32_t* bonus, int b) {
  const int lane = threadIdx.x & 31;
  int32_t* path_row = accept_path + static_cast<int64_t>(b) * n;
  int len = 0;
  if (lane == 0)
    len = follow_first_children(target_s, first_s, n, path_row, accepted, bonus, b);
  len = __shfl_sync(0xFFFFFFFFu, len, 0);
  for (int i = len + 1 + lane; i < n; i += 32)
    path_row[i] = -1;
}

/// Greedy walk of one request over a parent-array tree, run by a whole block. `parents_s`,
/// `tokens_s` and `target_s` are [n] in shared memory (parents_s == nullptr: a chain);
/// `first_s` is [n] int scratch. Writes the path, accepted count and bonus for request `b`.
__device__ inline void block_walk_tree(const int32_t* parents_s, const int32_t* tokens_s,
                                       const int32_t* target_s, int32_t* first_s, int n,
                                       int32_t* accept_path, int32_t* accepted, int32_t* bonus,
                                       int b) {
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    first_s[i] = 0x7FFFFFFF;
  __syncthreads();
  for (int i = 1 + threadIdx.x; i < n; i += blockDim.x) {
    const int p = parents_s ? parents_s[i] : i - 1;
    if (p >= 0 && p < n && p != i && tokens_s[i] == target_s[p])
      atomicMin(&first_s[p], i);
  }
  __syncthreads();
  __shared__ int path_len;
  int32_t* path_row = accept_path + static_cast<int64_t>(b) * n;
  if (threadIdx.x == 0)
    path_len = follow_first_children(target_s, first_s, n, path_row, accepted, bonus, b);
  __syncthreads();
  for (int i = path_len + 1 + threadIdx.x; i < n; i += blockDim.x)
    path_row[i] = -1;
}

/// The same walk run by warp 0 alone (no block barriers; every lane of the warp must call it).
__device__ inline void warp_walk_tree(const int32_t* parents_s, const int32_t* tokens_s,
                                      const int32_t* target_s, int32_t* first_s, int n,
                                      int32_t* accept_path, int32_t* accepted, int32_t* bonus,
                                      int b) {
  const int lane = threadIdx.x & 31;
  int32_t* path_row = accept_path + static_cast<int64_t>(b) * n;
  if (n <= 32) {
    // One node per lane, no serial loop. A node is accepted when its draft matches its parent's
    // target token and it is the first such child (the lowest lane among the matching lanes that
    // share its parent: match_any groups lanes by parent), and its parent is accepted. Pointer
    // jumping (log2 n rounds of three shuffles) gives every lane that verdict for its whole
    // ancestor chain and its depth, which is its position on the path. A node whose chain never
    // reaches the root (a malformed parent array with a cycle) is never accepted.
    const int p = lane < n ? (parents_s ? parents_s[lane] : lane - 1) : -1;
    const bool match =
        lane > 0 && lane < n && p >= 0 && p < n && p != lane && tokens_s[lane] == target_s[p];
    // Both votes run in every lane (a vote behind `match &&` would leave lanes out and hang).
    const unsigned same = __match_any_sync(0xFFFFFFFFu, p);
    const unsigned matching = __ballot_sync(0xFFFFFFFFu, match);
    const bool first = match && __ffs(matching & same) - 1 == lane;
    bool ok = lane == 0 || first;
    int anc = first ? p : lane; // the root and rejected nodes point at themselves
    int depth = first ? 1 : 0;
    for (int span = 1; span < n; span <<= 1) {
      const bool ok_a = __shfl_sync(0xFFFFFFFFu, ok, anc);
      const int depth_a = __shfl_sync(0xFFFFFFFFu, depth, anc);
      anc = __shfl_sync(0xFFFFFFFFu, anc, anc);
      ok = ok && ok_a;
      depth += depth_a;
    }
    const bool on_path = ok && anc == 0;
    const int len = static_cast<int>(__reduce_max_sync(0xFFFFFFFFu, on_path ? depth : 0));
    const unsigned last = __ballot_sync(0xFFFFFFFFu, on_path && depth == len);
    if (on_path) // positions 0..len, one writer each
      path_row[depth] = lane;
    if (lane > len && lane < n) // the rest of the row
      path_row[lane] = -1;
    if (lane == 0) {
      accepted[b] = len;
      bonus[b] = target_s[__ffs(last) - 1];
    }
    return;
  }
  for (int i = lane; i < n; i += 32)
    first_s[i] = 0x7FFFFFFF;
  __syncwarp();
  for (int i = 1 + lane; i < n; i += 32) {
    const int p = parents_s ? parents_s[i] : i - 1;
    if (p >= 0 && p < n && p != i && tokens_s[i] == target_s[p])
      atomicMin(&first_s[p], i);
  }
  __syncwarp();
  warp_follow_first_children(target_s, first_s, n, accept_path, accepted, bonus, b);
}

/// The greedy walk of a tree of at most 32 nodes by one warp (lane i holds node i), in two parts:
/// prepare() needs only the tree, so the reducing block runs it while its slot loads are in
/// flight; finish() needs the target tokens and is a handful of votes. Same verdicts as
/// warp_walk_tree: a node is accepted when it and every ancestor below the root match their
/// parent's target token as the first such child, and its chain reaches the root.
struct SmallTreeWalk {
  int32_t parent = -1, token = 0;
  unsigned siblings = 0; // lanes whose parent is this lane's parent
  unsigned chain = 0;    // the nodes from this one up to the root, the root left out
  bool linked = false;   // the parent is a valid index (not the node itself)
  bool reaches = false;  // the chain of parents ends at the root

  /// Every lane of the warp calls it. `parent_in` and `token_in` are node `lane`'s (ignored when
  /// lane >= n); `is_chain` makes node i's parent i - 1.
  __device__ __forceinline__ void prepare(int n, bool is_chain, int32_t parent_in,
                                          int32_t token_in) {
    const int lane = threadIdx.x & 31;
    parent = lane < n ? (is_chain ? lane - 1 : parent_in) : -1;
    token = token_in;
    linked = lane > 0 && lane < n && parent >= 0 && parent < n && parent != lane;
    siblings = __match_any_sync(0xFFFFFFFFu, parent);
    // Pointer jumping over the parents: after round r, `chain` holds 2^r nodes of the chain and
    // `up` the 2^r-th ancestor. The root and unlinked nodes point at themselves with an empty
    // chain, so a chain through an unlinked node (or a cycle) never reaches the root.
    unsigned c = linked ? 1u << lane : 0u;
    int up = linked ? parent : lane;
    for (int span = 1; span < n; span <<= 1) {
      c |= __shfl_sync(0xFFFFFFFFu, c, up);
      up = __shfl_sync(0xFFFFFFFFu, up, up);
    }
    chain = c;
    reaches = up == 0;
  }

  /// The walk once `target_s[i]` (node i's target token, shared memory) is known. Writes the
  /// path, the accepted count and the bonus token of request `b`, as warp_walk_tree does.
  __device__ __forceinline__ void finish(const int32_t* target_s, int n, int32_t* accept_path,
                                         int32_t* accepted, int32_t* bonus, int b) const {
    const int lane = threadIdx.x & 31;
    finish(lane < n ? target_s[lane] : 0, n, accept_path, accepted, bonus, b);
  }

  /// The same with node `lane`'s target token in a register (`own_target`, any value when
  /// lane >= n): the parent's comes by shuffle.
  __device__ __forceinline__ void finish(int32_t own_target, int n, int32_t* accept_path,
                                         int32_t* accepted, int32_t* bonus, int b) const {
    const int lane = threadIdx.x & 31;
    const int32_t from_parent = __shfl_sync(0xFFFFFFFFu, own_target, linked ? parent : lane);
    const int32_t parent_target = linked ? from_parent : 0;
    const bool match = linked && token == parent_target;
    const unsigned matching = __ballot_sync(0xFFFFFFFFu, match);
    const bool first = match && __ffs(matching & siblings) - 1 == lane;
    const unsigned firsts = __ballot_sync(0xFFFFFFFFu, first);
    // On the path: the root, or every node of the chain is a first matching child.
    const bool on_path = lane == 0 || (reaches && (chain & ~firsts) == 0);
    const int depth = __popc(chain);
    const unsigned path = __ballot_sync(0xFFFFFFFFu, on_path && lane < n);
    const int len = __popc(path) - 1; // the path is one chain from the root
    const unsigned last = __ballot_sync(0xFFFFFFFFu, on_path && lane < n && depth == len);
    const int32_t bonus_token = __shfl_sync(0xFFFFFFFFu, own_target, __ffs(last) - 1);
    int32_t* path_row = accept_path + static_cast<int64_t>(b) * n;
    if (on_path && lane < n) // positions 0..len, one writer each
      path_row[depth] = lane;
    if (lane > len && lane < n) // the rest of the row
      path_row[lane] = -1;
    if (lane == 0) {
      accepted[b] = len;
      bonus[b] = bonus_token;
    }
  }
};

/// Asks L2 to fetch the line holding `p` (no register waits for it): a block that finishes early
/// uses it for small arrays that only the reducing block reads later (the request's tree).
__device__ __forceinline__ void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

} // namespace specbench::kernels::detail
