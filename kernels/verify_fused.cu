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
#include "phase_stamps.cuh"
#include "vector_first_max.cuh"

#include <cuda_bf16.h>

namespace specbench::kernels {
namespace detail {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

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
  SPECBENCH_PHASE_START();
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
    constexpr int V = E::kPerVec;
    vector_first_max<T, kUnroll>(x, start + tid * V, end, static_cast<int64_t>(kThreads) * V, best,
                                 best_idx, nan);
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
  SPECBENCH_PHASE(2, key); // thread 0's elements are in
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
  if (tid == 0)
    is_last = ticket == per_request - 1; // read after block_max_packed's barrier
  key = block_max_packed(warp_max_packed(key), red);
  if (tid == 0) // never zero: every chunk holds an element, and -inf's key is 0x007FFFFF
    store_slot(&partials[row * splits + split], key);
  SPECBENCH_PHASE(3, key); // the block's partial is stored
  if (!is_last)
    return;

  // This block started last for request b: every other block of the request is running or done.
  // Only this block needs the tree; its loads are issued with the first polls.
  const int warp = tid >> 5, lane = tid & 31;
  EarlyTree tree;
  tree.load(parents, tokens, off, nodes);
  for (int r = warp; r < nodes; r += kThreads / 32) {
    // Small batches use 19 to 66 splits: one L2 round trip for the row's slots.
    const uint64_t m = warp_drain_slots_max(partials + (off + r) * splits, splits);
    if (lane == 0) {
      tgt[r] = packed_index(m);
      if (target_out)
        target_out[off + r] = packed_index(m);
    }
  }
  tree.store(par, tok, parents, tokens, off, nodes);
  __syncthreads();
  SPECBENCH_PHASE_LAST(2, b); // every slot of the request is drained
  if (tid < 32) {
    warp_walk_tree(parents ? par : nullptr, tok, tgt, first, nodes, accept_path, accepted, bonus,
                   b);
    if (tid == 0)
      counters[b] = 0; // every block of the request has taken its ticket
  }
  SPECBENCH_PHASE_LAST(3, b); // the walk is written
}

} // namespace

SPECBENCH_PHASE_ATTACH(phase_attach_fused)

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
