#!/usr/bin/env bash
# Builds the kernel tests and benchmarks in Release for one GPU architecture, checks the kernels
# against their CPU references on the GPU, then runs the Google Benchmark suite.
#   scripts/bench_kernels.sh [out_dir] [benchmark_filter]
# Environment: SPECBENCH_CUDA_ARCH (default 90), SPECBENCH_BUILD_DIR (default build-bench),
# SPECBENCH_TEST_FILTER (gtest filter, default all kernel GPU tests).
# Writes to out_dir (default bench-out): gpu.txt, tests.log, bench.json, bench.txt; prints each
# case's time (and, for the after_lm_head cases, added_us: what the call adds to a step).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-out}
filter=${2:-.}
build_dir=${SPECBENCH_BUILD_DIR:-build-bench}
mkdir -p "$out"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="${SPECBENCH_CUDA_ARCH:-90}" >"$out/configure.log" 2>&1 ||
  { tail -30 "$out/configure.log"; exit 1; }
cmake --build "$build_dir" -j "$(nproc)" --target test_kernels_gpu test_programmatic_launch bench_kernels \
  >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader ||
    true
  nvcc --version | tail -2 || true
} >"$out/gpu.txt"
cat "$out/gpu.txt"
"$build_dir/tests/kernels/test_kernels_gpu" --gtest_filter="${SPECBENCH_TEST_FILTER:-*}" \
  >"$out/tests.log" 2>&1 && echo "kernel GPU tests: passed" ||
  { echo "kernel GPU tests: FAILED"; grep -E "FAILED|Failure|error" "$out/tests.log" | head -30; }
"$build_dir/tests/kernels/test_programmatic_launch" >>"$out/tests.log" 2>&1 &&
  echo "programmatic launch GPU tests: passed" ||
  { echo "programmatic launch GPU tests: FAILED"; grep -E "FAILED|Failure" "$out/tests.log" | head; }
"$build_dir/benchmarks/kernels/bench_kernels" --benchmark_filter="$filter" \
  --benchmark_out="$out/bench.json" --benchmark_out_format=json 2>&1 | tee "$out/bench.txt" |
  grep -E "^[a-z0-9_]+/" | awk '{
    # Name and time; for the after_lm_head cases, whose time is the GEMM and the call together,
    # also what the call adds to the step (added_us, the paired median) and the GEMM alone.
    extra = ""
    for (i = 4; i <= NF; i++)
      if ($i ~ /^(added_us|lm_head_us)=/) extra = extra " " $i
    printf "%-64s %10s %s%s\n", $1, $2, $3, extra
  }'
