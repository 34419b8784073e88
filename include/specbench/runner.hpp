#pragma once
/// \file runner.hpp
/// Runs a benchmark matrix end to end. Per phase: the GPU preflight gates the phase (a failure
/// blocks it, with the report kept, and starts no server). Per cell: skip when a complete result
/// with the same config hash exists (resume = run the same command again); start the server,
/// wait for readiness, warm up, measure N runs, stop the server and check that GPU memory went
/// back to its baseline. A failure belongs to its cell (stage, reason, log tail, diagnosis) and
/// the sweep goes on. A stop request (Ctrl-C) stops the server, keeps finished cells and marks
/// the cell in flight interrupted. The simulated server is run like any other server.
/// With Sweep::runner.skip_smaller_budgets_after_crash, a phase's tree cells run largest budget
/// first, so that a crash at budget B skips the budgets below B (recorded as skipped).

#include "specbench/config.hpp"
#include "specbench/matrix.hpp"
#include "specbench/preflight.hpp"
#include "specbench/results.hpp"
#include "specbench/status.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace specbench {

/// What the runner is doing; delivered to RunnerOptions::on_event.
enum class RunnerEventKind {
  sweep_started,  ///< the matrix is known; `total_cells` cells, `to_run` of them will run
  phase_started,  ///< a phase begins (before its preflight)
  preflight_done, ///< a preflight finished; `status` is "passed" or "failed", `message` why
  cell_skipped,   ///< a cell is not run (complete result, or a runner rule); `message` why
  cell_started,   ///< a cell's server is being started
  cell_stage,     ///< a cell entered `stage` ("readiness", "warmup", "measure", "stop")
  cell_progress,  ///< requests of the current run progressed (about every 0.2 s)
  cell_finished,  ///< a cell ended with `status`; `message` is the reason when not ok
  message,        ///< a note worth printing (stale results moved aside, memory check, ...)
  sweep_finished, ///< the sweep ended (or was interrupted)
};

/// A progress event. Fields not relevant to the kind are left empty/zero.
struct RunnerEvent {
  RunnerEventKind kind = RunnerEventKind::message;
  std::string phase_id;    ///< current phase
  std::string cell_id;     ///< current cell
  int cell_index = 0;      ///< 1-based position of the current cell among those to run
  int to_run = 0;          ///< cells this invocation runs (not counting skipped ones)
  int total_cells = 0;     ///< cells in the matrix (or in --only)
  std::string stage;       ///< cell_stage: the stage name
  std::string status;      ///< preflight_done / cell_finished: the outcome
  std::string message;     ///< human text
  int run = 0;             ///< cell_progress: 0-based run (-1 = warm-up)
  int runs = 0;            ///< cell_progress: measured runs of the cell
  int requests_done = 0;   ///< cell_progress: finished requests of this run
  int requests_total = 0;  ///< cell_progress: requests of this run
  int requests_failed = 0; ///< cell_progress: failed requests of this run
  double tokens_per_s = 0; ///< cell_progress: output tokens/s of this run so far
  double elapsed_s = 0;    ///< seconds since the sweep started
  double eta_s = -1;       ///< estimated seconds until the sweep ends (-1 = unknown yet)
};

/// Reads the used memory (bytes) of each GPU in `gpus` (CUDA ordinals), in the same order.
using GpuMemoryReader =
    std::function<Expected<std::vector<std::uint64_t>>(const std::vector<int>& gpus)>;

/// The default GpuMemoryReader: NVML (loaded at run time), mapping CUDA ordinals to NVML
/// indices by PCI bus id from `report` when given, else by identity when CUDA_VISIBLE_DEVICES is
/// unset. Fails (unavailable) without NVML or without a safe mapping.
Expected<std::vector<std::uint64_t>> read_gpu_memory_nvml(const std::vector<int>& gpus,
                                                          const PreflightReport* report = nullptr);

struct SweepOutcome;

