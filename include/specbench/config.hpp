#pragma once
/// \file config.hpp
/// A benchmark sweep as written in YAML: the model, the server and how to launch it, the phases
/// (tensor-parallel groups), the methods (autoregressive, linear chain, tree budgets) and the
/// workloads. Loading validates everything before anything runs and reports every problem at
/// once, each with file:line:column, what is wrong and how to fix it.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specbench {

/// The server family: SGLang's native API, or any OpenAI-compatible server (vLLM, llama.cpp).
enum class Backend { sglang, openai };
/// "sglang" or "openai".
const char* to_string(Backend b) noexcept;

/// Which HTTP API the client drives.
enum class ApiKind { generate, completions, chat };
/// "generate", "completions" or "chat".
const char* to_string(ApiKind a) noexcept;

/// How tokens are drafted and verified.
enum class MethodKind { autoregressive, linear, tree };

/// One decoding method of the matrix.
struct Method {
  MethodKind kind = MethodKind::autoregressive; ///< autoregressive, linear (DFlash), tree (DDTree)
  int block = 0;  ///< drafter block size (linear: the verify width; tree: drafter positions + 1)
  int budget = 0; ///< tree node budget B (tree only; verify width B + 1)

  /// Tokens the target verifies per step: 1, block, or budget + 1.
  int verify_width() const noexcept;
  /// Short stable name used in cell ids: "autoregressive", "linear-k16", "ddtree-b15".
  std::string id() const;
  /// "autoregressive", "linear" or "tree".
  const char* kind_name() const noexcept;
};

/// The prompts and request pattern of one workload.
struct Workload {
  std::string name = "default";   ///< unique within the sweep
  std::filesystem::path dataset;  ///< JSONL prompts ("prompt"/"text" or "input_ids"), or empty
  int prompt_tokens = 0;          ///< synthetic prompts of exactly this many tokens (no dataset)
  int max_prompt_tokens = 0;      ///< dataset: longest prompt in tokens, when known (0 = unknown)
  int max_new_tokens = 256;       ///< output tokens per request
  int concurrency = 1;            ///< requests in flight at once
  int requests = 16;              ///< measured requests per run
  int warmup = 2;                 ///< warm-up requests before the first run (not measured)
  int runs = 1;                   ///< repetitions of the measured requests
  double temperature = 0.0;       ///< 0 = greedy
  uint64_t seed = 0;              ///< prompt synthesis and sampling seed
  bool ignore_eos = true;         ///< ask the server to generate exactly max_new_tokens

  /// Longest prompt the context check must allow for (synthetic length or max_prompt_tokens).
  int longest_prompt() const noexcept { return prompt_tokens > 0 ? prompt_tokens : max_prompt_tokens; }
};

/// The model under test.
struct ModelSpec {
  std::string name;          ///< served model name (OpenAI "model" field); defaults to path
  std::string path;          ///< local directory or hub id; {model}
  std::string draft_path;    ///< drafter for linear/tree methods; {draft_model}
  int context_length = 0;    ///< tokens; used when config.json cannot be read locally
};

/// How to start and talk to the server of one cell.
struct ServerSpec {
  Backend backend = Backend::sglang;
  ApiKind api = ApiKind::generate;
  /// argv template shared by all cells, with placeholders such as {port} {tp} {model}.
  std::vector<std::string> launch;
  /// argv appended per method kind: keys "autoregressive", "linear", "tree".
  std::map<std::string, std::vector<std::string>> method_args;
  std::map<std::string, std::string> env; ///< extra environment for the server process
  std::string host = "127.0.0.1";         ///< where the server listens
  int port = 0;                           ///< 0 = choose a free port per cell
  double readiness_timeout_s = 600;       ///< give up waiting for readiness after this
  double stop_grace_s = 20;               ///< SIGTERM, then SIGKILL after this
  double request_timeout_s = 600;         ///< whole-request timeout
};

/// One phase: a tensor-parallel group size and the GPUs it uses.
struct PhaseSpec {
  int tp = 1;                          ///< tensor parallelism; {tp}
  std::vector<int> gpus;               ///< GPU ordinals; empty = 0..tp-1; {gpus} = "0,1,2,3"
  std::vector<std::string> workloads;  ///< workload names run in this phase; empty = all
  std::map<std::string, std::string> env; ///< extra environment for this phase's servers
};

