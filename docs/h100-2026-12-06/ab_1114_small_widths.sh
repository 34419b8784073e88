#!/usr/bin/env bash
# The wider small-request fused greedy blocks (fused_small_width) as committed, against HEAD before
# them (same benchmark source), after the new build's GPU tests. Binaries built on the CPU machine
# for sm_90 (Release), carried in build-carry/.
set -u
C=$(pwd)/build-carry
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log="$OUT/log.txt"
{
date -u +%FT%TZ
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 90 $C/new/test_kernels_gpu > "$OUT/tests_new_kernels_gpu.log" 2>&1; rc=$?
echo "new test_kernels_gpu rc=$rc"; grep -E '^\[  (PASSED|FAILED)|FAILED  \]' "$OUT/tests_new_kernels_gpu.log"
timeout 60 $C/new/test_programmatic_launch > "$OUT/tests_new_programmatic_launch.log" 2>&1; rc2=$?
echo "new test_programmatic_launch rc=$rc2"; grep -E '^\[  (PASSED|FAILED)|FAILED  \]' "$OUT/tests_new_programmatic_launch.log"
echo $((rc + rc2)) > /tmp/new_rc
} > "$log" 2>&1
f='^fused_greedy_bf16/B(1xN8|1xN16|8xN16|1xN65)/cold/iter|^fused_greedy_bf16/B1xN16/warm/iter|^fused_greedy_fp32/B1xN8/cold/iter|^read_once_fp32/fused_bytes/B1xN16/cold/iter'
run() { # name binary
  timeout 40 "$2" --benchmark_filter="$f" 2>/dev/null | grep -E "^[a-z]" | awk -v n="$1" '{printf "%-5s %-60s %8s %s\n", n, $1, $2, $3}'
}
for r in 1 2 3 4; do
  run base $C/base/bench_kernels
  [ "$(cat /tmp/new_rc)" = 0 ] && run new $C/new/bench_kernels
done > "$OUT/ab.txt" 2>&1
date -u +%FT%TZ >> "$log"
cat "$log"; sort -k2,2 -k1,1 "$OUT/ab.txt"
