// Sampling verification, read-once: every block sums the weights of 1024-element segments of one
// row (target probabilities, or max(p - q, 0) and p for chain rows) into the workspace; the last
// block of a request then draws by inverse CDF with Philox coins (segment sums pick the segment,
// a warp scan of 1024 elements picks the token), decides the acceptances and writes the outputs.
#include "common.cuh"

#include "specbench/detail/philox.hpp"

namespace specbench::kernels {
namespace detail {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kSeg = static_cast<int>(kSamplingSegment);

enum Mode : int { kTree = 0, kChain = 1 };

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
  uint64_t seed, offset;
  const uint64_t* dev_seed_offset;
  int32_t* target_out; // tree: [batch, rows] draws, optional
  int32_t* out_tokens; // tree: accept_path [batch, rows]; chain: output [batch, rows]
  int32_t* accepted;   // [batch]
  int32_t* bonus;      // tree: [batch]
  uint32_t* counters;  // [batch]
  float2* sums;        // [batch * rows, segs]: (weight sum, p sum)
};

__device__ __forceinline__ float warp_sum(float v) {
  // shfl_down then broadcast: every lane sees the same bits.
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_down_sync(0xFFFFFFFFu, v, o);
  return __shfl_sync(0xFFFFFFFFu, v, 0);
}

// Weight of element i of a row: p (use_residual false) or max(p - q, 0).
__device__ __forceinline__ float weight(const float* p, const float* q, int64_t i, bool residual) {
  const float a = __ldcg(p + i);
  return residual ? fmaxf(a - __ldcg(q + i), 0.0f) : fmaxf(a, 0.0f);
}

// Inverse-CDF draw by one warp over row `grow` (global row) with coin u. `comp` selects the sum
// (0: weights, 1: plain p). Returns -1 when the row has no mass.
__device__ int warp_draw(const SamplingArgs& a, int64_t grow, const float* p, const float* q,
                         bool residual, int comp, float u, bool vec) {
  const int lane = threadIdx.x & 31;
  const float2* s = a.sums + grow * a.segs;
  auto part = [&](int64_t j) {
    const float2 v = __ldcg(s + j);
    return comp == 0 ? v.x : v.y;
  };
  // Lane l holds segments [c0 + l*8, c0 + l*8 + 8) of a chunk of 256 segments: one round trip
  // for the total and the segment search when the row has at most 256 segments (V <= 262144).
  constexpr int C = 8;
  float v[C];
  auto load_chunk = [&](int64_t c0) {
#pragma unroll
    for (int j = 0; j < C; ++j) {
      const int64_t sj = c0 + lane * C + j;
      v[j] = sj < a.segs ? part(sj) : 0.0f;
    }
  };
  float tot = 0.0f;
  for (int64_t c0 = 0; c0 < a.segs; c0 += 32 * C) {
    load_chunk(c0);
    float ls = 0.0f;
#pragma unroll
    for (int j = 0; j < C; ++j)
      ls += v[j];
    tot += warp_sum(ls);
  }
  if (!(tot > 0.0f))
    return -1;
  const float target = u * tot;
  // The segment whose inclusive prefix first exceeds the target.
  float run = 0.0f, before = 0.0f;
  int64_t seg = -1, last_pos = -1;
  for (int64_t c0 = 0; c0 < a.segs; c0 += 32 * C) {
    if (a.segs > 32 * C)
      load_chunk(c0);
    float ls = 0.0f;
#pragma unroll
    for (int j = 0; j < C; ++j)
      ls += v[j];
    float incl = ls;
    for (int o = 1; o < 32; o <<= 1) {
      const float t = __shfl_up_sync(0xFFFFFFFFu, incl, o);
      if (lane >= o)
        incl += t;
    }
    float cum = run + (incl - ls);
    int64_t cand = -1, lastp = -1;
    float cand_before = 0.0f;
#pragma unroll
    for (int j = 0; j < C; ++j) {
      if (v[j] > 0.0f) {
        lastp = c0 + lane * C + j;
        if (cand < 0 && cum + v[j] > target) {
          cand = lastp;
          cand_before = cum;
        }
      }
      cum += v[j];
    }
    const unsigned pos = __ballot_sync(0xFFFFFFFFu, lastp >= 0);
    if (pos)
      last_pos = __shfl_sync(0xFFFFFFFFu, lastp, 31 - __clz(pos));
    const unsigned hit = __ballot_sync(0xFFFFFFFFu, cand >= 0);
    if (hit) {
      const int l = __ffs(hit) - 1;
      seg = __shfl_sync(0xFFFFFFFFu, cand, l);
      before = __shfl_sync(0xFFFFFFFFu, cand_before, l);
      break;
    }
    run += __shfl_sync(0xFFFFFFFFu, incl, 31);
  }
  bool take_last = false;
  if (seg < 0) { // rounding put the target at the very end: take the last positive weight
    seg = last_pos;
    take_last = true;
  }
  if (seg < 0)
    return -1;
  // Within the segment: lane l owns elements [l*32, l*32 + 32).
  const int64_t base = seg * kSeg + lane * 32;
  float w[32];
  float lane_sum = 0.0f;
  if (vec && base + 32 <= a.vocab) { // 16-byte loads of this lane's 32 weights
#pragma unroll
    for (int e = 0; e < 32; e += 4) {
      const float4 pv = __ldcg(reinterpret_cast<const float4*>(p + base + e));
      float4 qv = make_float4(0.f, 0.f, 0.f, 0.f);
      if (residual)
        qv = __ldcg(reinterpret_cast<const float4*>(q + base + e));
      w[e] = residual ? fmaxf(pv.x - qv.x, 0.0f) : fmaxf(pv.x, 0.0f);
      w[e + 1] = residual ? fmaxf(pv.y - qv.y, 0.0f) : fmaxf(pv.y, 0.0f);
      w[e + 2] = residual ? fmaxf(pv.z - qv.z, 0.0f) : fmaxf(pv.z, 0.0f);
      w[e + 3] = residual ? fmaxf(pv.w - qv.w, 0.0f) : fmaxf(pv.w, 0.0f);
    }
  } else {
#pragma unroll
    for (int e = 0; e < 32; ++e)
      w[e] = base + e < a.vocab ? weight(p, q, base + e, residual) : 0.0f;
  }
#pragma unroll
  for (int e = 0; e < 32; ++e)
    lane_sum += w[e];
  float excl = lane_sum;
  for (int o = 1; o < 32; o <<= 1) {
    const float t = __shfl_up_sync(0xFFFFFFFFu, excl, o);
    if (lane >= o)
      excl += t;
  }
  excl -= lane_sum;
  const float local = target - before;
  int cand = -1, last = -1;
  float cum = excl;
#pragma unroll
  for (int e = 0; e < 32; ++e) {
    cum += w[e];
    if (w[e] > 0.0f) {
      last = static_cast<int>(base + e);
      if (cand < 0 && cum > local)
        cand = last;
    }
  }
  const unsigned hit = __ballot_sync(0xFFFFFFFFu, cand >= 0 && !take_last);
  if (hit)
    return __shfl_sync(0xFFFFFFFFu, cand, __ffs(hit) - 1);
  int best = last;
  for (int o = 16; o > 0; o >>= 1)
    best = max(best, __shfl_xor_sync(0xFFFFFFFFu, best, o));
  return best;
}

template <int kMode, bool kVec>
__global__ void __launch_bounds__(kThreads) sampling_kernel(SamplingArgs a) {
  const int64_t grow = blockIdx.x / a.splits;
  const int split = static_cast<int>(blockIdx.x - grow * a.splits);
  const int b = static_cast<int>(grow / a.rows);
  const int i = static_cast<int>(grow - static_cast<int64_t>(b) * a.rows);
  const bool residual = kMode == kChain && i < a.rows - 1;
  const float* p = a.target + grow * a.vocab;
  const float* q =
      residual ? a.draft + (static_cast<int64_t>(b) * (a.rows - 1) + i) * a.vocab : nullptr;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  extern __shared__ int32_t smem[];
  const int n = a.rows;
  const int64_t row0 = static_cast<int64_t>(b) * n;
  int32_t* par = smem;
  int32_t* tok = par + n;
  int32_t* tgt = tok + n;
  int32_t* first = tgt + n;
  // Small trees are staged while the probabilities stream in (tree mode only).
  const bool staged = kMode == kTree && n <= kThreads;
  if (staged && static_cast<int>(threadIdx.x) < n) {
    if (a.parents)
      par[threadIdx.x] = a.parents[row0 + threadIdx.x];
    tok[threadIdx.x] = a.tokens[row0 + threadIdx.x];
  }
  const int64_t seg_begin = split * a.segs_per_split;
  const int64_t seg_end = min(a.segs, seg_begin + a.segs_per_split);
  for (int64_t seg = seg_begin + warp; seg < seg_end; seg += kWarps) {
    const int64_t base = seg * kSeg;
    float fs = 0.0f, ps = 0.0f;
    if (kVec && base + kSeg <= a.vocab) {
      float4 pv[8], qv[8];
#pragma unroll
      for (int j = 0; j < 8; ++j)
        pv[j] = __ldcs(reinterpret_cast<const float4*>(p + base + j * 128 + lane * 4));
      if (residual) {
#pragma unroll
        for (int j = 0; j < 8; ++j)
          qv[j] = __ldcs(reinterpret_cast<const float4*>(q + base + j * 128 + lane * 4));
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float pp[4] = {fmaxf(pv[j].x, 0.f), fmaxf(pv[j].y, 0.f), fmaxf(pv[j].z, 0.f),
                             fmaxf(pv[j].w, 0.f)};
        ps += (pp[0] + pp[1]) + (pp[2] + pp[3]);
        if (residual)
          fs += (fmaxf(pv[j].x - qv[j].x, 0.f) + fmaxf(pv[j].y - qv[j].y, 0.f)) +
                (fmaxf(pv[j].z - qv[j].z, 0.f) + fmaxf(pv[j].w - qv[j].w, 0.f));
      }
      if (!residual)
        fs = ps;
    } else {
      for (int j = 0; j < 32; ++j) {
        const int64_t e = base + j * 32 + lane;
        if (e < a.vocab) {
          const float pp = fmaxf(p[e], 0.0f);
          ps += pp;
          fs += residual ? fmaxf(p[e] - q[e], 0.0f) : pp;
        }
      }
    }
    fs = warp_sum(fs);
    ps = warp_sum(ps);
    if (lane == 0)
      a.sums[grow * a.segs + seg] = make_float2(fs, ps);
  }
  __shared__ bool is_last;
  __syncthreads();
  if (threadIdx.x == 0)
    is_last = arrive_last(&a.counters[b], static_cast<uint32_t>(a.rows * a.splits));
  __syncthreads();
  if (!is_last)
    return;

  uint64_t seed = a.seed, offset = a.offset;
  if (a.dev_seed_offset) {
    seed = a.dev_seed_offset[0];
    offset = a.dev_seed_offset[1];
  }
  if (kMode == kTree) {
    if (!staged)
      for (int r = threadIdx.x; r < n; r += kThreads) {
        if (a.parents)
          par[r] = a.parents[row0 + r];
        tok[r] = a.tokens[row0 + r];
      }
    for (int r = warp; r < n; r += kWarps) {
      const float u =
          specbench::detail::philox_uniform(seed, offset, static_cast<uint32_t>(row0 + r), 0);
      const int t =
          warp_draw(a, row0 + r, a.target + (row0 + r) * a.vocab, nullptr, false, 0, u, kVec);
      if (lane == 0) {
        tgt[r] = t;
        if (a.target_out)
          a.target_out[row0 + r] = t;
      }
    }
    __syncthreads();
    if (warp == 0)
      warp_walk_tree(a.parents ? par : nullptr, tok, tgt, first, n, a.out_tokens, a.accepted,
                     a.bonus, b);
  } else if (warp == 0) {
    const int k = n - 1;
    int pos = k;
    for (int c = 0; c < k; c += 32) {
      const int j = c + lane;
      bool reject = false;
      if (j < k) {
        const int32_t d = a.tokens[static_cast<int64_t>(b) * k + j];
        const bool ok = d >= 0 && d < a.vocab;
        const float pp = ok ? __ldcg(a.target + (row0 + j) * a.vocab + d) : 0.0f;
        const float qq =
            ok ? __ldcg(a.draft + (static_cast<int64_t>(b) * k + j) * a.vocab + d) : 0.0f;
        const float u =
            specbench::detail::philox_uniform(seed, offset, static_cast<uint32_t>(row0 + j), 1);
        reject = !(u * qq < pp);
      }
      const unsigned m = __ballot_sync(0xFFFFFFFFu, reject);
      if (m) {
        pos = c + __ffs(m) - 1;
        break;
      }
    }
    const float u =
        specbench::detail::philox_uniform(seed, offset, static_cast<uint32_t>(row0 + pos), 0);
    const float* pr = a.target + (row0 + pos) * a.vocab;
    int t;
    if (pos < k) {
      const float* qr = a.draft + (static_cast<int64_t>(b) * k + pos) * a.vocab;
      t = warp_draw(a, row0 + pos, pr, qr, true, 0, u, kVec);
      if (t < 0)
        t = warp_draw(a, row0 + pos, pr, nullptr, false, 1, u, kVec);
    } else {
      t = warp_draw(a, row0 + pos, pr, nullptr, false, 0, u, kVec);
    }
    int32_t* out = a.out_tokens + row0;
    for (int j = lane; j < n; j += 32)
      out[j] = j < pos ? a.tokens[static_cast<int64_t>(b) * k + j] : (j == pos ? t : -1);
    if (lane == 0)
      a.accepted[b] = pos;
  }
  if (threadIdx.x == 0)
    a.counters[b] = 0;
}

Status launch_sampling(int mode, SamplingArgs a, int batch, std::size_t smem, Stream stream,
                       const char* where) {
  a.segs = sampling_segments(a.vocab);
  const int64_t rows = static_cast<int64_t>(batch) * a.rows;
  const int64_t target_blocks = static_cast<int64_t>(sm_count()) * 4;
  int64_t splits = (target_blocks + rows - 1) / rows;
  const int64_t max_splits = (a.segs + kWarps - 1) / kWarps;
  splits = splits < 1 ? 1 : (splits > max_splits ? max_splits : splits);
  a.segs_per_split = (a.segs + splits - 1) / splits;
  a.splits = static_cast<int>((a.segs + a.segs_per_split - 1) / a.segs_per_split);
  const int64_t blocks = rows * a.splits;
  if (blocks > 0x7FFFFFFF)
    return Status(StatusCode::invalid_argument, "too many blocks for one launch",
                  "verify fewer requests per call", where);
  const bool vec = reinterpret_cast<uintptr_t>(a.target) % 16 == 0 &&
                   (a.draft == nullptr || reinterpret_cast<uintptr_t>(a.draft) % 16 == 0) &&
                   a.vocab % 4 == 0;
  const unsigned g = static_cast<unsigned>(blocks);
  if (mode == kTree) {
    if (vec)
      sampling_kernel<kTree, true><<<g, kThreads, smem, stream>>>(a);
    else
      sampling_kernel<kTree, false><<<g, kThreads, smem, stream>>>(a);
  } else {
    if (vec)
      sampling_kernel<kChain, true><<<g, kThreads, 0, stream>>>(a);
    else
      sampling_kernel<kChain, false><<<g, kThreads, 0, stream>>>(a);
  }
  return launch_status(where);
}

SamplingArgs base_args(int rows, int64_t vocab, PhiloxArgs rng, void* workspace, int batch) {
  SamplingArgs a{};
  a.rows = rows;
  a.vocab = vocab;
  a.seed = rng.seed;
  a.offset = rng.offset;
  a.dev_seed_offset = rng.device_seed_offset;
  a.counters = static_cast<uint32_t*>(workspace);
  a.sums = reinterpret_cast<float2*>(static_cast<char*>(workspace) +
                                     align_up(sizeof(uint32_t) * batch, kWorkspaceAlign));
  return a;
}

} // namespace
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
  return detail::launch_sampling(detail::kTree, a, batch, 4 * sizeof(int32_t) * nodes, stream,
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
