#pragma once
/// \file preflight.hpp
/// Layered GPU preflight: says which layer of the GPU stack is broken, why, and what to do.
///
/// Layers run in order: host (container, device nodes, visibility variables) -> driver (NVML,
/// loaded at run time) -> cuda-driver (cuInit, count, versions; in a child process with a
/// timeout) -> compute (context, allocation, a kernel of ours, memcpy, cuBLAS GEMM, bandwidth) ->
/// interconnect (peer access, P2P copy, NCCL all-reduce) -> model (files, context length, fit).
/// A failed layer marks the layers that depend on it "skipped: blocked by <layer>". The host
/// layer is evidence, not a gate: NVML and cuInit are tried anyway, and the diagnosis is made
/// from the layers' answers taken together.
///
/// The preflight does not know who calls it, never exits and changes nothing on the machine.

#include "specbench/status.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace specbench {

/// The layers of the GPU stack, in the order they are checked.
enum class PreflightLayer { host, driver, cuda_driver, compute, interconnect, model };
/// Stable name: "host", "driver", "cuda-driver", "compute", "interconnect", "model".
const char* to_string(PreflightLayer layer) noexcept;

/// The outcome of one check. `warn` does not fail the preflight; `skipped` says why in `summary`.
enum class CheckStatus { pass, warn, fail, skipped };
/// Stable name: "pass", "warn", "fail", "skipped".
const char* to_string(CheckStatus status) noexcept;

/// One check: what it read, how long it took, and on warn/fail a diagnosis and a remedy.
struct CheckResult {
  std::string id; ///< stable id, e.g. "cuda.init", "compute.gpu0.kernel"
  PreflightLayer layer = PreflightLayer::host; ///< the layer it belongs to
  CheckStatus status = CheckStatus::pass;      ///< pass / warn / fail / skipped
  int gpu = -1;                                ///< CUDA ordinal it concerns, -1 = not one GPU
  std::string summary;                         ///< one line for the table
  std::vector<std::pair<std::string, std::string>> facts; ///< what it read, in order
  double elapsed_ms = 0.0;                                ///< wall time of this check
  std::string diagnosis;                                  ///< on warn/fail: the most likely cause
  std::string remedy;                                     ///< on warn/fail: what to do
  int cuda_error = 0;                                     ///< CUDA error code it got (0 = none)
  std::string cuda_error_name; ///< e.g. "CUDA_ERROR_UNKNOWN" (empty = none)
};

/// Time and verdict of one layer (the worst of its checks).
struct LayerResult {
  PreflightLayer layer = PreflightLayer::host; ///< which layer
  CheckStatus status = CheckStatus::skipped;   ///< worst status of its checks (skipped if none)
  double elapsed_ms = 0.0;                     ///< wall time spent in the layer
  std::string blocked_by;                      ///< non-empty when skipped because of this layer
};

/// What the preflight learned about one GPU, merged across NVML and the CUDA driver.
struct GpuResult {
  int cuda_ordinal = -1;      ///< ordinal among CUDA-visible devices (-1: CUDA did not see it)
  int nvml_index = -1;        ///< NVML index (-1: NVML did not see it)
  bool planned = false;       ///< part of the planned TP group
  std::string name;           ///< e.g. "NVIDIA H200"
  std::string uuid;           ///< "GPU-..."
  std::string pci_bus_id;     ///< normalised "0000:18:00.0"
  int compute_capability = 0; ///< major*10+minor, e.g. 90 (0 = unknown)
  std::uint64_t memory_total_bytes = 0;      ///< total device memory (0 = unknown)
  std::uint64_t memory_used_bytes = 0;       ///< used per NVML (0 = unknown)
  std::uint64_t memory_free_bytes = 0;       ///< free per NVML or cuMemGetInfo (0 = unknown)
  CheckStatus status = CheckStatus::skipped; ///< worst status of the checks that concern it
  double bandwidth_gbps = 0.0; ///< device-to-device copy bandwidth, GB/s (0 = not measured)
};

