// A fake libcuda.so.1 for preflight tests. Device memory is host memory, the probe's fill kernel
// is emulated on the CPU (after checking that a real fatbinary was passed), and every failure of
// interest is switched on by an environment variable:
//   FAKE_CUDA_INIT_RESULT, FAKE_CUDA_INIT_HANG, FAKE_CUDA_DEVICE_COUNT, FAKE_CUDA_DRIVER_VERSION,
//   FAKE_CUDA_CC, FAKE_CUDA_CTX_RESULT, FAKE_CUDA_VANISH_ORDINAL, FAKE_CUDA_MODULE_RESULT,
//   FAKE_CUDA_CORRUPT_COPY, FAKE_CUDA_NO_PEER.
#include "fake_common.hpp"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <unistd.h>

extern "C" {
using CUresult = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st {
  int ordinal;
};
struct CUmod_st {
  int unused;
};
struct CUfunc_st {
  int kind;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point t;
};
static CUctx_st g_ctx[64];
static CUmod_st g_mod;
static CUfunc_st g_fill{1};
static int g_current = -1;

static int device_count() {
  return fake::env_int("FAKE_CUDA_DEVICE_COUNT", fake::gpu_count_default());
}
static bool valid(int d) {
  return d >= 0 && d < device_count() && d < 64;
}

CUresult cuInit(unsigned) {
  if (fake::env_int("FAKE_CUDA_INIT_HANG", 0))
    for (;;)
      ::pause(); // a driver that never answers
  return fake::env_int("FAKE_CUDA_INIT_RESULT", 0);
}
CUresult cuDriverGetVersion(int* v) {
  *v = fake::env_int("FAKE_CUDA_DRIVER_VERSION", 13020);
  return 0;
}
CUresult cuDeviceGetCount(int* n) {
  *n = device_count();
  return 0;
}
CUresult cuDeviceGet(int* dev, int ordinal) {
  if (!valid(ordinal))
    return 101;
  *dev = ordinal;
  return 0;
}
CUresult cuDeviceGetName(char* buf, int len, int dev) {
  std::snprintf(buf, static_cast<size_t>(len), "NVIDIA H200 (fake)");
  return valid(dev) ? 0 : 101;
}
CUresult cuDeviceGetUuid_v2(unsigned char* uuid, int dev) {
  std::memset(uuid, 0, 16);
  uuid[15] = static_cast<unsigned char>(dev);
  return 0;
}
CUresult cuDeviceGetPCIBusId(char* buf, int len, int dev) {
  std::snprintf(buf, static_cast<size_t>(len), "%s", fake::bus_id(dev).c_str());
  return 0;
}
CUresult cuDeviceGetAttribute(int* v, int attr, int) {
  const int cc = fake::env_int("FAKE_CUDA_CC", 90);
  *v = attr == 75 ? cc / 10 : attr == 76 ? cc % 10 : 132;
  return 0;
}
CUresult cuDeviceTotalMem_v2(size_t* b, int) {
  *b = 150754820096ull;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(CUctx_st** ctx, int dev) {
  if (dev == fake::env_int("FAKE_CUDA_VANISH_ORDINAL", -1)) {
    // The GPU falls off the bus now: NVML will see it lost from here on.
    fake::mark_lost(fake::bus_id(dev));
    return 999;
  }
  if (const int rc = fake::env_int("FAKE_CUDA_CTX_RESULT", 0))
    return rc;
  if (!valid(dev))
    return 101;
  g_ctx[dev].ordinal = dev;
  *ctx = &g_ctx[dev];
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int) {
  return 0;
}
CUresult cuCtxSetCurrent(CUctx_st* ctx) {
  g_current = ctx ? ctx->ordinal : -1;
  return 0;
}
CUresult cuCtxSynchronize() {
  return 0;
}
CUresult cuCtxEnablePeerAccess(CUctx_st*, unsigned) {
  return 0;
}
CUresult cuDeviceCanAccessPeer(int* can, int, int) {
  *can = fake::env_int("FAKE_CUDA_NO_PEER", 0) ? 0 : 1;
  return 0;
}
CUresult cuMemGetInfo_v2(size_t* free_b, size_t* total) {
  *total = 150754820096ull;
  *free_b = *total - (600ull << 20);
  return 0;
}
CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  void* m = std::calloc(1, bytes);
  if (!m)
    return 2;
  *p = reinterpret_cast<CUdeviceptr>(m);
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  std::free(reinterpret_cast<void*>(p));
  return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) {
  std::memcpy(reinterpret_cast<void*>(d), s, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) {
  std::memcpy(d, reinterpret_cast<const void*>(s), n);
  if (fake::env_int("FAKE_CUDA_CORRUPT_COPY", 0) && n > 0)
    static_cast<unsigned char*>(d)[n / 2] ^= 0x10;
  return 0;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  std::memmove(reinterpret_cast<void*>(d), reinterpret_cast<const void*>(s), n);
  return 0;
}
CUresult cuMemcpyPeer(CUdeviceptr d, CUctx_st*, CUdeviceptr s, CUctx_st*, size_t n) {
  std::memcpy(reinterpret_cast<void*>(d), reinterpret_cast<const void*>(s), n);
  return 0;
}
CUresult cuModuleLoadData(CUmod_st** m, const void* image) {
  if (const int rc = fake::env_int("FAKE_CUDA_MODULE_RESULT", 0))
    return rc;
  std::uint32_t magic = 0;
  std::memcpy(&magic, image, sizeof magic);
  if (magic != 0xBA55ED50u)
    return 200; // not a fatbinary: CUDA_ERROR_INVALID_IMAGE
  *m = &g_mod;
  return 0;
}
CUresult cuModuleUnload(CUmod_st*) {
  return 0;
}
CUresult cuModuleGetFunction(CUfunc_st** f, CUmod_st*, const char* name) {
  if (std::strcmp(name, "specbench_preflight_fill") != 0)
    return 500;
  *f = &g_fill;
  return 0;
}
CUresult cuLaunchKernel(CUfunc_st* f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void*, void** params, void**) {
  if (f != &g_fill)
    return 400;
  auto* out = reinterpret_cast<unsigned*>(*static_cast<CUdeviceptr*>(params[0]));
  const unsigned n = *static_cast<unsigned*>(params[1]);
  const unsigned seed = *static_cast<unsigned*>(params[2]);
  for (unsigned i = 0; i < n; ++i)
    out[i] = (i * 2654435761u) ^ seed;
  return 0;
}
CUresult cuEventCreate(CUevent_st** e, unsigned) {
  *e = new CUevent_st{};
  return 0;
}
CUresult cuEventRecord(CUevent_st* e, void*) {
  e->t = std::chrono::steady_clock::now();
  return 0;
}
CUresult cuEventSynchronize(CUevent_st*) {
  return 0;
}
CUresult cuEventElapsedTime_v2(float* ms, CUevent_st* a, CUevent_st* b) {
  *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
  return 0;
}
CUresult cuEventDestroy_v2(CUevent_st* e) {
  delete e;
  return 0;
}
CUresult cuGetErrorName(CUresult rc, const char** name) {
  switch (rc) {
  case 999:
    *name = "CUDA_ERROR_UNKNOWN";
    return 0;
  case 802:
    *name = "CUDA_ERROR_SYSTEM_NOT_READY";
    return 0;
  case 803:
    *name = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    return 0;
  default:
    return 1; // CUDA_ERROR_INVALID_VALUE, as the real one does for unknown codes
  }
}
} // extern "C"
