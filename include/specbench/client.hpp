#pragma once
/// \file client.hpp
/// The measuring client: one thread drives N concurrent HTTP requests (libcurl multi, no thread
/// per request) against SGLang's native /generate or an OpenAI-compatible /v1/completions or
/// /v1/chat/completions, streaming or not, and records per request: time to first token,
/// inter-token latencies, end-to-end latency, prompt and output tokens, verify steps and
/// acceptance length where the server reports them, and every error with its kind, status and
/// body. Also the prompts of a workload (synthetic token ids of an exact length, or a JSONL
/// dataset). The client never manages processes (server.hpp does).

#include "specbench/config.hpp"
#include "specbench/status.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace specbench {

/// One chat message (for /v1/chat/completions).
struct ChatMessage {
  std::string role;    ///< "system", "user", "assistant"
  std::string content; ///< text
};

/// One prompt. Exactly how it is sent depends on the API:
/// /generate sends `input_ids` when non-empty, else `text`; /v1/completions sends `input_ids` as a
/// token array when non-empty, else `text`; /v1/chat/completions sends `messages` when non-empty,
/// else one user message with `text`, or, when there is only `input_ids`, the ids written as
/// space-separated numbers (chat cannot take token ids; the answer's usage.prompt_tokens then
/// says how many tokens the server counted).
struct Prompt {
  std::string text;                  ///< prompt text (also the chat fallback)
  std::vector<int32_t> input_ids;    ///< exact token ids (synthetic prompts)
  std::vector<ChatMessage> messages; ///< chat conversation (datasets with "messages")
  int tokens = 0; ///< known length in tokens (input_ids.size() or dataset), 0 = unknown
};

/// One request to send.
struct RequestSpec {
  Prompt prompt;
  int max_new_tokens = 256;
  double temperature = 0.0; ///< 0 = greedy
  uint64_t seed = 0;        ///< sampling seed (sent as sampling_seed / seed)
  bool ignore_eos = true;   ///< ask for exactly max_new_tokens
};

/// Where and how to send requests.
struct ClientOptions {
  std::string base_url = "http://127.0.0.1:30000"; ///< scheme://host:port, no trailing path
  Backend backend = Backend::sglang;
  ApiKind api = ApiKind::generate;
  std::string model;                 ///< OpenAI "model" field (ignored by /generate)
  bool stream = true;                ///< streaming responses (SSE); needed for TTFT and ITL
  double connect_timeout_s = 10;     ///< TCP connect
  double first_byte_timeout_s = 300; ///< request sent -> first response byte
  double request_timeout_s = 600;    ///< whole request
  /// No bytes at all for this long in the middle of a response = timeout (0 = off). Catches a
  /// server that stalls after the first byte without waiting for request_timeout_s.
  double idle_timeout_s = 0;
  size_t max_body_bytes = 64u << 20; ///< larger responses are cut off and recorded as errors
  size_t body_excerpt_bytes = 512;   ///< how much of an error body is kept
  std::string api_key;               ///< sent as "Authorization: Bearer ..." when not empty
  /// The most output tokens one verify step can commit (the runner passes the method's verify
  /// width: 1, the block, or budget + 1); 0 = unknown. A request whose server reports more
  /// tokens per verify step than this is `malformed`: an acceptance length no decoder can reach,
  /// or an "autoregressive" server that speculates. The prefill's token, and one per re-prefill
  /// after a retraction (SGLang keeps the count), are allowed for (see spec_contradiction).
  int max_tokens_per_step = 0;
};

/// Why a request failed.
enum class ErrorKind {
  none,
  connect,            ///< could not connect (refused, reset before any answer)
  timeout_connect,    ///< connect_timeout_s passed
  timeout_first_byte, ///< first_byte_timeout_s passed with no response byte
  timeout_total,      ///< request_timeout_s (or idle_timeout_s) passed
  http_status,        ///< a non-2xx status (status and body excerpt recorded)
  context_overflow,   ///< a 400 that says the prompt + output exceed the context length
  malformed,          ///< the body or an SSE event is not the JSON we expect
  body_too_large,     ///< more than max_body_bytes
  transport,          ///< the connection broke mid-response (e.g. wrong Content-Length, reset)
  incomplete,         ///< a stream ended without its final event
  aborted,            ///< the run was aborted (abort(), watchdog)
  server_abort,       ///< the server ended the request itself (SGLang/vLLM finish_reason "abort")
};
/// Stable name, e.g. "timeout_first_byte".
const char* to_string(ErrorKind kind) noexcept;

