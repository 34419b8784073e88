// The CUDA kernels against their CPU references on the shared test vectors: every output
// compared element by element (outputs poisoned first, so unwritten elements show), many shapes
// and trees (chains, stars, deep, DDTree trees, budgets 1..1024), ties, NaN and infinite logits,
// and chi-square tests that the sampling verifiers keep the target distribution.
#if SPECBENCH_HAVE_CUDA
#include "gpu_test_support.hpp"
#include "specbench/kernels.hpp"
#include "specbench/sampling_reference.hpp"
#include "specbench/sglang_layout.hpp"
#include "test_vectors.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

using namespace specbench;
using namespace specbench::testing;
namespace k = specbench::kernels;

namespace {

template <class T> struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t count) : n(count) {
    if (cudaMalloc(&p, std::max<size_t>(1, n) * sizeof(T)) != cudaSuccess)
      p = nullptr;
  }
  explicit Dev(const std::vector<T>& v) : Dev(v.size()) { upload(v); }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  void upload(const std::vector<T>& v) {
    cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  void poison() { cudaMemset(p, 0xA5, std::max<size_t>(1, n) * sizeof(T)); }
  std::vector<T> get() const {
    std::vector<T> v(n);
    cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return v;
  }
};

struct Workspace {
  void* p = nullptr;
  size_t bytes = 0;
  explicit Workspace(size_t b) : bytes(b) {
    cudaMalloc(&p, std::max<size_t>(b, 16));
    (void)k::clear_workspace(p, bytes, nullptr);
  }
  ~Workspace() { cudaFree(p); }
};

/// One launcher call captured into a CUDA graph on `stream` in cudaStreamCaptureModeGlobal (the
/// default of PyTorch's torch.cuda.graph), for tests that replay it with new inputs written into
/// the same buffers. `error()` is the first CUDA error of the capture, `status()` the launcher's.
class CapturedCall {
public:
  template <class Call> CapturedCall(cudaStream_t stream, Call call) : stream_(stream) {
    error_ = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    if (error_ != cudaSuccess)
      return;
    status_ = call();
    error_ = cudaStreamEndCapture(stream, &graph_);
    if (error_ == cudaSuccess && status_.is_ok())
      error_ = cudaGraphInstantiate(&exec_, graph_, 0);
  }
  ~CapturedCall() {
    if (exec_)
      cudaGraphExecDestroy(exec_);
    if (graph_)
      cudaGraphDestroy(graph_);
  }
  CapturedCall(const CapturedCall&) = delete;
  CapturedCall& operator=(const CapturedCall&) = delete;
  cudaError_t error() const { return error_; }
  const Status& status() const { return status_; }
  /// One replay, after the inputs' uploads are done, waited for.
  cudaError_t replay() const {
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess)
      e = cudaGraphLaunch(exec_, stream_);
    return e == cudaSuccess ? cudaStreamSynchronize(stream_) : e;
  }

private:
  cudaStream_t stream_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  cudaError_t error_ = cudaSuccess;
  Status status_;
};

constexpr TreeShape kShapes[] = {TreeShape::chain, TreeShape::star, TreeShape::deep,
                                 TreeShape::bushy, TreeShape::ddtree};

// torch.argmax semantics written plainly: first NaN if any, else first maximum.
int32_t torch_argmax(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (std::isnan(x[i]))
      return static_cast<int32_t>(i);
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best])
      best = i;
  return static_cast<int32_t>(best);
}

/// torch.argmax of each row of `x` (rows of V values).
std::vector<int32_t> argmax_rows(const std::vector<float>& x, int64_t V) {
  std::vector<int32_t> out(x.size() / static_cast<size_t>(V));
  for (size_t r = 0; r < out.size(); ++r)
    out[r] = torch_argmax(x.data() + r * V, V);
  return out;
}

/// Uploads `logits` as the kernels read them: bf16 into `lb` or fp32 into `lf`. Returns the values
/// the kernel sees (rounded to bf16 for bf16).
std::vector<float> upload_logits(k::LogitsDtype dtype, const std::vector<float>& logits,
                                 Dev<uint16_t>& lb, Dev<float>& lf) {
  if (dtype != k::LogitsDtype::bf16) {
    lf.upload(logits);
    return logits;
  }
  std::vector<float> seen(logits.size());
  std::vector<uint16_t> h(logits.size());
  for (size_t i = 0; i < h.size(); ++i) {
    h[i] = to_bf16(logits[i]);
    seen[i] = from_bf16(h[i]);
  }
  lb.upload(h);
  return seen;
}

std::vector<int32_t> flatten(const std::vector<DraftTree>& trees, bool parents) {
  std::vector<int32_t> v;
  for (const auto& t : trees) {
    const auto& src = parents ? t.parents : t.tokens;
    v.insert(v.end(), src.begin(), src.end());
  }
  return v;
}

void expect_walk(const std::vector<DraftTree>& trees, const std::vector<int32_t>& targets,
                 const std::vector<int32_t>& path, const std::vector<int32_t>& acc,
                 const std::vector<int32_t>& bonus, const std::string& what) {
  const int n = trees[0].size();
  for (size_t b = 0; b < trees.size(); ++b) {
    const Acceptance a = verify_tree_reference(
        trees[b], std::span<const int32_t>(targets.data() + b * n, static_cast<size_t>(n)));
    ASSERT_EQ(acc[b], a.accepted_drafts()) << what << " request " << b;
    EXPECT_EQ(bonus[b], a.bonus_token) << what << " request " << b;
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(path[b * n + i], i < a.acceptance_length() ? a.path[i] : -1)
          << what << " request " << b << " slot " << i;
  }
}

} // namespace

TEST(KernelsGpu, ChainGreedyMatchesReference) {
  std::mt19937 rng(11);
  for (int kk : {0, 1, 5, 31, 32, 33, 100, 1000})
    for (int batch : {1, 5, 64}) {
      std::vector<int32_t> drafts(static_cast<size_t>(batch) * kk),
          target(static_cast<size_t>(batch) * (kk + 1));
      for (int b = 0; b < batch; ++b) {
        const int agree = static_cast<int>(rng() % (kk + 1));
        for (int i = 0; i <= kk; ++i) {
          target[b * (kk + 1) + i] = static_cast<int32_t>(rng() % 1000);
          if (i < kk)
            drafts[b * kk + i] = i < agree ? target[b * (kk + 1) + i] : rng() % 1000;
        }
      }
      Dev<int32_t> d(drafts), t(target), acc(batch), bon(batch);
      acc.poison();
      bon.poison();
      STATUS_OK(k::verify_chain_greedy(d.p, t.p, batch, kk, acc.p, bon.p, nullptr));
      const auto A = acc.get(), B = bon.get();
      for (int b = 0; b < batch; ++b) {
        const Acceptance r =
            verify_chain_reference(std::span<const int32_t>(drafts.data() + b * kk, kk),
                                   std::span<const int32_t>(target.data() + b * (kk + 1), kk + 1));
        EXPECT_EQ(A[b], r.accepted_drafts()) << "k=" << kk;
        EXPECT_EQ(B[b], r.bonus_token) << "k=" << kk;
      }
    }
}

