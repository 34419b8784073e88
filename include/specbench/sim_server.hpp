#pragma once
/// \file sim_server.hpp
/// The simulated inference server (`specbench sim-server`): the embedded default of the demo
/// sweep and the fault fixture of the tests. Its model is SYNTHETIC, and it says so in every
/// answer: a target and a draft distribution over a small vocabulary with tunable agreement.
/// It decodes for real -- autoregressive, chain (DFlash-style) and tree (DDTree) speculative
/// decoding with the library's CPU references (draft_tree.hpp) -- so acceptance length and its
/// growth with the budget are measured, not invented. Each target forward pass is charged a
/// stated simulated cost (slept), so speedups are meaningful relative to each other, not as
/// absolute GPU figures. It speaks the SGLang subset a benchmark needs over a small HTTP/1.1
/// server on loopback: /health, /generate (streaming and not), /server_info, /metrics,
/// /v1/completions, /flush_cache.

#include "specbench/config.hpp"
#include "specbench/draft_tree.hpp"
#include "specbench/status.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace specbench {

/// The synthetic language model pair.
struct SyntheticModelOptions {
  int vocab = 256; ///< vocabulary size (token ids 0..vocab-1; prompt ids are taken mod vocab)
  double agreement = 0.75; ///< 1 = the drafter equals the target; lower = noisier drafts
  double sharpness = 8.0; ///< target logit scale (Gumbel scale sharpness/4 x [0.5,1.5) per context)
  double depth_decay = 0.15; ///< draft noise grows by this fraction per draft position
  uint64_t seed = 0x5eedULL; ///< the "weights"
};

/// A target distribution p(next | last two tokens, position) and a drafter that sees the same
/// context but adds noise that shrinks with `agreement`. Deterministic and stateless.
class SyntheticModel {
public:
  /// A model with these options (vocab clamped to [2, 65536], agreement to [0, 1]).
  explicit SyntheticModel(SyntheticModelOptions options = {});
  /// The options in use.
  const SyntheticModelOptions& options() const noexcept { return opt_; }

  /// Target logits [vocab] for the token at `position` after tokens ... `prev2`, `prev1`.
  void target_logits(int32_t prev2, int32_t prev1, int64_t position, std::span<float> out) const;
  /// The target's token: argmax at temperature 0, else a sample keyed by (sample_seed, context,
  /// position), so every decoding method draws the same token at the same place (lossless).
  int32_t target_token(int32_t prev2, int32_t prev1, int64_t position, double temperature,
                       uint64_t sample_seed) const;
  /// Draft logits [vocab] for draft position `depth` (1-based) of a block.
  void draft_logits(int32_t prev2, int32_t prev1, int64_t position, int depth,
                    std::span<float> out) const;

private:
  SyntheticModelOptions opt_;
};

/// Which decoding the simulated server performs.
struct SimDecodeConfig {
  MethodKind kind = MethodKind::autoregressive;
  int block = 16; ///< draft tokens per block incl. the root (SGLang --speculative-num-draft-tokens)
  int budget = 0; ///< DDTree node budget (tree only)
};

/// One request decoded start to end, with its step-by-step acceptance.
struct SimGeneration {
  std::vector<int32_t> output;     ///< generated ids (first from prefill)
  std::vector<int> accept_lengths; ///< per verify step: accepted drafts + bonus (after truncation)
  int64_t verify_steps = 0;        ///< target verify passes after prefill (0 for autoregressive)
  int64_t correct_drafts = 0;      ///< accepted draft tokens
  int64_t proposed_drafts = 0;     ///< (block-1) per chain step, budget per tree step
  std::vector<int64_t> histogram;  ///< index = accepted drafts in a step, value = steps
};

