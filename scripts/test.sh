#!/usr/bin/env bash
# Builds specbench and runs the whole test suite with CTest. GPU tests report "skipped" with a
# reason on a machine without a GPU. Extra arguments go to cmake at configure time.
#
# When the main build has CUDA, the suite also runs in a second configuration built without CUDA
# (build-nocuda/), proving that everything but the kernels builds and passes there and that the
# kernel launchers answer "not compiled". That pass is built under AddressSanitizer and
# UndefinedBehaviorSanitizer (SPECBENCH_TEST_SANITIZE=0: without them), so memory errors, leaks
# and undefined behaviour fail the suite. SPECBENCH_TEST_NO_CUDA=0 skips that second pass. It
# compiles at -O1 with line tables (-g1), the lowest level AddressSanitizer's documentation names
# for reasonable speed: half the compile time of -O2 -g under the sanitizers (16 to 8 minutes on
# 2 cores), and stack traces still name files and lines. It is also a unity build
# (SPECBENCH_UNITY_BUILD: host C++ compiled in batches of eight files), which parses the
# third-party headers once per batch instead of once per file; the first pass stays file by file,
# as users build it, so that a file missing an include of its own still fails there.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${SPECBENCH_BUILD_DIR:-build}
jobs=$(nproc)

scripts/build.sh "$@"
echo "== tests: $build_dir"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 600

if [[ ${SPECBENCH_TEST_NO_CUDA:-1} != 0 ]] &&
   grep -q 'cuda_compiled = true' "$build_dir/generated/specbench/build_info.hpp"; then
  sanitize=address,undefined
  if [[ ${SPECBENCH_TEST_SANITIZE:-1} == 0 ]]; then sanitize=; fi
  echo "== tests: build-nocuda (the same suite without CUDA${sanitize:+, -fsanitize=$sanitize})"
  SPECBENCH_BUILD_DIR=build-nocuda scripts/build.sh -DSPECBENCH_ENABLE_CUDA=OFF \
    -DSPECBENCH_BUILD_BENCHMARKS=OFF "-DSPECBENCH_SANITIZE=$sanitize" -DSPECBENCH_UNITY_BUILD=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
  ctest --test-dir build-nocuda --output-on-failure -j "$jobs" --timeout 600
fi