TEST(KernelsGpu, TreeGreedyAndSglangLayoutMatchReference) {
  std::mt19937 rng(12);
  for (TreeShape shape : kShapes)
    // 2048 nodes: SGLang's walk then needs more than 48 KiB of shared memory (the opt-in path).
    for (int n : {1, 2, 8, 16, 64, 65, 257, 1025, 2048}) {
      const int batch = 1 + static_cast<int>(rng() % 5);
      std::vector<DraftTree> trees;
      std::vector<int32_t> targets;
      for (int b = 0; b < batch; ++b) {
        trees.push_back(make_tree(rng, shape, n, 300));
        const auto t = make_targets(rng, trees.back(), 300);
        targets.insert(targets.end(), t.begin(), t.end());
      }
      const std::string what = std::string(shape_name(shape)) + " n=" + std::to_string(n);
      Dev<int32_t> par(flatten(trees, true)), tok(flatten(trees, false)), tgt(targets);
      Dev<int32_t> path(static_cast<size_t>(batch) * n), acc(batch), bon(batch);
      path.poison();
      acc.poison();
      bon.poison();
      STATUS_OK(
          k::verify_tree_greedy(par.p, tok.p, tgt.p, batch, n, path.p, acc.p, bon.p, nullptr));
      expect_walk(trees, targets, path.get(), acc.get(), bon.get(), what);

      // SGLang layout, int64 buffers, with a step limit.
      const std::vector<int64_t> pred(targets.begin(), targets.end());
      const SglangTree sg = to_sglang_layout(trees);
      for (int steps : {1, 3, n + 1}) {
        Dev<int64_t> dc(sg.candidates), di(sg.retrive_index), dn(sg.retrive_next_token),
            ds(sg.retrive_next_sibling), dp(pred);
        Dev<int32_t> predicts(static_cast<size_t>(batch) * n),
            aidx(static_cast<size_t>(batch) * steps), anum(batch);
        std::vector<int32_t> init(static_cast<size_t>(batch) * n, -7);
        predicts.upload(init);
        aidx.poison();
        STATUS_OK(k::verify_tree_greedy_sglang(predicts.p, aidx.p, anum.p, dc.p, di.p, dn.p, ds.p,
                                               dp.p, batch, n, steps, nullptr));
        const auto P = predicts.get(), I = aidx.get(), N = anum.get();
        for (int b = 0; b < batch; ++b) {
          const SglangAcceptance r =
              verify_tree_greedy_sglang_reference(to_sglang_layout(trees[b], b), pred, steps);
          ASSERT_EQ(N[b], r.accept_token_num) << what << " steps " << steps;
          for (int j = 0; j < steps; ++j)
            EXPECT_EQ(I[b * steps + j], r.accept_index[j]) << what;
          for (const auto& [g, v] : r.predicts)
            init[g] = v;
        }
        EXPECT_EQ(P, init) << what << " steps " << steps;
      }
    }
}