/// How to run a sweep.
struct RunnerOptions {
  /// Results directory; empty = the sweep's runner.results_dir, else "results/<sweep name>".
  std::filesystem::path results_dir;
  /// Cell ids or phase ids to run; empty = all. Other cells are left as they are.
  std::vector<std::string> only;
  /// Redo the selected cells even when complete (their old results are moved aside first).
  bool fresh = false;
  /// The command line, recorded in provenance.
  std::vector<std::string> argv;
  /// Set (e.g. from a SIGINT handler) to stop cleanly; checked continuously.
  const std::atomic<bool>* stop = nullptr;
  /// Progress events, called on the runner's threads (keep it short; never throws).
  std::function<void(const RunnerEvent&)> on_event;
  /// Called once the sweep has ended (not when it could not start), while the results directory
  /// is still locked: write the report here, so that no other run can move results aside or
  /// measure them again between reading them and writing it.
  std::function<void(const SweepOutcome&)> while_locked;
  /// Overrides Sweep::runner.preflight when set: false = no preflight at all.
  std::optional<bool> preflight;
  /// Template for each phase's preflight plan (library paths, probe, timeouts); tp, gpus and
  /// model_path are filled in per phase.
  PreflightPlan preflight_template;
  /// The preflight to call; empty = run_preflight. Tests may substitute one.
  std::function<PreflightReport(const PreflightPlan&)> preflight_fn;
  /// GPU memory reader for the baseline check; empty = read_gpu_memory_nvml.
  GpuMemoryReader gpu_memory;
  /// How long to wait after a server stopped for GPU memory to come back to its baseline.
  double gpu_memory_settle_s = 30;
  /// /health failing, or no bytes arriving while requests are pending, this long while
  /// measuring = the server hangs (bounded above by the sweep's request_timeout_s).
  double hang_timeout_s = 60;
  /// Lines of server log kept in a failed cell's record.
  int log_tail_lines = 40;
};

/// What a run did.
struct SweepOutcome {
  std::filesystem::path results_dir; ///< where the results are
  int total_cells = 0;               ///< cells selected (matrix or --only)
  int already_done = 0;              ///< complete results reused (resume)
  int ran = 0;                       ///< cells run by this invocation
  int ok = 0;                        ///< cells ok at the end (reused + ran)
  int failed = 0;                    ///< cells failed at the end
  int blocked = 0;                   ///< cells blocked at the end
  int skipped = 0;                   ///< cells skipped by a runner rule at the end
  int interrupted = 0;               ///< cells interrupted at the end
  int pending = 0;                   ///< cells never reached (interrupted sweep)
  int moved_aside = 0;               ///< stale results moved into stale/
  bool stopped = false;              ///< the stop flag ended the run early
  /// Not empty when the results directory stopped taking writes (a full disk): the first write
  /// that failed. The sweep stopped there; the cell whose result could not be written counts as
  /// pending and runs again on resume.
  std::string write_error;
  double wall_s = 0; ///< time the run took

  /// 0 when every selected cell is ok, 130 when stopped by the user, 2 when results could not be
  /// written, else 1.
  int exit_code() const noexcept;
};

/// Runs `matrix` (expanded from `sweep`). Fails only when the sweep cannot be run at all
/// (results directory unusable, another run holds it, an --only id that matches nothing);
/// everything that goes wrong in a phase or cell is recorded in the results and the counts.
Expected<SweepOutcome> run_sweep(const Sweep& sweep, const Matrix& matrix,
                                 const RunnerOptions& options);

/// Where run_sweep puts results when RunnerOptions::results_dir is empty.
std::filesystem::path default_results_dir(const Sweep& sweep);

/// Classifies a failure text (error message or log) as pointing at the GPU: CUDA errors,
/// illegal instruction/address, Xid, NCCL, out of memory, device capability.
bool text_points_at_gpu(const std::string& text);

} // namespace specbench
