#pragma once
/// \file results.hpp
/// What a sweep leaves behind: one versioned JSON file per cell (written atomically: temp file,
/// fsync, rename), with provenance, per-request records and summaries, and a sweep manifest.
/// Killing the writer at any moment loses at most the cell in flight and never corrupts a
/// finished one. Results whose configuration changed are moved aside, never mixed in.
/// The schema is documented in docs/results_schema.md.

#include "specbench/config.hpp"
#include "specbench/status.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace specbench {

/// Version of the cell-result and manifest JSON; bumped on any incompatible change.
inline constexpr int results_schema_version = 1;

// ---------------------------------------------------------------------------------------------
// Statistics

/// Summary of a sample: count, mean, standard deviation, min, max and percentiles.
/// Percentiles interpolate linearly between closest ranks (numpy's default); an empty sample
/// has count 0 and every other field 0.
struct Distribution {
  int count = 0;     ///< number of values
  double mean = 0;   ///< arithmetic mean
  double stddev = 0; ///< sample standard deviation (n - 1); 0 for fewer than two values
  double min = 0;    ///< smallest value
  double max = 0;    ///< largest value
  double p50 = 0;    ///< median
  double p90 = 0;    ///< 90th percentile
  double p99 = 0;    ///< 99th percentile
};

/// The q-quantile (0 <= q <= 1) of `values`, linear interpolation between closest ranks.
/// Returns 0 for an empty sample. `values` need not be sorted.
double percentile(std::vector<double> values, double q);

/// Summarizes a sample (see Distribution).
Distribution summarize(std::vector<double> values);

// ---------------------------------------------------------------------------------------------
// Per-request records and summaries

/// One request as measured by the client (times in seconds).
struct RequestMetrics {
  int run = 0;               ///< 0-based run index
  int index = 0;             ///< 0-based request index within the run
  bool ok = false;           ///< the request completed with the expected output
  std::string error;         ///< why it failed (empty when ok)
  int http_status = 0;       ///< last HTTP status (0 = no response)
  int prompt_tokens = 0;     ///< as reported by the server (or the synthetic length)
  int output_tokens = 0;     ///< completion tokens as reported by the server
  double start_s = 0;        ///< send time relative to the start of its run
  double ttft_s = 0;         ///< time to first token (streaming), or e2e when not streamed
  double e2e_s = 0;          ///< whole request latency
  std::vector<double> itl_s; ///< gaps between streamed chunks after the first
  int64_t verify_steps = -1; ///< target verify steps (SGLang spec_verify_ct; -1 = unknown)

  /// Time per output token after the first: (e2e - ttft) / (output_tokens - 1); 0 when
  /// fewer than two tokens.
  double tpot_s() const noexcept;
};

/// What the server itself said about one measured run: its Prometheus /metrics counters and
/// SGLang /server_info, scraped right before the run's first request and right after its last
/// answer (warm-up excluded) and differenced. Kept apart from the client's figures because they
/// are the server's view: counters include every client's traffic during the interval, and SGLang's
/// avg_spec_accept_length is cumulative since the server started and lags up to 40 decode steps.
/// A scrape that fails leaves the figures absent with the reason; it never fails the cell.
struct ServerSideFigures {
  double interval_s = 0;         ///< time between the two scrapes
  bool metrics_ok = false;       ///< /metrics answered with Prometheus text before and after
  std::string metrics_error;     ///< why not (e.g. "/metrics answered HTTP 404")
  bool server_info_ok = false;   ///< /server_info answered a JSON object before and after
  std::string server_info_error; ///< why not
  /// Tokens committed per verify step from counter deltas (bonus token included, the first,
  /// prefill token not); absent without speculative counters.
  std::optional<double> acceptance_length;
  std::string acceptance_source; ///< which counters, e.g. "vLLM: 1 + delta ... / delta ..."
  std::optional<double> draft_acceptance_rate; ///< accepted / proposed draft tokens (deltas)
  /// Why acceptance_length is absent (no metrics, counters left out as implausible or skipped,
  /// none in /metrics); "" when it is present, and in results written before this field.
  std::string acceptance_absent_reason;
  /// SGLang internal_states[0].avg_spec_accept_length after the run (not a delta: cumulative
  /// since the server started or the last /flush_cache; lags up to decode_log_interval steps).
  std::optional<double> sglang_avg_spec_accept_length_after;
  /// Why the server's average is absent although it gave one (outside what a step commits, not
  /// finite); "" otherwise, and in results written before this field.
  std::string sglang_avg_left_out;
  std::vector<std::string> notes; ///< caveats from the scrape (counter went down, synthetic, ...)
};

