// GPU memory used per device, read through NVML loaded at run time (so the binary starts on any
// machine). Used for the "memory back to baseline" check between cells.
#include "specbench/runner.hpp"

#include <cstdlib>
#include <dlfcn.h>

namespace specbench {

namespace {

struct NvmlMemory {
  unsigned long long total, free, used;
};
using nvml_device = void*;
using init_fn = int (*)();
using shutdown_fn = int (*)();
using by_index_fn = int (*)(unsigned, nvml_device*);
using by_pci_fn = int (*)(const char*, nvml_device*);
using memory_fn = int (*)(nvml_device, NvmlMemory*);

Status unavailable(const std::string& why) {
  return Status(StatusCode::unavailable, "GPU memory cannot be read: " + why,
                "the memory-back-to-baseline check is skipped; run the preflight to see why",
                "read_gpu_memory_nvml");
}

} // namespace

Expected<std::vector<std::uint64_t>> read_gpu_memory_nvml(const std::vector<int>& gpus,
                                                          const PreflightReport* report) {
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return unavailable("libnvidia-ml.so.1 not loadable");
  auto sym = [&](const char* name) { return ::dlsym(lib, name); };
  auto init = reinterpret_cast<init_fn>(sym("nvmlInit_v2"));
  auto shutdown = reinterpret_cast<shutdown_fn>(sym("nvmlShutdown"));
  auto by_index = reinterpret_cast<by_index_fn>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto by_pci = reinterpret_cast<by_pci_fn>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  auto memory = reinterpret_cast<memory_fn>(sym("nvmlDeviceGetMemoryInfo"));
  if (!init || !shutdown || !by_index || !memory) {
    ::dlclose(lib);
    return unavailable("NVML lacks the functions needed");
  }
  if (int rc = init(); rc != 0) {
    ::dlclose(lib);
    return unavailable("nvmlInit failed with code " + std::to_string(rc));
  }
  std::vector<std::uint64_t> used;
  Status error;
  for (int g : gpus) {
    nvml_device dev = nullptr;
    int rc = -1;
    const GpuResult* known = nullptr;
    if (report)
      for (const auto& r : report->gpus)
        if (r.cuda_ordinal == g && !r.pci_bus_id.empty())
          known = &r;
    if (known && by_pci) {
      rc = by_pci(known->pci_bus_id.c_str(), &dev);
    } else if (!std::getenv("CUDA_VISIBLE_DEVICES")) {
      rc = by_index(static_cast<unsigned>(g), &dev);
    } else {
      error = unavailable("CUDA_VISIBLE_DEVICES is set and no preflight mapped GPU " +
                          std::to_string(g) + " to its NVML device");
      break;
    }
    NvmlMemory m{};
    if (rc != 0 || (rc = memory(dev, &m)) != 0) {
      error = unavailable("NVML call for GPU " + std::to_string(g) + " failed with code " +
                          std::to_string(rc));
      break;
    }
    used.push_back(m.used);
  }
  shutdown();
  ::dlclose(lib);
  if (!error)
    return error;
  return used;
}

} // namespace specbench
