// Which launch shape and which cross-block hand-off make a single-request fused greedy call
// fastest. For 1 x 8 and 1 x 16 bf16 rows (V = 151,936) it times, per call in CUDA graphs (cold:
// inputs rotated through over 3x the L2; warm: one buffer):
//   empty   - an empty kernel of the same grid (the launch and block-scheduling floor);
//   read    - read the logits and store one packed partial per block;
//   counter - read, then the last block to arrive (acq_rel counter) reduces and walks a chain;
//   poll    - read, then one designated block (the last in launch order) waits for every
//             partial slot to turn non-zero, reduces and walks; no counter, no release fence.
// for several block sizes and splits per row, with the fused kernel's own per-thread loop
// (vector_first_max.cuh). docs/kernels.md quotes the results; its table was measured on
// 2026-12-03 03:54 UTC, when that loop still compared every element (per-element argmax).
//   build/benchmarks/kernels/probe_fused_geometry
#include "../../kernels/common.cuh"           // argmax keys, warp reductions, arrival
#include "../../kernels/vector_first_max.cuh" // the fused kernel's per-thread loop

#include <cuda_bf16.h>

#include <cstdint>
#include <cstdio>

namespace {

using namespace specbench::kernels::detail;

constexpr int64_t kVocab = 151936;
constexpr int kMaxNodes = 32, kUnroll = 4;

enum Mode : int { kEmpty = 0, kRead = 1, kCounter = 2, kPoll = 3 };

struct Args {
  const __nv_bfloat16* x;
  const int* parents;
  const int* tokens;
  int nodes, splits;
  int64_t chunk;
  int *path, *accepted, *bonus;
  unsigned* counter;
  uint64_t* partials;
};

// kTicket (poll mode): 0 - the poller is the last block in launch order; 1 - the block with the
// last ticket from one request-wide counter; 2 - two levels: the last ticket of a row's counter
// takes a ticket from the request's counter. kTreeWalk: the shipped parent-array walk instead of
// the chain ballot.
template <int kT, int kMode, int kTicket = 0, bool kTreeWalk = false>
__global__ void __launch_bounds__(kT) call(Args a) {
  if (kMode == kEmpty)
    return;
  const int row = blockIdx.x / a.splits, split = blockIdx.x - row * a.splits;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  uint32_t ticket = 0;
  bool row_last = false;
  if (kTicket > 0 && tid == 0) {
    if (kTicket == 1) {
      ticket = take_ticket(a.counter);
    } else {
      row_last = take_ticket(a.counter + 1 + row) == static_cast<uint32_t>(a.splits) - 1;
      if (row_last)
        ticket = take_ticket(a.counter);
    }
  }
  const int64_t start = split * a.chunk, end = min(kVocab, start + a.chunk);
  const __nv_bfloat16* x = a.x + row * kVocab;
  __shared__ int par[kMaxNodes], tok[kMaxNodes], tgt[kMaxNodes];
  __shared__ uint64_t red[kT / 32];
  __shared__ bool is_last;
  __shared__ int first_s[kMaxNodes];
  if (kMode >= kCounter && tid < a.nodes) {
    par[tid] = a.parents[tid];
    tok[tid] = a.tokens[tid];
  }
  float best = -INFINITY;
  int best_i = 0x7FFFFFFF; // relative to start
  bool nan = false;        // the inputs hold no NaN; the shipped loop tracks it all the same
  vector_first_max<__nv_bfloat16, kUnroll>(x + start, tid * 8, static_cast<int>(end - start),
                                           kT * 8, best, best_i, nan);
  uint64_t key = best_i == 0x7FFFFFFF
                     ? 0ull
                     : pack_argmax(float_key(best), static_cast<uint32_t>(start + best_i));
  key = warp_max_packed(key);
  if (lane == 0)
    red[warp] = key;
  __syncthreads();
  bool poller = blockIdx.x == gridDim.x - 1;
  if (kTicket == 1 && tid == 0)
    is_last = ticket == static_cast<uint32_t>(a.nodes * a.splits) - 1; // tid 0's value
  if (kTicket == 2 && tid == 0)
    is_last = row_last && ticket == static_cast<uint32_t>(a.nodes) - 1;
  if (kTicket > 0) {
    __syncthreads();
    poller = is_last;
  }
  if (tid < 32) {
    key = warp_max_packed(tid < kT / 32 ? red[tid] : 0ull);
    if (tid == 0) {
      if (kMode == kPoll) {
        store_slot(a.partials + blockIdx.x, key);
      } else {
        a.partials[blockIdx.x] = key;
        if (kMode == kCounter)
          is_last = arrive_last(a.counter, static_cast<uint32_t>(a.nodes * a.splits));
      }
    }
  }
  if (kMode == kRead)
    return;
  if (kMode == kPoll && !poller)
    return;
  if (kMode == kCounter) {
    __syncthreads();
    if (!is_last)
      return;
  }
  for (int r = warp; r < a.nodes; r += kT / 32) {
    uint64_t* p = a.partials + r * a.splits;
    uint64_t m = 0;
    for (int j = lane; j < a.splits; j += 64) {
      const bool two = j + 32 < a.splits;
      uint64_t v0, v1 = 0;
      if (kMode == kPoll) {
        v0 = load_slot(p + j);
        if (two)
          v1 = load_slot(p + j + 32);
        while (v0 == 0)
          v0 = load_slot(p + j);
        while (two && v1 == 0)
          v1 = load_slot(p + j + 32);
        store_slot(p + j, 0); // the slots are empty again for the next call
        if (two)
          store_slot(p + j + 32, 0);
      } else {
        v0 = __ldcg(p + j);
        v1 = two ? __ldcg(p + j + 32) : 0ull;
      }
      m = max(m, max(v0, v1));
    }
    m = warp_max_packed(m);
    if (lane == 0)
      tgt[r] = packed_index(m);
  }
  __syncthreads();
  if (kTreeWalk) {
    if (tid < 32) {
      warp_walk_tree(par, tok, tgt, first_s, a.nodes, a.path, a.accepted, a.bonus, 0);
      if (kTicket > 0 && tid == 0)
        *a.counter = 0;
      if (kTicket == 2 && tid < a.nodes)
        a.counter[1 + tid] = 0;
    }
    return;
  }
  if (kTicket > 0 && tid < 32) {
    if (tid == 0)
      *a.counter = 0;
    if (kTicket == 2 && tid < a.nodes)
      a.counter[1 + tid] = 0;
  }
  if (tid < 32) { // a chain walk: accept while draft i matches target i - 1
    const bool match =
        lane > 0 && lane < a.nodes && par[lane] == lane - 1 && tok[lane] == tgt[lane - 1];
    const unsigned miss = ~__ballot_sync(~0u, match) & ~1u;
    const int len = min(__ffs(miss) - 2, a.nodes - 1);
    if (lane < a.nodes)
      a.path[lane] = lane <= len ? lane : -1;
    if (lane == 0) {
      *a.accepted = len;
      *a.bonus = tgt[len];
      if (kMode == kCounter)
        *a.counter = 0;
    }
  }
}

__global__ void fill(__nv_bfloat16* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i % (16 * kVocab)) * 2654435761u;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    x[i] = __float2bfloat16(static_cast<float>(h & 0xFFFF) / 65536.0f * 20.0f - 10.0f);
  }
}

