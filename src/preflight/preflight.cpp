// The preflight's orchestration: runs the layers in order, starts the probe child for the CUDA
// layers, merges what NVML and CUDA saw per GPU (matched by PCI bus id, not ordinal), and turns
// error codes into diagnoses using the evidence of every layer together.
#include "preflight/layers.hpp"
#include "preflight/probe.hpp"
#include "specbench/build_info.hpp"
#include "specbench/cuda_errors.hpp"
#include "specbench/detail/utf8.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <set>
#include <sys/stat.h>

namespace specbench::preflight {
namespace {
using Clock = std::chrono::steady_clock;
using nlohmann::json;

#ifdef SPECBENCH_CUDA_RUNTIME_VERSION
constexpr int runtime_version = SPECBENCH_CUDA_RUNTIME_VERSION;
#else
constexpr int runtime_version = 0;
#endif

std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

PreflightLayer layer_of(const std::string& id) {
  if (id.rfind("compute.", 0) == 0)
    return PreflightLayer::compute;
  if (id.rfind("interconnect.", 0) == 0)
    return PreflightLayer::interconnect;
  return PreflightLayer::cuda_driver;
}

CheckStatus status_of(const std::string& s) {
  if (s == "warn")
    return CheckStatus::warn;
  if (s == "fail")
    return CheckStatus::fail;
  if (s == "skipped")
    return CheckStatus::skipped;
  return CheckStatus::pass;
}

std::string fact(const CheckResult& c, const std::string& key) {
  for (const auto& [k, v] : c.facts)
    if (k == key)
      return v;
  return {};
}

CheckResult* find_mut(PreflightReport& r, const std::string& id) {
  for (auto& c : r.checks)
    if (c.id == id)
      return &c;
  return nullptr;
}

// Fills diagnosis/remedy of a CUDA failure from the table, then sharpens it with what the other
// layers saw.
void diagnose_cuda(Run& run, CheckResult& c, const std::string& libcuda_path) {
  const int rc = c.cuda_error;
  const auto* info = find_cuda_error(rc);
  const auto& host = run.host;
  const auto& nvml = run.nvml;
  std::string d = info ? info->cause : "CUDA returned error " + std::to_string(rc);
  std::string r = info ? info->remedy : "see the CUDA documentation for this code";
  const bool nvml_ok = nvml.loaded && nvml.init_rc == 0 && nvml.count > 0;
  const std::string nvml_says = nvml_ok ? "NVML works (driver " + nvml.driver_version + ", " +
                                              std::to_string(nvml.count) + " GPU(s))"
                                        : "";
  switch (rc) {
  case 999:
    if (!host.uvm_ok) {
      d = (nvml_ok ? nvml_says + " but" : "") +
          std::string(" cuInit fails with CUDA_ERROR_UNKNOWN "
                      "because ") +
          host.uvm_problem +
          ". CUDA needs nvidia_uvm and /dev/nvidia-uvm; NVML and "
          "nvidia-smi do not, which is why they look healthy";
      r = host.in_container
              ? "on the host: modprobe nvidia-uvm (or nvidia-modprobe -u -c 0) and load it at "
                "boot; then restart this " +
                    host.container_kind +
                    " container so it gets fresh /dev/nvidia-uvm* nodes (allow their major from "
                    "/proc/devices, do not hard-code it)"
              : "modprobe nvidia-uvm (or nvidia-modprobe -u -c 0) as root, and load it at boot";
    } else if (host.in_container) {
      d = (nvml_ok ? nvml_says + " but" : "") +
          std::string(" cuInit fails with CUDA_ERROR_UNKNOWN "
                      "inside this ") +
          host.container_kind +
          " container although its device nodes look "
          "right: the container's GPU state is stale (the host rebooted, resumed or reloaded the "
          "driver after the container started)";
      r = "restart the container; if it persists, run the preflight on the host itself, and check "
          "dmesg there for NVRM/Xid messages; persistence mode (nvidia-smi -pm 1) keeps the "
          "driver initialised";
    } else {
      d = (nvml_ok ? nvml_says + " but" : "") +
          std::string(" cuInit fails with "
                      "CUDA_ERROR_UNKNOWN: the driver is in a bad state");
      r = "check dmesg for NVRM/Xid messages; reload nvidia_uvm (rmmod nvidia_uvm; modprobe "
          "nvidia-uvm) or reboot";
    }
    break;
  case 100: {
    std::string why;
    if (host.visible_empty)
      why = "CUDA_VISIBLE_DEVICES hides every GPU";
    for (const auto& g : nvml.gpus)
      if (g.mig_current == 1 && why.empty())
        why = "MIG is enabled on " + g.pci_bus_id + " (CUDA needs MIG instances to be created)";
    if (why.empty() && host.gpu_node_minors.empty())
      why = "there are no /dev/nvidiaN nodes";
    if (!why.empty())
      d = "CUDA sees no device: " + why;
    break;
  }
  case 802: {
    std::string states;
    for (const auto& g : nvml.gpus)
      if (g.fabric_state == 1 || g.fabric_state == 2)
        states += (states.empty() ? "" : ", ") + g.pci_bus_id +
                  (g.fabric_state == 1 ? " not started" : " in progress");
    if (!states.empty())
      d = "the NVLink fabric is not ready (NVML fabric state: " + states +
          "): nvidia-fabricmanager has not finished registering the GPUs";
    break;
  }
  case 803: {
    std::string lib_version;
    const auto pos = libcuda_path.find("libcuda.so.");
    if (pos != std::string::npos)
      lib_version = libcuda_path.substr(pos + 11);
    d = "the user-space driver and the kernel module differ: kernel module " +
        (host.module_version.empty() ? std::string("unknown") : host.module_version) + ", NVML " +
        (nvml.driver_version.empty() ? std::string("unknown") : nvml.driver_version) +
        ", libcuda " + (lib_version.empty() ? std::string("unknown") : lib_version) +
        " (driver upgraded without a reboot, or the container carries other driver libraries)";
    break;
  }
  case 804:
    if (libcuda_path.find("/compat") != std::string::npos)
      d = "libcuda was loaded from the forward-compatibility directory " + libcuda_path +
          ", which this GPU does not support";
    break;
  case 34:
    d = "the loaded libcuda is the toolkit's stub (" + libcuda_path + "), not the driver's library";
    break;
  case 46: {
    std::string modes;
    for (const auto& g : nvml.gpus)
      if (g.compute_mode == 2 || g.compute_mode == 3)
        modes +=
            (modes.empty() ? "" : ", ") + g.pci_bus_id +
            (g.compute_mode == 2 ? " Prohibited" : " Exclusive_Process") +
            (g.processes.empty() ? ""
                                 : " with " + std::to_string(g.processes.size()) + " process(es)");
    if (!modes.empty())
      d = "compute mode forbids another context: " + modes;
    break;
  }
  default:
    break;
  }
  if (c.diagnosis.empty())
    c.diagnosis = d;
  if (c.remedy.empty())
    c.remedy = r;
}

// Checks that fail or warn with no CUDA error code: wrong data, a library that is missing or
// refuses, an interconnect path that does not work. Each still says why and what to do.
void diagnose_without_cuda_error(CheckResult& c) {
  const auto ends = [&](const char* suffix) {
    const std::string s = suffix;
    return c.id.size() >= s.size() && c.id.compare(c.id.size() - s.size(), s.size(), s) == 0;
  };
  const auto says = [&](const char* text) { return c.summary.find(text) != std::string::npos; };
  const char* const memory_fix =
      "check nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT and dmesg for Xid 48, 63, 64, 94 "
      "or 95; drain this GPU and have it serviced, and do not benchmark on it meanwhile";
  if (ends(".kernel") || ends(".memcpy")) {
    c.diagnosis = ends(".kernel") ? "this GPU computes wrong results in a trivial kernel"
                                  : "data written to this GPU's memory comes back changed";
    c.diagnosis += ": failing memory or a damaged GPU (a result computed here cannot be trusted)";
    c.remedy = memory_fix;
  } else if (ends(".gemm")) {
    if (says("differs")) {
      c.diagnosis = "cuBLAS returns a wrong matrix product on this GPU: failing memory or a "
                    "damaged GPU, or a cuBLAS that does not belong to this driver";
      c.remedy = std::string(memory_fix) + "; if only the GEMM fails, use the cuBLAS of the CUDA "
                                           "toolkit the driver supports";
    } else if (c.status == CheckStatus::warn) {
      c.diagnosis = "cuBLAS is not installed where specbench looks, so the GEMM was not checked";
      c.remedy = "install the CUDA toolkit's libcublas, or add its directory with --library-path";
    } else {
      c.diagnosis = "cuBLAS cannot run on this GPU: usually a libcublas newer than the driver";
      c.remedy = "use the libcublas of a CUDA version the driver supports (--library-path), or "
                 "update the driver";
    }
  } else if (c.id == "interconnect.peer_access") {
    c.diagnosis = "some GPU pairs cannot reach each other's memory directly: tensor-parallel "
                  "traffic between them goes through the host, and NCCL may be slow or fail";
    c.remedy = "check nvidia-smi topo -m; on NVSwitch systems check that nvidia-fabricmanager "
               "runs; in a VM or with an IOMMU, enable peer-to-peer (ACS) for the GPUs";
  } else if (c.id == "interconnect.p2p_copy") {
    c.diagnosis = says("lacks") ? "this libcuda cannot copy between GPUs directly"
                                : "copies between GPUs fail or corrupt data: a broken NVLink or "
                                  "PCIe path, or an IOMMU that blocks peer-to-peer";
    c.remedy = "check nvidia-smi nvlink -s and nvidia-smi topo -m, dmesg for Xid 74 (NVLink), and "
               "the IOMMU/ACS settings; have the host serviced if the links report errors";
  } else if (c.id == "interconnect.nccl") {
    if (says("not available")) {
      c.diagnosis = "libnccl.so.2 was not found, so the all-reduce of the TP group was not checked";
      c.remedy = "install NCCL (libnccl2) or add its directory with --library-path";
    } else if (says("wrong sums")) {
      c.diagnosis = "NCCL's all-reduce returns wrong sums: data are corrupted between the GPUs";
      c.remedy = "check the links as for interconnect.p2p_copy; run with NCCL_P2P_DISABLE=1 to "
                 "see whether the peer-to-peer path is at fault";
    } else {
      c.diagnosis = "NCCL could not set up or run the TP group's all-reduce";
      c.remedy = "rerun with NCCL_DEBUG=INFO to see why; in containers give /dev/shm room "
                 "(--shm-size); on NVSwitch systems check nvidia-fabricmanager; keep NCCL and the "
                 "driver's CUDA version compatible";
    }
  } else if (ends(".bandwidth")) {
    c.diagnosis = "the copy bandwidth was not measured";
    c.remedy = "nothing to fix for the benchmark itself";
  } else if (c.status == CheckStatus::fail) {
    c.diagnosis = c.summary;
    c.remedy = "see the check's facts (--json) and docs/preflight.md";
  }
}

void add_skipped(Run& run, const std::string& id, PreflightLayer layer, const std::string& why) {
  auto c = make_check(id, layer);
  c.status = CheckStatus::skipped;
  c.summary = why;
  run.report.checks.push_back(std::move(c));
}

void run_probe_layers(Run& run) {
  auto& report = run.report;
  json req = {{"tp", run.plan.tp},
              {"devices", run.plan.gpus},
              {"alloc_bytes", run.plan.allocation_bytes},
              {"gemm", run.plan.gemm},
              {"bandwidth", run.plan.bandwidth},
              {"nccl", run.plan.nccl},
              {"library_path", run.plan.library_path},
              {"libraries", run.plan.libraries}};
  const ProbeOutcome out = run_probe_child(req, run.plan);
  if (!out.started) {
    report.run_error =
        Status(StatusCode::unavailable, "could not start the GPU probe process: " + out.start_error,
               "install specbench-gpu-probe next to specbench or set "
               "SPECBENCH_GPU_PROBE to its path",
               "preflight.cuda-driver");
    return;
  }
  std::vector<json> devices;
  std::string libcuda_path;
  for (const auto& ev : out.events) {
    const std::string kind = ev.value("ev", "");
    if (kind == "device")
      devices.push_back(ev);
    if (kind == "plan")
      report.planned_gpus = ev.value("devices", std::vector<int>{});
    if (kind == "error") {
      report.run_error = Status(StatusCode::internal, "GPU probe: " + ev.value("message", ""),
                                "check that specbench-gpu-probe belongs to this specbench build",
                                "preflight.cuda-driver");
    }
    if (kind != "check")
      continue;
    auto c = make_check(ev.value("id", "?"), layer_of(ev.value("id", "")), ev.value("gpu", -1));
    c.status = status_of(ev.value("status", "pass"));
    c.summary = ev.value("summary", "");
    c.elapsed_ms = ev.value("ms", 0.0);
    c.cuda_error = ev.value("rc", 0);
    c.cuda_error_name = ev.value("rc_name", "");
    if (c.cuda_error != 0 && c.cuda_error_name.empty())
      c.cuda_error_name = cuda_error_name(c.cuda_error);
    if (ev.contains("call"))
      c.facts.emplace_back("call", ev["call"].get<std::string>());
    if (ev.contains("facts") && ev["facts"].is_object())
      for (auto& [k, v] : ev["facts"].items())
        c.facts.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    if (c.id == "cuda.load")
      libcuda_path =
          fact(c, "path") +
          (fact(c, "opened_as").empty() ? "" : " (opened as " + fact(c, "opened_as") + ")");
    report.checks.push_back(std::move(c));
  }
  if (const auto* load = report.find("cuda.load"))
    report.host.libcuda_path = fact(*load, "path");
  if (out.timed_out) {
    auto c = make_check(out.hung_step, layer_of(out.hung_step), out.hung_gpu);
    c.status = CheckStatus::fail;
    c.elapsed_ms = out.limit_ms;
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", out.limit_ms / 1000.0);
    c.summary = out.hung_step + " did not return within " + limit +
                " s; the probe process was killed" +
                (out.reaped ? "" : " (it is stuck in the kernel and did not exit yet)");
    c.facts.emplace_back("limit_ms", std::to_string(static_cast<long long>(out.limit_ms)));
    c.facts.emplace_back("probe", out.executable);
    c.cuda_error = 0;
    if (out.hung_step == "cuda.init" || out.hung_step == "cuda.load") {
      c.diagnosis = "the driver hangs in cuInit: a GPU in a bad state (fallen off the bus, Xid "
                    "storm, pending reset), an NVLink fabric still initialising, or a driver "
                    "with many GPUs and persistence mode off";
      c.remedy = "check dmesg for NVRM/Xid messages and nvidia-smi -q on the host; enable "
                 "persistence mode (nvidia-smi -pm 1); reset the GPU or reboot; raise the "
                 "cuda_init timeout only if the driver is known to be slow";
    } else {
      c.diagnosis = "the GPU stopped answering during " + out.hung_step;
      c.remedy = "check dmesg for Xid messages; reset the GPU (nvidia-smi -r -i N) or reboot";
    }
    // A timed-out step reports no result of its own; drop a partial duplicate if any.
    report.checks.erase(std::remove_if(report.checks.begin(), report.checks.end(),
                                       [&](const CheckResult& x) { return x.id == c.id; }),
                        report.checks.end());
    report.checks.push_back(std::move(c));
  } else if (!out.finished && report.run_error.is_ok() && out.events.empty()) {
    // Not one line from the probe: it did not get as far as loading libcuda (a loader error, a
    // probe from another build, a wrapper that exits). That says nothing about the GPUs.
    report.run_error = Status(
        StatusCode::unavailable,
        "the GPU probe " + out.executable + " exited before it checked anything (" +
            (out.term_signal ? "signal " + std::to_string(out.term_signal)
                             : "exit code " + std::to_string(out.exit_code)) +
            ")" + (out.stderr_tail.empty() ? "" : ": " + out.stderr_tail),
        "run it by hand to see why; it must be the specbench-gpu-probe of this build (installed "
        "next to specbench, or named by SPECBENCH_GPU_PROBE)",
        "preflight.cuda-driver");
  } else if (!out.finished && report.run_error.is_ok()) {
    std::string last = "cuda.load";
    for (const auto& ev : out.events)
      if (ev.value("ev", "") == "begin")
        last = ev.value("id", last);
    auto c = make_check(last, layer_of(last));
    c.status = CheckStatus::fail;
    c.summary = "the probe process died during " + last +
                (out.term_signal ? " (signal " + std::to_string(out.term_signal) + ")"
                                 : " (exit code " + std::to_string(out.exit_code) + ")");
    if (!out.stderr_tail.empty())
      c.facts.emplace_back("stderr", out.stderr_tail);
    c.diagnosis = "the CUDA driver crashed the process";
    c.remedy = "check dmesg for NVRM/Xid messages; reinstall the driver if it repeats";
    report.checks.erase(std::remove_if(report.checks.begin(), report.checks.end(),
                                       [&](const CheckResult& x) { return x.id == c.id; }),
                        report.checks.end());
    report.checks.push_back(std::move(c));
  }

  // Driver version against the CUDA version specbench was built with (error 35).
  if (auto* v = find_mut(report, "cuda.version"); v && v->status == CheckStatus::pass) {
    const int dv = std::atoi(fact(*v, "driver_version").c_str());
    report.host.cuda_driver_version = dv;
    v->facts.emplace_back("built_with_cuda",
                          runtime_version ? version_text(runtime_version) : "not compiled");
    if (runtime_version && dv && dv < runtime_version) {
      v->status = CheckStatus::fail;
      v->cuda_error = 35;
      v->cuda_error_name = "CUDA_ERROR_INSUFFICIENT_DRIVER";
      v->summary = "driver supports CUDA " + version_text(dv) + ", specbench needs " +
                   version_text(runtime_version);
      v->diagnosis = "the installed driver (CUDA " + version_text(dv) +
                     ") is older than the CUDA runtime and kernels specbench was built with (" +
                     version_text(runtime_version) +
                     "); CUDA programs built like it fail with "
                     "cudaErrorInsufficientDriver (35)";
      v->remedy = "install a driver that supports CUDA " + version_text(runtime_version) +
                  " or newer, or rebuild specbench with a CUDA " + version_text(dv) + " toolkit";
    }
  }

  // Per-GPU merge: NVML and CUDA matched by PCI bus id (ordinals need not agree).
  std::set<std::string> cuda_ids;
  for (const auto& d : devices) {
    GpuResult g;
    g.cuda_ordinal = d.value("ordinal", -1);
    g.name = d.value("name", "");
    g.uuid = d.value("uuid", "");
    g.pci_bus_id = normalise_bus_id(d.value("pci_bus_id", ""));
    g.compute_capability = d.value("cc", 0);
    g.memory_total_bytes = d.value("total", 0ull);
    cuda_ids.insert(g.pci_bus_id);
    report.gpus.push_back(g);
  }
  report.host.cuda_device_count = -1;
  if (const auto* c = report.find("cuda.count"); c && c->status == CheckStatus::pass)
    report.host.cuda_device_count = std::atoi(fact(*c, "count").c_str());
  std::vector<std::string> nvml_only;
  for (const auto& n : run.nvml.gpus) {
    auto it = std::find_if(report.gpus.begin(), report.gpus.end(), [&](const GpuResult& g) {
      return (!n.pci_bus_id.empty() && g.pci_bus_id == n.pci_bus_id) ||
             (!n.uuid.empty() && g.uuid == n.uuid);
    });
    if (it == report.gpus.end()) {
      GpuResult g;
      g.name = n.name;
      g.uuid = n.uuid;
      g.pci_bus_id = n.pci_bus_id;
      g.compute_capability = n.cc;
      g.memory_total_bytes = n.total;
      report.gpus.push_back(g);
      it = report.gpus.end() - 1;
      if (report.host.cuda_device_count >= 0)
        nvml_only.push_back(n.pci_bus_id);
    }
    it->nvml_index = n.index;
    it->memory_used_bytes = n.used;
    it->memory_free_bytes = n.free;
    if (!it->memory_total_bytes)
      it->memory_total_bytes = n.total;
    if (it->name.empty())
      it->name = n.name;
  }
  for (auto& g : report.gpus) {
    g.planned = g.cuda_ordinal >= 0 &&
                std::count(report.planned_gpus.begin(), report.planned_gpus.end(), g.cuda_ordinal);
    if (const auto* ctx = report.find("compute.gpu" + std::to_string(g.cuda_ordinal) + ".context"))
      if (const std::string f = fact(*ctx, "free_bytes"); !f.empty())
        g.memory_free_bytes = std::stoull(f);
    if (const auto* bw = report.find("compute.gpu" + std::to_string(g.cuda_ordinal) + ".bandwidth"))
      if (const std::string f = fact(*bw, "gbps"); !f.empty())
        g.bandwidth_gbps = std::stod(f);
  }

  // NVML and CUDA counts against each other.
  if (run.nvml.count >= 0 && report.host.cuda_device_count >= 0) {
    const auto t0 = Clock::now();
    auto c = make_check("cuda.match", PreflightLayer::cuda_driver);
    c.facts = {{"nvml_count", std::to_string(run.nvml.count)},
               {"cuda_count", std::to_string(report.host.cuda_device_count)}};
    std::vector<std::string> cuda_only;
    for (const auto& g : report.gpus)
      if (g.cuda_ordinal >= 0 && g.nvml_index < 0)
        cuda_only.push_back(g.pci_bus_id);
    std::string missing, lost;
    for (const auto& id : nvml_only) {
      missing += (missing.empty() ? "" : ", ") + id;
      const std::string err = nvml_recheck(run, id);
      if (!err.empty())
        lost += (lost.empty() ? "" : ", ") + id + " (NVML now: " + err + ")";
    }
    if (!missing.empty())
      c.facts.emplace_back("only_in_nvml", missing);
    if (!cuda_only.empty()) {
      std::string s;
      for (auto& x : cuda_only)
        s += (s.empty() ? "" : ", ") + x;
      c.facts.emplace_back("only_in_cuda", s);
    }
    if (!lost.empty()) {
      c.status = CheckStatus::fail;
      c.summary = "GPU(s) vanished between the driver and CUDA layers: " + lost;
      c.diagnosis = "NVML listed these GPUs moments earlier, CUDA does not see them and NVML no "
                    "longer reaches them: they fell off the bus or were reset while the "
                    "preflight ran";
      c.remedy = "check dmesg for Xid 79/48/119; reset the GPU (nvidia-smi -r -i N) or reboot "
                 "the host; drain it if it repeats";
    } else if (!missing.empty() && !(run.host.visible_limit >= 0 &&
                                     report.host.cuda_device_count >=
                                         std::min(run.host.visible_limit, run.nvml.count))) {
      c.status = CheckStatus::warn;
      c.summary = "NVML sees " + std::to_string(run.nvml.count) + " GPU(s), CUDA " +
                  std::to_string(report.host.cuda_device_count) + "; missing from CUDA: " + missing;
      std::string why;
      for (const auto& n : run.nvml.gpus)
        if (std::find(nvml_only.begin(), nvml_only.end(), n.pci_bus_id) != nvml_only.end()) {
          if (n.mig_current == 1)
            why += " " + n.pci_bus_id + " has MIG enabled;";
          else if (n.minor >= 0 && !std::binary_search(run.host.gpu_node_minors.begin(),
                                                       run.host.gpu_node_minors.end(), n.minor))
            why += " /dev/nvidia" + std::to_string(n.minor) + " (" + n.pci_bus_id +
                   ") is missing here;";
        }
      c.diagnosis = why.empty() ? "CUDA does not enumerate every GPU the driver knows; the "
                                  "missing ones cannot be used by the benchmark"
                                : "CUDA cannot use every GPU:" + why;
      c.remedy = "pass every /dev/nvidiaN into the container, disable MIG on GPUs meant for "
                 "whole-GPU use, and check dmesg for Xids on the missing GPUs";
    } else if (!cuda_only.empty()) {
      c.status = CheckStatus::warn;
      c.summary = "CUDA sees GPU(s) NVML does not list";
      c.diagnosis = "NVML and CUDA disagree about the GPUs (different driver libraries loaded?)";
      c.remedy = "make sure libnvidia-ml and libcuda come from the same driver";
    } else {
      c.summary = run.host.visible_limit >= 0 && !missing.empty()
                      ? "CUDA sees " + std::to_string(report.host.cuda_device_count) + " of " +
                            std::to_string(run.nvml.count) + " GPUs, as CUDA_VISIBLE_DEVICES asks"
                      : "NVML and CUDA see the same " +
                            std::to_string(report.host.cuda_device_count) + " GPU(s)";
    }
    // Listed with the other cuda-driver checks, before compute.
    c.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    auto pos = report.checks.begin();
    for (auto it = report.checks.begin(); it != report.checks.end(); ++it)
      if (it->layer == PreflightLayer::cuda_driver)
        pos = it + 1;
    report.checks.insert(pos, std::move(c));
  }

  // Diagnoses of CUDA errors, with the other layers' evidence.
  for (auto& c : report.checks) {
    if (c.layer == PreflightLayer::host || c.layer == PreflightLayer::driver)
      continue;
    if (c.status != CheckStatus::fail && c.status != CheckStatus::warn)
      continue;
    if (c.cuda_error == 209 || c.cuda_error == 218 || c.cuda_error == 222) {
      int cc = 0;
      std::string name;
      for (const auto& g : report.gpus)
        if (g.cuda_ordinal == c.gpu) {
          cc = g.compute_capability;
          name = g.name;
        }
      c.diagnosis = "no kernel image for " + (name.empty() ? "this GPU" : name) +
                    (cc ? " (compute capability " + std::to_string(cc / 10) + "." +
                              std::to_string(cc % 10) + ", sm_" + std::to_string(cc) + ")"
                        : "") +
                    "; this specbench was compiled for CUDA architectures " +
                    (build_info::cuda_architectures[0] ? build_info::cuda_architectures : "(none)");
      c.remedy = "rebuild with -DCMAKE_CUDA_ARCHITECTURES=\"" +
                 std::string(build_info::cuda_architectures) +
                 (cc ? ";" + std::to_string(cc) : std::string()) + "\"";
      continue;
    }
    if (c.id.find(".kernel") != std::string::npos && fact(c, "cuda_compiled") == "no") {
      c.diagnosis = "specbench was built without the CUDA toolkit, so it carries no GPU kernel "
                    "and the compute layer cannot run real work";
      c.remedy = "install the CUDA toolkit (nvcc) and rebuild (-DSPECBENCH_ENABLE_CUDA=ON)";
      continue;
    }
    if (c.id == "cuda.load" && c.status == CheckStatus::fail && c.diagnosis.empty()) {
      const bool nvml_there = run.nvml.loaded;
      if (!run.host.module_loaded && !nvml_there) {
        c.diagnosis = "no NVIDIA driver on this machine: no kernel module, no NVML, no libcuda";
        c.remedy = "install the NVIDIA driver on a machine with an NVIDIA GPU; this machine "
                   "cannot run GPU benchmarks as it is";
      } else {
        c.diagnosis = "the NVIDIA driver's libcuda.so.1 is not visible to the loader although " +
                      std::string(nvml_there ? "NVML" : "the kernel module") + " is there";
        c.remedy = "in containers mount the host's libcuda.so.1 (NVIDIA container toolkit "
                   "'compute' capability); otherwise reinstall the driver's libraries and run "
                   "ldconfig";
      }
      continue;
    }
    if (c.cuda_error != 0 && c.diagnosis.empty())
      diagnose_cuda(run, c, libcuda_path);
    if (c.cuda_error == 0 && c.diagnosis.empty())
      diagnose_without_cuda_error(c);
    // A GPU that CUDA listed but cannot use any more: ask NVML whether it is still there.
    if (c.gpu >= 0 && c.cuda_error != 0 && c.id.find(".context") != std::string::npos) {
      for (const auto& g : report.gpus)
        if (g.cuda_ordinal == c.gpu && !g.pci_bus_id.empty()) {
          const std::string err = nvml_recheck(run, g.pci_bus_id);
          if (!err.empty()) {
            c.facts.emplace_back("nvml_recheck", err);
            c.diagnosis = "GPU " + std::to_string(c.gpu) + " (" + g.pci_bus_id +
                          ") vanished between layers: cuDeviceGetCount listed it, its context "
                          "then failed with " +
                          c.cuda_error_name + ", and NVML now answers " + err +
                          " (fallen off the bus or reset)";
            c.remedy = "check dmesg for Xid 79/48/119; reset the GPU (nvidia-smi -r -i N) or "
                       "reboot the host; drain it if it repeats";
          }
        }
    }
  }

  // Minimum free memory per planned GPU.
  if (run.plan.min_free_memory_bytes > 0)
    for (const auto& g : report.gpus)
      if (g.planned && g.memory_free_bytes) {
        auto c = make_check("compute.gpu" + std::to_string(g.cuda_ordinal) + ".free_memory",
                            PreflightLayer::compute, g.cuda_ordinal);
        c.facts = {{"free_bytes", std::to_string(g.memory_free_bytes)},
                   {"required_bytes", std::to_string(run.plan.min_free_memory_bytes)}};
        if (g.memory_free_bytes < run.plan.min_free_memory_bytes) {
          c.status = CheckStatus::fail;
          c.summary = std::to_string(g.memory_free_bytes >> 20) + " MiB free, the plan needs " +
                      std::to_string(run.plan.min_free_memory_bytes >> 20) + " MiB";
          c.diagnosis = "other processes hold memory on this GPU";
          c.remedy = "stop them (see the processes under driver.gpuN) or lower the requirement";
        } else {
          c.summary = std::to_string(g.memory_free_bytes >> 20) + " MiB free";
        }
        report.checks.push_back(std::move(c));
      }
}

CheckStatus worst(CheckStatus a, CheckStatus b) {
  auto rank = [](CheckStatus s) {
    switch (s) {
    case CheckStatus::fail:
      return 3;
    case CheckStatus::warn:
      return 2;
    case CheckStatus::pass:
      return 1;
    default:
      return 0;
    }
  };
  return rank(a) >= rank(b) ? a : b;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

} // namespace
} // namespace specbench::preflight

namespace specbench {

Status validate_plan(const PreflightPlan& plan) {
  if (plan.tp < 1)
    return {StatusCode::invalid_argument,
            "tp must be at least 1 (got " + std::to_string(plan.tp) + ")", "pass --tp 1, 2, 4 or 8",
            "preflight plan"};
  std::set<int> seen;
  for (int g : plan.gpus) {
    if (g < 0)
      return {StatusCode::invalid_argument, "GPU ordinal " + std::to_string(g) + " is negative",
              "list CUDA ordinals such as 0,1,2,3", "preflight plan"};
    if (!seen.insert(g).second)
      return {StatusCode::invalid_argument, "GPU " + std::to_string(g) + " is listed twice",
              "list each GPU once", "preflight plan"};
  }
  // A root that is not there (a typo) would read as a machine with no driver at all. One this
  // user may not look into is not refused here: the checks under it say what they cannot read.
  if (struct stat st{}; !plan.root.empty() &&
                        (::stat(plan.root.c_str(), &st) == 0 ? !S_ISDIR(st.st_mode)
                                                             : errno == ENOENT || errno == ENOTDIR))
    return {StatusCode::invalid_argument, "--root " + plan.root + " is not a directory",
            "give the directory that holds the machine's /dev, /proc and /sys (default /)",
            "preflight plan"};
  if (!plan.gpus.empty() && static_cast<int>(plan.gpus.size()) != plan.tp)
    return {StatusCode::invalid_argument,
            std::to_string(plan.gpus.size()) + " GPU(s) listed for tp " + std::to_string(plan.tp),
            "list exactly tp GPUs, or leave the list empty to use the first tp", "preflight plan"};
  // The GPU probe child gets these in a JSON request, which carries text, not bytes: a
  // directory whose name is not UTF-8 would reach it as another name.
  const auto not_text = [](const std::string& p) {
    return detail::first_invalid_utf8(p) != std::string_view::npos;
  };
  for (const auto& dir : plan.library_path)
    if (not_text(dir))
      return {StatusCode::invalid_argument,
              "library path entry '" + detail::to_valid_utf8(dir) + "' is not UTF-8 text",
              "name the directory in UTF-8, or link to it from a path that is", "preflight plan"};
  for (const auto& [name, file] : plan.libraries)
    if (not_text(file))
      return {StatusCode::invalid_argument,
              "library file '" + detail::to_valid_utf8(file) + "' (" + name + ") is not UTF-8 text",
              "name the file in UTF-8, or link to it from a path that is", "preflight plan"};
  if (plan.allocation_bytes < (1u << 20))
    return {StatusCode::invalid_argument, "allocation size below 1 MiB",
            "use at least 1 MiB for the compute test", "preflight plan"};
  if (plan.timeouts.nvml.count() <= 0 || plan.timeouts.cuda_init.count() <= 0 ||
      plan.timeouts.compute.count() <= 0 || plan.timeouts.interconnect.count() <= 0)
    return {StatusCode::invalid_argument, "timeouts must be positive", "", "preflight plan"};
  return {};
}

PreflightReport run_preflight(const PreflightPlan& plan) {
  using namespace preflight;
  PreflightReport report;
  report.plan = plan;
  report.started_at = utc_now();
  report.host.cuda_runtime_version = runtime_version;
  const auto t_start = Clock::now();
  for (auto l : {PreflightLayer::host, PreflightLayer::driver, PreflightLayer::cuda_driver,
                 PreflightLayer::compute, PreflightLayer::interconnect, PreflightLayer::model})
    report.layers.push_back(LayerResult{l, CheckStatus::skipped, 0.0, {}});
  if (Status st = validate_plan(plan); !st) {
    report.run_error = st;
    return report;
  }
  Run run{plan, report, {}, {}};
  auto timed = [&](PreflightLayer l, auto&& fn) {
    const auto t0 = Clock::now();
    try {
      fn();
    } catch (const std::exception& e) {
      add_check(run, unexpected_check(l, e), t0);
    }
    report.layers[static_cast<size_t>(l)].elapsed_ms +=
        std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  timed(PreflightLayer::host, [&] { run_host_layer(run); });
  timed(PreflightLayer::driver, [&] { run_driver_layer_bounded(run); });
  const auto t_probe = Clock::now();
  run_probe_layers(run);
  const double probe_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_probe).count();
  nvml_close(run);
  timed(PreflightLayer::model, [&] { run_model_layer(run); });

  // The host layer is evidence: when cuInit works, a host finding that says it could not (no
  // /proc/driver/nvidia, no /dev/nvidia* under WSL2 or a sandboxed runtime) is a warning.
  if (const CheckResult* init = report.find("cuda.init"); init && init->status == CheckStatus::pass)
    for (auto& c : report.checks)
      if (c.layer == PreflightLayer::host && c.status == CheckStatus::fail &&
          (c.id == "host.kernel_module" || c.id == "host.device_nodes" || c.id == "host.uvm")) {
        c.status = CheckStatus::warn;
        c.summary += " (cuInit works all the same, so this is not a failure)";
        if (!c.remedy.empty())
          c.remedy = "nothing while CUDA works (this runtime exposes the GPU another way); if it "
                     "stops working: " +
                     c.remedy;
      }

  // Layer verdicts; the probe's wall time is split by its checks' times, the rest (process start,
  // loading libcuda) counts to cuda-driver.
  for (auto& c : report.checks) {
    auto& l = report.layers[static_cast<size_t>(c.layer)];
    l.status = l.status == CheckStatus::skipped && c.status == CheckStatus::skipped
                   ? CheckStatus::skipped
                   : worst(l.status, c.status);
  }
  double compute_ms = 0, inter_ms = 0;
  for (const auto& c : report.checks) {
    if (c.layer == PreflightLayer::compute)
      compute_ms += c.elapsed_ms;
    if (c.layer == PreflightLayer::interconnect)
      inter_ms += c.elapsed_ms;
  }
  report.layers[2].elapsed_ms = std::max(0.0, probe_ms - compute_ms - inter_ms);
  report.layers[3].elapsed_ms = compute_ms;
  report.layers[4].elapsed_ms = inter_ms;

  // Dependent layers of a failed one are "blocked".
  if (report.run_error.is_ok()) {
    const auto& cuda = report.layers[2];
    const bool cuda_failed =
        cuda.status == CheckStatus::fail && report.find("cuda.devices") == nullptr;
    if (cuda_failed) {
      const CheckResult* first = nullptr;
      for (const auto* c : report.checks_of(PreflightLayer::cuda_driver))
        if (!first && c->status == CheckStatus::fail)
          first = c;
      const std::string by = "blocked by cuda-driver" + (first ? " (" + first->id + ")" : "");
      if (report.checks_of(PreflightLayer::compute).empty())
        add_skipped(run, "compute", PreflightLayer::compute, by);
      if (report.checks_of(PreflightLayer::interconnect).empty())
        add_skipped(run, "interconnect", PreflightLayer::interconnect, by);
      report.layers[3].blocked_by = "cuda-driver";
      report.layers[4].blocked_by = "cuda-driver";
    } else if (report.layers[3].status == CheckStatus::fail) {
      report.layers[4].blocked_by = "compute";
    }
  }
  // Per-GPU verdicts.
  for (auto& g : report.gpus) {
    for (const auto& c : report.checks) {
      const bool mine = (c.gpu >= 0 && c.gpu == g.cuda_ordinal) ||
                        (g.nvml_index >= 0 && c.id == "driver.gpu" + std::to_string(g.nvml_index));
      if (mine)
        g.status = g.status == CheckStatus::skipped ? c.status : worst(g.status, c.status);
    }
  }
  report.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_start).count();
  return report;
}

Expected<std::vector<int>> parse_gpu_list(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  auto bad = [&](const std::string& why) {
    return Status(StatusCode::invalid_argument, "GPU list \"" + text + "\": " + why,
                  "write it as 0,1,2,3 or 0-3", "--gpus");
  };
  if (text.empty())
    return bad("empty");
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos)
      end = text.size();
    const std::string item = text.substr(pos, end - pos);
    const size_t dash = item.find('-');
    auto number = [](const std::string& s, int& v) {
      if (s.empty() || s.size() > 4 || s.find_first_not_of("0123456789") != std::string::npos)
        return false;
      v = std::stoi(s);
      return true;
    };
    int a = 0, b = 0;
    if (dash == std::string::npos) {
      if (!number(item, a))
        return bad("\"" + item + "\" is not a GPU ordinal");
      out.push_back(a);
    } else {
      if (!number(item.substr(0, dash), a) || !number(item.substr(dash + 1), b) || b < a)
        return bad("\"" + item + "\" is not a range like 0-3");
      for (int i = a; i <= b; ++i)
        out.push_back(i);
    }
    pos = end + 1;
  }
  return out;
}

} // namespace specbench