/// Summary of one measured run (all its requests).
struct RunSummary {
  int run = 0;                    ///< 0-based run index
  int requests = 0;               ///< requests sent
  int failed = 0;                 ///< requests that did not complete
  double duration_s = 0;          ///< wall time from the first send to the last answer
  int64_t output_tokens = 0;      ///< sum over completed requests
  double output_tokens_per_s = 0; ///< output_tokens / duration_s
  /// Sum of output tokens / sum of verify steps over completed requests that report verify
  /// steps (the bonus token included); absent when the server reports none.
  std::optional<double> acceptance_length;
  /// The server's own figures for this run; absent when not scraped (results written before
  /// specbench recorded them). Set by the runner, not by summarize_runs.
  std::optional<ServerSideFigures> server_side;
};

/// Summary of a cell over all its runs. Latency distributions pool the completed requests of
/// every run; throughput is per run, so its spread over runs is visible.
struct CellSummary {
  int runs = 0;                     ///< measured runs
  int requests = 0;                 ///< requests sent in all runs
  int failed = 0;                   ///< requests that failed in all runs
  Distribution output_tokens_per_s; ///< over runs (one value per run)
  Distribution ttft_s;              ///< over completed requests
  Distribution tpot_s;              ///< over completed requests with at least two tokens
  Distribution itl_s;               ///< over every inter-chunk gap of every request
  Distribution e2e_s;               ///< over completed requests
  /// Pooled sum of output tokens / sum of verify steps (see RunSummary).
  std::optional<double> acceptance_length;
  Distribution acceptance_length_runs; ///< acceptance length per run (over runs reporting it)
};

/// Computes the per-run summaries of `requests` (runs 0..runs-1, a run with no record has
/// zero requests).
std::vector<RunSummary> summarize_runs(const std::vector<RequestMetrics>& requests, int runs);

/// Computes the cell summary from its requests and run summaries.
CellSummary summarize_cell(const std::vector<RequestMetrics>& requests,
                           const std::vector<RunSummary>& runs);

// ---------------------------------------------------------------------------------------------
// Cell results

/// How a cell ended.
enum class CellStatus {
  ok,          ///< measured completely
  failed,      ///< a stage failed (see CellFailure)
  blocked,     ///< not started: its phase's preflight failed
  skipped,     ///< not started by a runner rule (e.g. a larger tree budget crashed)
  interrupted, ///< stopped by the user (Ctrl-C) while in flight
};
/// "ok", "failed", "blocked", "skipped", "interrupted".
const char* to_string(CellStatus s) noexcept;
/// Parses the names of to_string; nullopt for anything else.
std::optional<CellStatus> cell_status_from_string(const std::string& s) noexcept;

/// The stage of a cell in which something went wrong.
enum class CellStage { preflight, launch, readiness, warmup, measure, stop, gpu_memory, runner };
/// "preflight", "launch", "readiness", "warmup", "measure", "stop", "gpu_memory", "runner".
const char* to_string(CellStage s) noexcept;
/// Parses the names of to_string; nullopt for anything else.
std::optional<CellStage> cell_stage_from_string(const std::string& s) noexcept;

/// Why a cell did not complete.
struct CellFailure {
  CellStage stage = CellStage::runner; ///< where it went wrong
  std::string reason;                  ///< what went wrong, one line
  std::string diagnosis;               ///< what it probably means and what to do (may be empty)
  std::string log_tail;                ///< last lines of the server log (may be empty)
  bool server_crashed = false;         ///< the server process died on its own
  bool points_at_gpu = false;          ///< the log or error names a CUDA/GPU failure
};

/// Where a result came from: enough to reproduce it and to refuse mixing it with another.
struct Provenance {
  std::vector<std::string> specbench_argv; ///< the command line of the run
  std::string specbench_version;           ///< e.g. "0.1.0"
  std::string specbench_commit;            ///< git commit of the build
  std::string hostname;                    ///< machine that ran it
  std::string sweep_name;                  ///< Sweep::name
  std::string sweep_file;                  ///< the YAML file (empty when built in code)
  std::string sweep_hash;                  ///< hash of the YAML text (or of the built sweep)
  std::vector<std::string> server_argv;    ///< the exact argv the server was started with
  std::string server_version;              ///< as the server reported it (may be empty)
  std::vector<std::string> gpu_names;      ///< from the preflight (empty when unknown)
  std::string driver_version;              ///< NVIDIA driver (empty when unknown)
  std::string cuda_version;                ///< CUDA driver API version (empty when unknown)
  /// The phase's preflight report as a JSON object text ("" = no preflight ran).
  std::string preflight_json;
};