// Microseconds per call: `calls` launches captured in a graph, replayed back to back.
template <class F> float per_call_us(F launch, int calls, int replays) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaGraph_t g;
  cudaGraphExec_t ge;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < calls; ++i)
    launch(i, s);
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&ge, g, 0);
  for (int w = 0; w < 3; ++w)
    cudaGraphLaunch(ge, s);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0, s);
  for (int r = 0; r < replays; ++r)
    cudaGraphLaunch(ge, s);
  cudaEventRecord(e1, s);
  cudaEventSynchronize(e1);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  return ms * 1000.0f / (calls * replays);
}

constexpr int kCopies = 40; // 40 x 4.9 MB (1 x 16 bf16 rows) = 194 MB, over 3x the H200's L2
constexpr std::size_t kCopyElems = 16 * kVocab;

template <int kT, int kMode, int kTicket = 0, bool kTreeWalk = false>
void time_one(Args a, const __nv_bfloat16* x, float* cold, float* warm) {
  const int blocks = a.nodes * a.splits;
  *cold = per_call_us(
      [&](int i, cudaStream_t s) {
        Args c = a;
        c.x = x + static_cast<std::size_t>(i % kCopies) * kCopyElems;
        call<kT, kMode, kTicket, kTreeWalk><<<blocks, kT, 0, s>>>(c);
      },
      kCopies * 3, 5);
  *warm = per_call_us(
      [&](int, cudaStream_t s) {
        Args c = a;
        c.x = x;
        call<kT, kMode, kTicket, kTreeWalk><<<blocks, kT, 0, s>>>(c);
      },
      120, 5);
}

