#pragma once
// What a server's verify-step count allows of a request's output, one rule for the client judging
// an answer and for the results check judging a stored one.
#include <cstdint>

namespace specbench::detail {

/// Fewer output tokens than verify steps: every verify step yields at least one token.
inline bool fewer_tokens_than_steps(int64_t output_tokens, int64_t verify_steps) noexcept {
  return verify_steps > output_tokens;
}

/// More output tokens than `verify_steps` steps of at most `max_per_step` tokens can commit. The
/// prefill commits the first token without a verify step, hence the + 1; a request that SGLang
/// retracted under memory pressure is prefilled again, one more token each time, hence a slack
/// of 1/32 of the output. A speculating "autoregressive" server (1.5x and more) or a verify count
/// of 1 for a whole answer stays far above it.
inline bool more_tokens_than_steps_commit(int64_t output_tokens, int64_t verify_steps,
                                          int64_t max_per_step) noexcept {
  return output_tokens > verify_steps * max_per_step + 1 + output_tokens / 32;
}

} // namespace specbench::detail
