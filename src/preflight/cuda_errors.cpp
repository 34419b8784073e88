// The CUDA error table: names from the CUDA 13.0 headers (cuda.h, driver_types.h); causes and
// remedies from the cases collected in docs/preflight.md (issues and NVIDIA docs cited there).
#include "specbench/cuda_errors.hpp"

#include <algorithm>

namespace specbench {
namespace {

std::vector<CudaErrorInfo> build_table() {
  std::vector<CudaErrorInfo> t = {
      {1, "CUDA_ERROR_INVALID_VALUE", "cudaErrorInvalidValue",
       "an argument of a CUDA call was out of range (a bug in the caller, or sizes that do not fit "
       "this GPU)",
       "report it as a specbench bug with the JSON report attached", false},
      {2, "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation",
       "the GPU has not enough free memory: another process holds it, or the request is too large",
       "stop the processes listed under the GPU (nvidia-smi), or lower the allocation size", false},
      {3, "CUDA_ERROR_NOT_INITIALIZED", "cudaErrorInitializationError",
       "the driver could not be initialised, or an earlier cuInit in this process failed and "
       "poisoned it",
       "run the check in a fresh process; if it persists, see the cuInit error reported first",
       true},
      {4, "CUDA_ERROR_DEINITIALIZED", "cudaErrorCudartUnloading",
       "the driver is shutting down in this process", "restart the process", true},
      {34, "CUDA_ERROR_STUB_LIBRARY", "cudaErrorStubLibrary",
       "the loaded libcuda is the toolkit's link-time stub (…/lib64/stubs/libcuda.so), not the "
       "driver's library",
       "remove the stubs directory from LD_LIBRARY_PATH / ld.so.conf so the driver's "
       "libcuda.so.1 is found",
       false},
      {35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "cudaErrorInsufficientDriver",
       "the installed driver supports an older CUDA version than the runtime/kernels specbench was "
       "built with",
       "install a driver that supports this CUDA version (see the facts), or rebuild specbench "
       "with an older CUDA toolkit",
       false},
      {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "cudaErrorCallRequiresNewerDriver",
       "a CUDA call needs a newer driver than the installed one", "upgrade the NVIDIA driver",
       false},
      {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "cudaErrorDevicesUnavailable",
       "the GPU is busy or unavailable: compute mode Exclusive-Process or Prohibited with another "
       "process holding it, or the GPU is being reset",
       "stop the process holding the GPU (see its processes) or ask the admin to set compute mode "
       "Default (nvidia-smi -c 0)",
       false},
      {100, "CUDA_ERROR_NO_DEVICE", "cudaErrorNoDevice",
       "no CUDA device is visible: CUDA_VISIBLE_DEVICES empty or wrong, /dev/nvidiaN missing in "
       "the container, or MIG enabled without instances",
       "check CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES, the /dev/nvidia* nodes passed to the "
       "container, and MIG mode (nvidia-smi -mig 0 or create instances)",
       false},
      {101, "CUDA_ERROR_INVALID_DEVICE", "cudaErrorInvalidDevice",
       "a requested device ordinal does not exist among the visible devices (e.g. TP 8 with 4 "
       "visible)",
       "lower --tp or list GPUs that exist (--gpus), or make more GPUs visible", false},
      {200, "CUDA_ERROR_INVALID_IMAGE", "cudaErrorInvalidKernelImage",
       "the embedded kernel image is corrupt or not for this driver", "rebuild specbench", false},
      {201, "CUDA_ERROR_INVALID_CONTEXT", "cudaErrorDeviceUninitialized",
       "no valid context is current (a context was destroyed or a device vanished)",
       "restart the process; if a GPU vanished, check dmesg for Xid 79 (fallen off the bus)",
       false},
      {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "cudaErrorNoKernelImageForDevice",
       "specbench has no kernel image (SASS or PTX) for this GPU's compute capability",
       "rebuild with -DCMAKE_CUDA_ARCHITECTURES including this GPU's architecture (e.g. 90 for "
       "H100/H200, 100 for B200, 120 for RTX PRO 6000)",
       false},
      {214, "CUDA_ERROR_ECC_UNCORRECTABLE", "cudaErrorECCUncorrectable",
       "an uncorrectable ECC memory error happened on the GPU",
       "drain the GPU, check nvidia-smi -q -d ECC,ROW_REMAPPER; a GPU reset (or reboot) is needed; "
       "replace the GPU if it repeats",
       true},
      {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "cudaErrorPeerAccessUnsupported",
       "peer-to-peer access is not supported between these GPUs (topology, ACS/IOMMU, or "
       "virtualisation)",
       "use GPUs on one NVLink/PCIe switch, disable PCIe ACS, or let NCCL route through the host "
       "(NCCL_P2P_DISABLE=1, slower)",
       false},
      {218, "CUDA_ERROR_INVALID_PTX", "cudaErrorInvalidPtx",
       "the driver's JIT could not compile the embedded PTX",
       "rebuild for this GPU's "
       "architecture or upgrade the driver",
       false},
      {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", "cudaErrorNvlinkUncorrectable",
       "an uncorrectable NVLink error happened",
       "check nvidia-smi nvlink -e and Xids; reset the GPUs / reboot; report hardware if it "
       "repeats",
       true},
      {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "cudaErrorJitCompilerNotFound",
       "the PTX JIT compiler library (libnvidia-ptxjitcompiler) is missing",
       "install the full driver user-space libraries (in containers: the toolkit's compute "
       "capability)",
       false},
      {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "cudaErrorUnsupportedPtxVersion",
       "the PTX was produced by a newer toolkit than the driver's JIT supports",
       "upgrade the driver or rebuild with the GPU's real architecture (SASS) compiled in", false},
      {226, "CUDA_ERROR_CONTAINED", "cudaErrorContained",
       "the GPU contained an error (uncorrectable memory or NVLink error) and stopped the work",
       "drain the GPU, check Xids and ECC/row-remap counters, reset the GPU", true},
      {304, "CUDA_ERROR_OPERATING_SYSTEM", "cudaErrorOperatingSystem",
       "an OS call made by the driver failed (often a missing or unopenable /dev/nvidia* node)",
       "check the /dev/nvidia* nodes and their permissions (cgroup device rules in containers)",
       false},
      {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "cudaErrorIllegalAddress",
       "a kernel accessed an illegal address; the context is unusable",
       "restart the process; if it happens in our probe kernel, check Xids and ECC counters", true},
      {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "cudaErrorLaunchOutOfResources",
       "a kernel asked for more registers/shared memory than the GPU has", "report a bug", false},
      {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "cudaErrorLaunchTimeout",
       "a kernel ran past the watchdog limit (display GPU)", "use a GPU without a display", true},
      {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "cudaErrorPeerAccessAlreadyEnabled",
       "peer access was already enabled (harmless)", "nothing to do", false},
      {710, "CUDA_ERROR_ASSERT", "cudaErrorAssert", "a device-side assert fired",
       "restart the process; the kernel found bad input", true},
      {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", "cudaErrorHardwareStackError",
       "a kernel corrupted its stack; the context is unusable", "restart the process", true},
      {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "cudaErrorIllegalInstruction",
       "a kernel executed an illegal instruction (a kernel bug for this architecture, or bad "
       "hardware); the context is unusable",
       "restart the process; if our probe kernel hits it, check Xids and ECC and try another GPU",
       true},
      {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "cudaErrorMisalignedAddress",
       "a kernel made a misaligned memory access; the context is unusable", "restart the process",
       true},
      {719, "CUDA_ERROR_LAUNCH_FAILED", "cudaErrorLaunchFailure",
       "an exception happened in a kernel (often after ECC/Xid events or a suspend/resume); the "
       "context is unusable",
       "restart the process; check dmesg Xids and nvidia-smi -q -d ECC; reset the GPU if it "
       "repeats",
       true},
      {800, "CUDA_ERROR_NOT_PERMITTED", "cudaErrorNotPermitted",
       "the operation is not permitted (MPS client restrictions, or missing privileges)",
       "run outside MPS or with the needed permissions", false},
      {801, "CUDA_ERROR_NOT_SUPPORTED", "cudaErrorNotSupported",
       "the operation is not supported on this device or configuration", "see the facts", false},
      {802, "CUDA_ERROR_SYSTEM_NOT_READY", "cudaErrorSystemNotReady",
       "the system is not ready for CUDA work: on NVSwitch systems (HGX/DGX H100/H200/B200) the "
       "NVLink fabric is not initialised because nvidia-fabricmanager is not running or has not "
       "finished",
       "on the host: systemctl start nvidia-fabricmanager (same version as the driver), wait for "
       "the fabric state 'Completed' (nvidia-smi -q | grep -A2 Fabric), then retry",
       false},
      {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "cudaErrorSystemDriverMismatch",
       "the user-space driver (libcuda) and the loaded kernel module have different versions: the "
       "driver was upgraded without a reboot, or the container has another driver's libraries",
       "reboot the host (or reload the nvidia modules) so the kernel module matches the installed "
       "libraries; in containers mount the host's own driver libraries",
       false},
      {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "cudaErrorCompatNotSupportedOnDevice",
       "forward-compatibility libraries (cuda-compat) are in use on a GPU that does not support "
       "them",
       "remove /usr/local/cuda/compat (or the compat directory) from the library path, or upgrade "
       "the host driver instead",
       false},
      {805, "CUDA_ERROR_MPS_CONNECTION_FAILED", "cudaErrorMpsConnectionFailed",
       "the MPS control daemon is configured but not reachable",
       "start nvidia-cuda-mps-control or unset CUDA_MPS_PIPE_DIRECTORY", false},
      {909, "CUDA_ERROR_TIMEOUT", "cudaErrorTimeout", "a CUDA wait timed out", "retry; check Xids",
       false},
      {999, "CUDA_ERROR_UNKNOWN", "cudaErrorUnknown",
       "CUDA could not talk to the GPUs although the driver may be loaded: most often the "
       "nvidia_uvm module is not loaded or /dev/nvidia-uvm is missing/stale in the container "
       "(after a host reboot, suspend/resume or driver reload)",
       "on the host: modprobe nvidia-uvm (or nvidia-modprobe -u -c 0) and make it load at boot; "
       "then restart the container so it gets fresh /dev/nvidia-uvm* nodes with the current major "
       "number",
       true},
  };
  std::sort(t.begin(), t.end(), [](auto& a, auto& b) { return a.code < b.code; });
  return t;
}

} // namespace

const std::vector<CudaErrorInfo>& cuda_error_table() {
  static const std::vector<CudaErrorInfo> table = build_table();
  return table;
}

const CudaErrorInfo* find_cuda_error(int code) noexcept {
  const auto& t = cuda_error_table();
  auto it = std::lower_bound(t.begin(), t.end(), code,
                             [](const CudaErrorInfo& e, int c) { return e.code < c; });
  if (it == t.end() || it->code != code)
    return nullptr;
  return &*it;
}

std::string cuda_error_name(int code) {
  if (const auto* e = find_cuda_error(code))
    return e->driver_name;
  return "CUDA error " + std::to_string(code);
}

} // namespace specbench