/// Speculative-decoding figures the server reported for one request (all optional, since names
/// and presence differ across servers and versions).
struct ServerSpecFigures {
  std::optional<int64_t> verify_steps; ///< SGLang meta_info.spec_verify_ct
  std::optional<double> accept_length; ///< SGLang spec_accept_length
  std::optional<double> accept_rate;   ///< SGLang spec_accept_rate
  std::optional<int64_t>
      correct_drafts; ///< spec_num_correct_drafts / spec_accepted_drafts / spec_accept_token_num
  std::optional<int64_t>
      proposed_drafts; ///< spec_num_proposed_drafts / spec_proposed_drafts / spec_draft_token_num
  std::vector<int64_t> accept_histogram; ///< spec_correct_drafts_histogram / spec_accept_histogram
  std::optional<int64_t> draft_n;        ///< llama.cpp timings.draft_n
  std::optional<int64_t>
      draft_n_accepted; ///< llama.cpp timings.draft_n_accepted / draft_accepted_n
};

/// What happened to one request.
struct RequestRecord {
  int index = 0;   ///< position in the request list of its run
  int run = 0;     ///< measured run number (0-based); -1 for warmup
  bool ok = false; ///< a complete, well-formed 2xx answer
  ErrorKind error = ErrorKind::none;
  int http_status = 0;           ///< 0 = no HTTP answer
  std::string error_message;     ///< one line for humans
  std::string body_excerpt;      ///< start of the body of a failed request
  bool context_overflow = false; ///< the server rejected the prompt as too long for its context

  double start_s = 0; ///< send time, seconds since the run started
  double ttft_s = -1; ///< first generated token (first non-empty chunk), -1 = none
  double e2e_s = -1;  ///< whole request, -1 = did not finish
  /// Gap before each later chunk that carried new tokens; a chunk carrying k tokens counts once
  /// (speculative servers emit several tokens per step).
  std::vector<double> itls_s;
  std::vector<int>
      chunk_tokens; ///< new tokens per content chunk (same order; first chunk included)

  int prompt_tokens = -1; ///< server-reported (meta_info / usage / timings), -1 = unknown
  /// Token ids sent as ids (/generate, /v1/completions), 0 = sent as text. A server that counts
  /// another number for them did not process the prompt sent, and the request fails.
  int sent_prompt_tokens = 0;
  int output_tokens = -1; ///< server-reported completion tokens (else counted chunks), -1 = unknown
  std::string finish_reason; ///< "length", "stop", ... as reported
  int64_t bytes = 0;         ///< response bytes received
  ServerSpecFigures spec;    ///< what the server reported for speculative decoding

  /// Verify steps (SGLang spec_verify_ct), -1 when not reported.
  int64_t verify_steps() const noexcept { return spec.verify_steps.value_or(-1); }
  /// output_tokens / verify_steps (SGLang's definition, bonus token included), -1 when unknown.
  double acceptance_length() const noexcept;
};

/// Aggregate acceptance over a set of records.
struct AcceptanceSummary {
  int requests = 0;              ///< records with output tokens and verify steps
  int64_t output_tokens = 0;     ///< their summed output tokens
  int64_t verify_steps = 0;      ///< their summed verify steps
  double acceptance_length = -1; ///< sum output / sum verify (verify-weighted), -1 = none
  /// (sum output - requests) / sum verify: without the first token, which comes from prefill.
  double acceptance_length_unbiased = -1;
  double mean_per_request = -1; ///< mean of per-request output/verify
};
/// Sums the successful records that report verify steps.
AcceptanceSummary summarize_acceptance(const std::vector<RequestRecord>& records);

/// Live progress (delivered on the client thread; keep the callback short).
struct ClientProgress {
  int run = 0;               ///< -1 while warming up
  int done = 0;              ///< finished requests (ok or not) of this run
  int failed = 0;            ///< of which failed
  int total = 0;             ///< requests in this run
  int in_flight = 0;         ///< requests being served now
  int64_t output_tokens = 0; ///< tokens received so far in this run (chunks counted live)
  double elapsed_s = 0;      ///< since this run started
};
/// Called at most every progress_interval_s and once at the end of each run.
using ProgressCallback = std::function<void(const ClientProgress&)>;

/// One run: requests at a fixed concurrency.
struct RunResult {
  int run = 0; ///< -1 = warmup
  int concurrency = 1;
  std::vector<RequestRecord> records; ///< one per request, in request order
  double wall_s = 0;                  ///< first send to last completion
  int ok_count = 0;                   ///< records with ok
  int failed_count = 0;               ///< records without ok
  std::string aborted;                ///< non-empty when abort() ended the run: the reason
};

/// A workload's warmup and measured runs.
struct WorkloadResult {
  RunResult warmup;            ///< warmup requests (not measured)
  std::vector<RunResult> runs; ///< Workload::runs measured runs
  std::string aborted;         ///< non-empty when the workload was aborted: the reason
};

/// Called by run_workload on the calling thread around each measured run (never around the
/// warm-up): `before_run(r)` right before run r sends its first request, `after_run(result)`
/// right after its last answer (also when it was aborted). Lets a caller take figures that cover
/// exactly the measured requests (the runner scrapes the server's counters here); time spent in
/// a hook is not part of any run's wall time.
struct RunHooks {
  std::function<void(int run)> before_run;
  std::function<void(const RunResult& result)> after_run;
};

