// Google Benchmark microbenchmarks of the verification and tree-building kernels on a GPU, with
// manual time from CUDA events around CUDA-graph replays. "cold" rotates through enough copies
// of the inputs (> 2x the L2 cache) that every call reads HBM; "warm" repeats one buffer set.
// Counters: TBps (bytes the call must read / time), frac_copy (that rate over the device-to-device
// copy bandwidth measured at start-up in the same run, read + write bytes), and us_floor.
// Baseline "deployed_*" = the path SGLang runs today: bf16->fp32 copy, one-block-per-row argmax,
// one-thread tree walk (benchmarks/kernels/baseline_kernels.cu).
#include "baseline_kernels.hpp"
#include "specbench/draft_tree.hpp"
#include "specbench/kernels.hpp"
#include "specbench/results.hpp"
#include "specbench/sglang_layout.hpp"

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#if SPECBENCH_BENCH_CUBLAS
#include <cublas_v2.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {
namespace k = specbench::kernels;
namespace bb = specbench::bench;
using specbench::DraftTree;

constexpr int64_t kVocab = 151936;
double g_copy_Bps = 0.0; // device-to-device copy, (read + write) bytes per second
std::size_t g_l2 = 60u << 20;

struct DevMem {
  void* p = nullptr;
  explicit DevMem(std::size_t bytes) {
    if (cudaMalloc(&p, std::max<std::size_t>(bytes, 16)) != cudaSuccess)
      p = nullptr;
  }
  ~DevMem() { cudaFree(p); }
  DevMem(const DevMem&) = delete;
  DevMem& operator=(const DevMem&) = delete;
  template <class T> T* as() const { return static_cast<T*>(p); }
};

