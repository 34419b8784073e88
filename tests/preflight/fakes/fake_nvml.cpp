// A fake libnvidia-ml.so.1 for preflight tests: FAKE_NVML_GPU_COUNT healthy-looking GPUs unless
// told otherwise (FAKE_NVML_INIT_RESULT, FAKE_NVML_DRIVER_VERSION, FAKE_NVML_FABRIC_STATE,
// FAKE_NVML_PERSISTENCE, FAKE_NVML_COMPUTE_MODE, FAKE_NVML_MIG, lost markers).
#include "fake_common.hpp"

#include <cstring>
#include <unistd.h>

extern "C" {
struct nvmlDevice_st {
  int index;
};
static nvmlDevice_st g_devices[64];

static int count() {
  return fake::env_int("FAKE_NVML_GPU_COUNT", fake::gpu_count_default());
}
static int idx(nvmlDevice_st* d) {
  return d ? d->index : -1;
}
static bool lost(nvmlDevice_st* d) {
  return fake::is_lost(fake::bus_id(idx(d)));
}

int nvmlInit_v2() {
  if (fake::env_int("FAKE_NVML_INIT_HANG", 0))
    for (;;)
      ::pause(); // a driver that never answers
  return fake::env_int("FAKE_NVML_INIT_RESULT", 0);
}
int nvmlShutdown() {
  return 0;
}
const char* nvmlErrorString(int) {
  return "fake NVML error";
}
int nvmlSystemGetDriverVersion(char* buf, unsigned len) {
  std::snprintf(buf, len, "%s", fake::env_str("FAKE_NVML_DRIVER_VERSION", "595.71.05").c_str());
  return 0;
}
int nvmlSystemGetCudaDriverVersion_v2(int* v) {
  *v = fake::env_int("FAKE_CUDA_DRIVER_VERSION", 13020);
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = static_cast<unsigned>(count());
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_st** d) {
  if (static_cast<int>(i) >= count() || i >= 64)
    return 2;
  g_devices[i].index = static_cast<int>(i);
  *d = &g_devices[i];
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, nvmlDevice_st** d) {
  for (int i = 0; i < count() && i < 64; ++i) {
    const std::string mine = fake::bus_id(i);
    // NVML's form has an 8-digit domain: compare the tails.
    if (std::strlen(bus) >= mine.size() &&
        std::strcmp(bus + std::strlen(bus) - mine.size() + 4, mine.c_str() + 4) == 0) {
      if (fake::is_lost(mine))
        return 15; // NVML_ERROR_GPU_IS_LOST
      g_devices[i].index = i;
      *d = &g_devices[i];
      return 0;
    }
  }
  return 6; // NOT_FOUND
}
int nvmlDeviceGetName(nvmlDevice_st* d, char* buf, unsigned len) {
  if (lost(d))
    return 15;
  std::snprintf(buf, len, "NVIDIA H200 (fake)");
  return 0;
}
int nvmlDeviceGetUUID(nvmlDevice_st* d, char* buf, unsigned len) {
  std::snprintf(buf, len, "GPU-00000000-0000-0000-0000-0000000000%02x", idx(d));
  return 0;
}
struct PciInfo {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
int nvmlDeviceGetPciInfo_v3(nvmlDevice_st* d, PciInfo* p) {
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->busId, sizeof p->busId, "0000%s", fake::bus_id(idx(d)).c_str());
  p->bus = static_cast<unsigned>(idx(d) + 1);
  return 0;
}
int nvmlDeviceGetMinorNumber(nvmlDevice_st* d, unsigned* m) {
  *m = static_cast<unsigned>(idx(d));
  return 0;
}
struct Memory {
  unsigned long long total, free, used;
};
int nvmlDeviceGetMemoryInfo(nvmlDevice_st* d, Memory* m) {
  if (lost(d))
    return 15;
  m->total = 150754820096ull; // 140.4 GiB, an H200
  m->used = 0;
  m->free = m->total;
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_st*, unsigned* n, void*) {
  *n = 0;
  return 0;
}
int nvmlDeviceGetPersistenceMode(nvmlDevice_st*, int* v) {
  *v = fake::env_int("FAKE_NVML_PERSISTENCE", 1);
  return 0;
}
int nvmlDeviceGetComputeMode(nvmlDevice_st*, int* v) {
  *v = fake::env_int("FAKE_NVML_COMPUTE_MODE", 0);
  return 0;
}
int nvmlDeviceGetMigMode(nvmlDevice_st*, unsigned* cur, unsigned* pend) {
  *cur = *pend = static_cast<unsigned>(fake::env_int("FAKE_NVML_MIG", 0));
  return 0;
}
int nvmlDeviceGetRemappedRows(nvmlDevice_st*, unsigned* c, unsigned* u, unsigned* p, unsigned* f) {
  *c = *u = *p = *f = 0;
  return 0;
}
int nvmlDeviceGetTotalEccErrors(nvmlDevice_st*, int, int, unsigned long long* n) {
  *n = 0;
  return 0;
}
int nvmlDeviceGetCudaComputeCapability(nvmlDevice_st*, int* major, int* minor) {
  const int cc = fake::env_int("FAKE_CUDA_CC", 90);
  *major = cc / 10;
  *minor = cc % 10;
  return 0;
}
struct Fabric {
  unsigned char clusterUuid[16];
  int status;
  unsigned cliqueId;
  unsigned char state;
};
int nvmlDeviceGetGpuFabricInfo(nvmlDevice_st*, Fabric* f) {
  const int state = fake::env_int("FAKE_NVML_FABRIC_STATE", -1);
  if (state < 0)
    return 3; // NOT_SUPPORTED: no NVSwitch fabric
  std::memset(f, 0, sizeof *f);
  f->state = static_cast<unsigned char>(state);
  f->status = 0;
  return 0;
}
} // extern "C"
