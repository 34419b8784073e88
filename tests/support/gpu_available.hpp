#pragma once
#include <string>
namespace specbench::testing {
/// What a GPU test needs of the build and the machine.
enum class GpuNeed {
  /// The verification kernels: built for an sm_90 or newer entry, run on a GPU of compute
  /// capability 9.0 or newer.
  verification_kernels,
  /// The preflight's probe kernels only: built by nvcc for any architecture, run on any GPU.
  probe_kernels,
};

/// Empty when a CUDA device can run what `need` names; otherwise why not (not compiled, no
/// driver, no device, a GPU too old for the kernels, ...).
std::string gpu_unavailable_reason(GpuNeed need);
} // namespace specbench::testing