template <class T> void upload(DevMem& d, const std::vector<T>& v) {
  cudaMemcpy(d.p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
}

// How the cases launch: a case registered through `pdl` below runs with programmatic dependent
// launch (kernels::LaunchOptions), every other one plainly.
k::LaunchOptions g_launch{};

// When above 0, every call of a case's graph is preceded by bb::busy_kernel(g_busy_ns): the case
// then times the pair, and the "busy_kernel" case the busy kernel alone (cases named after_busy_*).
unsigned g_busy_ns = 0;
unsigned g_busy_signal_ns = 0; // when the busy kernel allows the next launch (0: at its end)

// `fn` timed after a busy kernel of `ns` nanoseconds in every call, which allows the next kernel's
// launch `signal_ns` after its start (0: only when it ends).
template <class Fn> auto after_busy(unsigned ns, unsigned signal_ns, Fn fn) {
  return [fn, ns, signal_ns](benchmark::State& s) {
    g_busy_ns = ns;
    g_busy_signal_ns = signal_ns;
    fn(s);
    g_busy_ns = 0;
    g_busy_signal_ns = 0;
  };
}

// `fn` run with programmatic dependent launch when `programmatic` (the case names end in /pdl):
// every call of the case's graph may start while the previous kernel finishes.
template <class Fn> auto with_launch(bool programmatic, Fn fn) {
  return [fn, programmatic](benchmark::State& s) {
    g_launch.programmatic_dependent = programmatic;
    fn(s);
    g_launch.programmatic_dependent = false;
  };
}
template <class Fn> auto pdl(Fn fn) {
  return with_launch(true, fn);
}

// Buffer copies needed so that a rotation through them exceeds twice the L2 (cold), or 1 (warm).
int rotation(std::size_t bytes, bool cold) {
  if (!cold)
    return 1;
  const std::size_t want = 2 * g_l2 + (g_l2 >> 1);
  return static_cast<int>(std::clamp<std::size_t>((want + bytes - 1) / bytes, 1, 64));
}

// Capture `calls` launches into a graph and report the time per call. Each iteration replays the
// graph back to back until at least 100 calls are timed, so that the host's graph-launch latency
// (a few microseconds per cudaGraphLaunch) is paid once per iteration, not once per `calls`, and
// a microsecond-sized kernel is timed in steady state (the reference measurements use 100-launch
// graphs for the same reason).
void time_graph(benchmark::State& st, int calls,
                const std::function<bool(int, cudaStream_t)>& launch, double bytes_per_call) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaGraph_t g;
  cudaGraphExec_t ge = nullptr;
  bool ok = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  for (int i = 0; ok && i < calls; ++i) {
    if (g_busy_ns > 0)
      bb::busy_kernel(g_busy_ns, g_busy_signal_ns, s);
    ok = launch(i, s);
  }
  ok = (cudaStreamEndCapture(s, &g) == cudaSuccess) && ok;
  ok = ok && cudaGraphInstantiate(&ge, g, 0) == cudaSuccess;
  if (!ok) {
    st.SkipWithError("capture or launch failed");
    cudaGetLastError();
    cudaStreamDestroy(s);
    return;
  }
  for (int w = 0; w < 3; ++w)
    cudaGraphLaunch(ge, s);
  cudaStreamSynchronize(s);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  // Replays per iteration: enough for 100 calls, but no more than about 5 ms of GPU time (a
  // millisecond-sized call gains nothing from amortising a microsecond of launch latency).
  float one_ms = 0.0f;
  cudaEventRecord(a, s);
  cudaGraphLaunch(ge, s);
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  cudaEventElapsedTime(&one_ms, a, b);
  const int by_time = one_ms > 0.0f ? static_cast<int>(5.0f / one_ms) : 1;
  const int replays = std::clamp(std::min((100 + calls - 1) / calls, by_time), 1, 100);
  for (auto _ : st) {
    cudaEventRecord(a, s);
    for (int r = 0; r < replays; ++r)
      cudaGraphLaunch(ge, s);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, a, b);
    st.SetIterationTime(ms / 1e3 / (static_cast<double>(calls) * replays));
  }
  st.counters["calls_timed"] = static_cast<double>(calls) * replays;
  if (cudaGetLastError() != cudaSuccess)
    st.SkipWithError("CUDA error during replay");
  if (bytes_per_call > 0) {
    st.counters["TBps"] =
        benchmark::Counter(bytes_per_call / 1e12, benchmark::Counter::kIsIterationInvariantRate);
    st.counters["frac_copy"] = benchmark::Counter(bytes_per_call / g_copy_Bps,
                                                  benchmark::Counter::kIsIterationInvariantRate);
    st.counters["us_floor"] = bytes_per_call / g_copy_Bps * 1e6;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

// Draft trees of `n` nodes (DDTree-shaped, depth <= 15) and, per node, the index of the planted
// maximum: the token of its first child, so the greedy walk goes down to a leaf.
struct Trees {
  std::vector<int32_t> parents, tokens, plant;
  std::vector<int64_t> cand, ridx, rnext, rsib;
};

Trees make_trees(int batch, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  Trees t;
  for (int b = 0; b < batch; ++b) {
    std::vector<float> logp(15 * 8);
    std::vector<int32_t> ids(15 * 8);
    for (int d = 0; d < 15; ++d) {
      std::vector<float> row(8);
      for (auto& v : row)
        v = -std::uniform_real_distribution<float>(0.0f, 4.0f)(rng);
      std::sort(row.rbegin(), row.rend());
      for (int r = 0; r < 8; ++r) {
        logp[d * 8 + r] = row[r];
        ids[d * 8 + r] = static_cast<int32_t>(rng() % kVocab);
      }
    }
    DraftTree tree = specbench::build_ddtree_reference(logp, ids, 15, 8, n - 1, 1);
    while (tree.size() < n) { // cannot happen with 8^15 paths, kept for safety
      tree.parents.push_back(0);
      tree.tokens.push_back(2);
    }
    for (int i = 0; i < n; ++i) {
      t.parents.push_back(tree.parents[i]);
      t.tokens.push_back(tree.tokens[i]);
      const int c = tree.first_child[i];
      t.plant.push_back(c >= 0 ? tree.tokens[c] : static_cast<int32_t>(rng() % kVocab));
    }
    const specbench::SglangTree s = specbench::to_sglang_layout(tree, b);
    t.cand.insert(t.cand.end(), s.candidates.begin(), s.candidates.end());
    t.ridx.insert(t.ridx.end(), s.retrive_index.begin(), s.retrive_index.end());
    t.rnext.insert(t.rnext.end(), s.retrive_next_token.begin(), s.retrive_next_token.end());
    t.rsib.insert(t.rsib.end(), s.retrive_next_sibling.begin(), s.retrive_next_sibling.end());
  }
  return t;
}

// ---- fused greedy verification vs the deployed path -------------------------------------------

// A tree's parents and tokens in one allocation, tokens `gap` bytes after parents (0: the next
// 512-byte boundary, where a caching allocator's next small block starts); the
// SPECBENCH_BENCH_TREE_GAP environment variable overrides it for every case. Where they lie can
// matter: on H100s the rows kernel of e3521f2 (reverted) took 0.4 us longer at tree sampling
// 1 x 4 with them 4, 8 or 64 KiB apart than up to 2 KiB, 16 KiB or 1 MiB apart, and with them in
// two allocations its time depended on where the driver put those (docs/kernels.md,
// 2026-12-07). Cases name the distance in their label.
struct PlacedTree {
  std::unique_ptr<DevMem> mem;
  int32_t* parents = nullptr;
  int32_t* tokens = nullptr;
  std::size_t gap = 0;
  std::string label() const { return "tokens " + std::to_string(gap) + " B after parents"; }
};
PlacedTree place_tree(const Trees& t, std::size_t gap = 0) {
  const std::size_t bytes = t.parents.size() * 4;
  if (gap == 0)
    gap = (bytes + 511) / 512 * 512;
  if (const char* e = std::getenv("SPECBENCH_BENCH_TREE_GAP"); e && *e)
    gap = std::strtoull(e, nullptr, 0);
  PlacedTree p;
  p.gap = std::max(gap, bytes);
  p.mem = std::make_unique<DevMem>(p.gap + bytes);
  p.parents = p.mem->as<int32_t>();
  p.tokens = reinterpret_cast<int32_t*>(p.mem->as<char>() + p.gap);
  cudaMemcpy(p.parents, t.parents.data(), bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(p.tokens, t.tokens.data(), bytes, cudaMemcpyHostToDevice);
  return p;
}

void BM_fused_greedy(benchmark::State& st, int batch, int n, bool cold, bool fp32) {
  const int64_t rows = int64_t(batch) * n;
  const std::size_t elem = fp32 ? 4 : 2;
  const std::size_t bytes = rows * kVocab * elem;
  const int R = rotation(bytes, cold);
  std::vector<std::unique_ptr<DevMem>> logits;
  const Trees t = make_trees(batch, n, 1);
  const PlacedTree tree = place_tree(t);
  DevMem plant(rows * 4), path(rows * 4), tgt(rows * 4), acc(batch * 4), bon(batch * 4);
  upload(plant, t.plant);
  for (int r = 0; r < R; ++r) {
    logits.push_back(std::make_unique<DevMem>(bytes));
    if (!logits.back()->p)
      return st.SkipWithError("out of device memory");
    if (fp32) {
      bb::fill_random_f32(logits.back()->as<float>(), rows * kVocab, 17 + r, nullptr);
    } else {
      bb::fill_random_bf16(logits.back()->as<uint16_t>(), rows * kVocab, 17 + r, nullptr);
      bb::plant_bf16(logits.back()->as<uint16_t>(), rows, kVocab, plant.as<int32_t>(), nullptr);
    }
  }
  const std::size_t wsb = k::verify_greedy_fused_workspace_bytes(batch, n, kVocab);
  DevMem ws(wsb);
  (void)k::clear_workspace(ws.p, wsb, nullptr);
  st.SetLabel(tree.label());
  cudaDeviceSynchronize();
  const int calls = cold ? R : 20;
  time_graph(
      st, calls,
      [&](int i, cudaStream_t s) {
        return k::verify_greedy_fused(
                   logits[i % R]->p, fp32 ? k::LogitsDtype::fp32 : k::LogitsDtype::bf16,
                   tree.parents, tree.tokens, batch, n, kVocab, tgt.as<int32_t>(),
                   path.as<int32_t>(), acc.as<int32_t>(), bon.as<int32_t>(), ws.p, wsb, s, g_launch)
            .is_ok();
      },
      static_cast<double>(bytes));
  // Sanity: with planted maxima the walk reaches a leaf, so something was accepted.
  int32_t a0 = -1;
  cudaMemcpy(&a0, acc.p, 4, cudaMemcpyDeviceToHost);
  st.counters["accepted0"] = a0;
}

// Which part of the in-project deployed path a case times. The parts line up with the columns of
// verify_kernels.md §5 (torch on an H200), which is how this baseline is checked against torch.
enum class DeployedPart {
  all,         // copy to fp32, argmax, one-thread walk
  argmax_fp32, // the argmax alone over fp32 logits ("argmax fp32 only")
};

void BM_deployed_greedy(benchmark::State& st, int batch, int n, bool cold,
                        DeployedPart part = DeployedPart::all) {
  const int64_t rows = int64_t(batch) * n;
  const std::size_t bytes = rows * kVocab * (part == DeployedPart::argmax_fp32 ? 4 : 2);
  const int R = rotation(bytes, cold);
  const Trees t = make_trees(batch, n, 1);
  std::vector<std::unique_ptr<DevMem>> logits;
  DevMem plant(rows * 4);
  upload(plant, t.plant);
  for (int r = 0; r < R; ++r) {
    logits.push_back(std::make_unique<DevMem>(rows * kVocab * 2));
    if (!logits.back()->p)
      return st.SkipWithError("out of device memory");
    bb::fill_random_bf16(logits.back()->as<uint16_t>(), rows * kVocab, 17 + r, nullptr);
    bb::plant_bf16(logits.back()->as<uint16_t>(), rows, kVocab, plant.as<int32_t>(), nullptr);
  }
  // argmax_fp32 reads fp32 copies of the rotated logits, made once here.
  std::vector<std::unique_ptr<DevMem>> logits32;
  if (part == DeployedPart::argmax_fp32)
    for (int r = 0; r < R; ++r) {
      logits32.push_back(std::make_unique<DevMem>(bytes));
      if (!logits32.back()->p)
        return st.SkipWithError("out of device memory");
      bb::bf16_to_f32(logits[r]->as<uint16_t>(), logits32.back()->as<float>(), rows * kVocab,
                      nullptr);
      logits[r].reset(); // only the fp32 copies are read
    }
  // The fp32 copy only the whole path writes (4 bytes for argmax_fp32, never touched).
  DevMem f32(part == DeployedPart::all ? rows * kVocab * 4 : 4), pred64(rows * 8), cand(rows * 8),
      ridx(rows * 8), rnext(rows * 8), rsib(rows * 8), predicts(rows * 4), aidx(batch * 16 * 4),
      anum(batch * 4);
  if (!f32.p)
    return st.SkipWithError("out of device memory");
  upload(cand, t.cand);
  upload(ridx, t.ridx);
  upload(rnext, t.rnext);
  upload(rsib, t.rsib);
  cudaMemset(pred64.p, 0xFF, rows * 8);
  cudaDeviceSynchronize();
  const int calls = cold ? R : 20;
  time_graph(
      st, calls,
      [&](int i, cudaStream_t s) {
        if (part == DeployedPart::argmax_fp32) {
          bb::argmax_rows_f32(logits32[i % R]->as<float>(), rows, kVocab, pred64.as<int64_t>(), s);
          return cudaGetLastError() == cudaSuccess;
        }
        bb::deployed_greedy(logits[i % R]->as<uint16_t>(), f32.as<float>(), pred64.as<int64_t>(),
                            predicts.as<int32_t>(), aidx.as<int32_t>(), anum.as<int32_t>(),
                            cand.as<int64_t>(), ridx.as<int64_t>(), rnext.as<int64_t>(),
                            rsib.as<int64_t>(), batch, n, kVocab, 16, s);
        return cudaGetLastError() == cudaSuccess;
      },
      static_cast<double>(bytes));
  // The baseline must be right to be a baseline: every row's argmax is its planted maximum.
  std::vector<int64_t> got(rows);
  cudaMemcpy(got.data(), pred64.p, rows * 8, cudaMemcpyDeviceToHost);
  for (int64_t r = 0; r < rows; ++r)
    if (got[r] != t.plant[r])
      return st.SkipWithError("the deployed path's argmax missed a planted maximum");
  if (part != DeployedPart::all)
    return;
  int32_t a0 = -1;
  cudaMemcpy(&a0, anum.p, 4, cudaMemcpyDeviceToHost);
  st.counters["accepted0"] = a0;
}

// ---- after the LM head: the verifier where a server runs it ----------------------------------
#if SPECBENCH_BENCH_CUBLAS
// In a server the verifier runs right after the LM head's GEMM, which has just written the logits:
// they sit in L2, while the 1.56 GB of weights it streamed have pushed the verifier's code and
// small arrays out. Neither "cold" (logits in HBM) nor "warm" (everything in L2) is that state.
// These cases run the real GEMM (cuBLAS, bf16, hidden 5120 x vocab 151,936, fp32 accumulation)
// before every call and time graph A (GEMM alone) and graph B (GEMM then the call) alternately;
// `added_us` is the median over iterations of (B - A) per call: what the call adds to the step.
constexpr int kHidden = 5120;

// What follows the LM head in a case: the launch of one call on the GEMM's logits.
using AfterLmHead = std::function<bool(const uint16_t* logits, cudaStream_t)>;

void time_after_lm_head(benchmark::State& st, int rows, const std::vector<int32_t>& plant,
                        const AfterLmHead& call) {
  const std::size_t wbytes = std::size_t(kVocab) * kHidden * 2;
  DevMem w(wbytes), x(std::size_t(rows) * kHidden * 2), logits(std::size_t(rows) * kVocab * 2),
      idx(std::size_t(rows) * 4), cublas_ws(32u << 20);
  if (!w.p || !x.p || !logits.p || !cublas_ws.p)
    return st.SkipWithError("out of device memory");
  upload(idx, plant);
  bb::fill_random_bf16(w.as<uint16_t>(), int64_t(kVocab) * kHidden, 99, nullptr);
  bb::plant_lm_head(w.as<uint16_t>(), x.as<uint16_t>(), rows, kHidden, idx.as<int32_t>(), nullptr);
  cublasHandle_t h = nullptr;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
    return st.SkipWithError("cublasCreate failed");
  struct Handle {
    cublasHandle_t h;
    ~Handle() { cublasDestroy(h); }
  } handle{h};
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  // A workspace of its own, so that capturing the GEMM allocates nothing.
  cublasSetStream(h, s);
  cublasSetWorkspace(h, cublas_ws.p, 32u << 20);
  const float one = 1.0f, zero = 0.0f;
  // logits [rows, V] = x [rows, K] x w[V, K]^T, in cuBLAS' column-major terms C (V x rows) =
  // W^T(op) x X, as torch's F.linear asks for it.
  const auto gemm = [&] {
    return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(kVocab), rows, kHidden, &one,
                        w.p, CUDA_R_16BF, kHidden, x.p, CUDA_R_16BF, kHidden, &zero, logits.p,
                        CUDA_R_16BF, static_cast<int>(kVocab), CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  };
  // One step outside capture loads the modules, then the two graphs of `calls` steps each.
  constexpr int calls = 8;
  bool ok = gemm() && call(logits.as<uint16_t>(), s) && cudaStreamSynchronize(s) == cudaSuccess;
  cudaGraphExec_t ge[2] = {nullptr, nullptr};
  for (int with_call = 0; ok && with_call < 2; ++with_call) {
    cudaGraph_t g;
    ok = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
    for (int i = 0; ok && i < calls; ++i)
      ok = gemm() && (!with_call || call(logits.as<uint16_t>(), s));
    ok = (cudaStreamEndCapture(s, &g) == cudaSuccess) && ok;
    ok = ok && cudaGraphInstantiate(&ge[with_call], g, 0) == cudaSuccess;
    cudaGraphDestroy(g);
  }
  if (!ok) {
    st.SkipWithError("capture or launch failed");
    cudaGetLastError();
  } else {
    cudaEvent_t e[3];
    for (auto& ev : e)
      cudaEventCreate(&ev);
    for (int w_ = 0; w_ < 2; ++w_) {
      cudaGraphLaunch(ge[0], s);
      cudaGraphLaunch(ge[1], s);
    }
    std::vector<double> base, added;
    for (auto _ : st) {
      cudaEventRecord(e[0], s);
      cudaGraphLaunch(ge[0], s);
      cudaEventRecord(e[1], s);
      cudaGraphLaunch(ge[1], s);
      cudaEventRecord(e[2], s);
      cudaEventSynchronize(e[2]);
      float a_ms = 0.0f, b_ms = 0.0f;
      cudaEventElapsedTime(&a_ms, e[0], e[1]);
      cudaEventElapsedTime(&b_ms, e[1], e[2]);
      base.push_back(a_ms * 1e3 / calls);
      added.push_back((b_ms - a_ms) * 1e3 / calls);
      st.SetIterationTime(b_ms / 1e3 / calls);
    }
    if (cudaGetLastError() != cudaSuccess)
      st.SkipWithError("CUDA error during replay");
    st.counters["lm_head_us"] = specbench::percentile(base, 0.5);
    st.counters["added_us"] = specbench::percentile(added, 0.5);
    st.counters["added_us_p10"] = specbench::percentile(added, 0.1);
    st.counters["added_us_p90"] = specbench::percentile(added, 0.9);
    for (auto& ev : e)
      cudaEventDestroy(ev);
  }
  for (auto& g : ge)
    if (g)
      cudaGraphExecDestroy(g);
  cudaStreamDestroy(s);
}

// `deployed_no_walk`: the deployed path's copy and argmax only, to tell its walk's share.
// `walk_one_thread` / `walk_ours`: the walk alone on SGLang's buffers (SGLang's one-thread walk,
// verify_tree_greedy_sglang), the predictions given (cold like the tree, unlike after an argmax).
enum class AfterLmHeadCall {
  empty_kernel,
  fused,
  deployed,
  deployed_no_walk,
  walk_one_thread,
  walk_ours,
  read_once
};

void BM_after_lm_head(benchmark::State& st, AfterLmHeadCall what, int batch, int n) {
  const int64_t rows = int64_t(batch) * n;
  const Trees t = make_trees(batch, n, 1);
  const PlacedTree tree = place_tree(t);
  DevMem path(rows * 4), tgt(rows * 4), acc(batch * 4), bon(batch * 4), f32(rows * kVocab * 4),
      pred64(rows * 8), cand(rows * 8), ridx(rows * 8), rnext(rows * 8), rsib(rows * 8),
      predicts(rows * 4), aidx(batch * 16 * 4), out(132 * 8 * 4);
  upload(cand, t.cand);
  upload(ridx, t.ridx);
  upload(rnext, t.rnext);
  upload(rsib, t.rsib);
  upload(pred64, std::vector<int64_t>(t.plant.begin(), t.plant.end()));
  const std::size_t wsb = k::verify_greedy_fused_workspace_bytes(batch, n, kVocab);
  DevMem ws(wsb);
  (void)k::clear_workspace(ws.p, wsb, nullptr);
  cudaMemset(acc.p, 0xFF, batch * 4);
  AfterLmHead call;
  switch (what) {
  case AfterLmHeadCall::empty_kernel:
    call = [](const uint16_t*, cudaStream_t s) {
      bb::empty_kernel(s);
      return cudaGetLastError() == cudaSuccess;
    };
    break;
  case AfterLmHeadCall::fused:
    call = [&](const uint16_t* logits, cudaStream_t s) {
      return k::verify_greedy_fused(logits, k::LogitsDtype::bf16, tree.parents, tree.tokens, batch,
                                    n, kVocab, tgt.as<int32_t>(), path.as<int32_t>(),
                                    acc.as<int32_t>(), bon.as<int32_t>(), ws.p, wsb, s, g_launch)
          .is_ok();
    };
    break;
  case AfterLmHeadCall::deployed:
    call = [&](const uint16_t* logits, cudaStream_t s) {
      bb::deployed_greedy(logits, f32.as<float>(), pred64.as<int64_t>(), predicts.as<int32_t>(),
                          aidx.as<int32_t>(), acc.as<int32_t>(), cand.as<int64_t>(),
                          ridx.as<int64_t>(), rnext.as<int64_t>(), rsib.as<int64_t>(), batch, n,
                          kVocab, 16, s);
      return cudaGetLastError() == cudaSuccess;
    };
    break;
  case AfterLmHeadCall::deployed_no_walk: // steps 1 and 2 of bb::deployed_greedy
    call = [&](const uint16_t* logits, cudaStream_t s) {
      bb::bf16_to_f32(logits, f32.as<float>(), rows * kVocab, s);
      bb::argmax_rows_f32(f32.as<float>(), rows, kVocab, pred64.as<int64_t>(), s);
      return cudaGetLastError() == cudaSuccess;
    };
    break;
  case AfterLmHeadCall::walk_one_thread:
    call = [&](const uint16_t*, cudaStream_t s) {
      bb::walk_one_thread(predicts.as<int32_t>(), aidx.as<int32_t>(), acc.as<int32_t>(),
                          cand.as<int64_t>(), ridx.as<int64_t>(), rnext.as<int64_t>(),
                          rsib.as<int64_t>(), pred64.as<int64_t>(), batch, n, 16, s);
      return cudaGetLastError() == cudaSuccess;
    };
    break;
  case AfterLmHeadCall::walk_ours:
    call = [&](const uint16_t*, cudaStream_t s) {
      return k::verify_tree_greedy_sglang(predicts.as<int32_t>(), aidx.as<int32_t>(),
                                          acc.as<int32_t>(), cand.as<int64_t>(), ridx.as<int64_t>(),
                                          rnext.as<int64_t>(), rsib.as<int64_t>(),
                                          pred64.as<int64_t>(), batch, n, 16, s, g_launch)
          .is_ok();
    };
    break;
  case AfterLmHeadCall::read_once:
    call = [&](const uint16_t* logits, cudaStream_t s) {
      bb::read_once_f32(reinterpret_cast<const float*>(logits), rows * kVocab / 2, nullptr, 0,
                        out.as<float>(), 132 * 8, s, g_launch.programmatic_dependent);
      return cudaGetLastError() == cudaSuccess;
    };
    break;
  }
  if (what == AfterLmHeadCall::fused)
    st.SetLabel(tree.label());
  time_after_lm_head(st, static_cast<int>(rows), t.plant, call);
  // Sanity: the GEMM's rows have their maxima at the planted tokens, so the walks reach a leaf.
  if (what != AfterLmHeadCall::empty_kernel && what != AfterLmHeadCall::deployed_no_walk &&
      what != AfterLmHeadCall::read_once) {
    int32_t a0 = -1;
    cudaMemcpy(&a0, acc.p, 4, cudaMemcpyDeviceToHost);
    st.counters["accepted0"] = a0;
  }
}
#endif

// ---- walks from target tokens, L2-hot (the same buffers every call): ours vs one thread ------

void BM_walk(benchmark::State& st, int batch, int n, bool ours) {
  const int64_t rows = int64_t(batch) * n;
  const Trees t = make_trees(batch, n, 2);
  std::vector<int64_t> pred(t.plant.begin(), t.plant.end());
  std::vector<int32_t> tgt32(t.plant.begin(), t.plant.end());
  const PlacedTree tree = place_tree(t);
  DevMem tgt(rows * 4), path(rows * 4), acc(batch * 4), bon(batch * 4), cand(rows * 8),
      ridx(rows * 8), rnext(rows * 8), rsib(rows * 8), pred64(rows * 8), predicts(rows * 4),
      aidx(batch * 16 * 4);
  upload(tgt, tgt32);
  upload(cand, t.cand);
  upload(ridx, t.ridx);
  upload(rnext, t.rnext);
  upload(rsib, t.rsib);
  upload(pred64, pred);
  cudaDeviceSynchronize();
  if (ours)
    st.SetLabel(tree.label());
  time_graph(
      st, 100,
      [&](int, cudaStream_t s) {
        if (ours)
          return k::verify_tree_greedy(tree.parents, tree.tokens, tgt.as<int32_t>(), batch, n,
                                       path.as<int32_t>(), acc.as<int32_t>(), bon.as<int32_t>(), s)
              .is_ok();
        bb::walk_one_thread(predicts.as<int32_t>(), aidx.as<int32_t>(), acc.as<int32_t>(),
                            cand.as<int64_t>(), ridx.as<int64_t>(), rnext.as<int64_t>(),
                            rsib.as<int64_t>(), pred64.as<int64_t>(), batch, n, 16, s);
        return cudaGetLastError() == cudaSuccess;
      },
      0.0);
}

void BM_empty(benchmark::State& st) {
  time_graph(
      st, 100,
      [](int, cudaStream_t s) {
        bb::empty_kernel(s);
        return cudaGetLastError() == cudaSuccess;
      },
      0.0);
}

// The busy kernel alone (time_graph adds it before every call; the call itself launches nothing).
void BM_busy_alone(benchmark::State& st) {
  time_graph(
      st, 20, [](int, cudaStream_t) { return true; }, 0.0);
}

// ---- DDTree tree building --------------------------------------------------------------------

void BM_ddtree(benchmark::State& st, int batch, int budget, int depth, int kk, bool masks) {
  std::mt19937 rng(5);
  std::vector<float> logp(std::size_t(batch) * depth * kk);
  std::vector<int32_t> ids(logp.size()), roots(batch, 1);
  for (int b = 0; b < batch; ++b)
    for (int d = 0; d < depth; ++d) {
      // A realistic drafter row: log-softmax of random logits, top-k sorted.
      std::vector<float> row(kk);
      for (auto& v : row)
        v = std::normal_distribution<float>(0.0f, 2.0f)(rng);
      std::sort(row.rbegin(), row.rend());
      const float m = row[0];
      double z = 0.0;
      for (float v : row)
        z += std::exp(v - m);
      for (int r = 0; r < kk; ++r) {
        logp[(std::size_t(b) * depth + d) * kk + r] = row[r] - m - static_cast<float>(std::log(z));
        ids[(std::size_t(b) * depth + d) * kk + r] = static_cast<int32_t>(rng() % kVocab);
      }
    }
  const int n = budget + 1, W = (n + 31) / 32;
  DevMem dl(logp.size() * 4), di(ids.size() * 4), dr(batch * 4), cnt(batch * 4),
      par(std::size_t(batch) * n * 4), dep(par.p ? std::size_t(batch) * n * 4 : 0),
      tok(std::size_t(batch) * n * 4), fc(std::size_t(batch) * n * 4),
      ns(std::size_t(batch) * n * 4), pos(std::size_t(batch) * n * 4),
      mask(std::size_t(batch) * n * n), packed(std::size_t(batch) * n * W * 4);
  upload(dl, logp);
  upload(di, ids);
  upload(dr, roots);
  k::DdtreeOutputs o{cnt.as<int32_t>(),
                     par.as<int32_t>(),
                     dep.as<int32_t>(),
                     tok.as<int32_t>(),
                     fc.as<int32_t>(),
                     ns.as<int32_t>(),
                     pos.as<int32_t>(),
                     nullptr,
                     masks ? mask.as<uint8_t>() : nullptr,
                     masks ? packed.as<uint32_t>() : nullptr};
  cudaDeviceSynchronize();
  time_graph(
      st, 20,
      [&](int, cudaStream_t s) {
        return k::build_ddtree(dl.as<float>(), di.as<int32_t>(), dr.as<int32_t>(), nullptr, batch,
                               depth, kk, budget, o, s, g_launch)
            .is_ok();
      },
      0.0);
}

// ---- sampling verification --------------------------------------------------------------------

// `device_seed`: the seed and offset come from device memory (PhiloxArgs::device_seed_offset), as
// in a CUDA graph whose random state advances on the device. By default the rows are uniform noise
// with 1000 added at one child's token per node, not probabilities: every walk goes down to a leaf,
// whose row has no children to leave out of the bonus draw (the timing does not depend on the
// values otherwise). `force_path`: the path kernel even where the rows kernel would run
// (force_tree_sampling_kernel). `probs`: rows that are probabilities instead, uniform noise summing
// to about 0.4 and 0.6 at the first child's token, so that a walk goes on with probability about
// 0.6 at each node, stops at inner nodes too, and the bonus draw leaves their children out.
void BM_tree_sampling(benchmark::State& st, int batch, int n, bool cold, bool device_seed = false,
                      bool force_path = false, bool probs_rows = false, std::size_t tree_gap = 0) {
  k::force_tree_sampling_kernel(force_path ? "path" : "auto");
  struct Restore {
    ~Restore() { k::force_tree_sampling_kernel("auto"); }
  } restore;
  const int64_t rows = int64_t(batch) * n;
  const std::size_t bytes = rows * kVocab * 4;
  const int R = rotation(bytes, cold);
  const Trees t = make_trees(batch, n, 3);
  const PlacedTree tree = place_tree(t, tree_gap);
  DevMem plant(rows * 4), path(rows * 4), acc(batch * 4), bon(batch * 4);
  upload(plant, t.plant);
  std::vector<std::unique_ptr<DevMem>> probs;
  for (int r = 0; r < R; ++r) {
    probs.push_back(std::make_unique<DevMem>(bytes));
    if (!probs.back()->p)
      return st.SkipWithError("out of device memory");
    bb::fill_random_f32(probs.back()->as<float>(), rows * kVocab, 3 + r, nullptr,
                        probs_rows ? 0.8f / kVocab : 1.0f);
    bb::plant_f32(probs.back()->as<float>(), rows, kVocab, plant.as<int32_t>(), nullptr,
                  probs_rows ? 0.6f : 1000.0f);
  }
  DevMem seed(2 * sizeof(uint64_t));
  upload(seed, std::vector<uint64_t>{1, 0});
  st.SetLabel(k::verify_tree_sampling_launch(batch, n, kVocab) + "; " + tree.label());
  cudaDeviceSynchronize();
  time_graph(
      st, cold ? R : 20,
      [&](int i, cudaStream_t s) {
        const k::PhiloxArgs rng =
            device_seed ? k::PhiloxArgs{0, 0, seed.as<uint64_t>()} : k::PhiloxArgs{1, uint64_t(i)};
        return k::verify_tree_sampling(probs[i % R]->as<float>(), tree.parents, tree.tokens, batch,
                                       n, kVocab, rng, nullptr, path.as<int32_t>(),
                                       acc.as<int32_t>(), bon.as<int32_t>(), nullptr, 0, s,
                                       g_launch)
            .is_ok();
      },
      static_cast<double>(bytes));
}

void BM_chain_sampling(benchmark::State& st, int batch, int kk, bool cold) {
  const std::size_t tb = std::size_t(batch) * (kk + 1) * kVocab * 4,
                    db = std::size_t(batch) * kk * kVocab * 4;
  const int R = rotation(tb + db, cold);
  std::vector<std::unique_ptr<DevMem>> tp, dp;
  for (int r = 0; r < R; ++r) {
    tp.push_back(std::make_unique<DevMem>(tb));
    dp.push_back(std::make_unique<DevMem>(db));
    if (!tp.back()->p || !dp.back()->p)
      return st.SkipWithError("out of device memory");
    bb::fill_random_f32(tp.back()->as<float>(), tb / 4, 7 + r, nullptr);
    bb::fill_random_f32(dp.back()->as<float>(), db / 4, 70 + r, nullptr);
  }
  std::vector<int32_t> drafts(std::size_t(batch) * kk, 5);
  DevMem dd(drafts.size() * 4), out(std::size_t(batch) * (kk + 1) * 4), acc(batch * 4);
  upload(dd, drafts);
  const std::size_t wsb = k::verify_sampling_workspace_bytes(batch, kk + 1, kVocab);
  DevMem ws(wsb);
  (void)k::clear_workspace(ws.p, wsb, nullptr);
  cudaDeviceSynchronize();
  time_graph(
      st, cold ? R : 20,
      [&](int i, cudaStream_t s) {
        return k::verify_chain_sampling(dp[i % R]->as<float>(), dd.as<int32_t>(),
                                        tp[i % R]->as<float>(), batch, kk, kVocab,
                                        k::PhiloxArgs{1, uint64_t(i)}, out.as<int32_t>(),
                                        acc.as<int32_t>(), ws.p, wsb, s, g_launch)
            .is_ok();
      },
      static_cast<double>(tb + db));
}

// Reading the same inputs once (tree: target probabilities; chain: target and draft
// probabilities), the reference for the sampling verifiers' "x read-once" ratio.
void BM_read_once(benchmark::State& st, std::size_t floats_a, std::size_t floats_b, bool cold) {
  const std::size_t bytes = (floats_a + floats_b) * 4;
  const int R = rotation(bytes, cold);
  std::vector<std::unique_ptr<DevMem>> a, b;
  for (int r = 0; r < R; ++r) {
    a.push_back(std::make_unique<DevMem>(floats_a * 4));
    b.push_back(std::make_unique<DevMem>(floats_b * 4));
    if (!a.back()->p || !b.back()->p)
      return st.SkipWithError("out of device memory");
    bb::fill_random_f32(a.back()->as<float>(), floats_a, 3 + r, nullptr);
    if (floats_b > 0)
      bb::fill_random_f32(b.back()->as<float>(), floats_b, 70 + r, nullptr);
  }
  constexpr int kMaxBlocks = 132 * 8;
  DevMem out(kMaxBlocks * 4);
  cudaDeviceSynchronize();
  time_graph(
      st, cold ? R : 20,
      [&](int i, cudaStream_t s) {
        bb::read_once_f32(a[i % R]->as<float>(), floats_a, b[i % R]->as<float>(), floats_b,
                          out.as<float>(), kMaxBlocks, s, g_launch.programmatic_dependent);
        return cudaGetLastError() == cudaSuccess;
      },
      static_cast<double>(bytes));
}

void BM_copy(benchmark::State& st) {
  const std::size_t bytes = std::size_t(1) << 31;
  DevMem a(bytes), b(bytes);
  if (!a.p || !b.p)
    return st.SkipWithError("out of device memory");
  cudaMemset(a.p, 1, bytes);
  time_graph(
      st, 4,
      [&](int, cudaStream_t s) {
        return cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess;
      },
      2.0 * bytes);
}

double measure_copy_Bps() {
  const std::size_t bytes = std::size_t(1) << 31;
  DevMem a(bytes), b(bytes);
  if (!a.p || !b.p)
    return 0.0;
  cudaMemset(a.p, 1, bytes);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> t;
  for (int i = 0; i < 12; ++i) {
    cudaEventRecord(e0);
    cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (i >= 2)
      t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return 2.0 * bytes / (t[t.size() / 2] / 1e3);
}

} // namespace

int main(int argc, char** argv) {
  int dev_count = 0;
  if (cudaGetDeviceCount(&dev_count) != cudaSuccess || dev_count == 0 || !k::compiled_with_cuda()) {
    std::printf("SKIPPED: no usable CUDA device (or built without CUDA)\n");
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  g_l2 = static_cast<std::size_t>(prop.l2CacheSize);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  g_copy_Bps = measure_copy_Bps();
  benchmark::AddCustomContext("gpu", prop.name);
  benchmark::AddCustomContext("sm_count", std::to_string(prop.multiProcessorCount));
  benchmark::AddCustomContext("l2_bytes", std::to_string(prop.l2CacheSize));
  benchmark::AddCustomContext("cuda_driver_api", std::to_string(driver));
  benchmark::AddCustomContext("cuda_runtime", std::to_string(runtime));
  benchmark::AddCustomContext("copy_TBps_read_plus_write", std::to_string(g_copy_Bps / 1e12));

  auto reg = [](const std::string& name, auto fn, int iters) {
    benchmark::RegisterBenchmark(name.c_str(), fn)
        ->UseManualTime()
        ->Iterations(iters)
        ->Unit(benchmark::kMicrosecond);
  };
  reg("copy_d2d/2GiB", BM_copy, 10);
  reg("empty_kernel/graph", BM_empty, 50);
  const std::pair<int, int> shapes[] = {{1, 8},  {1, 16},  {1, 64},  {1, 65},
                                        {8, 16}, {16, 64}, {64, 64}, {256, 64}};
  for (auto [b, n] : shapes) {
    const std::string sz = "/B" + std::to_string(b) + "xN" + std::to_string(n);
    const bool small = int64_t(b) * n * kVocab * 2 < (40 << 20);
    reg(
        "fused_greedy_bf16" + sz + "/cold",
        [=](benchmark::State& s) { BM_fused_greedy(s, b, n, true, false); }, 20);
    if (small)
      reg(
          "fused_greedy_bf16" + sz + "/warm",
          [=](benchmark::State& s) { BM_fused_greedy(s, b, n, false, false); }, 50);
    reg(
        "deployed_greedy" + sz + "/cold",
        [=](benchmark::State& s) { BM_deployed_greedy(s, b, n, true); }, 10);
    reg(
        "deployed_argmax_fp32" + sz + "/cold",
        [=](benchmark::State& s) { BM_deployed_greedy(s, b, n, true, DeployedPart::argmax_fp32); },
        10);
    if (small) { // one read of the same bytes (as fp32 words): what the call costs beyond reading
      const std::size_t words = std::size_t(b) * n * kVocab / 2;
      reg(
          "read_once_fp32/fused_bytes" + sz + "/cold",
          [=](benchmark::State& s) { BM_read_once(s, words, 0, true); }, 20);
    }
  }
  // Programmatic dependent launch (kernels::LaunchOptions): each call of the graph may start while
  // the one before it finishes; read-once launched the same way is the reference.
  for (auto [b, n] : {std::pair{1, 8}, {1, 16}, {1, 65}, {8, 16}}) {
    const std::string sz = "/B" + std::to_string(b) + "xN" + std::to_string(n);
    reg("fused_greedy_bf16" + sz + "/cold/pdl",
        pdl([=](benchmark::State& s) { BM_fused_greedy(s, b, n, true, false); }), 20);
    reg("fused_greedy_bf16" + sz + "/warm/pdl",
        pdl([=](benchmark::State& s) { BM_fused_greedy(s, b, n, false, false); }), 50);
    const std::size_t words = std::size_t(b) * n * kVocab / 2;
    reg("read_once_fp32/fused_bytes" + sz + "/cold/pdl",
        pdl([=](benchmark::State& s) { BM_read_once(s, words, 0, true); }), 20);
  }
  // The same in a pipeline: each call after a 5 us kernel that allows the next launch only when it
  // ends (after_busy_5us; the least a programmatic launch can gain from), or 1 us before it ends
  // (after_signalling_busy_5us). Subtract the busy kernel alone for the call.
  constexpr unsigned kBusyNs = 5000;
  for (unsigned signal : {0u, kBusyNs - 1000}) {
    const std::string pre = signal ? "after_signalling_busy_5us" : "after_busy_5us";
    reg(pre + "/busy_kernel_alone",
        after_busy(kBusyNs, signal, [](benchmark::State& s) { BM_busy_alone(s); }), 20);
    for (bool p : {false, true}) {
      const std::string tag = p ? "/pdl" : "";
      const auto mode = [p](auto fn) { return with_launch(p, fn); };
      for (auto [b, n] : {std::pair{1, 8}, {1, 16}}) {
        const std::string sz = "/B" + std::to_string(b) + "xN" + std::to_string(n);
        reg(pre + "/fused_greedy_bf16" + sz + "/cold" + tag,
            after_busy(kBusyNs, signal,
                       mode([=](benchmark::State& s) { BM_fused_greedy(s, b, n, true, false); })),
            20);
        const std::size_t words = std::size_t(b) * n * kVocab / 2;
        reg(pre + "/read_once_fp32/fused_bytes" + sz + "/cold" + tag,
            after_busy(kBusyNs, signal,
                       mode([=](benchmark::State& s) { BM_read_once(s, words, 0, true); })),
            20);
      }
      const std::size_t fa = std::size_t(1) * 4 * kVocab;
      reg(pre + "/tree_sampling_fp32/B1xN4/cold" + tag,
          after_busy(kBusyNs, signal,
                     mode([](benchmark::State& s) { BM_tree_sampling(s, 1, 4, true); })),
          20);
      reg(pre + "/read_once_fp32/tree/B1xN4/cold" + tag,
          after_busy(kBusyNs, signal,
                     mode([=](benchmark::State& s) { BM_read_once(s, fa, 0, true); })),
          20);
    }
  }
#if SPECBENCH_BENCH_CUBLAS
  // The verifiers right after the LM head's GEMM (added_us: the pair minus the GEMM alone).
  {
    using C = AfterLmHeadCall;
    // Each iteration times two graphs of 8 steps (about 6 ms): enough iterations that the median
    // of the paired differences is stable to about 0.1 us.
    constexpr int kIters = 300;
    reg(
        "after_lm_head/empty_kernel",
        [](benchmark::State& s) { BM_after_lm_head(s, C::empty_kernel, 1, 1); }, kIters);
    for (auto [b, n] : {std::pair{1, 8}, {1, 16}, {1, 65}, {8, 16}}) {
      const std::string sz = "/B" + std::to_string(b) + "xN" + std::to_string(n);
      const std::pair<const char*, C> calls[] = {
          {"fused_greedy_bf16", C::fused},
          {"read_once_fp32/fused_bytes", C::read_once},
          {"deployed_greedy", C::deployed},
          {"deployed_greedy_without_walk", C::deployed_no_walk},
          {"walk_one_thread", C::walk_one_thread},
          {"walk_ours_sglang_layout", C::walk_ours}};
      for (const auto& call : calls) {
        const C what = call.second;
        reg(
            std::string("after_lm_head/") + call.first + sz,
            [=](benchmark::State& s) { BM_after_lm_head(s, what, b, n); }, kIters);
      }
      if (b == 1 && n <= 16)
        reg("after_lm_head/fused_greedy_bf16" + sz + "/pdl",
            pdl([=](benchmark::State& s) { BM_after_lm_head(s, C::fused, b, n); }), kIters);
    }
  }
#endif
  reg(
      "fused_greedy_fp32/B64xN64/cold",
      [](benchmark::State& s) { BM_fused_greedy(s, 64, 64, true, true); }, 20);
  // fp32 1 x 8 reads what bf16 1 x 16 reads, in the same launch (fused_small_width).
  reg(
      "fused_greedy_fp32/B1xN8/cold",
      [](benchmark::State& s) { BM_fused_greedy(s, 1, 8, true, true); }, 20);
  for (auto [b, n] : {std::pair{1, 8}, {8, 16}, {64, 64}, {256, 64}}) {
    const std::string sz = "/B" + std::to_string(b) + "xN" + std::to_string(n);
    reg(
        "walk_ours" + sz, [=](benchmark::State& s) { BM_walk(s, b, n, true); }, 50);
    reg(
        "walk_one_thread" + sz, [=](benchmark::State& s) { BM_walk(s, b, n, false); }, 50);
  }
  for (int b : {1, 64})
    for (int budget : {16, 64, 128, 256, 1024}) {
      const int kk = std::min(budget, 64);
      const std::string sz = "/B" + std::to_string(b) + "/budget" + std::to_string(budget) +
                             "/depth16/k" + std::to_string(kk);
      reg(
          "ddtree_build" + sz + "/masks",
          [=](benchmark::State& s) { BM_ddtree(s, b, budget, 16, kk, true); }, 30);
      if (budget == 64)
        reg(
            "ddtree_build" + sz + "/no_masks",
            [=](benchmark::State& s) { BM_ddtree(s, b, budget, 16, kk, false); }, 30);
      if (budget == 64)
        reg("ddtree_build" + sz + "/masks/pdl",
            pdl([=](benchmark::State& s) { BM_ddtree(s, b, budget, 16, kk, true); }), 30);
    }
  // 1 x 65: the tree of a DDTree budget of 64 (the root and 64 nodes); it takes the block walk.
  for (auto [b, n] : {std::pair{1, 4},
                      {1, 8},
                      {2, 4},
                      {1, 16},
                      {1, 65},
                      {8, 16},
                      {64, 16},
                      {64, 64},
                      {1, 256},
                      {1, 1024}}) {
    const std::string sz = "/B" + std::to_string(b) + "xN" + std::to_string(n);
    reg(
        "tree_sampling_fp32" + sz + "/cold",
        [=](benchmark::State& s) { BM_tree_sampling(s, b, n, true); }, 20);
    if (b == 1 && (n == 16 || n == 65)) // one buffer: the inputs and the code stay in L2
      reg(
          "tree_sampling_fp32" + sz + "/warm",
          [=](benchmark::State& s) { BM_tree_sampling(s, b, n, false); }, 50);
    if (b * n <= 16) // where the rows kernel may run: the path kernel for comparison
      reg(
          "tree_sampling_fp32" + sz + "/cold/path",
          [=](benchmark::State& s) { BM_tree_sampling(s, b, n, true, false, true); }, 20);
    if ((b == 1 && n == 8) || (b == 8 && n == 16) || (b == 64 && n == 64))
      reg(
          "tree_sampling_fp32" + sz + "/cold/probs",
          [=](benchmark::State& s) { BM_tree_sampling(s, b, n, true, false, false, true); }, 20);
    if (b == 1 && (n == 4 || n == 8)) // a distance that cost e3521f2's rows kernel 0.4 us
      reg(
          "tree_sampling_fp32" + sz + "/cold/tree_4k_apart",
          [=](benchmark::State& s) { BM_tree_sampling(s, b, n, true, false, false, false, 4096); },
          20);
    if (b == 1 && n == 8)
      reg(
          "tree_sampling_fp32" + sz + "/cold/device_seed",
          [=](benchmark::State& s) { BM_tree_sampling(s, b, n, true, true); }, 20);
    const std::size_t fa = std::size_t(b) * n * kVocab;
    reg(
        "read_once_fp32/tree" + sz + "/cold",
        [=](benchmark::State& s) { BM_read_once(s, fa, 0, true); }, 20);
    if (b * n <= 8) {
      reg("tree_sampling_fp32" + sz + "/cold/pdl",
          pdl([=](benchmark::State& s) { BM_tree_sampling(s, b, n, true); }), 20);
      reg("read_once_fp32/tree" + sz + "/cold/pdl",
          pdl([=](benchmark::State& s) { BM_read_once(s, fa, 0, true); }), 20);
    }
  }
  for (auto [b, kk] : {std::pair{1, 7}, {8, 15}, {64, 7}}) {
    const std::string sz = "/B" + std::to_string(b) + "xK" + std::to_string(kk);
    reg(
        "chain_sampling_fp32" + sz + "/cold",
        [=](benchmark::State& s) { BM_chain_sampling(s, b, kk, true); }, 20);
    const std::size_t ft = std::size_t(b) * (kk + 1) * kVocab, fd = std::size_t(b) * kk * kVocab;
    reg(
        "read_once_fp32/chain" + sz + "/cold",
        [=](benchmark::State& s) { BM_read_once(s, ft, fd, true); }, 20);
    if (b == 1) {
      reg("chain_sampling_fp32" + sz + "/cold/pdl",
          pdl([=](benchmark::State& s) { BM_chain_sampling(s, b, kk, true); }), 20);
      reg("read_once_fp32/chain" + sz + "/cold/pdl",
          pdl([=](benchmark::State& s) { BM_read_once(s, ft, fd, true); }), 20);
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
