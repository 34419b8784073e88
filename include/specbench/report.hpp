#pragma once
/// \file report.hpp
/// What a results directory shows: per phase and cell, output tokens/s, TPOT, TTFT and ITL
/// percentiles, acceptance length, speedup against the autoregressive cell of the same phase and
/// workload (with its spread over runs), and status, with failed, blocked and skipped cells
/// listed with their reasons. Rendered as Markdown, CSV, JSON and SVG plots (speedup and
/// acceptance length against tree budget). Definitions are in docs/report.md.

#include "specbench/results.hpp"
#include "specbench/status.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace specbench {

/// Version of the report JSON; bumped on any incompatible change.
inline constexpr int report_schema_version = 1;

/// One cell of the report.
struct ReportCell {
  std::string phase_id;                   ///< e.g. "tp1"
  std::string cell_id;                    ///< e.g. "tp1-ddtree-b16"
  Method method;                          ///< the decoding method
  std::string workload;                   ///< workload name
  int tp = 1;                             ///< tensor parallelism
  CellStatus status = CellStatus::failed; ///< how it ended
  std::string stage;                      ///< failure stage ("" when ok)
  std::string reason;                     ///< failure reason ("" when ok)
  std::string diagnosis;                  ///< failure diagnosis ("" when none)
  std::string log_tail;                   ///< last log lines of a failed cell
  int runs = 0;                           ///< measured runs
  int requests = 0;                       ///< requests sent
  int failed_requests = 0;                ///< requests that failed
  Distribution output_tokens_per_s;       ///< over runs
  Distribution ttft_s;                    ///< over completed requests
  Distribution tpot_s;                    ///< over completed requests
  Distribution itl_s;                     ///< over inter-chunk gaps
  /// Σ output tokens / Σ verify steps; 1 for autoregressive cells by definition; absent when
  /// the server reported no verify steps.
  std::optional<double> acceptance_length;
  /// Server-side acceptance length: the mean over the cell's runs of the figure from the server's
  /// own counter deltas (RunSummary::server_side). It counts verify-step tokens only (not the
  /// first, prefill token) and every client the server had; absent when no run has it.
  std::optional<double> server_acceptance_length;
  std::string server_acceptance_source; ///< which counters (first run that had them)
  /// SGLang avg_spec_accept_length after the last scraped run (cumulative since the server
  /// started, warm-up included; lags up to 40 decode steps); absent when not reported.
  std::optional<double> sglang_avg_spec_accept_length;
  int server_side_runs = 0; ///< runs with server-side figures (0: not scraped, e.g. old results)
  /// Why server_acceptance_length is absent although runs were scraped (e.g. "/metrics answered
  /// HTTP 404", "no speculative counters in /metrics"); "" otherwise.
  std::string server_side_absent_reason;
  /// mean tok/s of this cell / mean tok/s of the autoregressive cell of the same phase and
  /// workload; absent when either is not ok.
  std::optional<double> speedup;
  /// Standard deviation of the speedup from the runs' spread (relative errors added in
  /// quadrature); 0 when both cells have fewer than two runs.
  double speedup_stddev = 0;
  /// Smallest and largest ratio of one run of this cell to one run of the baseline.
  double speedup_min = 0, speedup_max = 0;
  /// Mean TPOT of the baseline / mean TPOT of this cell (the per-token latency speedup).
  std::optional<double> tpot_speedup;
  std::string baseline_cell;      ///< the autoregressive cell compared against ("" = none)
  std::vector<std::string> notes; ///< the cell's notes (e.g. synthetic model)
};

/// One phase of the report.
struct ReportPhase {
  std::string id;                ///< e.g. "tp4"
  int tp = 1;                    ///< tensor parallelism
  std::vector<int> gpus;         ///< GPU ordinals
  std::string preflight;         ///< "passed", "failed", "not_run", "disabled" or "" (unknown)
  std::vector<ReportCell> cells; ///< in run order
};

/// The whole report.
struct Report {
  std::string sweep_name;             ///< from the manifest (or the results)
  std::string sweep_file;             ///< from the manifest
  std::string sweep_hash;             ///< from the manifest
  std::string results_dir;            ///< where it was read from
  std::string specbench_version;      ///< of the run that wrote the manifest
  std::string specbench_commit;       ///< of the run that wrote the manifest
  std::string generated_at;           ///< ISO-8601 UTC
  std::string state;                  ///< manifest state ("finished", "interrupted", ...)
  std::vector<std::string> gpu_names; ///< GPU names seen in provenance
  std::string driver_version;         ///< seen in provenance
  std::string cuda_version;           ///< seen in provenance
  bool synthetic = false;             ///< some result says its server's model is synthetic
  std::vector<ReportPhase> phases;    ///< in run order
  /// Cells of the manifest without a result ("pending"), and unreadable result files.
  std::vector<std::string> missing;
  std::vector<std::string> problems; ///< unreadable files and similar

  /// Cells by status.
  int count(CellStatus s) const noexcept;
  /// All cells.
  int cell_count() const noexcept;
  /// True when every cell of the manifest is present and ok, and nothing in the results could
  /// not be read or was left out (`problems` is empty): an unreadable manifest cannot say which
  /// cells are missing, and an unreadable cell result is one.
  bool all_ok() const noexcept;
};

/// Builds the report from results and (optionally) the manifest, which gives the order, the
/// phases' preflight verdicts and the cells still missing. Results of cells the manifest does
/// not list, or whose config hash differs from it, are left out and named in `problems`.
Report build_report(const std::vector<CellResult>& results, const Manifest* manifest);

/// Reads a results directory (manifest.json and cells/) and builds its report. Fails when the
/// directory has neither a manifest nor any result.
Expected<Report> load_report(const std::filesystem::path& results_dir);

/// The report as Markdown (the text `specbench report` prints).
std::string report_markdown(const Report& report);
/// One CSV row per cell with a header row (RFC 4180 quoting).
std::string report_csv(const Report& report);
/// The report as JSON with schema_version.
std::string report_json(const Report& report);

/// Which figure to plot against tree budget.
enum class PlotKind { speedup, acceptance_length };

/// An SVG plot of speedup or acceptance length against tree budget (x = draft nodes verified per
/// step: budget B for trees, block - 1 for linear chains, 0 for autoregressive), one line per
/// phase (and workload), linear and autoregressive cells marked, failed tree cells marked on the
/// axis, error bars from the spread over runs.
std::string report_svg(const Report& report, PlotKind kind);

/// The files write_report_files() wrote.
struct ReportFiles {
  std::filesystem::path markdown;       ///< report.md
  std::filesystem::path csv;            ///< report.csv
  std::filesystem::path json;           ///< report.json
  std::filesystem::path speedup_svg;    ///< speedup.svg
  std::filesystem::path acceptance_svg; ///< acceptance.svg
};

/// The paths of the files write_report_files() writes into `dir`.
ReportFiles report_files_in(const std::filesystem::path& dir);

/// Removes those of them that exist: a run removes its results directory's report before it
/// moves or measures anything, so that a report never outlives the results it describes (a run
/// killed before it writes the new one leaves none). Other files in `dir` are left alone.
Status remove_report_files(const std::filesystem::path& dir);

/// Writes report.md, report.csv, report.json, speedup.svg and acceptance.svg into `dir`
/// (atomically each).
Expected<ReportFiles> write_report_files(const Report& report, const std::filesystem::path& dir);

} // namespace specbench
