#pragma once
// A kernel that writes a verifier's inputs late, for the test that programmatic dependent launch
// waits for them (test_programmatic_launch.cpp).

#include <cstddef>
#include <cuda_runtime.h>

namespace specbench::testing {

/// Copies `bytes` from `src` to `dst` on `stream`, but only `delay_ns` after its blocks start,
/// and lets the next kernel launch at once (griddepcontrol.launch_dependents before the wait): a
/// kernel launched next with a programmatic dependency starts while `dst` still holds its old
/// bytes, and reads the new ones only if it waits for this kernel as it must. A plain launch.
cudaError_t launch_late_copy(void* dst, const void* src, std::size_t bytes, unsigned delay_ns,
                             cudaStream_t stream);

} // namespace specbench::testing
