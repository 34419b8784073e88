#!/usr/bin/env bash
# The kernels of build-carry/$1 (default head: sm_90 Release binaries built on the CPU machine by
# build_carry.sh) on an H200 only (ANY_GPU=1: any GPU, for relative readings): GPU tests, then
# the goal cases five times (and the whole suite once with FULL=1).
set -u
BIN=${1:-head}
if [ -z "${ANY_GPU:-}" ] && ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "not an H200: nothing run"; exit 3
fi
C=$(pwd)/build-carry
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log="$OUT/log.txt"
{
date -u +%FT%TZ
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
/usr/local/cuda/bin/nvcc --version | tail -2 | tee -a "$OUT/gpu.txt"
timeout 90 $C/$BIN/test_kernels_gpu > "$OUT/tests_kernels_gpu.log" 2>&1; echo "test_kernels_gpu rc=$?"
grep -E '^\[  (PASSED|FAILED)|FAILED  \]' "$OUT/tests_kernels_gpu.log"
timeout 60 $C/$BIN/test_programmatic_launch >> "$OUT/tests_kernels_gpu.log" 2>&1; echo "test_programmatic_launch rc=$?"
} > "$log" 2>&1
f='^fused_greedy_bf16/B(1xN8|1xN16|64xN64|256xN64)/cold/iter|^read_once_fp32/fused_bytes/B1xN(8|16)/cold/iter|^tree_sampling_fp32/B1xN(4|8)/cold(/tree_4k_apart)?/iter|^read_once_fp32/tree/B1xN(4|8)/cold/iter|^chain_sampling_fp32/B1xK7/cold/iter|^read_once_fp32/chain/B1xK7/cold/iter|^ddtree_build/B(1|64)/budget64/depth16/k64/masks/iter'
for r in $(seq 1 "${RUNS:-5}"); do
  timeout 60 $C/$BIN/bench_kernels --benchmark_filter="$f" 2>/dev/null | grep -E "^[a-z]" | awk -v n="r$r" '{printf "%-3s %-60s %8s %s\n", n, $1, $2, $3}'
done > "$OUT/goal_cases.txt" 2>&1
if [ -n "${FULL:-}" ]; then
  timeout 240 $C/$BIN/bench_kernels --benchmark_out="$OUT/bench_full.json" --benchmark_out_format=json > "$OUT/bench_full.txt" 2>&1
  echo "full suite rc=$?" >> "$log"
fi
date -u +%FT%TZ >> "$log"
cat "$log"; sort -k2,2 -k1,1 "$OUT/goal_cases.txt"
