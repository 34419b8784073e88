// Programmatic dependent launch (kernels::LaunchOptions::programmatic_dependent) must never change
// a result. Every launcher runs right after a kernel that lets it start at once but rewrites its
// inputs only 200 us later (late_writer.hpp): a launcher that read before waiting for that kernel
// would see the old inputs. Each case first checks that the old and new inputs give different
// outputs (so the test can tell), then that the launch with the dependency gives the new inputs'
// outputs, on a stream and replayed from a CUDA graph.
#if SPECBENCH_HAVE_CUDA
#include "gpu_test_support.hpp"
#include "late_writer.hpp"
#include "specbench/kernels.hpp"
#include "specbench/sglang_layout.hpp"
#include "test_vectors.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace specbench;
using namespace specbench::testing;
namespace k = specbench::kernels;

namespace {

constexpr unsigned kLateNs = 200'000; // long against any of these kernels

/// Device bytes freed at scope exit.
struct Buf {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit Buf(std::size_t b) : bytes(b) { cudaMalloc(&p, b < 16 ? 16 : b); }
  template <class T> explicit Buf(const std::vector<T>& v) : Buf(v.size() * sizeof(T)) {
    cudaMemcpy(p, v.data(), bytes, cudaMemcpyHostToDevice);
  }
  ~Buf() { cudaFree(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  template <class T> T* as() const { return static_cast<T*>(p); }
  void poison() const { cudaMemset(p, 0xA5, bytes); }
  std::vector<int32_t> words() const {
    std::vector<int32_t> v(bytes / 4);
    cudaMemcpy(v.data(), p, v.size() * 4, cudaMemcpyDeviceToHost);
    return v;
  }
};

/// One launcher under test: `input` is the buffer the late kernel rewrites (`fresh` and `stale`
/// hold the two versions on the device); `call` launches on a stream with the given options;
/// `outputs` are poisoned before every call and compared after it.
struct Case {
  std::string what;
  const Buf* input;
  const Buf* fresh;
  const Buf* stale;
  std::vector<const Buf*> outputs;
  std::function<Status(cudaStream_t, k::LaunchOptions)> call;
};

std::vector<int32_t> read_outputs(const Case& c) {
  std::vector<int32_t> all;
  for (const Buf* b : c.outputs) {
    const auto w = b->words();
    all.insert(all.end(), w.begin(), w.end());
  }
  return all;
}

void poison_outputs(const Case& c) {
  for (const Buf* b : c.outputs)
    b->poison();
}

// The outputs of a plain launch on `version` of the input.
std::vector<int32_t> plain_outputs(const Case& c, const Buf& version, cudaStream_t s) {
  cudaMemcpy(c.input->p, version.p, c.input->bytes, cudaMemcpyDeviceToDevice);
  poison_outputs(c);
  cudaDeviceSynchronize();
  const Status st = c.call(s, {});
  EXPECT_TRUE(st.is_ok()) << c.what << ": " << st.to_string();
  cudaStreamSynchronize(s);
  return read_outputs(c);
}

void check(const Case& c) {
  SCOPED_TRACE(c.what);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const std::vector<int32_t> want = plain_outputs(c, *c.fresh, s);
  const std::vector<int32_t> old = plain_outputs(c, *c.stale, s);
  ASSERT_NE(want, old) << "the two inputs give the same outputs: this case cannot tell";
  const k::LaunchOptions pdl{true};
  // On the stream, three times.
  for (int rep = 0; rep < 3; ++rep) {
    cudaMemcpy(c.input->p, c.stale->p, c.input->bytes, cudaMemcpyDeviceToDevice);
    poison_outputs(c);
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(launch_late_copy(c.input->p, c.fresh->p, c.input->bytes, kLateNs, s));
    const Status st = c.call(s, pdl);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_EQ(read_outputs(c), want) << "stream, repetition " << rep;
  }
  // The same pair captured into a graph (a programmatic edge) and replayed.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const cudaError_t late = launch_late_copy(c.input->p, c.fresh->p, c.input->bytes, kLateNs, s);
  const Status captured = c.call(s, pdl);
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  CUDA_OK(late);
  ASSERT_TRUE(captured.is_ok()) << captured.to_string();
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int rep = 0; rep < 3; ++rep) {
    cudaMemcpy(c.input->p, c.stale->p, c.input->bytes, cudaMemcpyDeviceToDevice);
    poison_outputs(c);
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaGraphLaunch(exec, s));
    CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_EQ(read_outputs(c), want) << "graph, replay " << rep;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

std::vector<int32_t> flat(const std::vector<DraftTree>& trees, bool parents) {
  std::vector<int32_t> v;
  for (const auto& t : trees)
    v.insert(v.end(), (parents ? t.parents : t.tokens).begin(),
             (parents ? t.parents : t.tokens).end());
  return v;
}

// Logits [batch * n, V] in bf16: noise, and 20 at each node's planted target when `targets`.
std::vector<uint16_t> bf16_logits(std::mt19937& rng, std::size_t rows, int64_t V,
                                  const std::vector<int32_t>* targets) {
  std::vector<uint16_t> x(rows * V);
  std::normal_distribution<float> g(0.0f, 3.0f);
  for (auto& v : x)
    v = to_bf16(g(rng));
  if (targets)
    for (std::size_t r = 0; r < rows; ++r)
      x[r * V + (*targets)[r]] = to_bf16(20.0f);
  return x;
}

// Probability rows [rows, V]: `mass` at `at[r]` and the rest spread evenly.
std::vector<float> prob_rows(std::size_t rows, int64_t V, const std::vector<int32_t>& at,
                             float mass) {
  std::vector<float> p(rows * V, (1.0f - mass) / static_cast<float>(V - 1));
  for (std::size_t r = 0; r < rows; ++r)
    p[r * V + at[r]] = mass;
  return p;
}

// Each node's first child's token (the node's own token when it has none).
std::vector<int32_t> first_child_tokens(const std::vector<DraftTree>& trees) {
  std::vector<int32_t> v;
  for (const auto& t : trees)
    for (int i = 0; i < t.size(); ++i)
      v.push_back(t.first_child[i] >= 0 ? t.tokens[t.first_child[i]] : t.tokens[i]);
  return v;
}

} // namespace

TEST(ProgrammaticLaunch, FusedGreedyWaitsForItsLogits) {
  std::mt19937 rng(3);
  const int64_t V = 151936;
  for (auto [batch, n] : {std::pair{1, 16}, {8, 16}, {1, 65}}) {
    std::vector<DraftTree> trees;
    std::vector<int32_t> targets;
    for (int b = 0; b < batch; ++b) {
      trees.push_back(make_tree(rng, n <= 16 ? TreeShape::bushy : TreeShape::ddtree, n, 50000));
      const auto t = make_targets(rng, trees.back(), 50000, 1.0);
      targets.insert(targets.end(), t.begin(), t.end());
    }
    const std::size_t rows = static_cast<std::size_t>(batch) * n;
    const Buf fresh(bf16_logits(rng, rows, V, &targets)), stale(bf16_logits(rng, rows, V, nullptr));
    const Buf x(fresh.bytes), par(flat(trees, true)), tok(flat(trees, false)), tgt(rows * 4),
        path(rows * 4), acc(batch * 4), bon(batch * 4);
    const std::size_t wsb = k::verify_greedy_fused_workspace_bytes(batch, n, V);
    const Buf ws(wsb);
    ASSERT_TRUE(k::clear_workspace(ws.p, wsb, nullptr).is_ok());
    check({"fused greedy " + std::to_string(batch) + " x " + std::to_string(n),
           &x,
           &fresh,
           &stale,
           {&tgt, &path, &acc, &bon},
           [&](cudaStream_t s, k::LaunchOptions o) {
             return k::verify_greedy_fused(x.p, k::LogitsDtype::bf16, par.as<int32_t>(),
                                           tok.as<int32_t>(), batch, n, V, tgt.as<int32_t>(),
                                           path.as<int32_t>(), acc.as<int32_t>(), bon.as<int32_t>(),
                                           ws.p, wsb, s, o);
           }});
  }
}

TEST(ProgrammaticLaunch, SamplingVerifiersWaitForTheirProbabilities) {
  std::mt19937 rng(5);
  const int64_t V = 151936;
  // Tree mode: 1 x 4 runs the "rows" kernel, 8 x 16 the "path" kernel. Fresh rows put 0.9 on the
  // first child's token (the walk goes down), stale rows 0 there (the walk stops at the root).
  for (auto [batch, n] : {std::pair{1, 4}, {8, 16}}) {
    std::vector<DraftTree> trees;
    for (int b = 0; b < batch; ++b)
      trees.push_back(make_tree(rng, TreeShape::bushy, n, 50000));
    const std::size_t rows = static_cast<std::size_t>(batch) * n;
    const auto kids = first_child_tokens(trees);
    const Buf fresh(prob_rows(rows, V, kids, 0.9f)), stale(prob_rows(rows, V, kids, 0.0f));
    const Buf x(fresh.bytes), par(flat(trees, true)), tok(flat(trees, false)), path(rows * 4),
        acc(batch * 4), bon(batch * 4);
    check({"tree sampling " + std::to_string(batch) + " x " + std::to_string(n) + " (" +
               k::verify_tree_sampling_kernel(batch, n, V) + ")",
           &x,
           &fresh,
           &stale,
           {&path, &acc, &bon},
           [&](cudaStream_t s, k::LaunchOptions o) {
             return k::verify_tree_sampling(x.as<float>(), par.as<int32_t>(), tok.as<int32_t>(),
                                            batch, n, V, k::PhiloxArgs{11, 7}, nullptr,
                                            path.as<int32_t>(), acc.as<int32_t>(),
                                            bon.as<int32_t>(), nullptr, 0, s, o);
           }});
  }
  // Chain mode, B 1 K 7: fresh target rows put all mass on each draft (every draft stands), stale
  // ones none (the first is rejected).
  const int kk = 7;
  const std::vector<int32_t> drafts = {11, 12, 13, 14, 15, 16, 17};
  std::vector<int32_t> at(drafts);
  at.push_back(18);
  const Buf fresh(prob_rows(kk + 1, V, at, 1.0f)), stale(prob_rows(kk + 1, V, at, 0.0f));
  const Buf target(fresh.bytes), draft(prob_rows(kk, V, drafts, 0.5f)), dd(drafts),
      out((kk + 1) * 4), acc(4);
  const std::size_t wsb = k::verify_sampling_workspace_bytes(1, kk + 1, V);
  const Buf ws(wsb);
  ASSERT_TRUE(k::clear_workspace(ws.p, wsb, nullptr).is_ok());
  check({"chain sampling 1 x 7",
         &target,
         &fresh,
         &stale,
         {&out, &acc},
         [&](cudaStream_t s, k::LaunchOptions o) {
           return k::verify_chain_sampling(draft.as<float>(), dd.as<int32_t>(), target.as<float>(),
                                           1, kk, V, k::PhiloxArgs{11, 7}, out.as<int32_t>(),
                                           acc.as<int32_t>(), ws.p, wsb, s, o);
         }});
}

TEST(ProgrammaticLaunch, DdtreeBuildingWaitsForItsTopK) {
  std::mt19937 rng(7);
  for (auto [batch, budget] : {std::pair{1, 64}, {16, 300}}) {
    const int depth = 16, kk = 32;
    std::vector<float> lp_fresh, lp_stale;
    std::vector<int32_t> ids;
    for (int b = 0; b < batch; ++b) {
      const TopK a = random_topk(rng, depth, kk, false, false);
      const TopK c = random_topk(rng, depth, kk, false, false);
      lp_fresh.insert(lp_fresh.end(), a.logp.begin(), a.logp.end());
      lp_stale.insert(lp_stale.end(), c.logp.begin(), c.logp.end());
      ids.insert(ids.end(), a.ids.begin(), a.ids.end());
    }
    const int n = budget + 1, W = (n + 31) / 32;
    const Buf fresh(lp_fresh), stale(lp_stale), logp(fresh.bytes), tid(ids),
        roots(std::vector<int32_t>(batch, 1)), cnt(batch * 4), par(std::size_t(batch) * n * 4),
        tok(std::size_t(batch) * n * 4), packed(std::size_t(batch) * n * W * 4);
    k::DdtreeOutputs o;
    o.node_count = cnt.as<int32_t>();
    o.parents = par.as<int32_t>();
    o.tokens = tok.as<int32_t>();
    o.mask_packed = packed.as<uint32_t>();
    check({"DDTree building, B " + std::to_string(batch) + " budget " + std::to_string(budget),
           &logp,
           &fresh,
           &stale,
           {&cnt, &par, &tok, &packed},
           [&](cudaStream_t s, k::LaunchOptions opt) {
             return k::build_ddtree(logp.as<float>(), tid.as<int32_t>(), roots.as<int32_t>(),
                                    nullptr, batch, depth, kk, budget, o, s, opt);
           }});
  }
}

TEST(ProgrammaticLaunch, GreedyWalksWaitForTheTargetTokens) {
  std::mt19937 rng(9);
  const int batch = 4, n = 24, steps = 8;
  std::vector<DraftTree> trees;
  std::vector<int32_t> follow, random;
  for (int b = 0; b < batch; ++b) {
    trees.push_back(make_tree(rng, TreeShape::bushy, n, 50000));
    const auto f = make_targets(rng, trees.back(), 50000, 1.0);
    const auto r = make_targets(rng, trees.back(), 50000, 0.0);
    follow.insert(follow.end(), f.begin(), f.end());
    random.insert(random.end(), r.begin(), r.end());
  }
  const std::size_t rows = static_cast<std::size_t>(batch) * n;
  {
    const Buf fresh(follow), stale(random), tgt(fresh.bytes), par(flat(trees, true)),
        tok(flat(trees, false)), path(rows * 4), acc(batch * 4), bon(batch * 4);
    check({"tree greedy",
           &tgt,
           &fresh,
           &stale,
           {&path, &acc, &bon},
           [&](cudaStream_t s, k::LaunchOptions o) {
             return k::verify_tree_greedy(par.as<int32_t>(), tok.as<int32_t>(), tgt.as<int32_t>(),
                                          batch, n, path.as<int32_t>(), acc.as<int32_t>(),
                                          bon.as<int32_t>(), s, o);
           }});
  }
  {
    // Chains of n - 1 drafts: request b's drafts are its first chain of tokens; fresh targets
    // repeat them (all accepted), stale ones do not.
    const int kk = n - 1;
    std::vector<int32_t> drafts(batch * kk), t_fresh(batch * n), t_stale(batch * n);
    for (int b = 0; b < batch; ++b)
      for (int i = 0; i < n; ++i) {
        if (i < kk)
          drafts[b * kk + i] = 100 + b * n + i;
        t_fresh[b * n + i] = 100 + b * n + i;
        t_stale[b * n + i] = 7;
      }
    const Buf fresh(t_fresh), stale(t_stale), tgt(fresh.bytes), dd(drafts), acc(batch * 4),
        bon(batch * 4);
    check({"chain greedy",
           &tgt,
           &fresh,
           &stale,
           {&acc, &bon},
           [&](cudaStream_t s, k::LaunchOptions o) {
             return k::verify_chain_greedy(dd.as<int32_t>(), tgt.as<int32_t>(), batch, kk,
                                           acc.as<int32_t>(), bon.as<int32_t>(), s, o);
           }});
  }
  {
    const SglangTree sg = to_sglang_layout(trees);
    const std::vector<int64_t> pf(follow.begin(), follow.end()), ps(random.begin(), random.end());
    const Buf fresh(pf), stale(ps), pred(fresh.bytes), dc(sg.candidates), di(sg.retrive_index),
        dn(sg.retrive_next_token), dsib(sg.retrive_next_sibling), predicts(rows * 4),
        aidx(std::size_t(batch) * steps * 4), anum(batch * 4);
    check({"SGLang layout",
           &pred,
           &fresh,
           &stale,
           {&predicts, &aidx, &anum},
           [&](cudaStream_t s, k::LaunchOptions o) {
             return k::verify_tree_greedy_sglang(
                 predicts.as<int32_t>(), aidx.as<int32_t>(), anum.as<int32_t>(), dc.as<int64_t>(),
                 di.as<int64_t>(), dn.as<int64_t>(), dsib.as<int64_t>(), pred.as<int64_t>(), batch,
                 n, steps, s, o);
           }});
  }
}

#endif // SPECBENCH_HAVE_CUDA