template <int kT> void sweep(Args a, const __nv_bfloat16* x, const int* want_accepted) {
  for (int splits : {8, 16, 19, 25, 38, 66}) {
    a.splits = splits;
    a.chunk = (kVocab + splits - 1) / splits;
    a.chunk = (a.chunk + 7) / 8 * 8;
    a.splits = static_cast<int>((kVocab + a.chunk - 1) / a.chunk);
    float c[4], w[4];
    time_one<kT, kEmpty>(a, x, &c[0], &w[0]);
    time_one<kT, kRead>(a, x, &c[1], &w[1]);
    cudaMemset(a.accepted, 0xFF, 4);
    time_one<kT, kCounter>(a, x, &c[2], &w[2]);
    int acc_counter = -2, acc_poll = -2;
    cudaMemcpy(&acc_counter, a.accepted, 4, cudaMemcpyDeviceToHost);
    cudaMemset(a.accepted, 0xFF, 4);
    cudaMemset(a.partials, 0, 8 * kMaxNodes * 1024); // the other modes leave their partials
    time_one<kT, kPoll>(a, x, &c[3], &w[3]);
    cudaMemcpy(&acc_poll, a.accepted, 4, cudaMemcpyDeviceToHost);
    bool extra_ok = true;
    float ec[3], ew[3];
    if (kT == 256) { // where the shipped kernel's extra time goes
      cudaMemset(a.partials, 0, 8 * kMaxNodes * 1024);
      time_one<kT, kPoll, 1, false>(a, x, &ec[0], &ew[0]);
      time_one<kT, kPoll, 2, false>(a, x, &ec[1], &ew[1]);
      cudaMemset(a.accepted, 0xFF, 4);
      time_one<kT, kPoll, 1, true>(a, x, &ec[2], &ew[2]);
      int acc_walk = -2;
      cudaMemcpy(&acc_walk, a.accepted, 4, cudaMemcpyDeviceToHost);
      extra_ok = acc_walk == *want_accepted;
      std::printf("1 x %-2d %4d thr %3d splits: poll+ticket %5.2f/%5.2f  poll+2-level ticket "
                  "%5.2f/%5.2f  poll+ticket+tree walk %5.2f/%5.2f us%s\n",
                  a.nodes, kT, a.splits, ec[0], ew[0], ec[1], ew[1], ec[2], ew[2],
                  extra_ok ? "" : "  WRONG ACCEPTED COUNT");
    }
    const bool ok = acc_counter == *want_accepted && acc_poll == *want_accepted;
    std::printf("1 x %-2d %4d thr %3d splits %4d blocks | empty %5.2f/%5.2f  read %5.2f/%5.2f  "
                "counter %5.2f/%5.2f  poll %5.2f/%5.2f us (cold/warm)%s\n",
                a.nodes, kT, a.splits, a.nodes * a.splits, c[0], w[0], c[1], w[1], c[2], w[2], c[3],
                w[3], ok ? "" : "  WRONG ACCEPTED COUNT");
  }
}

} // namespace