/// The measuring client. One object per server; run() may be called repeatedly, not
/// concurrently. abort() is thread-safe (e.g. from a Watchdog callback or a signal-watching
/// thread).
class Client {
public:
  /// Validates nothing yet; the first run checks the URL.
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Sends `requests` with at most `concurrency` in flight (a new one starts as soon as one
  /// ends), from the calling thread. Each request gets a record; errors are recorded, never
  /// thrown. Fails only when nothing could be attempted (bad URL, curl init); after abort(),
  /// unfinished requests are recorded as `aborted`.
  Expected<RunResult> run(const std::vector<RequestSpec>& requests, int concurrency,
                          const ProgressCallback& progress = {}, int run_number = 0);

  /// Warmup (Workload::warmup requests), then Workload::runs runs of Workload::requests requests
  /// at Workload::concurrency. Prompts are taken in order, cycling: warmup from index 0, run r
  /// from warmup + r * requests; so make_prompts(workload, warmup + runs * requests) gives every
  /// request a prompt of its own (no prefix-cache hits between runs). Stops early after abort().
  /// `hooks` are called around each measured run (see RunHooks).
  Expected<WorkloadResult> run_workload(const Workload& workload,
                                        const std::vector<Prompt>& prompts,
                                        const ProgressCallback& progress = {},
                                        const RunHooks& hooks = {});

  /// One request, synchronously (the readiness probe and tests use it).
  RequestRecord send(const RequestSpec& request);

  /// Aborts the current and any later run: unfinished requests end as ErrorKind::aborted.
  void abort(const std::string& reason);
  /// True after abort().
  bool aborted() const noexcept;
  /// Clears the abort flag so the client can be used again.
  void reset_abort();

  /// Bytes of data received by all requests so far: whole bodies, and a stream's `data:` lines
  /// (not its keep-alive comments), so it grows only while answers progress; a watchdog's
  /// progress counter. Thread-safe.
  uint64_t bytes_received() const noexcept;
  /// Requests in flight now. Thread-safe.
  int in_flight() const noexcept;

  /// Minimum seconds between progress callbacks (default 0.2).
  void set_progress_interval(double seconds);
  /// The options in use.
  const ClientOptions& options() const noexcept;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// How synthetic prompts are made.
struct PromptOptions {
  int32_t min_token_id = 1000;  ///< synthetic ids are uniform in [min_token_id, max_token_id]
  int32_t max_token_id = 30000; ///< (avoids special tokens of common vocabularies)
};

/// Prompts for a workload: `count` synthetic prompts of exactly workload.prompt_tokens token ids
/// (deterministic from workload.seed; text is empty), or the dataset's prompts in file order
/// (cycled when it has fewer than `count`; count 0 = all of it). Dataset lines are JSON objects
/// with "prompt" or "text" (string), "input_ids" (array of ints), and/or "messages" (chat);
/// blank lines are skipped; a bad line fails with its line number.
Expected<std::vector<Prompt>> make_prompts(const Workload& workload, int count,
                                           const PromptOptions& options = {});

/// One line of a JSONL prompt dataset: a JSON object with "prompt" or "text" (a non-empty
/// string), "input_ids" (a non-empty array of token ids 0..2^31 - 1) or "messages" (a non-empty
/// chat, each with a string "content"), and optionally "prompt_tokens". The error says what is
/// wrong with the line (the caller adds where). `specbench plan` checks a dataset with the same
/// rule as the run that reads it.
Expected<Prompt> parse_prompt_line(const std::string& line);

/// Why `path` cannot be a prompt dataset, found without reading it: "does not exist", "is a
/// folder", "is not a regular file (...)" (a FIFO would block a read for ever, a device such as
/// /dev/zero never end it), "is a dangling symlink (to T, which is gone)", "is a loop of
/// symbolic links", "cannot be read: ..." (permissions); "" for a regular file or a link to one.
std::string dataset_file_problem(const std::filesystem::path& path);

/// Reads a JSONL prompt dataset (see make_prompts): every non-blank line by parse_prompt_line.
Expected<std::vector<Prompt>> load_prompt_dataset(const std::filesystem::path& path);

/// The request list of one run: `count` requests cycling through `prompts` starting at `offset`,
/// with the workload's sampling settings (seed + request index as the per-request seed).
std::vector<RequestSpec> make_requests(const Workload& workload, const std::vector<Prompt>& prompts,
                                       int count, int offset = 0);

/// True when an HTTP error body says the request is longer than the model's context (SGLang,
/// vLLM and llama.cpp wordings).
bool is_context_overflow_message(int http_status, const std::string& body);

} // namespace specbench