/// Per-request decoding state: one call of step() is one target forward pass (prefill first).
class SimDecoder {
public:
  /// Starts a request. `prompt` may be empty (a zero token is assumed).
  SimDecoder(const SyntheticModel& model, SimDecodeConfig config, std::span<const int32_t> prompt,
             int max_new_tokens, double temperature, uint64_t sample_seed);
  /// True when max_new_tokens were generated.
  bool done() const noexcept;
  /// Runs one forward pass: prefill (first call) or one decode/verify step; returns the tokens
  /// committed by it (empty when done).
  std::vector<int32_t> step();
  /// Tokens the target verifies in the next step (1, block or the tree's node count).
  int next_verify_width() const noexcept;
  /// Draft positions the drafter runs for the next step (0 for autoregressive).
  int next_draft_positions() const noexcept;
  /// Everything so far.
  const SimGeneration& generation() const noexcept { return gen_; }

private:
  const SyntheticModel* model_;
  SimDecodeConfig cfg_;
  std::vector<int32_t> ctx_; // prompt (mod vocab) + output
  size_t prompt_len_ = 0;
  int max_new_ = 0;
  double temperature_ = 0;
  uint64_t sample_seed_ = 0;
  bool prefilled_ = false;
  SimGeneration gen_;
};

/// Decodes one request start to end (what the server does for it, without the HTTP or costs).
SimGeneration simulate_generation(const SyntheticModel& model, const SimDecodeConfig& config,
                                  std::span<const int32_t> prompt, int max_new_tokens,
                                  double temperature = 0.0, uint64_t sample_seed = 0);

/// Faults the simulated server can act out on request.
enum class SimFault {
  none,
  fail_start,     ///< logs "Failed to get device capability: CUDA unknown error", exits 1
  oom_start,      ///< logs a CUDA out-of-memory error, exits 1
  exit_start,     ///< exits 3 without a recognisable message
  nccl_error,     ///< logs an NCCL error and stays up answering 503 (a fatal log line, alive)
  crash_after,    ///< after N generation requests, logs an illegal instruction and dies mid-request
  hang,           ///< accepts connections but never answers anything
  hang_after,     ///< after N generation requests, stops answering anything (incl. /health)
  unavailable,    ///< /health answers 503 forever
  malformed_json, ///< generation answers are 200 with broken JSON / SSE
  trickle,        ///< generation answers dribble out a byte at a time, slowly
  wrong_content_length, ///< generation answers claim more bytes than they send, then close
  no_metrics,           ///< /metrics answers 404 (SGLang without --enable-metrics); all else works
  /// crash-after, but the last log lines hold bytes that are not UTF-8 (a line cut in the middle
  /// of a character, a binary dump), as a crashing process's log can
  garbage_crash_after,
  /// generation answers are HTTP 500 with a long body that is not UTF-8 text
  garbage_body,
  /// generation answers are well formed, but the final counts of request n lie (n % 6: more
  /// tokens than asked for, a fraction, 1e300 prompt tokens, a negative count; at 4 prompt tokens
  /// -1, the "not known" of some servers, which is no lie; at 5 more verify steps than output
  /// tokens in meta_info, or more drafts accepted than proposed in timings)
  lying_counts,
  /// answers whose lies look like plausible results (request n, n % 4 = 0: SGLang's
  /// finish_reason abort after half the tokens; 1: finished with no token at all; 2: the final
  /// completion_tokens drops to 1 after every token was streamed; 3: spec_verify_ct 1, more
  /// tokens in one verify step than the method can commit)
  quiet_lies,
  /// /metrics counters that claim 1,000 more accepted tokens (and accepted drafts) at every
  /// scrape than were committed, as another client's traffic or a broken counter would
  lying_metrics,
  /// /health answers 200 but every generation answers HTTP 500 "CUDA error: an illegal memory
  /// access was encountered", and nothing reaches the log: a GPU broken under a live server
  broken_generation,
  /// every prompt of two or more tokens loses its first half before generation, and the answer
  /// counts only the half kept: a server that truncates prompts to fit (vLLM's
  /// truncate_prompt_tokens, a --context-length below the workload's)
  truncate_prompts,
  /// every answer ends at half its max_new_tokens with finish_reason "stop", ignore_eos or not:
  /// a stop token the server keeps under ignore_eos (vLLM with generation_config's extra EOS ids)
  stop_early,
  /// /health answers 200 but every generation endpoint answers 404 Not Found: a server that does
  /// not serve the sweep's server.api (SGLang's /generate asked of vLLM), or a model name it does
  /// not serve
  no_generation,
};
/// Stable name as on the command line, e.g. "crash-after".
const char* to_string(SimFault fault) noexcept;

