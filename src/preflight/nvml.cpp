// Driver layer through NVML, loaded at run time with our own declarations and versioned symbol
// names (NVML API v12, as in the header DCGM 4.6.0 vendors). A missing symbol means "not
// supported by this driver", never a failure to start.
#include "preflight/layers.hpp"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace specbench::preflight {
namespace {
using Clock = std::chrono::steady_clock;

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlPciInfo_t { // nvmlPciInfo_t as returned by nvmlDeviceGetPciInfo_v3
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlProcessInfo_t { // v2/v3 layout
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId, computeInstanceId;
};
struct nvmlGpuFabricInfo_t { // nvmlDeviceGetGpuFabricInfo (R535+)
  unsigned char clusterUuid[16];
  nvmlReturn_t status;
  unsigned cliqueId;
  unsigned char state;
};

constexpr int nvml_success = 0, nvml_not_supported = 3, nvml_insufficient_size = 7;

const char* nvml_name(int rc) {
  switch (rc) {
  case 0:
    return "NVML_SUCCESS";
  case 1:
    return "NVML_ERROR_UNINITIALIZED";
  case 2:
    return "NVML_ERROR_INVALID_ARGUMENT";
  case 3:
    return "NVML_ERROR_NOT_SUPPORTED";
  case 4:
    return "NVML_ERROR_NO_PERMISSION";
  case 6:
    return "NVML_ERROR_NOT_FOUND";
  case 9:
    return "NVML_ERROR_DRIVER_NOT_LOADED";
  case 10:
    return "NVML_ERROR_TIMEOUT";
  case 12:
    return "NVML_ERROR_LIBRARY_NOT_FOUND";
  case 13:
    return "NVML_ERROR_FUNCTION_NOT_FOUND";
  case 14:
    return "NVML_ERROR_CORRUPTED_INFOROM";
  case 15:
    return "NVML_ERROR_GPU_IS_LOST";
  case 16:
    return "NVML_ERROR_RESET_REQUIRED";
  case 17:
    return "NVML_ERROR_OPERATING_SYSTEM";
  case 18:
    return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
  case 19:
    return "NVML_ERROR_IN_USE";
  case 28:
    return "NVML_ERROR_GPU_NOT_FOUND";
  case 999:
    return "NVML_ERROR_UNKNOWN";
  default:
    return "NVML_ERROR";
  }
}

std::string rc_text(int rc) {
  return std::string(nvml_name(rc)) + " (" + std::to_string(rc) + ")";
}

} // namespace

struct NvmlApi {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*cuda_version)(int*) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*minor_number)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;
  nvmlReturn_t (*persistence)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*compute_mode)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*retired_pending)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*ecc_total)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*fabric)(nvmlDevice_t, nvmlGpuFabricInfo_t*) = nullptr;
  nvmlReturn_t (*cc)(nvmlDevice_t, int*, int*) = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;

  void resolve(const DynLib& lib) {
    auto pick = [&](auto& f, std::initializer_list<const char*> names) {
      for (const char* n : names)
        if ((f = lib.fn<std::remove_reference_t<decltype(f)>>(n)))
          return;
    };
    pick(init, {"nvmlInit_v2", "nvmlInit"});
    pick(shutdown, {"nvmlShutdown"});
    pick(driver_version, {"nvmlSystemGetDriverVersion"});
    pick(cuda_version, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
    pick(count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
    pick(by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
    pick(by_pci, {"nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"});
    pick(name, {"nvmlDeviceGetName"});
    pick(uuid, {"nvmlDeviceGetUUID"});
    pick(pci, {"nvmlDeviceGetPciInfo_v3"});
    pick(minor_number, {"nvmlDeviceGetMinorNumber"});
    pick(memory, {"nvmlDeviceGetMemoryInfo"});
    pick(processes, {"nvmlDeviceGetComputeRunningProcesses_v3"});
    pick(persistence, {"nvmlDeviceGetPersistenceMode"});
    pick(compute_mode, {"nvmlDeviceGetComputeMode"});
    pick(mig_mode, {"nvmlDeviceGetMigMode"});
    pick(retired_pending, {"nvmlDeviceGetRetiredPagesPendingStatus"});
    pick(remapped_rows, {"nvmlDeviceGetRemappedRows"});
    pick(ecc_total, {"nvmlDeviceGetTotalEccErrors"});
    pick(fabric, {"nvmlDeviceGetGpuFabricInfo"});
    pick(cc, {"nvmlDeviceGetCudaComputeCapability"});
    pick(error_string, {"nvmlErrorString"});
  }
};

namespace {

NvmlApi& api_of(Run& run) {
  if (!run.nvml.api)
    run.nvml.api = std::make_shared<NvmlApi>();
  return *run.nvml.api;
}

std::string mib(unsigned long long b) {
  return std::to_string(b >> 20) + " MiB";
}

} // namespace

void run_driver_layer(Run& run) {
  auto& ev = run.nvml;
  auto& api = api_of(run);
  api = NvmlApi{};
  std::vector<std::string> dirs = run.plan.library_path;
  const auto lib_override = [&](const char* key) {
    auto it = run.plan.libraries.find(key);
    return it == run.plan.libraries.end() ? std::string() : it->second;
  };
  { // load + init
    const auto t0 = Clock::now();
    auto c = make_check("driver.nvml", PreflightLayer::driver);
    ev.lib = DynLib::open({"libnvidia-ml.so.1"}, dirs, lib_override("nvml"));
    if (!ev.lib.loaded()) {
      ev.load_error = ev.lib.error();
      c.status = CheckStatus::fail;
      c.summary = "libnvidia-ml.so.1 not found: no NVIDIA driver user-space libraries";
      c.facts.emplace_back("error", ev.load_error);
      c.diagnosis = run.host.module_loaded
                        ? "the kernel driver is loaded but its user-space libraries are not "
                          "visible here (container without the driver libraries mounted?)"
                        : "no NVIDIA driver is installed on this machine";
      c.remedy = run.host.module_loaded
                     ? "mount/inject the host's driver libraries (NVIDIA container toolkit, or "
                       "bind-mount libnvidia-ml.so.1 and libcuda.so.1 in LXC) or fix "
                       "ld.so.conf"
                     : "install the NVIDIA driver (e.g. the nvidia-driver-XXX-server package) "
                       "and reboot";
      add_check(run, std::move(c), t0);
      return;
    }
    ev.loaded = true;
    api.resolve(ev.lib);
    run.report.host.libnvidia_ml_path = ev.lib.path();
    c.facts.emplace_back("library", ev.lib.path());
    if (!api.init || !api.count || !api.by_index) {
      c.status = CheckStatus::fail;
      c.summary = "libnvidia-ml at " + ev.lib.path() + " lacks nvmlInit/nvmlDeviceGetCount";
      c.diagnosis = "this is not a usable NVML library";
      c.remedy = "reinstall the NVIDIA driver's user-space libraries";
      add_check(run, std::move(c), t0);
      return;
    }
    ev.init_rc = api.init();
    if (ev.init_rc != nvml_success) {
      ev.init_error = rc_text(ev.init_rc);
      c.status = CheckStatus::fail;
      c.summary = "nvmlInit failed: " + ev.init_error;
      c.facts.emplace_back("nvmlInit", ev.init_error);
      switch (ev.init_rc) {
      case 9:
        c.diagnosis = "the NVIDIA kernel driver is not loaded or not reachable (no /dev/nvidiactl)";
        c.remedy = "load the driver on the host (modprobe nvidia) and pass the device nodes in";
        break;
      case 4:
        c.diagnosis = "no permission to open the NVIDIA device nodes (cgroup device rules or "
                      "file permissions)";
        c.remedy = "allow c 195:* rwm for the container / fix /dev/nvidia* permissions";
        break;
      case 18:
        c.diagnosis = "libnvidia-ml and the loaded kernel module are different driver versions "
                      "(driver upgraded without reboot, or the container carries other driver "
                      "libraries)";
        c.remedy = "reboot the host (or reload the nvidia modules); in containers use the "
                   "host's driver libraries";
        break;
      default:
        c.diagnosis = "NVML could not initialise";
        c.remedy = "check dmesg for NVRM errors; run nvidia-smi on the host";
      }
      add_check(run, std::move(c), t0);
      return;
    }
    char buf[96] = {};
    if (api.driver_version && api.driver_version(buf, sizeof buf) == nvml_success) {
      ev.driver_version = buf;
      run.report.host.driver_version = buf;
      c.facts.emplace_back("driver_version", buf);
    }
    int cv = 0;
    if (api.cuda_version && api.cuda_version(&cv) == nvml_success) {
      ev.cuda_driver_version = cv;
      c.facts.emplace_back("cuda_driver_version", std::to_string(cv));
    }
    unsigned n = 0;
    const int rc = api.count(&n);
    if (rc != nvml_success) {
      c.status = CheckStatus::fail;
      c.summary = "nvmlDeviceGetCount failed: " + rc_text(rc);
      c.diagnosis = "NVML initialised but cannot count GPUs";
      c.remedy = "check dmesg for Xid/NVRM errors";
      add_check(run, std::move(c), t0);
      return;
    }
    ev.count = static_cast<int>(n);
    run.report.host.nvml_device_count = ev.count;
    c.facts.emplace_back("gpu_count", std::to_string(n));
    if (!run.host.module_version.empty() && !ev.driver_version.empty() &&
        run.host.module_version != ev.driver_version) {
      c.status = CheckStatus::warn;
      c.summary = "NVML " + ev.driver_version + " but kernel module " + run.host.module_version;
      c.diagnosis = "user-space driver and kernel module versions differ; CUDA will fail with "
                    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)";
      c.remedy = "reboot the host so the new kernel module is loaded";
    } else if (n == 0) {
      c.status = CheckStatus::fail;
      c.summary = "NVML sees no GPU";
      c.diagnosis = "the driver is loaded but reports no GPU (GPUs bound to vfio-pci, or none "
                    "passed into the container)";
      c.remedy = "check lspci -k and the container's device configuration";
    } else {
      c.summary = "NVML: driver " + ev.driver_version + ", " + std::to_string(n) + " GPU(s)";
    }
    add_check(run, std::move(c), t0);
  }

  for (int i = 0; i < ev.count; ++i) {
    const auto t0 = Clock::now();
    auto c = make_check("driver.gpu" + std::to_string(i), PreflightLayer::driver);
    NvmlGpu g;
    g.index = i;
    nvmlDevice_t dev = nullptr;
    int rc = api.by_index(static_cast<unsigned>(i), &dev);
    if (rc != nvml_success) {
      c.status = CheckStatus::fail;
      c.summary = "NVML GPU " + std::to_string(i) + ": " + rc_text(rc);
      c.diagnosis = rc == 15  ? "the GPU has fallen off the bus (Xid 79) or is lost"
                    : rc == 4 ? "no permission for this GPU's device node"
                              : "NVML cannot open this GPU";
      c.remedy = rc == 15 ? "check dmesg for Xid 79; the GPU needs a reset or the host a reboot"
                          : "check /dev/nvidia" + std::to_string(i) + " and dmesg";
      ev.gpus.push_back(g);
      add_check(run, std::move(c), t0);
      continue;
    }
    char buf[128] = {};
    if (api.name && api.name(dev, buf, sizeof buf) == nvml_success)
      g.name = buf;
    if (api.uuid && api.uuid(dev, buf, sizeof buf) == nvml_success)
      g.uuid = buf;
    nvmlPciInfo_t pci{};
    if (api.pci && api.pci(dev, &pci) == nvml_success)
      g.pci_bus_id = normalise_bus_id(pci.busId);
    unsigned minor_number = 0; // not `minor`: <sys/sysmacros.h> defines minor() as a macro
    if (api.minor_number && api.minor_number(dev, &minor_number) == nvml_success)
      g.minor = static_cast<int>(minor_number);
    nvmlMemory_t mem{};
    if (api.memory && api.memory(dev, &mem) == nvml_success) {
      g.total = mem.total;
      g.used = mem.used;
      g.free = mem.free;
    }
    int major = 0, mnr = 0;
    if (api.cc && api.cc(dev, &major, &mnr) == nvml_success)
      g.cc = major * 10 + mnr;
    if (api.processes) {
      unsigned np = 0;
      rc = api.processes(dev, &np, nullptr);
      if (rc == nvml_insufficient_size && np > 0) {
        std::vector<nvmlProcessInfo_t> procs(np + 8);
        np = static_cast<unsigned>(procs.size());
        if (api.processes(dev, &np, procs.data()) == nvml_success)
          for (unsigned k = 0; k < np; ++k)
            g.processes.emplace_back(procs[k].pid, procs[k].usedGpuMemory);
      }
    }
    int v = 0;
    if (api.persistence && api.persistence(dev, &v) == nvml_success)
      g.persistence = v;
    if (api.compute_mode && api.compute_mode(dev, &v) == nvml_success)
      g.compute_mode = v;
    unsigned cur = 0, pend = 0;
    if (api.mig_mode && api.mig_mode(dev, &cur, &pend) == nvml_success) {
      g.mig_current = static_cast<int>(cur);
      g.mig_pending = static_cast<int>(pend);
    }
    nvmlGpuFabricInfo_t fab{};
    if (api.fabric && api.fabric(dev, &fab) == nvml_success) {
      g.fabric_state = fab.state;
      g.fabric_status = fab.status;
    }
    c.facts = {{"name", g.name}, {"uuid", g.uuid}, {"pci_bus_id", g.pci_bus_id}};
    if (g.cc)
      c.facts.emplace_back("compute_capability",
                           std::to_string(g.cc / 10) + "." + std::to_string(g.cc % 10));
    if (g.total)
      c.facts.emplace_back("memory", mib(g.used) + " used of " + mib(g.total));
    c.facts.emplace_back("persistence_mode", g.persistence < 0 ? "unknown"
                                             : g.persistence   ? "on"
                                                               : "off");
    c.facts.emplace_back("compute_mode", g.compute_mode == 0   ? "Default"
                                         : g.compute_mode == 2 ? "Prohibited"
                                         : g.compute_mode == 3 ? "Exclusive_Process"
                                                               : "unknown");
    if (g.mig_current >= 0)
      c.facts.emplace_back("mig", std::string(g.mig_current ? "enabled" : "disabled") +
                                      (g.mig_pending != g.mig_current ? " (change pending)" : ""));
    if (g.fabric_state >= 0)
      c.facts.emplace_back("fabric_state", g.fabric_state == 0   ? "not supported"
                                           : g.fabric_state == 1 ? "not started"
                                           : g.fabric_state == 2 ? "in progress"
                                                                 : "completed");
    std::string procs;
    for (auto& [pid, bytes] : g.processes)
      procs += (procs.empty() ? "" : ", ") + std::to_string(pid) + " (" + mib(bytes) + ")";
    if (!procs.empty())
      c.facts.emplace_back("processes", procs);

    // Memory health: pending retirements / row remaps need a reset (DCGM level 1 semantics).
    std::vector<std::string> fails, warns;
    std::string fail_remedy, warn_remedy;
    int pending = 0;
    if (api.retired_pending && api.retired_pending(dev, &pending) == nvml_success && pending) {
      warns.push_back("retired pages pending");
      warn_remedy = "reset the GPU (nvidia-smi -r) or reboot to retire the pages";
    }
    unsigned corr = 0, unc = 0, is_pending = 0, failure = 0;
    if (api.remapped_rows &&
        api.remapped_rows(dev, &corr, &unc, &is_pending, &failure) == nvml_success) {
      c.facts.emplace_back("remapped_rows", std::to_string(corr) + " correctable, " +
                                                std::to_string(unc) + " uncorrectable" +
                                                (is_pending ? ", remap pending" : ""));
      if (failure) {
        fails.push_back("row remapping failed");
        fail_remedy = "the GPU memory cannot be repaired: drain it and request an RMA";
      } else if (is_pending) {
        warns.push_back("row remap pending");
        warn_remedy = "reset the GPU (nvidia-smi -r) or reboot so the rows are remapped";
      }
    }
    unsigned long long ecc = 0;
    if (api.ecc_total &&
        api.ecc_total(dev, 1 /*uncorrected*/, 0 /*volatile*/, &ecc) == nvml_success) {
      c.facts.emplace_back("ecc_uncorrected_volatile", std::to_string(ecc));
      if (ecc > 0) {
        warns.push_back(std::to_string(ecc) + " uncorrectable ECC error(s) since the last reset");
        warn_remedy = "check dmesg Xids 48/63/64; reset the GPU; RMA if they keep coming";
      }
    }
    if (g.fabric_state == 1 || g.fabric_state == 2) {
      fails.push_back(std::string("NVLink fabric ") +
                      (g.fabric_state == 1 ? "not started" : "still in progress"));
      fail_remedy = "on the host: systemctl start nvidia-fabricmanager (its version must match "
                    "the driver) and wait until the fabric state is Completed; CUDA fails with "
                    "CUDA_ERROR_SYSTEM_NOT_READY (802) until then";
    } else if (g.fabric_state == 3 && g.fabric_status != 0) {
      fails.push_back("NVLink fabric registration failed: " + rc_text(g.fabric_status));
      fail_remedy = "check nvidia-fabricmanager's log on the host and restart it";
    }
    if (g.compute_mode == 2) {
      fails.push_back("compute mode Prohibited");
      fail_remedy = "ask the admin to set compute mode Default (nvidia-smi -i N -c 0)";
    } else if (g.compute_mode == 3 && !g.processes.empty()) {
      fails.push_back("Exclusive_Process mode and another process holds the GPU");
      fail_remedy = "stop the processes listed, or set compute mode Default";
    }
    if (g.mig_current == 1) {
      warns.push_back("MIG enabled: CUDA sees MIG instances, not the whole GPU");
      warn_remedy = "disable MIG (nvidia-smi -i N -mig 0, then reset) or target MIG-<uuid>s";
    } else if (g.mig_pending >= 0 && g.mig_pending != g.mig_current) {
      warns.push_back("MIG mode change pending a GPU reset");
      warn_remedy = "reset the GPU so the MIG change takes effect";
    }
    if (!g.processes.empty() && g.compute_mode != 3) {
      warns.push_back(std::to_string(g.processes.size()) + " process(es) already use the GPU (" +
                      mib(g.used) + " used)");
      warn_remedy = "stop them before benchmarking (see facts for the pids); numbers taken "
                    "beside them are not clean";
    }
    if (g.persistence == 0) {
      warns.push_back("persistence mode off");
      if (warn_remedy.empty())
        warn_remedy = "nvidia-smi -pm 1 (or run nvidia-persistenced) so the driver state stays "
                      "initialised between processes";
    }
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (auto& x : v)
        s += (s.empty() ? "" : "; ") + x;
      return s;
    };
    if (!fails.empty()) {
      c.status = CheckStatus::fail;
      c.summary = g.name + " " + g.pci_bus_id + ": " + join(fails);
      c.diagnosis = join(fails) + (warns.empty() ? "" : "; also " + join(warns));
      c.remedy = fail_remedy;
    } else if (!warns.empty()) {
      c.status = CheckStatus::warn;
      c.summary = g.name + " " + g.pci_bus_id + ": " + join(warns);
      c.diagnosis = join(warns);
      c.remedy = warn_remedy;
    } else {
      c.summary = g.name + " " + g.pci_bus_id + " healthy per NVML (" + mib(g.used) + " used)";
    }
    ev.gpus.push_back(std::move(g));
    add_check(run, std::move(c), t0);
  }
}

