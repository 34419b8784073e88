#pragma once
// Our own declarations of the few CUDA driver API, cuBLAS and NCCL entry points the probe uses,
// resolved with dlsym under their versioned names. No CUDA header is needed to build them, and a
// missing symbol is reported as "not supported" instead of failing to start.
#include "preflight/dynlib.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace specbench::preflight::cu {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
struct CUuuid {
  unsigned char bytes[16];
};

inline constexpr int attr_cc_major = 75; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
inline constexpr int attr_cc_minor = 76; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
inline constexpr int attr_sm_count = 16; // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT

/// The driver API, resolved from a loaded libcuda.
struct DriverApi {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetUuid)(CUuuid*, CUdevice) = nullptr;
  CUresult (*cuDeviceGetPCIBusId)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuCtxEnablePeerAccess)(CUcontext, unsigned) = nullptr;
  CUresult (*cuDeviceCanAccessPeer)(int*, CUdevice, CUdevice) = nullptr;
  CUresult (*cuMemGetInfo)(size_t*, size_t*) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemcpyPeer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;

  /// Resolves every entry; returns the first required symbol that is missing ("" = all there).
  std::string resolve(const DynLib& lib);
};

inline std::string DriverApi::resolve(const DynLib& lib) {
  std::string missing;
  auto need = [&](auto& f, const char* name) {
    f = lib.fn<std::remove_reference_t<decltype(f)>>(name);
    if (!f && missing.empty())
      missing = name;
  };
  auto want = [&](auto& f, std::initializer_list<const char*> names) {
    for (const char* n : names)
      if ((f = lib.fn<std::remove_reference_t<decltype(f)>>(n)))
        return;
  };
  need(cuInit, "cuInit");
  need(cuDriverGetVersion, "cuDriverGetVersion");
  need(cuDeviceGetCount, "cuDeviceGetCount");
  need(cuDeviceGet, "cuDeviceGet");
  need(cuDeviceGetName, "cuDeviceGetName");
  want(cuDeviceGetUuid, {"cuDeviceGetUuid_v2", "cuDeviceGetUuid"});
  need(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId");
  need(cuDeviceGetAttribute, "cuDeviceGetAttribute");
  need(cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  need(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  want(cuDevicePrimaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"});
  need(cuCtxSetCurrent, "cuCtxSetCurrent");
  need(cuCtxSynchronize, "cuCtxSynchronize");
  want(cuCtxEnablePeerAccess, {"cuCtxEnablePeerAccess"});
  want(cuDeviceCanAccessPeer, {"cuDeviceCanAccessPeer"});
  need(cuMemGetInfo, "cuMemGetInfo_v2");
  need(cuMemAlloc, "cuMemAlloc_v2");
  need(cuMemFree, "cuMemFree_v2");
  need(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  need(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  need(cuMemcpyDtoD, "cuMemcpyDtoD_v2");
  want(cuMemcpyPeer, {"cuMemcpyPeer"});
  need(cuModuleLoadData, "cuModuleLoadData");
  want(cuModuleUnload, {"cuModuleUnload"});
  need(cuModuleGetFunction, "cuModuleGetFunction");
  need(cuLaunchKernel, "cuLaunchKernel");
  want(cuEventCreate, {"cuEventCreate"});
  want(cuEventRecord, {"cuEventRecord"});
  want(cuEventSynchronize, {"cuEventSynchronize"});
  want(cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  want(cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"});
  want(cuGetErrorName, {"cuGetErrorName"});
  return missing;
}

// cuBLAS (libcublas.so.13/12), column-major SGEMM.
using cublasHandle_t = struct cublasContext*;
struct CublasApi {
  int (*create)(cublasHandle_t*) = nullptr; // cublasCreate_v2
  int (*destroy)(cublasHandle_t) = nullptr; // cublasDestroy_v2
  int (*sgemm)(cublasHandle_t, int, int, int, int, int, const float*, const float*, int,
               const float*, int, const float*, float*, int) = nullptr; // cublasSgemm_v2
};

// NCCL (libnccl.so.2).
using ncclComm_t = struct ncclComm*;
struct NcclApi {
  int (*comm_init_all)(ncclComm_t*, int, const int*) = nullptr;
  int (*comm_destroy)(ncclComm_t) = nullptr;
  int (*all_reduce)(const void*, void*, size_t, int, int, ncclComm_t, CUstream) = nullptr;
  int (*group_start)() = nullptr;
  int (*group_end)() = nullptr;
  const char* (*get_error_string)(int) = nullptr;
  int (*get_version)(int*) = nullptr;
};
inline constexpr int nccl_float32 = 7;
inline constexpr int nccl_sum = 0;

} // namespace specbench::preflight::cu