/// A fault and its count (crash-after:N, garbage-crash-after:N, hang-after:N).
struct SimFaultSpec {
  SimFault kind = SimFault::none;
  int after = 0; ///< N for crash-after / garbage-crash-after / hang-after
};
/// Parses "none", "fail-start", "crash-after:3", ... (invalid_argument with the list otherwise).
Expected<SimFaultSpec> parse_sim_fault(std::string_view text);
/// Every fault's name, comma-separated, the counted ones as "crash-after:N" (--help, errors).
std::string sim_fault_names();

/// Everything the simulated server is configured with (the sim-server flags).
struct SimServerOptions {
  std::string host = "127.0.0.1";                 ///< loopback only is recommended
  int port = 30000;                               ///< 0 = any free port (see SimServer::port())
  int tp_size = 1;                                ///< reported only (the model is synthetic)
  std::string model_path = "synthetic/sim-model"; ///< reported only
  int context_length = 32768;                     ///< prompt + max_new_tokens beyond this -> 400
  SimDecodeConfig decode;                         ///< from --speculative-algorithm etc.
  std::string algorithm_name;                     ///< "", "DFLASH" or "DDTREE" as given
  SyntheticModelOptions model;
  // Simulated costs (microseconds), slept per batched forward pass.
  double target_fixed_us = 2000;   ///< per target forward pass
  double target_per_token_us = 20; ///< per token verified in that pass (all requests of the batch)
  double draft_fixed_us = 400;     ///< per drafter pass (speculative only)
  double draft_per_token_us = 10;  ///< per draft position per request
  double prefill_per_token_us = 1; ///< per prompt token at prefill
  double load_time_s = 0.5;        ///< /health answers 503 this long after start ("loading")
  int max_running_requests = 1024; ///< batch size cap; more requests wait
  SimFaultSpec fault;
  double trickle_interval_ms = 50; ///< gap between bytes for the trickle fault
  int decode_log_interval = 40; ///< like SGLang: fold spec counters into server_info every N steps
  /// crash-after: true = the process dies (std::_Exit) like a crashed server; false (in-process
  /// tests) = every connection is cut and the server stops answering, the process lives on.
  bool crash_exits_process = true;
};

/// Counters of what the server did (thread-safe snapshot).
struct SimServerStats {
  int64_t generation_requests = 0; ///< /generate + /v1/completions requests received
  int64_t finished_requests = 0;   ///< answered completely
  int64_t rejected_requests = 0;   ///< 4xx (context overflow, bad JSON)
  int64_t output_tokens = 0;       ///< committed tokens of all requests
  int64_t verify_steps = 0;        ///< verify passes (speculative)
  int64_t accepted_tokens = 0;     ///< accepted drafts + bonus over those passes
  int64_t correct_drafts = 0;
  int64_t proposed_drafts = 0;
  int64_t forward_passes = 0;  ///< batched target passes (prefill + decode)
  double simulated_busy_s = 0; ///< summed slept cost
};

/// The simulated server: an HTTP/1.1 server (a thread per connection) and a batching scheduler
/// thread. In-process, for tests and benchmarks; `specbench sim-server` wraps it.
class SimServer {
public:
  /// Configured, not started.
  explicit SimServer(SimServerOptions options);
  /// Stops.
  ~SimServer();
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  /// Binds and starts serving. Start-time faults (fail-start, ...) return an error carrying the
  /// log message instead of exiting (the CLI prints it and exits non-zero). A port in use gives
  /// an io_error whose message contains "address already in use".
  Status start();
  /// The bound port (after start).
  int port() const noexcept;
  /// Stops accepting, closes connections, joins threads. Idempotent.
  void stop();
  /// What it did so far.
  SimServerStats stats() const;
  /// Log lines written so far (also written to stderr when `echo_log` is set).
  std::vector<std::string> log_lines() const;
  /// Echo log lines to stderr (the CLI sets this).
  void set_echo_log(bool echo);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The note every answer of the simulated server carries.
const char* sim_synthetic_note() noexcept;

} // namespace specbench