/// Runner behaviour that belongs to the sweep.
struct RunnerSpec {
  bool preflight = true;                  ///< gate each phase on the GPU preflight
  bool skip_smaller_budgets_after_crash = true; ///< after tree budget B crashes, skip budgets < B
  double gpu_memory_tolerance_mib = 512;  ///< GPU memory must return to baseline within this
  std::filesystem::path results_dir;      ///< default results directory (relative to the sweep)
};

/// A whole sweep: what `specbench plan` expands and `specbench run` executes.
struct Sweep {
  std::string name;                  ///< short name, used in reports
  std::string description;           ///< free text
  std::filesystem::path source;      ///< the YAML file it came from (empty when built in code)
  int gpus = 0;                      ///< GPUs the sweep declares (TP must not exceed this)
  ModelSpec model;
  ServerSpec server;
  std::vector<PhaseSpec> phases;
  std::vector<Method> methods;       ///< expanded: one entry per tree budget
  std::vector<Workload> workloads;
  RunnerSpec runner;
  std::string source_hash;           ///< hash of the YAML text (empty when built in code)
};

/// How bad a diagnostic is.
enum class Severity { error, warning };

/// One problem found in a sweep, located in its file.
struct Diagnostic {
  Severity severity = Severity::error;
  std::string file;   ///< path of the YAML file, or "<sweep>" for sweeps built in code
  int line = 0;       ///< 1-based; 0 when unknown
  int column = 0;     ///< 1-based; 0 when unknown
  std::string path;   ///< the key path, e.g. "workloads[1].max_new_tokens"
  std::string message; ///< what is wrong
  std::string fix;     ///< how to fix it

  /// "file:line:col: error: message (at path)\n  fix: ..." on two lines.
  std::string to_string() const;
};

/// The outcome of loading a sweep: the sweep when there are no errors, and every diagnostic.
struct LoadResult {
  std::optional<Sweep> sweep;
  std::vector<Diagnostic> diagnostics;

  /// True when there is a sweep (warnings allowed).
  bool ok() const noexcept { return sweep.has_value(); }
  /// Number of errors (not warnings).
  int error_count() const noexcept;
};

/// Upper bounds enforced by validation (a sweep beyond them is a typo, not a plan).
struct Limits {
  static constexpr int max_tp = 1024;
  static constexpr int max_budget = 1024;
  static constexpr int max_block = 256;
  static constexpr int max_tokens = 16 * 1024 * 1024;
  static constexpr int max_concurrency = 65536;
  static constexpr int max_requests = 10'000'000;
  static constexpr std::uintmax_t max_file_bytes = 4 * 1024 * 1024;
  static constexpr int max_nesting = 64;
  /// Each cell starts a server (minutes): more than this is a typo, and expanding it took minutes
  /// and gigabytes before any check could say so.
  static constexpr long long max_cells = 10'000;
};

/// Loads and validates a YAML sweep file. Never throws; every problem is a Diagnostic.
LoadResult load_sweep_file(const std::filesystem::path& file);

/// Loads and validates YAML text; `file_name` is used in diagnostics, relative paths resolve
/// against `base_dir`.
LoadResult load_sweep_text(std::string_view yaml, const std::string& file_name = "<string>",
                           const std::filesystem::path& base_dir = {});

/// Validates a sweep built in code (the same rules as for YAML, without line numbers).
std::vector<Diagnostic> validate_sweep(const Sweep& sweep);

/// The context length cells are checked against, and where it came from ("config.json" of a
/// local model directory, or "sweep").
struct ContextLength {
  int tokens = 0;
  std::string source;
  /// The sweep's model.context_length when the model's maximum replaced it (it was larger and
  /// the server may not exceed the maximum); 0 when it did not.
  int capped_from = 0;
};

/// The context the server is launched with ({context_length}) and requests must fit: the
/// sweep's model.context_length, capped by max_position_embeddings (or text_config's) in
/// `<model.path>/config.json` when that is readable here, unless `allow_longer` (see
/// allows_longer_context); the model's maximum when the sweep sets none.
std::optional<ContextLength> resolve_context_length(const ModelSpec& model,
                                                    bool allow_longer = false);
/// True when every server of the sweep may run a context longer than the model's maximum:
/// SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN set to 1 or true in server.env or in every phase's.
bool allows_longer_context(const Sweep& sweep);

} // namespace specbench
