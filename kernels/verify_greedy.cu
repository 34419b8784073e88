// Greedy verification when the target's tokens are already known: chains (one warp per request),
// parent-array trees and SGLang's first-child / next-sibling buffers (one block per request, the
// tree staged in shared memory so the walk never waits on global memory).
#include "common.cuh"
#include "programmatic_launch.cuh"


namespace specbench::kernels {
namespace detail {

int sm_count() {
  static DeviceIntCache cache;
  return cached_per_device(cache, 132, [](int dev) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      (void)cudaGetLastError();
    return v;
  });
}

int max_smem_per_block() {
  static DeviceIntCache cache;
  return cached_per_device(cache, 48 * 1024, [](int dev) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
      (void)cudaGetLastError();
    return v;
  });
}

namespace {

constexpr int kChainWarpsPerBlock = 4;

// One warp per request: the first mismatch is found 32 drafts at a time with a ballot.
__global__ void chain_greedy_kernel(const int32_t* __restrict__ drafts, // [batch, k]
                                    const int32_t* __restrict__ target, // [batch, k + 1]
                                    int batch, int k, int32_t* __restrict__ accepted,
                                    int32_t* __restrict__ bonus) {
  const int lane = threadIdx.x & 31;
  const int b = blockIdx.x * kChainWarpsPerBlock + (threadIdx.x >> 5);
  if (b >= batch)
    return;
  wait_for_previous_kernel();
  const int32_t* d = drafts + static_cast<int64_t>(b) * k;
  const int32_t* t = target + static_cast<int64_t>(b) * (k + 1);
  int first_miss = k;
  for (int base = 0; base < k; base += 32) {
    const int i = base + lane;
    const bool miss = i < k && d[i] != t[i];
    const unsigned m = __ballot_sync(0xFFFFFFFFu, miss);
    if (m) {
      first_miss = base + __ffs(m) - 1;
      break;
    }
  }
  if (lane == 0) {
    accepted[b] = first_miss;
    bonus[b] = t[first_miss];
  }
}

// One block per request: parents, tokens and targets go to shared memory, then the block walk.
__global__ void tree_greedy_kernel(const int32_t* __restrict__ parents, // [batch, n]
                                   const int32_t* __restrict__ tokens,  // [batch, n]
                                   const int32_t* __restrict__ target,  // [batch, n]
                                   int n, int32_t* __restrict__ accept_path,
                                   int32_t* __restrict__ accepted, int32_t* __restrict__ bonus) {
  extern __shared__ int32_t smem[];
  int32_t* par = smem;
  int32_t* tok = par + n;
  int32_t* tgt = tok + n;
  int32_t* first = tgt + n;
  const int b = blockIdx.x;
  const int64_t off = static_cast<int64_t>(b) * n;
  wait_for_previous_kernel();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    par[i] = parents[off + i];
    tok[i] = tokens[off + i];
    tgt[i] = target[off + i];
  }
  __syncthreads();
  allow_next_kernel();
  block_walk_tree(par, tok, tgt, first, n, accept_path, accepted, bonus, b);
}

// SGLang layout: the buffers are staged in shared memory (local ids as int16, tokens and the
// gathered target predictions as int64), then thread 0 walks first-child / next-sibling lists.
__global__ void sglang_greedy_kernel(int32_t* __restrict__ predicts,         // [batch * n]
                                     int32_t* __restrict__ accept_index,     // [batch, steps]
                                     int32_t* __restrict__ accept_token_num, // [batch]
                                     const int64_t* __restrict__ candidates, // [batch, n]
                                     const int64_t* __restrict__ retrive_index,
                                     const int64_t* __restrict__ next_token,
                                     const int64_t* __restrict__ next_sibling,
                                     const int64_t* __restrict__ target_predict, // [batch * n]
                                     int n, int steps) {
  extern __shared__ int64_t smem64[];
  int64_t* cand = smem64;
  int64_t* gid = cand + n;
  int64_t* pred = gid + n;
  int16_t* nt = reinterpret_cast<int16_t*>(pred + n);
  int16_t* ns = nt + n;
  const int b = blockIdx.x;
  const int64_t off = static_cast<int64_t>(b) * n;
  const int64_t total = static_cast<int64_t>(gridDim.x) * n;
  wait_for_previous_kernel();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    cand[i] = candidates[off + i];
    const int64_t g = retrive_index[off + i];
    gid[i] = g;
    pred[i] = (g >= 0 && g < total) ? target_predict[g] : -1;
    const int64_t a = next_token[off + i], s = next_sibling[off + i];
    nt[i] = static_cast<int16_t>(a >= 0 && a < n ? a : -1);
    ns[i] = static_cast<int16_t>(s >= 0 && s < n ? s : -1);
  }
  __syncthreads();
  allow_next_kernel();
  __shared__ int path_len;
  int32_t* idx_row = accept_index + static_cast<int64_t>(b) * steps;
  if (threadIdx.x == 0) {
    int cur = 0, len = 0;
    idx_row[0] = static_cast<int32_t>(gid[0]);
    for (int j = 1; j < steps; ++j) {
      const int64_t want = pred[cur];
      int next = -1;
      int guard = 0;
      for (int c = nt[cur]; c >= 0 && guard++ < n; c = ns[c])
        if (cand[c] == want) {
          next = c;
          break;
        }
      if (next < 0)
        break;
      if (gid[cur] >= 0 && gid[cur] < total) // a malformed retrive_index must not write outside
        predicts[gid[cur]] = static_cast<int32_t>(want);
      idx_row[j] = static_cast<int32_t>(gid[next]);
      ++len;
      cur = next;
    }
    if (gid[cur] >= 0 && gid[cur] < total)
      predicts[gid[cur]] = static_cast<int32_t>(pred[cur]);
    accept_token_num[b] = len;
    path_len = len;
  }
  __syncthreads();
  for (int j = path_len + 1 + threadIdx.x; j < steps; j += blockDim.x)
    idx_row[j] = -1;
}

