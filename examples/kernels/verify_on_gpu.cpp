// Calling a kernel the way a user's program would: build a DDTree on the GPU from top-k
// log-probabilities, then verify it greedily from fp32 logits, and print what was accepted.
// Exits 77 (reported as skipped by CTest) when there is no GPU or no CUDA in this build.
#include "specbench/kernels.hpp"

#include <cstdio>
#include <vector>

#if SPECBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

int main() {
  namespace k = specbench::kernels;
#if SPECBENCH_HAVE_CUDA
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return 77;
  }
  // One request, 3 positions, top-2 per position, budget 4 -> 5 nodes.
  const int depth = 3, topk = 2, budget = 4, n = budget + 1, vocab = 1000;
  const std::vector<float> logp = {-0.1f, -2.5f, -0.3f, -1.5f, -0.2f, -2.0f};
  const std::vector<int> ids = {11, 12, 21, 22, 31, 32};
  const int root = 7;
  float *d_logp, *d_logits;
  int *d_ids, *d_root, *d_parents, *d_tokens, *d_path, *d_acc, *d_bonus, *d_count;
  cudaMalloc(&d_logp, sizeof(float) * logp.size());
  cudaMalloc(&d_ids, sizeof(int) * ids.size());
  cudaMalloc(&d_root, sizeof(int));
  cudaMalloc(&d_parents, sizeof(int) * n);
  cudaMalloc(&d_tokens, sizeof(int) * n);
  cudaMalloc(&d_count, sizeof(int));
  cudaMemcpy(d_logp, logp.data(), sizeof(float) * logp.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(d_ids, ids.data(), sizeof(int) * ids.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(d_root, &root, sizeof(int), cudaMemcpyHostToDevice);
  k::DdtreeOutputs out;
  out.node_count = d_count;
  out.parents = d_parents;
  out.tokens = d_tokens;
  if (auto s =
          k::build_ddtree(d_logp, d_ids, d_root, nullptr, 1, depth, topk, budget, out, nullptr);
      !s) {
    std::printf("build_ddtree failed: %s\n", s.to_string().c_str());
    return 1;
  }
  std::vector<int> parents(n), tokens(n);
  cudaMemcpy(parents.data(), d_parents, sizeof(int) * n, cudaMemcpyDeviceToHost);
  cudaMemcpy(tokens.data(), d_tokens, sizeof(int) * n, cudaMemcpyDeviceToHost);
  std::printf("tree:");
  for (int i = 0; i < n; ++i)
    std::printf(" %d(parent %d)", tokens[i], parents[i]);
  std::printf("\n");

  // The target agrees with the first two draft positions (argmax 11 after the root, 21 after 11),
  // then says 99.
  std::vector<float> logits(static_cast<size_t>(n) * vocab, 0.0f);
  for (int i = 0; i < n; ++i) {
    int want = 99;
    if (tokens[i] == root)
      want = 11;
    if (tokens[i] == 11)
      want = 21;
    logits[static_cast<size_t>(i) * vocab + want] = 5.0f;
  }
  cudaMalloc(&d_logits, sizeof(float) * logits.size());
  cudaMalloc(&d_path, sizeof(int) * n);
  cudaMalloc(&d_acc, sizeof(int));
  cudaMalloc(&d_bonus, sizeof(int));
  cudaMemcpy(d_logits, logits.data(), sizeof(float) * logits.size(), cudaMemcpyHostToDevice);
  const size_t ws_bytes = k::verify_greedy_fused_workspace_bytes(1, n, vocab);
  void* ws = nullptr;
  cudaMalloc(&ws, ws_bytes);
  if (auto s = k::clear_workspace(ws, ws_bytes, nullptr); !s)
    return 1;
  if (auto s =
          k::verify_greedy_fused(d_logits, k::LogitsDtype::fp32, d_parents, d_tokens, 1, n, vocab,
                                 nullptr, d_path, d_acc, d_bonus, ws, ws_bytes, nullptr);
      !s) {
    std::printf("verify_greedy_fused failed: %s\n", s.to_string().c_str());
    return 1;
  }
  int acc = -1, bonus = -1;
  cudaMemcpy(&acc, d_acc, sizeof(int), cudaMemcpyDeviceToHost);
  cudaMemcpy(&bonus, d_bonus, sizeof(int), cudaMemcpyDeviceToHost);
  std::printf("accepted %d drafts, bonus token %d\n", acc, bonus);
  for (void* p : std::vector<void*>{d_logp, d_ids, d_root, d_parents, d_tokens, d_count, d_logits,
                                    d_path, d_acc, d_bonus, ws})
    cudaFree(p);
  return (acc == 2 && bonus == 99) ? 0 : 1;
#else
  const specbench::Status s =
      k::verify_chain_greedy(nullptr, nullptr, 0, 0, nullptr, nullptr, nullptr);
  std::printf("SKIPPED: %s\n", s.to_string().c_str());
  return 77;
#endif
}
