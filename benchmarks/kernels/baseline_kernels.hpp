#pragma once
// In-project baselines equal to the path inference servers deploy today for greedy tree
// verification (SGLang): bf16 -> fp32 copy of the logits, an argmax with one block per row, and
// a tree walk with one thread per request over first-child / next-sibling int64 buffers. Plus the
// helpers the benchmarks need (random fill, planting maxima).
#include <cstdint>

struct CUstream_st;

namespace specbench::bench {

/// Fill `n` bf16 values with a deterministic pseudo-random normal-ish distribution.
void fill_random_bf16(uint16_t* x, int64_t n, uint32_t seed, CUstream_st* s);
/// Fill `n` floats in [0, scale) (pseudo-random, uniform).
void fill_random_f32(float* x, int64_t n, uint32_t seed, CUstream_st* s, float scale = 1.0f);
/// logits[r, idx[r]] = 30 for each of `rows` rows (bf16), so the argmax is known.
void plant_bf16(uint16_t* logits, int64_t rows, int64_t vocab, const int32_t* idx, CUstream_st* s);
/// probs[r, idx[r]] += value for each of `rows` rows (fp32), so draws follow the tree.
void plant_f32(float* probs, int64_t rows, int64_t vocab, const int32_t* idx, CUstream_st* s,
               float value = 1000.0f);
/// Inputs of an LM-head GEMM whose output rows have known maxima: `hidden_states` [rows, hidden]
/// becomes the first `rows` unit vectors (rows <= hidden) and weights [vocab, hidden] get 30 at
/// [idx[r], r], so logits = hidden_states x weights^T has row r's maximum at idx[r].
void plant_lm_head(uint16_t* weights, uint16_t* hidden_states, int rows, int hidden,
                   const int32_t* idx, CUstream_st* s);

/// Deployed step 1: out[i] = float(in[i]) (torch's `.float()`), vectorised.
void bf16_to_f32(const uint16_t* in, float* out, int64_t n, CUstream_st* s);
/// Deployed step 2: one block per row, first maximum, int64 result (torch.argmax layout).
void argmax_rows_f32(const float* x, int64_t rows, int64_t vocab, int64_t* out, CUstream_st* s);
/// Deployed step 3: SGLang's VerifyTreeGreedy walk, grid = batch, block = 1.
void walk_one_thread(int32_t* predicts, int32_t* accept_index, int32_t* accept_num,
                     const int64_t* candidates, const int64_t* retrive_index,
                     const int64_t* next_token, const int64_t* next_sibling,
                     const int64_t* target_predict, int batch, int nodes, int steps,
                     CUstream_st* s);
/// The whole deployed path on bf16 logits [batch * nodes, vocab]: steps 1 to 3 above, through the
/// fp32 copy `f32` and the int64 argmax `pred64`.
void deployed_greedy(const uint16_t* logits, float* f32, int64_t* pred64, int32_t* predicts,
                     int32_t* accept_index, int32_t* accept_num, const int64_t* candidates,
                     const int64_t* retrive_index, const int64_t* next_token,
                     const int64_t* next_sibling, int batch, int nodes, int64_t vocab, int steps,
                     CUstream_st* s);
/// Reads `na` floats of `a` and `nb` of `b` once (both multiples of 4, 16-byte aligned) and
/// writes one partial sum per block into `out` (at most `max_blocks` floats): the measured cost
/// of reading a verifier's inputs once, the reference for "within 1.5x of reading the inputs".
/// `programmatic`: launched as kernels::LaunchOptions::programmatic_dependent launches (it waits
/// for the previous kernel before its loads and lets the next one launch after them), the
/// reference for verifiers launched that way.
void read_once_f32(const float* a, int64_t na, const float* b, int64_t nb, float* out,
                   int max_blocks, CUstream_st* s, bool programmatic = false);
/// An empty kernel (launch overhead reference).
void empty_kernel(CUstream_st* s);
/// A stand-in for the kernel before a verifier in a server (the LM head): 132 blocks that each
/// spin for `ns` nanoseconds and then exit. With `signal_ns` = 0 it allows no dependent launch
/// before it ends (a plain kernel); otherwise each block allows it `signal_ns` after its start, as
/// a CUTLASS GEMM with grid dependency control does before its epilogue.
void busy_kernel(unsigned ns, unsigned signal_ns, CUstream_st* s);

} // namespace specbench::bench