__global__ void memset_kernel(uint4* p, std::size_t n16, uint8_t* tail, std::size_t ntail) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n16)
    p[i] = make_uint4(0, 0, 0, 0);
  if (i < ntail)
    tail[i] = 0;
}

} // namespace
} // namespace detail

bool compiled_with_cuda() noexcept {
  return true;
}

Status verify_chain_greedy(const int32_t* drafts, const int32_t* target_tokens, int batch, int k,
                           int32_t* accepted, int32_t* bonus, Stream stream,
                           LaunchOptions launch) {
  if (Status s = detail::check_chain_greedy(drafts, target_tokens, batch, k, accepted, bonus); !s)
    return s;
  if (batch == 0)
    return {};
  const int blocks = (batch + detail::kChainWarpsPerBlock - 1) / detail::kChainWarpsPerBlock;
  const detail::LaunchConfig l(blocks, 32 * detail::kChainWarpsPerBlock, 0, stream, launch);
  return detail::launch_kernel(l, "kernels::verify_chain_greedy", detail::chain_greedy_kernel,
                               drafts, target_tokens, batch, k, accepted, bonus);
}

Status verify_tree_greedy(const int32_t* parents, const int32_t* tokens,
                          const int32_t* target_tokens, int batch, int nodes, int32_t* accept_path,
                          int32_t* accepted, int32_t* bonus, Stream stream,
                          LaunchOptions launch) {
  if (Status s = detail::check_tree_greedy(parents, tokens, target_tokens, batch, nodes,
                                           accept_path, accepted, bonus);
      !s)
    return s;
  if (batch == 0)
    return {};
  const int threads = nodes <= 64 ? 64 : (nodes <= 128 ? 128 : 256);
  const detail::LaunchConfig l(batch, threads, 4 * sizeof(int32_t) * nodes, stream, launch);
  return detail::launch_kernel(l, "kernels::verify_tree_greedy", detail::tree_greedy_kernel,
                               parents, tokens, target_tokens, nodes, accept_path, accepted,
                               bonus);
}

Status verify_tree_greedy_sglang(int32_t* predicts, int32_t* accept_index,
                                 int32_t* accept_token_num, const int64_t* candidates,
                                 const int64_t* retrive_index, const int64_t* retrive_next_token,
                                 const int64_t* retrive_next_sibling, const int64_t* target_predict,
                                 int batch, int nodes, int steps, Stream stream,
                                 LaunchOptions launch) {
  if (Status s = detail::check_sglang(predicts, accept_index, accept_token_num, candidates,
                                      retrive_index, retrive_next_token, retrive_next_sibling,
                                      target_predict, batch, nodes, steps);
      !s)
    return s;
  if (batch == 0)
    return {};
  const std::size_t smem = static_cast<std::size_t>(nodes) * (3 * sizeof(int64_t) + 4);
  // Above the default 48 KiB (1,756 nodes or more) the kernel must be allowed more on the GPU it
  // runs on: the limit is a per-device setting, so it is set at each such call (once per process
  // left every other GPU at 48 KiB, and the launch failed there).
  if (smem > 48 * 1024)
    if (cudaError_t e = cudaFuncSetAttribute(detail::sglang_greedy_kernel,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(smem));
        e != cudaSuccess) {
      (void)cudaGetLastError();
      return detail::cuda_status(e, "kernels::verify_tree_greedy_sglang", "cudaFuncSetAttribute");
    }
  const int threads = nodes <= 64 ? 64 : 128;
  const detail::LaunchConfig l(batch, threads, smem, stream, launch);
  return detail::launch_kernel(l, "kernels::verify_tree_greedy_sglang",
                               detail::sglang_greedy_kernel, predicts, accept_index,
                               accept_token_num, candidates, retrive_index, retrive_next_token,
                               retrive_next_sibling, target_predict, nodes, steps);
}

Status clear_workspace(void* workspace, std::size_t bytes, Stream stream) {
  if (Status s = detail::check_clear_workspace(workspace, bytes); !s)
    return s;
  if (bytes == 0)
    return {};
  // A kernel rather than cudaMemsetAsync keeps this a plain kernel node inside CUDA graphs.
  const std::size_t n16 = bytes / 16, ntail = bytes % 16;
  const std::size_t work = n16 > ntail ? n16 : ntail;
  const unsigned blocks = static_cast<unsigned>((work + 255) / 256);
  detail::memset_kernel<<<blocks, 256, 0, stream>>>(
      static_cast<uint4*>(workspace), n16, static_cast<uint8_t*>(workspace) + n16 * 16, ntail);
  return detail::launch_status("kernels::clear_workspace");
}

} // namespace specbench::kernels