int main() {
  int dev_count = 0;
  if (cudaGetDeviceCount(&dev_count) != cudaSuccess || dev_count == 0) {
    std::printf("SKIPPED: no usable CUDA device\n");
    return 0;
  }
  __nv_bfloat16* x = nullptr;
  if (cudaMalloc(&x, kCopyElems * kCopies * 2) != cudaSuccess) {
    std::printf("out of device memory\n");
    return 1;
  }
  fill<<<1024, 256>>>(x, static_cast<int64_t>(kCopyElems) * kCopies);
  int *par, *tok, *path, *acc, *bonus;
  unsigned* counter;
  uint64_t* partials;
  cudaMalloc(&par, 4 * kMaxNodes);
  cudaMalloc(&tok, 4 * kMaxNodes);
  cudaMalloc(&path, 4 * kMaxNodes);
  cudaMalloc(&acc, 4);
  cudaMalloc(&bonus, 4);
  cudaMalloc(&counter, 4 * (1 + kMaxNodes));
  cudaMemset(counter, 0, 4 * (1 + kMaxNodes));
  cudaMalloc(&partials, 8 * kMaxNodes * 1024);
  cudaMemset(partials, 0, 8 * kMaxNodes * 1024);
  // A chain whose drafts all match: draft i is the argmax of row i - 1 (computed on the host).
  int hp[kMaxNodes], ht[kMaxNodes];
  {
    const std::size_t n = kMaxNodes * kVocab;
    __nv_bfloat16* h = new __nv_bfloat16[n];
    cudaMemcpy(h, x, n * 2, cudaMemcpyDeviceToHost);
    for (int r = 0; r < kMaxNodes; ++r) {
      hp[r] = r - 1;
      ht[r] = 0;
    }
    for (int r = 0; r + 1 < kMaxNodes; ++r) {
      int bi = 0;
      for (int v = 1; v < kVocab; ++v)
        if (__bfloat162float(h[r * kVocab + v]) > __bfloat162float(h[r * kVocab + bi]))
          bi = v;
      ht[r + 1] = bi;
    }
    delete[] h;
  }
  cudaMemcpy(par, hp, sizeof hp, cudaMemcpyHostToDevice);
  cudaMemcpy(tok, ht, sizeof ht, cudaMemcpyHostToDevice);
  for (int nodes : {8, 16}) {
    Args a{};
    a.parents = par;
    a.tokens = tok;
    a.nodes = nodes;
    a.path = path;
    a.accepted = acc;
    a.bonus = bonus;
    a.counter = counter;
    a.partials = partials;
    const int want = nodes - 1;
    sweep<128>(a, x, &want);
    sweep<256>(a, x, &want);
    sweep<512>(a, x, &want);
    sweep<1024>(a, x, &want);
    // The shipped kernel on the same data, in the same harness.
    namespace k = specbench::kernels;
    const std::size_t wsb = k::verify_greedy_fused_workspace_bytes(1, nodes, kVocab);
    void* ws = nullptr;
    cudaMalloc(&ws, wsb);
    (void)k::clear_workspace(ws, wsb, nullptr);
    auto real = [&](int i, cudaStream_t s, bool cold) {
      const __nv_bfloat16* xi = x + (cold ? static_cast<std::size_t>(i % kCopies) * kCopyElems : 0);
      (void)k::verify_greedy_fused(xi, k::LogitsDtype::bf16, par, tok, 1, nodes, kVocab, nullptr,
                                   path, acc, bonus, ws, wsb, s);
    };
    cudaMemset(acc, 0xFF, 4);
    const float cold =
        per_call_us([&](int i, cudaStream_t s) { real(i, s, true); }, kCopies * 3, 5);
    const float warm = per_call_us([&](int i, cudaStream_t s) { real(i, s, false); }, 120, 5);
    int got = -2;
    cudaMemcpy(&got, acc, 4, cudaMemcpyDeviceToHost);
    std::printf("1 x %-2d shipped verify_greedy_fused (parent array)   %5.2f/%5.2f us%s\n", nodes,
                cold, warm, got == want ? "" : "  WRONG ACCEPTED COUNT");
    cudaFree(ws);
  }
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  return 0;
}
