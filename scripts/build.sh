#!/usr/bin/env bash
# Configures and builds specbench into ${SPECBENCH_BUILD_DIR:-build}. Extra arguments go to cmake
# at configure time (e.g. -DSPECBENCH_ENABLE_CUDA=OFF, -DCMAKE_CUDA_ARCHITECTURES=90).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${SPECBENCH_BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" "${generator[@]}" "$@"
elif (($# > 0)); then
  cmake -S . -B "$build_dir" "$@"
fi
cmake --build "$build_dir" -j "$(nproc)"
