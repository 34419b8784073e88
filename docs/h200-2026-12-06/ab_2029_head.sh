#!/usr/bin/env bash
# Asked for an H200 at 20:28 UTC on 2026-12-06 and got one. The guard below stops at once on any other card.
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "not an H200: nothing run"; exit 3; fi
# main at 2d0bb61 (its kernels are d9ddf77's) against main before the wider blocks (fd1ca9d, the
# 11:14 base build), goal cases interleaved three times, after 2d0bb61's GPU tests; then, unless
# SKIP_FULL is set, 2d0bb61's whole suite once. The same script as docs/h100-2026-12-06/ab_1700_head.sh.
# Binaries built on the CPU machine for sm_90 (Release), carried in build-carry/.
set -u
C=$(pwd)/build-carry
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log="$OUT/log.txt"
{
date -u +%FT%TZ
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
nvcc --version 2>/dev/null | tail -2; /usr/local/cuda/bin/nvcc --version | tail -2
timeout 90 $C/new/test_kernels_gpu > "$OUT/tests_kernels_gpu.log" 2>&1; rc=$?
echo "test_kernels_gpu rc=$rc"; grep -E '^\[  (PASSED|FAILED)|FAILED  \]' "$OUT/tests_kernels_gpu.log"
timeout 60 $C/new/test_programmatic_launch > "$OUT/tests_programmatic_launch.log" 2>&1; rc2=$?
echo "test_programmatic_launch rc=$rc2"; grep -E '^\[  (PASSED|FAILED)|FAILED  \]' "$OUT/tests_programmatic_launch.log"
echo $((rc + rc2)) > /tmp/new_rc
} > "$log" 2>&1
f='^fused_greedy_bf16/B(1xN8|1xN16|8xN16|1xN65)/cold/iter|^fused_greedy_bf16/B1xN16/warm/iter|^fused_greedy_fp32/B1xN8/cold/iter|^read_once_fp32/fused_bytes/B1xN(8|16)/cold/iter|^tree_sampling_fp32/B1xN4/cold/iter|^read_once_fp32/tree/B1xN4/cold/iter|^ddtree_build/B(1|64)/budget64/depth16/k64/masks/iter'
run() { # name binary
  timeout 40 "$2" --benchmark_filter="$f" 2>/dev/null | grep -E "^[a-z]" | awk -v n="$1" '{printf "%-5s %-60s %8s %s\n", n, $1, $2, $3}'
}
for r in 1 2 3; do
  run base $C/base/bench_kernels
  [ "$(cat /tmp/new_rc)" = 0 ] && run new $C/new/bench_kernels
done > "$OUT/ab.txt" 2>&1
if [ "$(cat /tmp/new_rc)" = 0 ] && [ -z "${SKIP_FULL:-}" ]; then
  timeout 240 $C/new/bench_kernels --benchmark_out="$OUT/bench_full.json" --benchmark_out_format=json > "$OUT/bench_full.txt" 2>&1
  echo "full suite rc=$?" >> "$log"
fi
date -u +%FT%TZ >> "$log"
cat "$log"; sort -k2,2 -k1,1 "$OUT/ab.txt"
