#pragma once
/// \file matrix.hpp
/// The benchmark matrix: a sweep expanded into phases (one per TP group) of cells (method x
/// workload), each with a stable readable id, its server argv and a config hash. Planning never
/// starts anything.

#include "specbench/config.hpp"
#include "specbench/status.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace specbench {

/// One benchmark cell: one server configuration measured with one workload.
struct Cell {
  std::string id;          ///< e.g. "tp1-autoregressive", "tp4-linear-k16", "tp1-ddtree-b15"
                           ///< (suffix "-<workload>" when the sweep has several workloads)
  std::string phase_id;    ///< e.g. "tp4"
  int tp = 1;
  std::vector<int> gpus;   ///< GPU ordinals of the phase
  Method method;
  Workload workload;
  int context_length = 0;  ///< the context the cell was checked against
  /// Server argv with every placeholder substituted except {port} (known only at launch).
  std::vector<std::string> argv;
  /// Whether the server is given the drafter (model.draft_path): its launch template uses
  /// {draft_model}, or an argument holds the drafter's path as a whole word (the argument, an
  /// option's "=value", or a quoted or comma-separated word inside one, as in a JSON
  /// --speculative-config). Never for a path equal to model.path: that is the target.
  bool loads_drafter = false;
  std::map<std::string, std::string> env; ///< server + phase environment
  /// Hash of everything that changes the result (argv, env, method, workload, model, backend).
  /// A stored result with another hash is stale.
  std::string config_hash;
  /// dataset_file_hash() of the workload's dataset when the matrix was expanded ("" without a
  /// dataset); part of config_hash. The runner checks it again before it measures the cell.
  std::string dataset_hash;
};

/// A dataset file's contents hash ("unreadable" when it cannot be read): an edited dataset makes
/// its cells' results stale, and a run stops measuring on a dataset edited under it.
std::string dataset_file_hash(const std::filesystem::path& path);

/// One phase: a TP group and its cells, run under one preflight.
struct Phase {
  std::string id;        ///< "tp1", "tp4", ... (unique; "tp4-2" for a second TP4 phase)
  int tp = 1;
  std::vector<int> gpus; ///< GPU ordinals (explicit or 0..tp-1)
  std::vector<Cell> cells;
};

/// The expanded matrix of a sweep.
struct Matrix {
  std::vector<Phase> phases;

  /// Total number of cells.
  size_t cell_count() const noexcept;
  /// The cell with this id, or nullptr.
  const Cell* find(const std::string& id) const noexcept;
};

/// What only the caller knows: the running executable, and the environment servers inherit.
struct PlanContext {
  std::string specbench_executable; ///< {specbench}; empty = this process's executable
  /// The runner's own CUDA_VISIBLE_DEVICES (nullopt: unset). A phase without `gpus` whose env
  /// does not set it passes this value on explicitly, so the cell's env and config hash say
  /// which GPUs its server saw: results measured under another value are then stale.
  std::optional<std::string> inherited_visible_devices;
};

/// A PlanContext for this process: its executable and its CUDA_VISIBLE_DEVICES.
PlanContext plan_context_from_environment();

/// Expands a validated sweep. Fails (invalid_argument) on an unknown placeholder in the argv
/// templates; validation already reports those with line numbers.
Expected<Matrix> expand_matrix(const Sweep& sweep, const PlanContext& context = {});

/// The placeholders a launch template may use.
const std::vector<std::string>& known_placeholders();

/// Replaces {name} in each argument (never joined into a shell string). Unknown names fail;
/// names in `keep` are left as they are (e.g. {port} until launch). "{{" and "}}" are literal.
Expected<std::vector<std::string>> substitute_placeholders(
    const std::vector<std::string>& argv_template, const std::map<std::string, std::string>& values,
    const std::vector<std::string>& keep = {});

/// The matrix as JSON with schema_version (for `specbench plan --json`).
std::string matrix_to_json(const Matrix& matrix, const Sweep& sweep);

/// Stable short hash (16 hex digits, FNV-1a 64) of a text.
std::string stable_hash(std::string_view text);

} // namespace specbench