void run_driver_layer_bounded(Run& run) {
  struct Job {
    PreflightPlan plan;
    PreflightReport report;
    std::unique_ptr<Run> run;
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
  };
  auto job = std::make_shared<Job>();
  job->plan = run.plan;
  job->run = std::make_unique<Run>(Run{job->plan, job->report, run.host, {}});
  const auto t0 = Clock::now();
  // The job is shared with the thread: if NVML never returns, the thread and what it holds are
  // abandoned, not destroyed under it.
  std::thread([job] {
    try {
      run_driver_layer(*job->run);
    } catch (const std::exception& e) { // an exception here would end the process
      job->report.checks.push_back(unexpected_check(PreflightLayer::driver, e));
    }
    std::lock_guard<std::mutex> lock(job->mutex);
    job->done = true;
    job->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(job->mutex);
  if (job->cv.wait_for(lock, run.plan.timeouts.nvml, [&] { return job->done; })) {
    for (auto& c : job->report.checks)
      run.report.checks.push_back(std::move(c));
    run.nvml = std::move(job->run->nvml);
    run.report.host.driver_version = job->report.host.driver_version;
    run.report.host.nvml_device_count = job->report.host.nvml_device_count;
    run.report.host.libnvidia_ml_path = job->report.host.libnvidia_ml_path;
    return;
  }
  run.nvml.hung = true;
  auto c = make_check("driver.nvml", PreflightLayer::driver);
  c.status = CheckStatus::fail;
  const auto limit_s = std::chrono::duration<double>(run.plan.timeouts.nvml).count();
  c.summary = "NVML did not answer within " + std::to_string(static_cast<int>(limit_s)) +
              " s (a call is stuck in the driver); it was abandoned";
  c.facts.emplace_back("limit_ms", std::to_string(run.plan.timeouts.nvml.count()));
  c.diagnosis = "the NVIDIA driver hangs in NVML, as nvidia-smi would: a GPU in a bad state "
                "(fallen off the bus, Xid storm, pending reset) or a driver stuck in the kernel";
  c.remedy = "check dmesg for NVRM/Xid messages on the host; reset the GPU or reboot; do not "
             "start benchmarks until nvidia-smi answers promptly";
  add_check(run, std::move(c), t0);
}

std::string nvml_recheck(Run& run, const std::string& pci_bus_id) {
  auto& api = api_of(run);
  if (!run.nvml.loaded || run.nvml.init_rc != 0 || !api.by_pci)
    return {};
  // NVML's own form has an 8-digit domain.
  std::string id = pci_bus_id;
  if (id.size() >= 12 && id[4] == ':')
    id = "0000" + id;
  nvmlDevice_t dev = nullptr;
  int rc = api.by_pci(id.c_str(), &dev);
  if (rc == nvml_success && api.memory) {
    nvmlMemory_t mem{};
    rc = api.memory(dev, &mem);
    if (rc == nvml_not_supported)
      rc = nvml_success;
  }
  return rc == nvml_success ? std::string() : rc_text(rc);
}

void nvml_close(Run& run) {
  auto& api = api_of(run);
  if (run.nvml.loaded && run.nvml.init_rc == 0 && api.shutdown)
    api.shutdown();
  run.nvml.lib = DynLib{};
  api = NvmlApi{};
}

} // namespace specbench::preflight