namespace {
enum class Special { none, ties, nan, inf, zeros };

void run_fused(k::LogitsDtype dtype, int batch, int n, int64_t V, TreeShape shape, Special sp,
               std::mt19937& rng, bool chain_null_parents) {
  std::vector<DraftTree> trees;
  std::vector<float> logits(static_cast<size_t>(batch) * n * V);
  std::normal_distribution<float> g(0.0f, 3.0f);
  for (auto& x : logits)
    x = g(rng);
  for (int b = 0; b < batch; ++b) {
    trees.push_back(make_tree(rng, chain_null_parents ? TreeShape::chain : shape, n,
                              static_cast<int>(std::min<int64_t>(V, 1 << 30))));
    const auto want = make_targets(rng, trees.back(), static_cast<int>(V));
    for (int i = 0; i < n; ++i) {
      float* row = logits.data() + (static_cast<size_t>(b) * n + i) * V;
      row[want[i]] = 20.0f; // the planted maximum (exact in bf16)
      switch (sp) {
      case Special::ties: // an equal maximum later and sometimes earlier: the first must win
        row[(want[i] + 1 + rng() % (V - 1)) % V] = 20.0f;
        break;
      case Special::nan:
        if (rng() % 2)
          row[rng() % V] = NAN;
        if (rng() % 3 == 0)
          row[rng() % V] = -NAN;
        break;
      case Special::inf:
        if (rng() % 2)
          row[rng() % V] = INFINITY;
        if (rng() % 2)
          row[rng() % V] = -INFINITY;
        if (rng() % 4 == 0)
          for (int64_t v = 0; v < V; ++v)
            row[v] = -INFINITY; // all -inf: index 0
        break;
      case Special::zeros: // +0 and -0 tie: the first wins
        for (int64_t v = 0; v < V; ++v)
          row[v] = (v % 3 == 0) ? -0.0f : -1.0f;
        if (rng() % 2)
          row[rng() % V] = 0.0f;
        break;
      default:
        break;
      }
    }
  }
  Dev<float> lf(logits.size());
  Dev<uint16_t> lb(logits.size());
  const std::vector<int32_t> expect = argmax_rows(upload_logits(dtype, logits, lb, lf), V);
  Dev<int32_t> par(flatten(trees, true)), tok(flatten(trees, false));
  Dev<int32_t> tgt(expect.size()), path(expect.size()), acc(batch), bon(batch);
  Workspace ws(k::verify_greedy_fused_workspace_bytes(batch, n, V));
  const void* x = dtype == k::LogitsDtype::bf16 ? static_cast<const void*>(lb.p) : lf.p;
  for (int rep = 0; rep < 2; ++rep) { // the second call checks the workspace was reset
    tgt.poison();
    path.poison();
    acc.poison();
    STATUS_OK(k::verify_greedy_fused(x, dtype, chain_null_parents ? nullptr : par.p, tok.p, batch,
                                     n, V, tgt.p, path.p, acc.p, bon.p, ws.p, ws.bytes, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    const std::string what = std::string(dtype == k::LogitsDtype::bf16 ? "bf16" : "fp32") +
                             " V=" + std::to_string(V) + " n=" + std::to_string(n) +
                             " b=" + std::to_string(batch) + " special=" + std::to_string(int(sp));
    ASSERT_EQ(tgt.get(), expect) << what;
    expect_walk(trees, expect, path.get(), acc.get(), bon.get(), what);
  }
}
} // namespace

// A server captures the verify step once in a CUDA graph and replays it every decoding step with
// new logits and a new tree in the same buffers. Every replay must give that step's answers: the
// request counters and slots that the call leaves zeroed are the only state carried from one
// replay to the next (small requests, whose blocks take their ticket before their loads, and the
// general tail alike). The graph tests capture in cudaStreamCaptureModeGlobal, the default of
// PyTorch's torch.cuda.graph (docs.pytorch.org, torch.cuda.graph, capture_error_mode='global'):
// run alone, the capture is each launcher's first call in the process, so its per-device queries
// (occupancy, cluster limits, attributes) run inside the capture too.
TEST(KernelsGpu, FusedGreedyGraphReplaysGiveEachStepsAnswers) {
  std::mt19937 rng(29);
  struct Shape {
    k::LogitsDtype dtype;
    int batch, n;
    int64_t V;
    bool chain;
  };
  const Shape shapes[] = {
      {k::LogitsDtype::bf16, 1, 8, 151936, false},  {k::LogitsDtype::bf16, 1, 16, 151936, false},
      {k::LogitsDtype::bf16, 3, 16, 151936, false}, {k::LogitsDtype::bf16, 2, 31, 151936, false},
      {k::LogitsDtype::bf16, 1, 64, 151936, false}, {k::LogitsDtype::bf16, 4, 16, 32000, true},
      {k::LogitsDtype::fp32, 1, 16, 151936, false}};
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const Shape& sh : shapes) {
    const int batch = sh.batch, n = sh.n;
    const int64_t V = sh.V;
    const size_t rows = static_cast<size_t>(batch) * n;
    const bool bf16 = sh.dtype == k::LogitsDtype::bf16;
    Dev<uint16_t> lb(bf16 ? rows * V : 1);
    Dev<float> lf(bf16 ? 1 : rows * V);
    Dev<int32_t> par(rows), tok(rows), tgt(rows), path(rows), acc(batch), bon(batch);
    Workspace ws(k::verify_greedy_fused_workspace_bytes(batch, n, V));
    const void* x = bf16 ? static_cast<const void*>(lb.p) : lf.p;
    const CapturedCall call(stream, [&] {
      return k::verify_greedy_fused(x, sh.dtype, sh.chain ? nullptr : par.p, tok.p, batch, n, V,
                                    tgt.p, path.p, acc.p, bon.p, ws.p, ws.bytes, stream);
    });
    STATUS_OK(call.status());
    CUDA_OK(call.error());
    for (int step = 0; step < 5; ++step) {
      // This step's trees and logits, each node's maximum planted where its target should be.
      std::vector<DraftTree> trees;
      std::vector<float> logits(rows * V);
      std::normal_distribution<float> g(0.0f, 3.0f);
      for (auto& v : logits)
        v = g(rng);
      for (int b = 0; b < batch; ++b) {
        trees.push_back(make_tree(rng, sh.chain ? TreeShape::chain : kShapes[rng() % 5], n,
                                  static_cast<int>(V)));
        const auto want = make_targets(rng, trees.back(), static_cast<int>(V));
        for (int i = 0; i < n; ++i)
          logits[(static_cast<size_t>(b) * n + i) * V + want[i]] = 20.0f;
      }
      const std::vector<int32_t> expect = argmax_rows(upload_logits(sh.dtype, logits, lb, lf), V);
      par.upload(flatten(trees, true));
      tok.upload(flatten(trees, false));
      tgt.poison();
      path.poison();
      acc.poison();
      bon.poison();
      CUDA_OK(call.replay());
      const std::string what = std::string(bf16 ? "bf16" : "fp32") + " " + std::to_string(batch) +
                               " x " + std::to_string(n) + " V=" + std::to_string(V) + " replay " +
                               std::to_string(step);
      ASSERT_EQ(tgt.get(), expect) << what;
      expect_walk(trees, expect, path.get(), acc.get(), bon.get(), what);
    }
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

// Parent arrays that are not trees (out-of-range parents, self-parents, cycles, parents after
// their children) must not hang or write outside the row: the walk follows first matching
// children from the root, as walk_by_first_match does. A tiny vocabulary makes matches common.
TEST(KernelsGpu, FusedWalkFollowsFirstMatchesOnMalformedParentArrays) {
  std::mt19937 rng(29);
  constexpr int64_t V = 4096;
  for (int n : {2, 8, 17, 31, 32, 33, 64})
    for (int rep = 0; rep < 6; ++rep) {
      const int batch = 1 + static_cast<int>(rng() % 3);
      const size_t rows = static_cast<size_t>(batch) * n;
      std::vector<int32_t> parents(rows), tokens(rows), want(rows);
      std::vector<uint16_t> logits(rows * V, to_bf16(-1.0f));
      for (size_t r = 0; r < rows; ++r) {
        const int i = static_cast<int>(r % n);
        parents[r] = rep % 2 == 0 ? static_cast<int32_t>(rng() % (n + 3)) - 2        // anything
                                  : (i == 0 ? -1 : static_cast<int32_t>(rng() % n)); // cycles
        tokens[r] = static_cast<int32_t>(rng() % 3);
        want[r] = static_cast<int32_t>(rng() % 3);
        logits[r * V + want[r]] = to_bf16(5.0f);
      }
      Dev<uint16_t> x(logits.size());
      x.upload(logits);
      Dev<int32_t> par(parents), tok(tokens), tgt(rows), path(rows), acc(batch), bon(batch);
      Workspace ws(k::verify_greedy_fused_workspace_bytes(batch, n, V));
      path.poison();
      STATUS_OK(k::verify_greedy_fused(x.p, k::LogitsDtype::bf16, par.p, tok.p, batch, n, V, tgt.p,
                                       path.p, acc.p, bon.p, ws.p, ws.bytes, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
      ASSERT_EQ(tgt.get(), want);
      const auto got_path = path.get(), got_acc = acc.get(), got_bonus = bon.get();
      for (int b = 0; b < batch; ++b) {
        const auto slice = [&](const std::vector<int32_t>& v) {
          return std::vector<int32_t>(v.begin() + b * n, v.begin() + (b + 1) * n);
        };
        const std::vector<int32_t> expect =
            walk_by_first_match(slice(parents), slice(tokens), slice(want));
        const std::string what = "n=" + std::to_string(n) + " rep=" + std::to_string(rep) +
                                 " request " + std::to_string(b);
        ASSERT_EQ(got_acc[b], static_cast<int32_t>(expect.size()) - 1) << what;
        EXPECT_EQ(got_bonus[b], want[b * n + expect.back()]) << what;
        for (int i = 0; i < n; ++i)
          EXPECT_EQ(got_path[b * n + i], i < static_cast<int>(expect.size()) ? expect[i] : -1)
              << what << " slot " << i;
      }
    }
}

TEST(KernelsGpu, FusedGreedyMatchesTorchArgmaxAndWalk) {
  std::mt19937 rng(13);
  for (auto dtype : {k::LogitsDtype::bf16, k::LogitsDtype::fp32})
    for (int64_t V : {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{1001}, int64_t{4099},
                      int64_t{32000}, int64_t{151936}})
      // 31 nodes at V = 151,936 takes the small-tree walk without the lean tail (too many
      // slots for two warps); 8 and 16 take the lean tail; 64 and 65 the block walk.
      for (int n : {1, 8, 16, 31, 64, 65})
        for (int batch : {1, 3}) {
          if (V * n * batch > 40'000'000)
            continue;
          if (V < 2 && n > 1)
            continue;
          run_fused(dtype, batch, n, V, kShapes[rng() % 5], Special::none, rng, false);
        }
  for (auto dtype : {k::LogitsDtype::bf16, k::LogitsDtype::fp32})
    for (Special sp : {Special::ties, Special::nan, Special::inf, Special::zeros})
      for (int64_t V : {int64_t{999}, int64_t{5000}, int64_t{151936}})
        run_fused(dtype, 2, 9, V, TreeShape::bushy, sp, rng, false);
  // Chains via parents == nullptr, and a large batch whose vocabulary is not split.
  run_fused(k::LogitsDtype::bf16, 4, 16, 32000, TreeShape::chain, Special::none, rng, true);
  run_fused(k::LogitsDtype::bf16, 64, 16, 4096, TreeShape::bushy, Special::ties, rng, false);
  run_fused(k::LogitsDtype::fp32, 2, 257, 3000, TreeShape::ddtree, Special::none, rng, false);
  // More slots than the flat drain holds at once (1,024 x 1): the reducing block drains by rows.
  run_fused(k::LogitsDtype::bf16, 1, 1024, 32000, TreeShape::ddtree, Special::none, rng, false);
  // The largest vocabulary the issue names (262,144, as in Gemma's tokenizer), both tails.
  run_fused(k::LogitsDtype::bf16, 2, 16, 262144, TreeShape::bushy, Special::ties, rng, false);
  run_fused(k::LogitsDtype::bf16, 1, 40, 262144, TreeShape::ddtree, Special::none, rng, false);
  run_fused(k::LogitsDtype::fp32, 1, 8, 262144, TreeShape::deep, Special::nan, rng, false);
  // Every block width of the small-request kernel (fused_small_width, on a GPU of 132 SMs): bf16
  // 1 x 8 runs 256 threads, 1 x 16 320 and 1 x 18 384, fp32 1 x 8 320; with ties and NaN, whose
  // first occurrence may fall in another block's chunk at each width.
  for (Special sp : {Special::none, Special::ties, Special::nan}) {
    for (int n : {8, 16, 18})
      run_fused(k::LogitsDtype::bf16, 1, n, 151936, TreeShape::bushy, sp, rng, false);
    run_fused(k::LogitsDtype::fp32, 1, 8, 151936, TreeShape::deep, sp, rng, false);
  }
}

namespace {
std::vector<float> random_probs(std::mt19937& rng, int rows, int64_t V, bool sparse) {
  std::vector<float> p(static_cast<size_t>(rows) * V);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int r = 0; r < rows; ++r) {
    double s = 0.0;
    float* row = p.data() + static_cast<size_t>(r) * V;
    for (int64_t v = 0; v < V; ++v) {
      const float x = u(rng);
      row[v] = (sparse && rng() % 4 != 0) ? 0.0f : x * x * x;
      s += row[v];
    }
    if (s == 0.0)
      row[rng() % V] = 1.0f, s = 1.0;
    for (int64_t v = 0; v < V; ++v)
      row[v] = static_cast<float>(row[v] / s);
  }
  return p;
}
} // namespace

namespace {
/// Gives the children of most nodes most of their parent's mass (renormalised in double, stored
/// as float), so that walks go deep; `unnormalised` instead halves such a row after leaving mass
/// on the children only, so that walks stop with nothing left besides the children (the bonus
/// then comes from the whole row).
void plant_children(std::mt19937& rng, const DraftTree& t, float* rows, int64_t V,
                    bool unnormalised) {
  const int n = t.size();
  for (int x = 0; x < n; ++x) {
    if (t.first_child[x] < 0 || rng() % 8 == 0)
      continue;
    float* row = rows + static_cast<size_t>(x) * V;
    if (unnormalised)
      std::fill(row, row + V, 0.0f);
    for (int c = t.first_child[x]; c >= 0; c = t.next_sibling[c])
      if (t.tokens[c] >= 0 && t.tokens[c] < V)
        row[t.tokens[c]] += static_cast<float>(1 + rng() % 8);
    double s = 0.0;
    for (int64_t v = 0; v < V; ++v)
      s += row[v];
    const double scale = unnormalised ? 0.5 : 1.0;
    for (int64_t v = 0; v < V; ++v)
      row[v] = static_cast<float>(row[v] / s * scale);
  }
}

struct TreeSamplingCase {
  int batch, n;
  int64_t V;
  bool dev_seed, unnormalised, special; // special: NaN, negative and out-of-range entries
  int calls = 1;                        // repeated calls (nothing may carry over)
};

/// One call's inputs for a case: trees, rows (children planted so that walks go deep), the seed.
struct TreeSamplingInputs {
  std::vector<DraftTree> trees;
  std::vector<float> probs;
  uint64_t seed = 0, offset = 0;
};

TreeSamplingInputs make_tree_sampling_inputs(const TreeSamplingCase& c, std::mt19937& rng) {
  const int batch = c.batch, n = c.n;
  const int64_t V = c.V;
  TreeSamplingInputs in;
  std::vector<DraftTree>& trees = in.trees;
  for (int b = 0; b < batch; ++b)
    trees.push_back(make_tree(rng, kShapes[rng() % 5], n, static_cast<int>(V)));
  auto& probs = in.probs;
  probs = random_probs(rng, batch * n, V, rng() % 2 == 0);
  for (int b = 0; b < batch; ++b)
    plant_children(rng, trees[b], probs.data() + static_cast<size_t>(b) * n * V, V, c.unnormalised);
  if (c.special)
    for (int b = 0; b < batch; ++b)
      for (int i = 1; i < n; ++i) {
        const int32_t t = trees[b].tokens[i];
        float& x = probs[(static_cast<size_t>(b) * n + trees[b].parents[i]) * V + t];
        switch (rng() % 4) {
        case 0:
          x = std::numeric_limits<float>::quiet_NaN();
          break;
        case 1:
          x = -x;
          break;
        case 2:
          trees[b].tokens[i] = rng() % 2 ? -1 : static_cast<int32_t>(V);
          break;
        default:
          break;
        }
      }
  in.seed = 77 + rng() % 5;
  in.offset = 5 + rng() % 100;
  return in;
}

/// Checks one call's outputs (target tokens, paths, accepted counts, bonus tokens) against the
/// reference; returns how many requests' walks took two drafts or more.
int check_tree_sampling(const TreeSamplingCase& c, const TreeSamplingInputs& in,
                        const std::vector<int32_t>& T, const std::vector<int32_t>& P,
                        const std::vector<int32_t>& A, const std::vector<int32_t>& B,
                        const std::string& where) {
  const int batch = c.batch, n = c.n;
  const int64_t V = c.V;
  const std::string what = "V=" + std::to_string(V) + " n=" + std::to_string(n) +
                           " batch=" + std::to_string(batch) + " kernel " +
                           k::verify_tree_sampling_kernel(batch, n, V) + where;
  int deep = 0;
  for (int b = 0; b < batch; ++b) {
    const TreeSamplingResult r = verify_tree_sampling_reference(
        in.trees[b],
        std::span<const float>(in.probs.data() + static_cast<size_t>(b) * n * V,
                               static_cast<size_t>(n) * V),
        V, in.seed, in.offset, b);
    const auto& path_ref = r.acceptance.path;
    const int len = static_cast<int>(path_ref.size()) - 1;
    deep += len >= 2;
    EXPECT_EQ(A[b], len) << what << " request " << b;
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(P[b * n + i], i <= len ? path_ref[i] : -1) << what << " request " << b;
    EXPECT_TRUE(segment_race_draw_consistent(r.residual, r.coins, B[b]))
        << what << " request " << b << " bonus " << B[b] << " (reference "
        << r.acceptance.bonus_token << ")";
    for (int i = 0; i < n; ++i) {
      const int32_t want = i == path_ref[len] ? B[b] : r.target_tokens[i];
      EXPECT_EQ(T[b * n + i], want) << what << " request " << b << " node " << i;
    }
  }
  return deep;
}

/// Runs one case against the reference; returns how many requests' walks took two drafts or more.
int run_tree_sampling(const TreeSamplingCase& c, std::mt19937& rng) {
  const int batch = c.batch, n = c.n;
  const int64_t V = c.V;
  const TreeSamplingInputs in = make_tree_sampling_inputs(c, rng);
  Dev<float> dp(in.probs);
  Dev<int32_t> par(flatten(in.trees, true)), tok(flatten(in.trees, false));
  Dev<int32_t> tt(static_cast<size_t>(batch) * n), path(tt.n), acc(batch), bon(batch);
  Dev<uint64_t> so(std::vector<uint64_t>{in.seed, in.offset});
  const k::PhiloxArgs args{c.dev_seed ? 0 : in.seed, c.dev_seed ? 0 : in.offset,
                           c.dev_seed ? so.p : nullptr};
  for (int call = 0; call < c.calls; ++call) {
    tt.poison();
    path.poison();
    const Status st = k::verify_tree_sampling(dp.p, par.p, tok.p, batch, n, V, args, tt.p, path.p,
                                              acc.p, bon.p, nullptr, 0, nullptr);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    if (!st.is_ok())
      return 0;
  }
  return check_tree_sampling(c, in, tt.get(), path.get(), acc.get(), bon.get(), "");
}
} // namespace

TEST(KernelsGpu, TreeSamplingWalksLikeTheReferenceAndDrawsFromTheResidual) {
  std::mt19937 rng(14);
  int deep = 0;
  for (int64_t V : {int64_t{5}, int64_t{1001}, int64_t{4096}, int64_t{151936}})
    for (int n : {1, 8, 31, 33, 65, 96, 97, 300})
      for (bool dev_seed : {false, true}) {
        const int batch = V > 100000 ? 4 : 6;
        if (V * n * batch > 40'000'000)
          continue;
        deep += run_tree_sampling({batch, n, V, dev_seed, false, false}, rng);
      }
  // Rows that do not sum to 1, whose children hold all their mass: the bonus falls back to p_f.
  deep += run_tree_sampling({8, 8, 4099, false, true, false}, rng);
  deep += run_tree_sampling({4, 40, 2048, false, true, false}, rng);
  // NaN, negative and out-of-range children (weight 0, never taken).
  deep += run_tree_sampling({8, 16, 3000, false, false, true}, rng);
  deep += run_tree_sampling({4, 64, 3000, true, false, true}, rng);
  // Many requests: smaller clusters, warps racing several segments; the largest vocabulary.
  deep += run_tree_sampling({48, 16, 32000, false, false, false}, rng);
  deep += run_tree_sampling({2, 4, 262144, false, false, false}, rng);
  deep += run_tree_sampling({1, 8, 1'500'007, false, false, false}, rng);
  // The largest trees (the block walk's sibling lists): every shape, stars with repeated tokens.
  for (int rep = 0; rep < 3; ++rep) {
    deep += run_tree_sampling({4, 1024, 4096, rep == 1, false, false}, rng);
    deep += run_tree_sampling({3, 2048, 1001, false, rep == 2, rep == 0}, rng);
  }
  EXPECT_GT(deep, 20) << "too few walks went two drafts deep: the planted mass did not work";
}

TEST(KernelsGpu, TreeSamplingRowsKernelMatchesTheReference) {
  // The smallest calls load every node's row while the walk runs, a cluster per row ("rows"):
  // the same walks and draws. Each shape must take that kernel, or the test would not test it.
  std::mt19937 rng(15);
  int deep = 0;
  const std::vector<TreeSamplingCase> cases = {
      {1, 8, 151936, false, false, false, 3}, // the benchmark's shape, three calls
      {1, 8, 151936, true, false, false},     // seed from device memory
      {2, 4, 151936, false, false, false},    {1, 4, 151936, false, false, false},
      {2, 16, 32000, false, false, false},    {1, 31, 4096, false, false, false, 2},
      {2, 32, 1024, false, false, false}, // one segment per row
      {1, 1, 4096, false, false, false},  // the root alone
      {4, 8, 4100, false, true, false},   // unnormalised rows: the fallback to p_f
      {2, 16, 3000, false, false, true},  // NaN, negative and out-of-range children
  };
  for (const TreeSamplingCase& c : cases) {
    ASSERT_STREQ(k::verify_tree_sampling_kernel(c.batch, c.n, c.V), "rows")
        << "batch " << c.batch << " n " << c.n << " V " << c.V;
    for (int round = 0; round < 3; ++round) // new trees and rows each round
      deep += run_tree_sampling(c, rng);
  }
  // The same shapes forced onto the path kernel (force_tree_sampling_kernel, for benchmarks).
  ASSERT_TRUE(k::force_tree_sampling_kernel("path"));
  EXPECT_STREQ(k::verify_tree_sampling_kernel(1, 8, 151936), "path");
  deep += run_tree_sampling(cases[0], rng);
  deep += run_tree_sampling(cases[4], rng);
  const char* other_thread = nullptr; // the choice is the calling thread's only
  std::thread([&] { other_thread = k::verify_tree_sampling_kernel(1, 8, 151936); }).join();
  EXPECT_STREQ(other_thread, "rows");
  EXPECT_FALSE(k::force_tree_sampling_kernel("fastest"));
  EXPECT_STREQ(k::verify_tree_sampling_kernel(1, 8, 151936), "path") << "a bad name changed it";
  ASSERT_TRUE(k::force_tree_sampling_kernel(nullptr));
  EXPECT_STREQ(k::verify_tree_sampling_kernel(1, 8, 151936), "rows");
  // The launch description names the same kernel and the clusters (8 rows: one cluster each).
  EXPECT_EQ(k::verify_tree_sampling_launch(1, 8, 151936).rfind("rows: 8 clusters of ", 0), 0u)
      << k::verify_tree_sampling_launch(1, 8, 151936);
  EXPECT_EQ(k::verify_tree_sampling_launch(64, 64, 151936).rfind("path: 64 clusters of ", 0), 0u)
      << k::verify_tree_sampling_launch(64, 64, 151936);
  // Too many rows, more than 17 segments per block, more than 32 nodes, or rows that are not
  // 16-byte aligned: the path kernel (tested above).
  EXPECT_STREQ(k::verify_tree_sampling_kernel(64, 64, 151936), "path");
  EXPECT_STREQ(k::verify_tree_sampling_kernel(1, 16, 151936), "path");
  EXPECT_STREQ(k::verify_tree_sampling_kernel(1, 8, 262144), "path");
  EXPECT_STREQ(k::verify_tree_sampling_kernel(1, 33, 4096), "path");
  EXPECT_STREQ(k::verify_tree_sampling_kernel(1, 8, 4099), "path");
  // 51 requests; about one in five walks goes two drafts deep (3 of 17 in the first run).
  EXPECT_GT(deep, 3) << "too few walks went two drafts deep: the planted mass did not work";
}

namespace {
double chi_square(const std::vector<long>& counts, const std::vector<double>& p, long total,
                  bool* impossible) {
  double chi = 0.0;
  *impossible = false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0.0) {
      *impossible |= counts[i] != 0;
      continue;
    }
    const double e = p[i] * total;
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}
} // namespace

// Tree sampling captured once in a CUDA graph with the seed and offset in device memory, as a
// server runs it: each replay reads that step's rows, tree and seed from the same buffers and must
// give that step's walk and draw (both kernels: "rows" clusters and the path kernel with its block
// walk).
TEST(KernelsGpu, TreeSamplingGraphReplaysGiveEachStepsAnswers) {
  std::mt19937 rng(31);
  const TreeSamplingCase cases[] = {{1, 8, 151936, true, false, false},
                                    {1, 4, 151936, true, false, false},
                                    {2, 16, 32000, true, false, false},
                                    {3, 40, 4096, true, false, false},
                                    {8, 16, 151936, true, false, false}};
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int deep = 0;
  for (const TreeSamplingCase& c : cases) {
    const size_t rows = static_cast<size_t>(c.batch) * c.n;
    Dev<float> dp(rows * c.V);
    Dev<int32_t> par(rows), tok(rows), tt(rows), path(rows), acc(c.batch), bon(c.batch);
    Dev<uint64_t> so(2);
    const CapturedCall call(stream, [&] {
      return k::verify_tree_sampling(dp.p, par.p, tok.p, c.batch, c.n, c.V,
                                     k::PhiloxArgs{0, 0, so.p}, tt.p, path.p, acc.p, bon.p, nullptr,
                                     0, stream);
    });
    STATUS_OK(call.status());
    CUDA_OK(call.error());
    for (int step = 0; step < 4; ++step) {
      const TreeSamplingInputs in = make_tree_sampling_inputs(c, rng);
      dp.upload(in.probs);
      par.upload(flatten(in.trees, true));
      tok.upload(flatten(in.trees, false));
      so.upload({in.seed, in.offset});
      for (auto* d : {&tt, &path, &acc, &bon})
        d->poison();
      CUDA_OK(call.replay());
      deep += check_tree_sampling(c, in, tt.get(), path.get(), acc.get(), bon.get(),
                                  " replay " + std::to_string(step));
    }
  }
  CUDA_OK(cudaStreamDestroy(stream));
  EXPECT_GT(deep, 5) << "too few walks went two drafts deep: the planted mass did not work";
}

TEST(KernelsGpu, SamplingVerifiersKeepTheTargetDistribution) {
  // 8 tokens with mass, spread over a 2048-token vocabulary (several segments); a star tree whose
  // children carry three of them; the first committed token must follow the root's target row.
  const int64_t V = 2048;
  const std::vector<int> hot = {3, 100, 1023, 1024, 1500, 2000, 2047, 512};
  const std::vector<double> mass = {0.05, 0.2, 0.1, 0.15, 0.05, 0.25, 0.1, 0.1};
  std::vector<float> root(V, 0.0f);
  for (size_t i = 0; i < hot.size(); ++i)
    root[hot[i]] = static_cast<float>(mass[i]);
  const int batch = 512, n = 4, calls = 200;
  DraftTree star = make_tree(*std::make_unique<std::mt19937>(1), TreeShape::star, n, 10);
  star.tokens = {0, 100, 1024, 7}; // 7 has no target mass
  std::vector<DraftTree> trees(batch, star);
  std::vector<float> probs;
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < n; ++i)
      probs.insert(probs.end(), root.begin(), root.end());
  Dev<float> dp(probs);
  Dev<int32_t> par(flatten(trees, true)), tok(flatten(trees, false));
  Dev<int32_t> path(static_cast<size_t>(batch) * n), acc(batch), bon(batch);
  std::vector<long> tree_counts(V, 0);
  for (int c = 0; c < calls; ++c) {
    STATUS_OK(k::verify_tree_sampling(dp.p, par.p, tok.p, batch, n, V,
                                      k::PhiloxArgs{5, uint64_t(c)}, nullptr, path.p, acc.p, bon.p,
                                      nullptr, 0, nullptr));
    const auto P = path.get(), A = acc.get(), B = bon.get();
    for (int b = 0; b < batch; ++b)
      ++tree_counts[A[b] > 0 ? star.tokens[P[b * n + 1]] : B[b]];
  }
  std::vector<double> expect(V, 0.0);
  for (size_t i = 0; i < hot.size(); ++i)
    expect[hot[i]] = mass[i];
  bool impossible = false;
  double chi = chi_square(tree_counts, expect, long(batch) * calls, &impossible);
  EXPECT_FALSE(impossible);
  EXPECT_LT(chi, 29.9) << "tree sampling: chi-square, 7 degrees of freedom, p < 0.0001";

  // Chain: drafts drawn from q (host), 2 drafts per request; first emitted token ~ p0.
  const int kk = 2;
  std::vector<float> q(V, 0.0f);
  const std::vector<int> qhot = {100, 1024, 7, 2000};
  const std::vector<double> qmass = {0.4, 0.1, 0.3, 0.2};
  for (size_t i = 0; i < qhot.size(); ++i)
    q[qhot[i]] = static_cast<float>(qmass[i]);
  std::vector<float> dq, tp;
  for (int b = 0; b < batch; ++b) {
    for (int i = 0; i < kk; ++i)
      dq.insert(dq.end(), q.begin(), q.end());
    for (int i = 0; i <= kk; ++i)
      tp.insert(tp.end(), root.begin(), root.end());
  }
  Dev<float> ddq(dq), dtp(tp);
  Dev<int32_t> drafts(static_cast<size_t>(batch) * kk), out(static_cast<size_t>(batch) * (kk + 1)),
      cacc(batch);
  Workspace cws(k::verify_sampling_workspace_bytes(batch, kk + 1, V));
  std::mt19937 rng(15);
  std::discrete_distribution<int> qd(qmass.begin(), qmass.end());
  std::vector<long> chain_counts(V, 0);
  for (int c = 0; c < calls; ++c) {
    std::vector<int32_t> dr(static_cast<size_t>(batch) * kk);
    for (auto& d : dr)
      d = qhot[qd(rng)];
    drafts.upload(dr);
    out.poison();
    STATUS_OK(k::verify_chain_sampling(ddq.p, drafts.p, dtp.p, batch, kk, V,
                                       k::PhiloxArgs{9, uint64_t(c)}, out.p, cacc.p, cws.p,
                                       cws.bytes, nullptr));
    const auto O = out.get(), A = cacc.get();
    for (int b = 0; b < batch; ++b) {
      ASSERT_GE(O[b * (kk + 1)], 0);
      ++chain_counts[O[b * (kk + 1)]];
      // Exact agreement with the reference on acceptance; the draw is a valid inverse-CDF draw.
      const ChainSamplingResult r = verify_chain_sampling_reference(
          std::span<const int32_t>(dr.data() + b * kk, kk),
          std::span<const float>(dq.data() + static_cast<size_t>(b) * kk * V, kk * V),
          std::span<const float>(tp.data() + static_cast<size_t>(b) * (kk + 1) * V, (kk + 1) * V),
          V, 9, uint64_t(c), b);
      ASSERT_EQ(A[b], r.accepted);
      for (int j = 0; j < r.accepted; ++j)
        EXPECT_EQ(O[b * (kk + 1) + j], r.output[j]);
      EXPECT_TRUE(segment_race_draw_consistent(r.residual, r.coins, O[b * (kk + 1) + r.accepted]));
      for (int j = r.accepted + 1; j <= kk; ++j)
        EXPECT_EQ(O[b * (kk + 1) + j], -1);
    }
  }
  chi = chi_square(chain_counts, expect, long(batch) * calls, &impossible);
  EXPECT_FALSE(impossible);
  EXPECT_LT(chi, 29.9) << "chain sampling: chi-square, 7 degrees of freedom, p < 0.0001";
}

namespace {
/// Checks one chain sampling call's outputs (`O` [batch, k + 1], `A` [batch]) against the
/// reference: accepted drafts exact, the token a segment-race draw of the reference's residual.
void check_chain_sampling(const std::vector<int32_t>& dr, const std::vector<float>& dq,
                          const std::vector<float>& tp, int batch, int kk, int64_t V, uint64_t seed,
                          uint64_t offset, const std::vector<int32_t>& O,
                          const std::vector<int32_t>& A, const std::string& where) {
  for (int b = 0; b < batch; ++b) {
    const ChainSamplingResult r = verify_chain_sampling_reference(
        std::span<const int32_t>(dr.data() + b * kk, kk),
        std::span<const float>(dq.data() + static_cast<size_t>(b) * kk * V, kk * V),
        std::span<const float>(tp.data() + static_cast<size_t>(b) * (kk + 1) * V, (kk + 1) * V), V,
        seed, offset, b);
    ASSERT_EQ(A[b], r.accepted) << "V=" << V << " k=" << kk << where;
    for (int j = 0; j < r.accepted; ++j)
      EXPECT_EQ(O[b * (kk + 1) + j], dr[b * kk + j]) << where;
    EXPECT_TRUE(segment_race_draw_consistent(r.residual, r.coins, O[b * (kk + 1) + r.accepted]))
        << "V=" << V << " k=" << kk << where << " token " << O[b * (kk + 1) + r.accepted];
    for (int j = r.accepted + 1; j <= kk; ++j)
      EXPECT_EQ(O[b * (kk + 1) + j], -1) << where;
  }
}
} // namespace

TEST(KernelsGpu, ChainSamplingMatchesReferenceOnRandomInputs) {
  std::mt19937 rng(16);
  // V = 1,500,007 with one request: more vocabulary splits than the chain kernel's drain takes
  // (448), so it caps them and its warps race several segments each.
  for (int64_t V : {int64_t{3}, int64_t{1001}, int64_t{8192}, int64_t{151936}, int64_t{300007},
                    int64_t{1500007}})
    for (int kk : {0, 1, 4, 15, 300})
      for (bool no_residual : {false, true}) {
        const int batch = V > 1'000'000 ? 1 : 3;
        if (V * (kk + 1) * batch > 12'000'000)
          continue;
        const auto tp = random_probs(rng, batch * (kk + 1), V, rng() % 2 == 0);
        auto dq = random_probs(rng, std::max(1, batch * kk), V, rng() % 2 == 0);
        if (no_residual) {
          // q = 2p everywhere: max(p - q, 0) has no mass, so a rejected row draws from p (the
          // kernel's rare path), and half the drafts are rejected.
          for (int b = 0; b < batch; ++b)
            for (int j = 0; j < kk; ++j)
              for (int64_t v = 0; v < V; ++v)
                dq[(static_cast<size_t>(b) * kk + j) * V + v] =
                    2.0f * tp[(static_cast<size_t>(b) * (kk + 1) + j) * V + v];
        }
        std::vector<int32_t> dr(static_cast<size_t>(batch) * kk);
        for (auto& d : dr)
          d = static_cast<int32_t>(rng() % V);
        Dev<float> dtp(tp), ddq(dq);
        Dev<int32_t> drafts(dr), out(static_cast<size_t>(batch) * (kk + 1)), acc(batch);
        Workspace ws(k::verify_sampling_workspace_bytes(batch, kk + 1, V));
        out.poison();
        // Odd k: the seed and offset come from device memory (graph replays), the same {3, 4}.
        Dev<uint64_t> so(std::vector<uint64_t>{3, 4});
        const k::PhiloxArgs rng_args =
            kk % 2 == 1 ? k::PhiloxArgs{0, 0, so.p} : k::PhiloxArgs{3, 4, nullptr};
        STATUS_OK(k::verify_chain_sampling(ddq.p, drafts.p, dtp.p, batch, kk, V, rng_args, out.p,
                                           acc.p, ws.p, ws.bytes, nullptr));
        check_chain_sampling(dr, dq, tp, batch, kk, V, 3, 4, out.get(), acc.get(),
                             " no_residual=" + std::to_string(no_residual));
      }
}

// Chain sampling captured once in a CUDA graph with the seed and offset in device memory: each
// replay reads that step's drafts, rows and seed from the same buffers and must give that step's
// tokens (the request counters and slots it leaves zeroed are all that carries over).
TEST(KernelsGpu, ChainSamplingGraphReplaysGiveEachStepsAnswers) {
  std::mt19937 rng(37);
  struct Shape {
    int batch, kk;
    int64_t V;
  };
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const Shape sh : {Shape{1, 7, 151936}, Shape{3, 15, 32000}, Shape{8, 4, 151936}}) {
    const int batch = sh.batch, kk = sh.kk;
    const int64_t V = sh.V;
    Dev<float> dtp(static_cast<size_t>(batch) * (kk + 1) * V),
        ddq(static_cast<size_t>(batch) * kk * V);
    Dev<int32_t> drafts(static_cast<size_t>(batch) * kk),
        out(static_cast<size_t>(batch) * (kk + 1)), acc(batch);
    Dev<uint64_t> so(2);
    Workspace ws(k::verify_sampling_workspace_bytes(batch, kk + 1, V));
    const CapturedCall call(stream, [&] {
      return k::verify_chain_sampling(ddq.p, drafts.p, dtp.p, batch, kk, V,
                                      k::PhiloxArgs{0, 0, so.p}, out.p, acc.p, ws.p, ws.bytes,
                                      stream);
    });
    STATUS_OK(call.status());
    CUDA_OK(call.error());
    for (int step = 0; step < 4; ++step) {
      const auto tp = random_probs(rng, batch * (kk + 1), V, rng() % 2 == 0);
      const auto dq = random_probs(rng, batch * kk, V, rng() % 2 == 0);
      std::vector<int32_t> dr(static_cast<size_t>(batch) * kk);
      for (auto& d : dr)
        d = static_cast<int32_t>(rng() % V);
      const uint64_t seed = 100 + rng() % 50, offset = rng() % 1000;
      dtp.upload(tp);
      ddq.upload(dq);
      drafts.upload(dr);
      so.upload({seed, offset});
      out.poison();
      acc.poison();
      CUDA_OK(call.replay());
      check_chain_sampling(dr, dq, tp, batch, kk, V, seed, offset, out.get(), acc.get(),
                           " replay " + std::to_string(step));
    }
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

namespace {
void run_ddtree(std::mt19937& rng, int batch, int depth, int kk, int budget, bool ties,
                bool neg_inf, bool all_equal) {
  std::vector<TopK> tables;
  std::vector<float> logp;
  std::vector<int32_t> ids, roots(batch), seq(batch);
  for (int b = 0; b < batch; ++b) {
    tables.push_back(random_topk(rng, depth, kk, ties, neg_inf));
    if (all_equal)
      std::fill(tables.back().logp.begin(), tables.back().logp.end(), -0.5f);
    logp.insert(logp.end(), tables.back().logp.begin(), tables.back().logp.end());
    ids.insert(ids.end(), tables.back().ids.begin(), tables.back().ids.end());
    roots[b] = static_cast<int32_t>(rng() % 1000);
    seq[b] = static_cast<int32_t>(rng() % 5000);
  }
  const int n = budget + 1, W = (n + 31) / 32;
  Dev<float> dl(logp), sc(static_cast<size_t>(batch) * n);
  Dev<int32_t> di(ids), dr(roots), ds(seq), cnt(batch), par(sc.n), dep(sc.n), tok(sc.n), fc(sc.n),
      ns(sc.n), pos(sc.n);
  Dev<uint8_t> mask(static_cast<size_t>(batch) * n * n);
  Dev<uint32_t> packed(static_cast<size_t>(batch) * n * W);
  for (auto* d : {&par, &dep, &tok, &fc, &ns, &pos, &cnt})
    d->poison();
  sc.poison();
  mask.poison();
  packed.poison();
  k::DdtreeOutputs o{cnt.p, par.p, dep.p, tok.p, fc.p, ns.p, pos.p, sc.p, mask.p, packed.p};
  STATUS_OK(k::build_ddtree(dl.p, di.p, dr.p, ds.p, batch, depth, kk, budget, o, nullptr));
  const auto C = cnt.get(), P = par.get(), D = dep.get(), T = tok.get(), F = fc.get(), N = ns.get(),
             X = pos.get();
  const auto S = sc.get();
  const auto M = mask.get();
  const auto Q = packed.get();
  const std::string what = "depth " + std::to_string(depth) + " k " + std::to_string(kk) +
                           " budget " + std::to_string(budget) + (ties ? " ties" : "") +
                           (neg_inf ? " -inf" : "") + (all_equal ? " all-equal" : "");
  for (int b = 0; b < batch; ++b) {
    const DraftTree t =
        build_ddtree_reference(tables[b].logp, tables[b].ids, depth, kk, budget, roots[b]);
    const int c = t.size();
    ASSERT_EQ(C[b], c) << what;
    const auto anc = ancestor_mask(t);
    const size_t o0 = static_cast<size_t>(b) * n;
    for (int i = 0; i < n; ++i) {
      const bool real = i < c;
      ASSERT_EQ(P[o0 + i], real ? t.parents[i] : -1) << what << " node " << i;
      ASSERT_EQ(D[o0 + i], real ? t.depths[i] : -1) << what << " node " << i;
      ASSERT_EQ(T[o0 + i], real ? t.tokens[i] : -1) << what << " node " << i;
      ASSERT_EQ(F[o0 + i], real ? t.first_child[i] : -1) << what << " node " << i;
      ASSERT_EQ(N[o0 + i], real ? t.next_sibling[i] : -1) << what << " node " << i;
      ASSERT_EQ(X[o0 + i], real ? seq[b] + t.depths[i] : -1) << what << " node " << i;
      const float want = real ? t.scores[i] : -INFINITY;
      ASSERT_EQ(std::memcmp(&S[o0 + i], &want, 4), 0)
          << what << " node " << i << " score " << S[o0 + i] << " vs " << want;
      for (int j = 0; j < n; ++j) {
        const int expect = real ? (j < c ? anc[static_cast<size_t>(i) * c + j] : 0) : (i == j);
        ASSERT_EQ(M[(o0 + i) * n + j], expect) << what << " mask " << i << "," << j;
        ASSERT_EQ((Q[(o0 + i) * W + j / 32] >> (j % 32)) & 1u, static_cast<uint32_t>(expect))
            << what << " packed " << i << "," << j;
      }
      for (int j = n; j < W * 32; ++j)
        ASSERT_EQ((Q[(o0 + i) * W + j / 32] >> (j % 32)) & 1u, 0u);
    }
  }
}
} // namespace

TEST(KernelsGpu, DdtreeBuildMatchesReferenceBitForBit) {
  std::mt19937 rng(17);
  // Budgets on both sides of every frontier-list size (32, 64, 128, 256, 512 entries).
  for (int budget :
       {0, 1, 2, 7, 15, 16, 31, 32, 63, 64, 65, 96, 127, 128, 129, 255, 256, 257, 512, 513, 1024})
    for (int depth : {1, 4, 16})
      for (int kk : {1, 2, 8, 32}) {
        if (budget > 256 && (kk == 1 || depth == 1))
          continue; // covered below
        run_ddtree(rng, 2, depth, kk, budget, rng() % 2 == 0, rng() % 3 == 0, false);
      }
  // Massive ties (every path of one depth ties), chains (k = 1), stars (depth 1), deep chains.
  for (int budget : {5, 64, 300, 1024}) {
    run_ddtree(rng, 2, 8, 8, budget, true, false, true);
    run_ddtree(rng, 1, 1, std::min(budget + 5, 2000), budget, false, false, false);
    run_ddtree(rng, 1, 1100, 1, budget, false, false, false);
    run_ddtree(rng, 3, 16, 1024, budget, true, true, false);
  }
  run_ddtree(rng, 64, 16, 8, 64, true, false, false);
  // Wide rows as a drafter gives them (k = 64), with and without ties and -inf tails, many
  // requests per call.
  for (int budget : {8, 16, 32, 64}) {
    run_ddtree(rng, 16, 16, 64, budget, false, false, false);
    run_ddtree(rng, 16, 16, 64, budget, true, true, false);
  }
}

#endif // SPECBENCH_HAVE_CUDA