/// The stored result of one cell (one JSON file).
struct CellResult {
  int schema_version = results_schema_version; ///< results_schema_version when written
  std::string cell_id;                         ///< Cell::id
  std::string phase_id;                        ///< Cell::phase_id
  std::string config_hash;                     ///< Cell::config_hash when run
  int tp = 1;                                  ///< tensor parallelism
  std::vector<int> gpus;                       ///< GPU ordinals
  Method method;                               ///< the decoding method
  Workload workload;                           ///< the workload
  CellStatus status = CellStatus::failed;      ///< how it ended
  std::optional<CellFailure> failure;          ///< set unless status is ok
  std::vector<std::string> notes;              ///< warnings that did not fail the cell
  std::string started_at;                      ///< ISO-8601 UTC
  std::string finished_at;                     ///< ISO-8601 UTC
  double wall_s = 0;                           ///< whole cell time incl. launch and stop
  double readiness_s = 0;                      ///< launch until ready (0 when not reached)
  int attempt = 1;                             ///< 1 + earlier attempts with the same hash
  Provenance provenance;                       ///< where it came from
  std::vector<RequestMetrics> requests;        ///< measured requests (no warm-up)
  std::vector<RunSummary> runs;                ///< per-run summaries
  CellSummary summary;                         ///< over all runs
  /// True for a finished measurement: status ok with schema and hash present.
  bool complete() const noexcept { return status == CellStatus::ok; }
};

/// Serializes a cell result to JSON text (pretty-printed).
std::string to_json(const CellResult& result);
/// Parses a cell result; fails on malformed JSON, a missing field or an unknown schema version.
Expected<CellResult> cell_result_from_json(const std::string& text);
/// Whether a finished (ok) result agrees with itself, as every result the runner writes does:
/// its runs and summary are what its requests give, its requests have finite, ordered times and
/// belong to its runs, and it records no failure. invalid_argument naming the first contradiction
/// (e.g. "summary.e2e_s.p99 is 9 in the file, 1.2 from its requests") for a result edited or
/// damaged after the run. Results that are not ok pass: nothing of theirs is reported as measured.
Status check_cell_result(const CellResult& result);

// ---------------------------------------------------------------------------------------------
// The sweep manifest

/// One cell's line in the manifest.
struct ManifestCell {
  std::string id;          ///< Cell::id
  std::string config_hash; ///< Cell::config_hash
  std::string method;      ///< Method::id()
  std::string workload;    ///< Workload::name
  std::string status;      ///< a CellStatus name, "pending" or "running"
  std::string file;        ///< result file relative to the results directory ("" if none)
};

/// One phase in the manifest.
struct ManifestPhase {
  std::string id;                  ///< Phase::id
  int tp = 1;                      ///< tensor parallelism
  std::vector<int> gpus;           ///< GPU ordinals
  /// "passed", "drafter_failed" (only the drafter's checks failed: the cells that load it are
  /// blocked, the others run), "failed", "not_run" or "disabled".
  std::string preflight;
  std::string preflight_json;      ///< the last preflight report of the phase ("" = none)
  std::vector<ManifestCell> cells; ///< in run order
};

/// The sweep manifest (manifest.json): what the results directory is about, and where it stands.
struct Manifest {
  int schema_version = results_schema_version; ///< results_schema_version
  std::string sweep_name;                      ///< Sweep::name
  std::string sweep_file;                      ///< YAML file (empty when built in code)
  std::string sweep_hash;                      ///< hash of the YAML text or the built sweep
  std::vector<std::string> specbench_argv;     ///< the last command that wrote it
  std::string specbench_version;               ///< version of that command
  std::string specbench_commit;                ///< git commit of that command
  std::string started_at;                      ///< ISO-8601 UTC of the run that wrote it
  std::string updated_at;                      ///< ISO-8601 UTC of the last write
  std::string state;                           ///< "running", "finished", "interrupted"
  std::vector<ManifestPhase> phases;           ///< in run order
};

/// Serializes a manifest to JSON text.
std::string to_json(const Manifest& manifest);
/// Parses a manifest.
Expected<Manifest> manifest_from_json(const std::string& text);

// ---------------------------------------------------------------------------------------------
// The store

/// Writes `text` to `path` atomically: a temp file in the same directory, fsync, rename, fsync
/// of the directory. A reader sees the old file or the new one, never a part.
Status write_file_atomic(const std::filesystem::path& path, const std::string& text);

