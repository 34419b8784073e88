// Where a single-request verification call spends its microseconds. Links the kernels built with
// SPECBENCH_PHASE_STAMPS (kernels/phase_stamps.cuh): thread 0 of every block records %globaltimer
// at its start, when its own elements are in, and when the block's partial is stored; the
// reducing block also when every slot is drained and when the outputs are written. Each case runs
// cold (inputs rotated through 2.5x the L2) in a CUDA graph, like bench_kernels; the stamps of a
// graph's last call are read back after each of 20 replays, and the medians over the replays are
// printed, next to the same for a read-once kernel over the same bytes and for that kernel with its
// loads arranged as each verifier arranges them (read_pattern_stamped).
//   build/benchmarks/kernels/probe_phase_stamps
#include "baseline_kernels.hpp"
#include "specbench/kernels.hpp"

#include "probe_support.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace specbench::kernels::detail {
void phase_attach_fused(uint64_t* buf);
void phase_attach_sampling(uint64_t* buf);
void phase_attach_ddtree(uint64_t* buf);
} // namespace specbench::kernels::detail

namespace {

using specbench::probes::now_ns;

namespace k = specbench::kernels;
namespace bb = specbench::bench;
constexpr int64_t kVocab = 151936;

// The end of both read kernels below: the block's sum into out[block] (so that the loads cannot
// be dropped) and the three stamps (start, elements in, stored).
__device__ void finish_read(float acc, uint64_t t0, float* out, uint64_t* stamps) {
  if (acc == 1234.5f)
    __trap();
  const uint64_t t2 = now_ns();
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xFFFFFFFFu, acc, o);
  __shared__ float red[8];
  if ((threadIdx.x & 31) == 0)
    red[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int w = 0; w < 8; ++w)
      t += red[w];
    out[blockIdx.x] = t;
    uint32_t sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    uint64_t* r = stamps + 8ull * blockIdx.x;
    r[0] = t0;
    r[1] = sm;
    r[2] = t2;
    r[3] = now_ns();
  }
}

// The benchmark's read-once kernel with the same three stamps (start, elements in, stored).
__global__ void read_once_stamped(const float4* a, int64_t n4, float* out, uint64_t* stamps) {
  const uint64_t t0 = now_ns();
  float acc = 0.0f;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += 4 * stride) {
    float4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int64_t j = i + u * stride;
      v[u] = j < n4 ? __ldcs(a + j) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u)
      acc += v[u].x + v[u].y + v[u].z + v[u].w;
  }
  finish_read(acc, t0, out, stamps);
}

// The same read with the loads of each thread placed as the verifiers place them, to test
// whether the layout explains their later arrival. Mode 0: grid-stride (the read-once kernel).
// Mode 1: a block's loads adjacent (fused greedy: thread t's load u at block * 256 U + 256 u + t).
// Mode 2: a warp's loads adjacent (sampling segments: warp w's load u covers 512 bytes at
// block * 256 U + w * 32 U + 32 u). U loads per thread; the grid covers n4 exactly once.
template <int MODE, int U>
__global__ void read_pattern_stamped(const float4* a, int64_t n4, float* out, uint64_t* stamps) {
  const uint64_t t0 = now_ns();
  const int64_t b = blockIdx.x, t = threadIdx.x, w = t >> 5, l = t & 31;
  float acc = 0.0f;
  float4 v[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    int64_t j;
    if (MODE == 0)
      j = b * 256 + t + static_cast<int64_t>(u) * gridDim.x * 256;
    else if (MODE == 1)
      j = b * 256 * U + 256 * u + t;
    else
      j = b * 256 * U + w * 32 * U + 32 * u + l;
    v[u] = j < n4 ? __ldcs(a + j) : make_float4(0, 0, 0, 0);
  }
#pragma unroll
  for (int u = 0; u < U; ++u)
    acc += v[u].x + v[u].y + v[u].z + v[u].w;
  finish_read(acc, t0, out, stamps);
}

