// Kernels of the preflight's compute layer. Compiled by src/preflight/CMakeLists.txt into a
// fatbinary (one SASS per architecture of the build, plus PTX) that is embedded in the library
// and loaded with the driver API; see probe_fatbin.hpp.

// out[i] = (i * 2654435761u) ^ seed: every element depends on its index, so a launch that did
// not run, ran on part of the range or wrote elsewhere is caught by the host-side comparison.
extern "C" __global__ void specbench_preflight_fill(unsigned int* out, unsigned int n,
                                                    unsigned int seed) {
  const unsigned int stride = gridDim.x * blockDim.x;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = (i * 2654435761u) ^ seed;
}