/// The current time as ISO-8601 UTC with milliseconds ("2026-12-02T14:03:05.123Z").
std::string utc_now_iso8601();

/// A results directory: `cells/<cell id>.json`, `manifest.json`, `stale/<date>/...` for
/// results moved aside, `logs/<cell id>.log` for server logs.
class ResultStore {
public:
  /// Opens (creating it if needed) a results directory and removes temp files left by a
  /// killed writer. Call it holding the run's lock on the directory (as the runner does): temp
  /// files of the top folder and cells/ are then never a live writer's; in report/, which
  /// `specbench report` writes without the lock, those of a writer that still runs are kept.
  static Expected<ResultStore> open(const std::filesystem::path& dir);
  /// Opens an existing results directory to read it: creates nothing and removes nothing, so
  /// that a report taken while a run writes there never disturbs the run.
  static Expected<ResultStore> open_to_read(const std::filesystem::path& dir);

  /// The results directory.
  const std::filesystem::path& dir() const noexcept { return dir_; }
  /// Where the result of a cell lives.
  std::filesystem::path cell_path(const std::string& cell_id) const;
  /// Where the server log of a cell goes.
  std::filesystem::path log_path(const std::string& cell_id) const;
  /// The manifest file.
  std::filesystem::path manifest_path() const;

  /// Loads one cell's result; not_found when there is none, io_error/invalid_argument when it
  /// cannot be read or parsed.
  Expected<CellResult> load(const std::string& cell_id) const;
  /// Loads every parseable result in cells/ (sorted by cell id); unreadable files are listed
  /// in `problems` when given.
  std::vector<CellResult> load_all(std::vector<std::string>* problems = nullptr) const;
  /// Ids of the cells that have a result file.
  std::vector<std::string> stored_ids() const;

  /// Writes a cell result atomically (cells/<id>.json).
  Status commit(const CellResult& result) const;
  /// Moves a cell's result (and log) into `stale/<batch>/`, where `batch` names the occasion
  /// (e.g. "20261202T140305Z-config-changed"). Returns the new path.
  Expected<std::filesystem::path> move_aside(const std::string& cell_id,
                                             const std::string& batch) const;
  /// Moves only a cell's server log into `stale/<batch>/logs/` (an attempt that left no
  /// result). Returns the new path.
  Expected<std::filesystem::path> move_log_aside(const std::string& cell_id,
                                                 const std::string& batch) const;

  /// A cell's earlier attempt kept in stale/: the result and where it is.
  struct KeptAttempt {
    CellResult result;
    std::filesystem::path path;
  };
  /// The results kept in the stale/*-<why>/ batches, found by one scan of stale/ (see
  /// index_kept_attempts): a lookup lists no folder again, and reads only its cell's files.
  class KeptAttempts {
  public:
    /// The latest attempt (highest attempt number) of `cell_id` kept with this config hash, or
    /// nothing.
    std::optional<KeptAttempt> latest(const std::string& cell_id,
                                      const std::string& config_hash) const;

  private:
    friend class ResultStore;
    // cell id -> its kept result files, in the order the scan met their batches
    std::map<std::string, std::vector<std::filesystem::path>> files_;
  };
  /// Scans stale/ once for the results kept in its *-<why>/ batches. The runner keeps a failed
  /// attempt there before running the cell again; if that new attempt dies with the runner, it
  /// left no result, and the kept one carries the attempt count and the pointer to it on. The
  /// index is what stale/ held when it was taken.
  KeptAttempts index_kept_attempts(const std::string& why) const;
  /// The latest attempt of `cell_id` kept in a stale/*-<why>/ batch with this config hash, or
  /// nothing: index_kept_attempts(why).latest(...) for one cell (for many, keep the index).
  std::optional<KeptAttempt> latest_kept_attempt(const std::string& cell_id,
                                                 const std::string& config_hash,
                                                 const std::string& why) const;

  /// Reads manifest.json (not_found when there is none).
  Expected<Manifest> load_manifest() const;
  /// Writes manifest.json atomically.
  Status write_manifest(const Manifest& manifest) const;

private:
  explicit ResultStore(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::filesystem::path dir_;
};

/// A name for a batch of results moved aside, unique in `dir`: "<UTC stamp>-<why>", or
/// "<UTC stamp>-<n>-<why>" when that batch exists already (every name ends in "-<why>").
std::string stale_batch_name(const std::filesystem::path& results_dir, const std::string& why);

} // namespace specbench
