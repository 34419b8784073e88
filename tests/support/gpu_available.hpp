#pragma once
#include <string>
namespace specbench::testing {
/// Empty when a CUDA device can run our kernels; otherwise why not (not compiled, no driver, no
/// device, ...).
std::string gpu_unavailable_reason();
} // namespace specbench::testing
