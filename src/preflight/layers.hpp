#pragma once
// Internals shared by the preflight layers: the evidence each layer leaves for the diagnosis of
// the others, and small helpers to record checks.
#include "preflight/dynlib.hpp"
#include "specbench/preflight.hpp"

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace specbench::preflight {

/// What the host layer saw.
struct HostEvidence {
  bool in_container = false;
  std::string container_kind = "none";
  bool module_loaded = false; ///< /proc/driver/nvidia/version readable
  std::string module_version; ///< from it
  bool nvidiactl_ok = false;  ///< exists, char device, right major, opens
  std::string nvidiactl_problem;
  std::vector<int> gpu_node_minors; ///< /dev/nvidiaN present as char devices
  bool uvm_ok = false;              ///< /dev/nvidia-uvm fine and module loaded
  std::string uvm_problem;          ///< what is wrong with it ("" = fine)
  bool uvm_module_loaded = false;   ///< /sys/module/nvidia_uvm
  int visible_limit = -1;           ///< devices CUDA_VISIBLE_DEVICES allows (-1 = no limit)
  bool visible_empty = false;       ///< CUDA_VISIBLE_DEVICES set to "" or only invalid entries
};

/// One GPU as NVML sees it.
struct NvmlGpu {
  int index = -1;
  std::string name, uuid, pci_bus_id;
  int minor = -1;
  unsigned long long total = 0, used = 0, free = 0;
  int persistence = -1;  ///< 1 on, 0 off, -1 unknown
  int compute_mode = -1; ///< 0 default, 2 prohibited, 3 exclusive process
  int mig_current = -1, mig_pending = -1;
  int fabric_state = -1; ///< 0 n/a, 1 not started, 2 in progress, 3 completed; -1 unsupported
  int fabric_status = 0; ///< nvmlReturn_t of the fabric registration
  int cc = 0;
  std::vector<std::pair<unsigned, unsigned long long>> processes; ///< pid, bytes
};

struct NvmlApi; // the resolved NVML entry points (nvml.cpp)

/// What the driver (NVML) layer saw.
struct NvmlEvidence {
  bool loaded = false;
  std::string load_error;
  int init_rc = -1; ///< nvmlInit_v2 result (-1 = not called)
  std::string init_error;
  std::string driver_version;
  int cuda_driver_version = 0;
  int count = -1;
  std::vector<NvmlGpu> gpus;
  DynLib lib;                   ///< kept open to re-check devices after the CUDA layers
  std::shared_ptr<NvmlApi> api; ///< entry points resolved from `lib`
  bool hung = false;            ///< NVML did not answer within its limit
};

/// State of one preflight run.
struct Run {
  const PreflightPlan& plan;
  PreflightReport& report;
  HostEvidence host;
  NvmlEvidence nvml;
  /// Reads an environment variable: the plan's override, else the process's.
  std::optional<std::string> env(const std::string& name) const;
  /// `root` joined with an absolute path such as "/dev/nvidiactl".
  std::string path(const std::string& abs) const;
};

/// Starts a check; the caller fills it and passes it to `add`.
CheckResult make_check(std::string id, PreflightLayer layer, int gpu = -1);
/// Appends `c` to the report with its elapsed time measured from `t0`.
void add_check(Run& run, CheckResult c, std::chrono::steady_clock::time_point t0);
/// The failed check "<layer>.unexpected" for an exception a layer did not foresee: the layer
/// fails and says why instead of taking the preflight (and the sweep running it) down with it.
CheckResult unexpected_check(PreflightLayer layer, const std::exception& e);

void run_host_layer(Run& run);
void run_driver_layer(Run& run);
/// run_driver_layer in a thread of its own, abandoned (and reported) when NVML does not answer
/// within plan.timeouts.nvml: a wedged driver can hang NVML calls too.
void run_driver_layer_bounded(Run& run);
/// Re-reads one GPU from NVML by PCI bus id after a CUDA failure: returns the NVML error name
/// ("" = the GPU still answers normally).
std::string nvml_recheck(Run& run, const std::string& pci_bus_id);
void nvml_close(Run& run);
void run_model_layer(Run& run);

/// "0000:18:00.0" form: lower case, 4-digit domain, for matching NVML and CUDA.
std::string normalise_bus_id(const std::string& id);

} // namespace specbench::preflight