/// Facts about the machine the preflight ran on.
struct HostFacts {
  std::string hostname;              ///< gethostname()
  std::string kernel;                ///< uname release
  std::string container;             ///< "none", "lxc", "docker", "podman", "kubernetes", ...
  std::string driver_version;        ///< from NVML or /proc/driver/nvidia/version ("" = unknown)
  std::string kernel_module_version; ///< from /proc/driver/nvidia/version ("" = unknown)
  int cuda_driver_version = 0;       ///< cuDriverGetVersion (e.g. 13000), 0 = unknown
  int cuda_runtime_version = 0;      ///< CUDA version specbench was built with, 0 = not compiled
  int nvml_device_count = -1;        ///< -1 = NVML did not answer
  int cuda_device_count = -1;        ///< -1 = cuDeviceGetCount did not answer
  std::optional<std::string> cuda_visible_devices;   ///< the variable, if set
  std::optional<std::string> nvidia_visible_devices; ///< the variable, if set
  std::string libcuda_path;      ///< where libcuda.so.1 was loaded from ("" = not loaded)
  std::string libnvidia_ml_path; ///< where libnvidia-ml.so.1 was loaded from
};

/// Time limits of the parts that can hang. A child past its limit is killed, never waited for.
struct PreflightTimeouts {
  std::chrono::milliseconds nvml{10000};         ///< the whole NVML (driver) layer
  std::chrono::milliseconds cuda_init{15000};    ///< cuInit + count + versions
  std::chrono::milliseconds compute{30000};      ///< per GPU: context .. bandwidth
  std::chrono::milliseconds interconnect{60000}; ///< peer access, P2P copy, NCCL
};

/// What to check. A plan never starts anything by itself; run_preflight() does.
struct PreflightPlan {
  int tp = 1;             ///< GPUs the phase needs (tensor-parallel group size)
  std::vector<int> gpus;  ///< CUDA ordinals to use; empty = the first `tp` visible devices
  std::string model_path; ///< model directory to check; empty = no model layer
  /// Drafter directory the speculative cells load, checked like the model (ids model.draft_*,
  /// no tokenizer) and counted with it in model.draft_memory_fit; empty = not checked.
  std::string draft_model_path;
  std::uint64_t min_free_memory_bytes = 0;      ///< per planned GPU; 0 = no minimum
  std::uint64_t allocation_bytes = 64ull << 20; ///< compute: test allocation per GPU
  double model_memory_headroom = 1.1; ///< model fits when weights*headroom <= free of the group
  bool gemm = true;           ///< compute: cuBLAS GEMM against a CPU reference (if cuBLAS loads)
  bool bandwidth = true;      ///< compute: device-memory bandwidth figure
  bool nccl = true;           ///< interconnect: NCCL all-reduce (if NCCL loads)
  PreflightTimeouts timeouts; ///< limits of the child process steps
  /// Executable of the GPU probe; empty = $SPECBENCH_GPU_PROBE, then "specbench-gpu-probe" next
  /// to the running binary (or in ../bin, ../libexec), then the build tree.
  std::string probe_path;
  /// Directories searched first for libnvidia-ml.so.1, libcuda.so.1, libcublas, libnccl
  /// (before the loader's own search). Tests put fake driver libraries here.
  std::vector<std::string> library_path;
  /// Exact library files to load instead of searching (keys "nvml", "cuda", "cublas", "nccl";
  /// value "none" = do not load it). Empty = search.
  std::map<std::string, std::string> libraries;
  /// Root the host layer reads /dev, /proc and /sys under ("/" on a real machine; tests fake it).
  std::string root = "/";
  /// Variables that override the process's environment, for the host layer (which reads
  /// CUDA_VISIBLE_DEVICES, ...) and for the probe child process. Empty = the process's own.
  std::map<std::string, std::string> environment;
};

