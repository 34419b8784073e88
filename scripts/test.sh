#!/usr/bin/env bash
# Builds specbench and runs the whole test suite with CTest. GPU tests report "skipped" with a
# reason on a machine without a GPU. Extra arguments go to cmake at configure time.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${SPECBENCH_BUILD_DIR:-build}
scripts/build.sh "$@"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 600