struct DevMem {
  void* p = nullptr;
  explicit DevMem(std::size_t n) {
    if (cudaMalloc(&p, n) != cudaSuccess)
      p = nullptr;
  }
  ~DevMem() { cudaFree(p); }
  template <class T> T* as() const { return static_cast<T*>(p); }
};

double median(std::vector<double> v) {
  if (v.empty())
    return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * (v.size() - 1))];
}

struct Case {
  std::string name;
  std::size_t bytes;
  bool has_last; // a reducing block (the verifiers) or not (read-once)
  // Launch call `i` of the graph on stream s.
  std::function<bool(int, cudaStream_t)> launch;
};

int g_l2 = 50 << 20;

void run_case(const Case& c, uint64_t* stamps, std::size_t max_records, int R) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaGraph_t g;
  cudaGraphExec_t ge;
  bool ok = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  for (int i = 0; ok && i < R; ++i)
    ok = c.launch(i, s);
  ok = cudaStreamEndCapture(s, &g) == cudaSuccess && ok;
  ok = ok && cudaGraphInstantiate(&ge, g, 0) == cudaSuccess;
  if (!ok) {
    std::printf("%s: capture failed\n", c.name.c_str());
    return;
  }
  for (int w = 0; w < 3; ++w)
    cudaGraphLaunch(ge, s);
  cudaStreamSynchronize(s);
  // Per-call time, as bench_kernels measures it.
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int reps = std::max(1, 200 / R);
  cudaEventRecord(e0, s);
  for (int r = 0; r < reps; ++r)
    cudaGraphLaunch(ge, s);
  cudaEventRecord(e1, s);
  cudaEventSynchronize(e1);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, e0, e1);
  const double per_call_us = ms * 1e3 / (static_cast<double>(reps) * R);

  std::map<std::string, std::vector<double>> m;
  std::vector<uint64_t> h(max_records * 8);
  std::vector<double> hist_example;
  uint64_t min_step = ~0ull;
  int blocks = 0;
  for (int rep = 0; rep < 20; ++rep) {
    cudaMemsetAsync(stamps, 0, max_records * 64, s);
    cudaGraphLaunch(ge, s);
    cudaStreamSynchronize(s);
    cudaMemcpy(h.data(), stamps, h.size() * 8, cudaMemcpyDeviceToHost);
    // Records with a start stamp are blocks; the reducing block's record follows the last one.
    blocks = 0;
    while (blocks < static_cast<int>(max_records) && h[8 * blocks] != 0 &&
           h[8 * blocks + 1] != ~0ull)
      ++blocks;
    if (blocks == 0)
      continue;
    uint64_t t0 = ~0ull, end = 0;
    std::vector<double> st, in, stored, lat;
    std::map<uint64_t, int> per_sm;
    std::vector<uint64_t> all;
    for (int b = 0; b < blocks; ++b) {
      t0 = std::min(t0, h[8 * b]);
      per_sm[h[8 * b + 1]]++;
    }
    for (int b = 0; b < blocks; ++b) {
      const uint64_t* r = &h[8 * b];
      st.push_back((r[0] - t0) / 1e3);
      in.push_back((r[2] - t0) / 1e3);
      lat.push_back((r[2] - r[0]) / 1e3);
      // A stamp older than the block's start is left from an earlier call of the graph: a block
      // that stops early in some calls (tree sampling's "rows" kernel: every cluster but f's).
      if (r[3] >= r[0]) {
        stored.push_back((r[3] - t0) / 1e3);
        end = std::max(end, r[3]);
        all.push_back(r[3]);
      }
      all.insert(all.end(), {r[0], r[2]});
    }
    m["start p50"].push_back(quantile(st, 0.5));
    m["start max"].push_back(quantile(st, 1.0));
    m["in-start p50"].push_back(quantile(lat, 0.5));
    m["in-start max"].push_back(quantile(lat, 1.0));
    m["in p50"].push_back(quantile(in, 0.5));
    m["in p90"].push_back(quantile(in, 0.9));
    m["in max"].push_back(quantile(in, 1.0));
    if (!stored.empty())
      m["stored max"].push_back(quantile(stored, 1.0));
    int most = 0;
    for (auto& [sm, n] : per_sm)
      most = std::max(most, n);
    m["SMs used"].push_back(static_cast<double>(per_sm.size()));
    for (int i = 2; i < 8; ++i) // block 0's own stamps (DDTree: its phases)
      if (h[i] >= h[0])         // not left from an earlier call
        m["block 0: stamp " + std::to_string(i)].push_back((h[i] - h[0]) / 1e3);
    if (c.name.rfind("ddtree", 0) == 0) { // when each request's nodes were chosen
      std::vector<double> chosen;
      for (int b = 0; b < blocks; ++b)
        chosen.push_back((h[8 * b + 3] - h[8 * b]) / 1e3);
      m["ddtree: nodes chosen, max over blocks"].push_back(quantile(chosen, 1.0));
      m["ddtree: nodes chosen, p50 over blocks"].push_back(quantile(chosen, 0.5));
    }
    m["blocks on busiest SM"].push_back(most);
    if (c.has_last) {
      const uint64_t* L = &h[8 * blocks];
      const int lb = static_cast<int>(L[0]);
      if (lb < blocks && L[2] != 0 && L[3] != 0) {
        const uint64_t* r = &h[8 * lb];
        m["last: start"].push_back((r[0] - t0) / 1e3);
        m["last: in"].push_back((r[2] - t0) / 1e3);
        m["last: stored"].push_back((r[3] - t0) / 1e3);
        m["last: drained"].push_back((L[2] - t0) / 1e3);
        m["last: end"].push_back((L[3] - t0) / 1e3);
        for (int j = 4; j < 8; ++j) // the kernels' own extra stamps (see their sources)
          if (L[j] != 0)
            m["last: stamp " + std::to_string(j)].push_back((L[j] - t0) / 1e3);
        m["last: block index / blocks"].push_back(static_cast<double>(lb) / blocks);
        end = std::max(end, L[3]);
        all.insert(all.end(), {L[2], L[3]});
      }
    }
    m["span (first start to last stamp)"].push_back((end - t0) / 1e3);
    std::sort(all.begin(), all.end());
    for (std::size_t i = 1; i < all.size(); ++i)
      if (all[i] != all[i - 1])
        min_step = std::min(min_step, all[i] - all[i - 1]);
    if (rep == 10)
      hist_example = st;
  }
  std::printf("\n== %s: %d blocks, %.2f MB, %.2f us per call (graph of %d, cold)\n", c.name.c_str(),
              blocks, c.bytes / 1e6, per_call_us, R);
  for (auto& [key, v] : m)
    std::printf("  %-36s %8.3f\n", key.c_str(), median(v));
  std::printf("  globaltimer: smallest step seen %llu ns\n",
              static_cast<unsigned long long>(min_step));
  if (!hist_example.empty()) {
    std::map<int, int> hist;
    for (double x : hist_example)
      hist[static_cast<int>(x * 10)]++;
    std::printf("  block starts per 0.1 us (one replay):");
    for (auto& [bin, n] : hist)
      std::printf(" %.1f:%d", bin / 10.0, n);
    std::printf("\n");
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

int rotation(std::size_t bytes) {
  const std::size_t want = 2 * static_cast<std::size_t>(g_l2) + g_l2 / 2;
  return static_cast<int>(std::clamp<std::size_t>((want + bytes - 1) / bytes, 1, 64));
}

} // namespace