/// The full answer: every check, per-layer times, per-GPU results, host facts.
class PreflightReport {
public:
  /// Version of the JSON written by to_json(); bumped on incompatible changes.
  static constexpr int schema_version = 1;

  std::vector<CheckResult> checks; ///< in the order they ran
  std::vector<LayerResult> layers; ///< one per layer, in layer order
  std::vector<GpuResult> gpus;     ///< every GPU seen by NVML or CUDA
  HostFacts host;                  ///< machine facts
  PreflightPlan plan;              ///< what was asked
  std::vector<int> planned_gpus;   ///< the CUDA ordinals the plan resolved to
  double elapsed_ms = 0.0;         ///< wall time of the whole preflight
  std::string started_at;          ///< UTC, ISO 8601
  /// Not ok when the preflight could not run to a verdict (bad plan, probe missing, ...).
  Status run_error;

  /// True when it ran and no check failed (warnings allowed).
  bool passed() const noexcept;
  /// passed(), leaving the drafter's checks out (is_drafter_check): what the cells that do not
  /// load the drafter need.
  bool passed_without_drafter() const noexcept;
  /// The first failed drafter check; nullptr if none failed.
  const CheckResult* first_drafter_failure() const noexcept;
  /// True when at least one check warned.
  bool has_warnings() const noexcept;
  /// True when the preflight could not run to a verdict (run_error is set).
  bool could_not_run() const noexcept { return !run_error.is_ok(); }
  /// "pass", "warn", "fail" or "could-not-run".
  const char* verdict() const noexcept;
  /// Where to look first: the first failed check outside the host layer (host findings are
  /// evidence cited by the other layers' diagnoses), else the first failed host check, else the
  /// first failed drafter check (is_drafter_check: it stops only the cells that load the
  /// drafter); nullptr if nothing failed.
  const CheckResult* first_failure() const noexcept;
  /// Checks of one layer, in order.
  std::vector<const CheckResult*> checks_of(PreflightLayer layer) const;
  /// The check with this id (nullptr if absent).
  const CheckResult* find(const std::string& id) const noexcept;
  /// The layer's result.
  const LayerResult& layer(PreflightLayer l) const;
  /// JSON document (schema in docs/preflight.md), `indent` < 0 = one line.
  std::string to_json(int indent = 2) const;
  /// Human table: one line per check, diagnosis/remedy under warn/fail, colour if asked.
  std::string to_table(bool colour = false) const;
};

/// Whether `path` names a model on the Hugging Face hub, which the server downloads itself, and not
/// a local folder: "org/name" or a bare "name" with nothing at that path here. A path that starts
/// with /, . or ~, has two slashes or more, or has anything at it (a dangling link too) is local,
/// gone or not: the model layer checks it, so a model that vanished (/dev/shm emptied by a
/// reboot) blocks the phase instead of slipping past as a hub id.
bool is_hub_model_id(const std::string& path);

/// True for the checks of the drafter (PreflightPlan::draft_model_path), "model.draft_...": only
/// the cells whose server loads the drafter depend on them.
bool is_drafter_check(const std::string& id) noexcept;

/// Checks `plan` for impossible values (tp < 1, duplicate or negative GPU ordinals, gpus that do
/// not match tp, zero allocation) without touching the machine.
Status validate_plan(const PreflightPlan& plan);

/// Runs every layer of the preflight for `plan`. Never throws and never exits; when it cannot run
/// to a verdict, `run_error` in the report says why and the checks done so far are kept.
PreflightReport run_preflight(const PreflightPlan& plan);

/// Parses a GPU list such as "0,1,2,3" or "0-3" into ordinals.
Expected<std::vector<int>> parse_gpu_list(const std::string& text);

/// Entry point of the GPU probe child process (the `specbench-gpu-probe` executable calls it).
/// Reads its request from argv, writes one JSON event per line to stdout, returns the exit code.
int gpu_probe_main(int argc, char** argv);

} // namespace specbench
