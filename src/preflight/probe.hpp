#pragma once
// The parent and child sides of the GPU probe process (internal).
#include "specbench/preflight.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace specbench::preflight {

/// Child side: runs the probe described by `request_json`, writing JSON lines to `out_fd`.
int run_gpu_probe(const std::string& request_json, int out_fd);

/// What came back from one probe child.
struct ProbeOutcome {
  bool started = false;               ///< the child process could be started
  std::string start_error;            ///< why not
  std::string executable;             ///< the probe executable, or "(fork)" when the library forked
  std::vector<nlohmann::json> events; ///< every event the child wrote, in order
  bool finished = false;              ///< the child wrote its "done" event
  bool timed_out = false;             ///< killed after a step ran past its limit
  std::string hung_step;              ///< id of the step that was running when it was killed
  int hung_gpu = -1;                  ///< its GPU
  double limit_ms = 0.0;              ///< the limit it exceeded
  bool reaped = true;      ///< false: the killed child did not exit (stuck in the kernel)
  int exit_code = -1;      ///< exit status, -1 when killed by a signal
  int term_signal = 0;     ///< signal that ended it (0 = none)
  std::string stderr_tail; ///< last lines it wrote to stderr
  double elapsed_ms = 0.0; ///< wall time of the child
};

/// Resolves the probe executable for `plan` ("" = none found: the library forks itself).
std::string find_probe_executable(const PreflightPlan& plan);

/// Starts the probe child for `request` and collects its events, killing it when a step runs
/// past the plan's limit for that step.
ProbeOutcome run_probe_child(const nlohmann::json& request, const PreflightPlan& plan);

} // namespace specbench::preflight
