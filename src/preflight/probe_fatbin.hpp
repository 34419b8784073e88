#pragma once
// The probe kernels (src/preflight/probe_kernels.cu) compiled by nvcc into a fatbinary for the
// architectures of this build and embedded in the library, loaded with cuModuleLoadData. Going
// through the driver API keeps the probe free of the CUDA runtime, so that fake libcuda builds
// can drive every step in tests.
#include <cstddef>

namespace specbench::preflight {
/// The embedded fatbinary, or nullptr when specbench was built without CUDA.
const void* probe_fatbin() noexcept;
/// Its size in bytes (0 without CUDA).
std::size_t probe_fatbin_size() noexcept;
/// Name of the fill kernel: out[i] = (i * 2654435761u) ^ seed for i < n.
inline constexpr const char* probe_fill_kernel = "specbench_preflight_fill";
/// The value the fill kernel writes at index i.
inline unsigned probe_fill_value(unsigned i, unsigned seed) {
  return (i * 2654435761u) ^ seed;
}
} // namespace specbench::preflight
