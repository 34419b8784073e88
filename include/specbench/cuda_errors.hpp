#pragma once
/// \file cuda_errors.hpp
/// CUDA error codes the GPU stack can raise, each with its name, its likely cause on a real
/// machine (containers, drivers, fabric, hardware) and a remedy. Codes are the numbers shared by
/// the driver API (CUresult) and the runtime API (cudaError_t) since CUDA 10.1; both names are
/// given. Source: CUDA 13.0 headers and the cases collected in docs/preflight.md.

#include <string>
#include <vector>

namespace specbench {

/// What a CUDA error code means and what to do about it.
struct CudaErrorInfo {
  int code = 0;                  ///< numeric value (driver and runtime agree for these)
  const char* driver_name = "";  ///< CUresult name, e.g. "CUDA_ERROR_UNKNOWN"
  const char* runtime_name = ""; ///< cudaError_t name, e.g. "cudaErrorUnknown"
  const char* cause = "";        ///< the likely cause on a server
  const char* remedy = "";       ///< what to do
  bool poisons_process = false;  ///< the process must be restarted after it
};

/// The entry for `code`, or nullptr when the code is not in the table.
const CudaErrorInfo* find_cuda_error(int code) noexcept;

/// Driver-API name of `code`, or "CUDA error <code>" when unknown.
std::string cuda_error_name(int code);

/// Every entry of the table, ordered by code.
const std::vector<CudaErrorInfo>& cuda_error_table();

} // namespace specbench
