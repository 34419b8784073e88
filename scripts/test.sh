#!/usr/bin/env bash
# Builds specbench and runs the whole test suite with CTest. GPU tests report "skipped" with a
# reason on a machine without a GPU. Extra arguments go to cmake at configure time.
#
# When the main build has CUDA, the suite also runs in a second configuration built without CUDA
# (build-nocuda/), proving that everything but the kernels builds and passes there and that the
# kernel launchers answer "not compiled". That pass is built under AddressSanitizer and
# UndefinedBehaviorSanitizer (SPECBENCH_TEST_SANITIZE=0: without them), so memory errors, leaks
# and undefined behaviour fail the suite. SPECBENCH_TEST_NO_CUDA=0 skips that second pass. It
# compiles at -Og with line tables (-g1): under both sanitizers GCC spends most of a file's time
# in instrumented optimisation, not parsing (a unity batch: 6 s to parse, 49 s at -O1, 31 s at
# -Og, 27 s at -O0), and on 2 cores the pass built in 4.1 minutes at -Og against 6.7 at -O1 (16
# at -O2 -g) while its tests ran as fast as at -O1 (61-62 s; 90-95 s at -O0). Stack traces still
# name files and lines. It is also a unity build
# (SPECBENCH_UNITY_BUILD: host C++ compiled in batches of eight files), which parses the
# third-party headers once per batch instead of once per file; the first pass stays file by file,
# as users build it, so that a file missing an include of its own still fails there.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${SPECBENCH_BUILD_DIR:-build}
jobs=$(nproc)
# The tests spend most of their time waiting on the processes they drive (simulated servers, the
# CLI, timeouts): test_e2e ran 48 s for 6.5 s of CPU. So CTest runs two per core; on 2 cores the
# suite took 46-48 s instead of 61 (the sanitized pass 60-63 instead of 79), test_e2e the longest.
test_jobs=$((jobs * 2))

scripts/build.sh "$@"
echo "== tests: $build_dir"
ctest --test-dir "$build_dir" --output-on-failure -j "$test_jobs" --timeout 600

if [[ ${SPECBENCH_TEST_NO_CUDA:-1} != 0 ]] &&
   grep -q 'cuda_compiled = true' "$build_dir/generated/specbench/build_info.hpp"; then
  sanitize=address,undefined
  if [[ ${SPECBENCH_TEST_SANITIZE:-1} == 0 ]]; then sanitize=; fi
  echo "== tests: build-nocuda (the same suite without CUDA${sanitize:+, -fsanitize=$sanitize})"
  SPECBENCH_BUILD_DIR=build-nocuda scripts/build.sh -DSPECBENCH_ENABLE_CUDA=OFF \
    -DSPECBENCH_BUILD_BENCHMARKS=OFF "-DSPECBENCH_SANITIZE=$sanitize" -DSPECBENCH_UNITY_BUILD=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-Og -g1 -DNDEBUG"
  ctest --test-dir build-nocuda --output-on-failure -j "$test_jobs" --timeout 600
fi
