// specbench-gpu-probe: the child process of the preflight's CUDA layers. Not meant to be run by
// hand; `specbench preflight` starts it with a JSON request and reads JSON lines back.
// (.cxx, not .cpp: the library globs src/**/*.cpp and must not contain this main.)
#include "specbench/preflight.hpp"

#include <unistd.h>

// _exit: the parent has everything once the "done" event is written; skipping the CUDA and
// cuBLAS teardown in atexit handlers lets the process end sooner.
int main(int argc, char** argv) {
  ::_exit(specbench::gpu_probe_main(argc, argv));
}