int main() {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::printf("no CUDA device\n");
    return 1;
  }
  g_l2 = prop.l2CacheSize;
  std::printf("%s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, g_l2 >> 20);
  constexpr std::size_t kRecords = 4096;
  DevMem stamps(kRecords * 64);
  k::detail::phase_attach_fused(stamps.as<uint64_t>());
  k::detail::phase_attach_sampling(stamps.as<uint64_t>());
  k::detail::phase_attach_ddtree(stamps.as<uint64_t>());
  std::mt19937 rng(7);

  // A random tree (parents before children) and random tokens, for n nodes.
  auto tree = [&](int n, std::vector<int32_t>& par, std::vector<int32_t>& tok) {
    par.assign(n, -1);
    tok.assign(n, 0);
    for (int i = 1; i < n; ++i) {
      par[i] = static_cast<int32_t>(rng() % i);
      tok[i] = static_cast<int32_t>(rng() % kVocab);
    }
  };
  std::vector<Case> cases;
  std::vector<std::unique_ptr<DevMem>> keep;
  auto dev = [&](std::size_t n) {
    keep.push_back(std::make_unique<DevMem>(n));
    return keep.back()->p;
  };
  auto upload = [&](const std::vector<int32_t>& v) {
    void* p = dev(v.size() * 4);
    cudaMemcpy(p, v.data(), v.size() * 4, cudaMemcpyHostToDevice);
    return static_cast<int32_t*>(p);
  };
  std::vector<int> rot;

  for (int n : {8, 16, 65}) { // 65: the tree of a DDTree budget of 64 (the general tail)
    const std::size_t bytes = n * kVocab * 2;
    const int R = rotation(bytes);
    std::vector<void*> x;
    for (int r = 0; r < R; ++r) {
      x.push_back(dev(bytes));
      bb::fill_random_bf16(static_cast<uint16_t*>(x.back()), n * kVocab, 17 + r, nullptr);
    }
    std::vector<int32_t> par, tok;
    tree(n, par, tok);
    int32_t *dp = upload(par), *dt = upload(tok);
    auto* path = static_cast<int32_t*>(dev(n * 4));
    auto* out = static_cast<int32_t*>(dev(64));
    const std::size_t wsb = k::verify_greedy_fused_workspace_bytes(1, n, kVocab);
    void* ws = dev(wsb);
    (void)k::clear_workspace(ws, wsb, nullptr);
    cases.push_back(
        {"fused greedy bf16 1 x " + std::to_string(n), bytes, true, [=](int i, cudaStream_t s) {
           return k::verify_greedy_fused(x[i % R], k::LogitsDtype::bf16, dp, dt, 1, n, kVocab,
                                         nullptr, path, out, out + 1, ws, wsb, s)
               .is_ok();
         }});
    rot.push_back(R);
  }
  std::vector<float*> rows8; // the 8-row inputs, read again by the read-once kernels below
  // 4 and 8: the rows kernel's two cluster shapes (15 x 11 and 9 x 18 on the H200); 65: the path
  // kernel with the block walk (a DDTree budget of 64).
  for (int n : {4, 8, 65}) {
    const std::size_t bytes = n * kVocab * 4;
    const int R = rotation(bytes);
    std::vector<float*> x;
    for (int r = 0; r < R; ++r) {
      x.push_back(static_cast<float*>(dev(bytes)));
      bb::fill_random_f32(x.back(), n * kVocab, 3 + r, nullptr);
    }
    if (n == 8)
      rows8 = x;
    std::vector<int32_t> par, tok;
    tree(n, par, tok);
    int32_t *dp = upload(par), *dt = upload(tok);
    auto* path = static_cast<int32_t*>(dev(n * 4));
    auto* out = static_cast<int32_t*>(dev(64));
    cases.push_back(
        {"tree sampling fp32 1 x " + std::to_string(n), bytes, true, [=](int i, cudaStream_t s) {
           return k::verify_tree_sampling(x[i % R], dp, dt, 1, n, kVocab,
                                          k::PhiloxArgs{1, uint64_t(i)}, nullptr, path, out,
                                          out + 1, nullptr, 0, s)
               .is_ok();
         }});
    rot.push_back(R);
    // Where the tree lies moved 1 x 4 of e3521f2's rows kernel (reverted) between about 3.2 and
    // 3.6 us on H100s (2026-12-07): the same call with parents and tokens 4 KiB apart in an
    // allocation of their own (slow then), and 256 bytes apart (fast then).
    if (n == 4)
      for (std::size_t gap : {std::size_t(4096), std::size_t(256)}) {
        auto* slab = static_cast<char*>(dev(4u << 20));
        auto* sp = reinterpret_cast<int32_t*>(slab);
        auto* st = reinterpret_cast<int32_t*>(slab + gap);
        cudaMemcpy(sp, par.data(), n * 4, cudaMemcpyHostToDevice);
        cudaMemcpy(st, tok.data(), n * 4, cudaMemcpyHostToDevice);
        cases.push_back({"tree sampling fp32 1 x 4, tree " + std::to_string(gap) + " B apart",
                         bytes, true, [=](int i, cudaStream_t s) {
                           return k::verify_tree_sampling(x[i % R], sp, st, 1, n, kVocab,
                                                          k::PhiloxArgs{1, uint64_t(i)}, nullptr,
                                                          path, out, out + 1, nullptr, 0, s)
                               .is_ok();
                         }});
        rot.push_back(R);
      }
  }
  {
    const int n = 8;
    const std::vector<float*>& x = rows8;
    const int R = static_cast<int>(x.size());
    auto* ro = static_cast<float*>(dev(132 * 8 * 4));
    uint64_t* st = stamps.as<uint64_t>();
    for (std::size_t floats : {n * kVocab / 2, n * kVocab}) {
      const int64_t n4 = static_cast<int64_t>(floats) / 4;
      const unsigned g = static_cast<unsigned>(std::min<int64_t>((n4 + 1023) / 1024, 132 * 8));
      cases.push_back({"read once " + std::to_string(floats * 4 / 1000) + " kB", floats * 4, false,
                       [=](int i, cudaStream_t s) {
                         read_once_stamped<<<g, 256, 0, s>>>(
                             reinterpret_cast<const float4*>(x[i % R]), n4, ro, st);
                         return cudaGetLastError() == cudaSuccess;
                       }});
      rot.push_back(R);
      // The layouts of the verifiers on the same bytes: 4 and 8 loads per thread.
      const std::string kb = std::to_string(floats * 4 / 1000) + " kB";
      const unsigned g4 = static_cast<unsigned>((n4 + 1023) / 1024);
      const unsigned g8 = static_cast<unsigned>((n4 + 2047) / 2048);
      auto add = [&](const std::string& name, unsigned grid, auto kernel) {
        cases.push_back({name + " " + kb + " (" + std::to_string(grid) + " blocks)", floats * 4,
                         false, [=](int i, cudaStream_t s) {
                           kernel<<<grid, 256, 0, s>>>(reinterpret_cast<const float4*>(x[i % R]),
                                                       n4, ro, st);
                           return cudaGetLastError() == cudaSuccess;
                         }});
        rot.push_back(R);
      };
      add("pattern grid-stride x4", g4, read_pattern_stamped<0, 4>);
      add("pattern block-adjacent x4", g4, read_pattern_stamped<1, 4>);
      add("pattern warp-adjacent x4", g4, read_pattern_stamped<2, 4>);
      // Fused greedy's geometry at 1 x 16: about 400 blocks of three loads per thread.
      const unsigned g3 = static_cast<unsigned>((n4 + 767) / 768);
      add("pattern grid-stride x3", g3, read_pattern_stamped<0, 3>);
      add("pattern block-adjacent x3", g3, read_pattern_stamped<1, 3>);
      add("pattern grid-stride x8", g8, read_pattern_stamped<0, 8>);
      add("pattern block-adjacent x8", g8, read_pattern_stamped<1, 8>);
      add("pattern warp-adjacent x8", g8, read_pattern_stamped<2, 8>);
    }
  }
  {
    const int kk = 7;
    const std::size_t tb = (kk + 1) * kVocab * 4, db = kk * kVocab * 4;
    const int R = rotation(tb + db);
    std::vector<float*> t, d;
    for (int r = 0; r < R; ++r) {
      t.push_back(static_cast<float*>(dev(tb)));
      d.push_back(static_cast<float*>(dev(db)));
      bb::fill_random_f32(t.back(), tb / 4, 7 + r, nullptr);
      bb::fill_random_f32(d.back(), db / 4, 70 + r, nullptr);
    }
    int32_t* drafts = upload(std::vector<int32_t>(kk, 5));
    auto* out = static_cast<int32_t*>(dev(64 * 4));
    const std::size_t wsb = k::verify_sampling_workspace_bytes(1, kk + 1, kVocab);
    void* ws = dev(wsb);
    (void)k::clear_workspace(ws, wsb, nullptr);
    cases.push_back({"chain sampling fp32 B 1 K 7", tb + db, true, [=](int i, cudaStream_t s) {
                       return k::verify_chain_sampling(d[i % R], drafts, t[i % R], 1, kk, kVocab,
                                                       k::PhiloxArgs{1, uint64_t(i)}, out, out + 32,
                                                       ws, wsb, s)
                           .is_ok();
                     }});
    rot.push_back(R);
  }
  {
    // DDTree tree building, B = 1 and 64 at budget 64, B = 1 at budgets 256 and 1024 (the
    // multi-warp search), depth 16, k = 64, all outputs and masks (the benchmark's rows:
    // log-softmax of normal(0, 2) logits); inputs stay in L2, as in the bench.
    for (auto shape : {std::pair{1, 64}, {64, 64}, {1, 256}, {1, 1024}}) {
      const int batch = shape.first, budget = shape.second; // named copies: captured below
      const int depth = 16, kk = 64, n = budget + 1, W = (n + 31) / 32;
      std::vector<float> logp(batch * depth * kk);
      std::vector<int32_t> ids(logp.size());
      std::mt19937 g(5);
      for (int d = 0; d < batch * depth; ++d) {
        std::vector<float> row(kk);
        for (auto& v : row)
          v = std::normal_distribution<float>(0.0f, 2.0f)(g);
        std::sort(row.rbegin(), row.rend());
        double z = 0.0;
        for (float v : row)
          z += std::exp(v - row[0]);
        for (int r = 0; r < kk; ++r) {
          logp[d * kk + r] = row[r] - row[0] - static_cast<float>(std::log(z));
          ids[d * kk + r] = static_cast<int32_t>(g() % kVocab);
        }
      }
      auto* dl = static_cast<float*>(dev(logp.size() * 4));
      cudaMemcpy(dl, logp.data(), logp.size() * 4, cudaMemcpyHostToDevice);
      int32_t* di = upload(ids);
      int32_t* dr = upload(std::vector<int32_t>(batch, 1));
      const std::size_t bn = static_cast<std::size_t>(batch) * n;
      auto i32 = [&](std::size_t count) { return static_cast<int32_t*>(dev(count * 4)); };
      k::DdtreeOutputs o{i32(batch),
                         i32(bn),
                         i32(bn),
                         i32(bn),
                         i32(bn),
                         i32(bn),
                         i32(bn),
                         nullptr,
                         static_cast<uint8_t*>(dev(bn * n)),
                         static_cast<uint32_t*>(dev(bn * W * 4))};
      cases.push_back(
          {"ddtree B " + std::to_string(batch) + " budget " + std::to_string(budget) +
               " depth 16 k 64, masks",
           0, false, [=](int, cudaStream_t s) {
             return k::build_ddtree(dl, di, dr, nullptr, batch, depth, kk, budget, o, s).is_ok();
           }});
      rot.push_back(20);
    }
  }
  cudaDeviceSynchronize();
  for (std::size_t i = 0; i < cases.size(); ++i)
    run_case(cases[i], stamps.as<uint64_t>(), kRecords, rot[i]);
  return 0;
}
